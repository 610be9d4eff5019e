#!/usr/bin/env python3
"""Print the frames of a capture (bench/serve/capture_proxy.py's .bin files)
with their eckit Stream payloads as tagged tokens, for reading by eye."""
import struct
import sys

NAMES = {1: "{", 2: "}", 3: "char", 4: "uchar", 5: "int", 6: "uint", 7: "short", 8: "ushort", 9: "long",
         10: "ulong", 11: "ll", 12: "ull", 14: "double", 15: "str", 16: "blob", 17: "exc", 21: "lblob"}


def tokens(p, limit=400):
    out, i = [], 0
    while i < len(p) and len(out) < limit:
        t = p[i]
        i += 1
        n = NAMES.get(t)
        if t in (1, 2):
            out.append(n)
        elif t in (3, 4):
            out.append(f"{n}:{p[i]}"); i += 1
        elif t in (5, 7, 9):
            out.append(f"{n}:{struct.unpack('>i', p[i:i+4])[0]}"); i += 4
        elif t in (6, 8, 10):
            out.append(f"{n}:{struct.unpack('>I', p[i:i+4])[0]}"); i += 4
        elif t in (11, 12):
            out.append(f"{n}:{struct.unpack('>Q', p[i:i+8])[0]}"); i += 8
        elif t == 14:
            out.append(f"double:{struct.unpack('>d', p[i:i+8])[0]}"); i += 8
        elif t in (15, 16, 17):
            L = struct.unpack('>I', p[i:i+4])[0]; i += 4
            s = p[i:i+L]; i += L
            out.append(f"{n}:{s[:120]!r}" + (f"..({L})" if L > 120 else ""))
        else:
            out.append(f"?{t} then {len(p)-i+1} raw bytes"); break
    return out


for path in sys.argv[1:]:
    data = open(path, "rb").read()
    i = 0
    print("#", path)
    while i + 36 <= len(data):
        marker, version, msg, client, req, size = struct.unpack("<4sHHIII", data[i:i+20])
        h = data[i+20:i+36]
        payload = data[i+36:i+36+size]
        i += 36 + size + 4
        print(f"msg={msg} client={client>>1} ctl={client&1} req={req} size={size} hash={h.hex() if any(h) else 0}")
        if payload and msg != 300 or (msg == 300 and size < 4000):
            print("   ", " ".join(tokens(payload)))
