#!/usr/bin/env python3
"""A logging TCP proxy for FDB5's remote protocol, to capture real traffic.

Listens on --listen, forwards every connection to --target, and records each
direction's bytes, frame by frame, under --out:

  <name>-<conn>-c2s.bin / -s2c.bin   the raw bytes as they went by
  <name>.jsonl                      one line per frame: connection, direction,
                                    message type, client id, request id,
                                    payload size

A server's startup reply names the data port the client must connect to next;
the proxy opens a listener of its own, forwards it to that port, and rewrites
the port number in the reply (an eckit `int`, tag 5 then 4 big-endian bytes, so the
payload keeps its length). That way the data connection is captured too.
Used by hand (bench/serve/README.md) and by nobody in CI: its outputs, the
golden files under crates/fieldstore-remote/tests/golden/, are what tests use.
"""
import argparse
import json
import socket
import struct
import sys
import threading

HEADER = 36
lock = threading.Lock()
counter = [0]


def recv_exact(sock, n):
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            return None
        out += chunk
    return bytes(out)


def rewrite_port(payload, new_port):
    """The server's startup reply with its data port replaced by new_port.

    The reply holds two session ids (string, int, unsigned long long, long
    each), then the data endpoint (string host, int port): the port is the
    int after the third string."""
    b = bytearray(payload)
    i = 0
    strings = 0
    while i < len(b):
        tag = b[i]
        if tag == 15:
            n = struct.unpack(">I", b[i + 1:i + 5])[0]
            i += 5 + n
            strings += 1
        elif tag == 5 and strings == 3:
            old = struct.unpack(">i", b[i + 1:i + 5])[0]
            b[i + 1:i + 5] = struct.pack(">i", new_port)
            return bytes(b), old
        elif tag in (5, 6, 9, 10):
            i += 5
        elif tag in (11, 12):
            i += 9
        else:
            break
    return payload, None


def pump(src, dst, name, conn, direction, log, args, rewrite):
    raw = open(f"{args.out}/{name}-{conn}-{direction}.bin", "ab")
    try:
        while True:
            hdr = recv_exact(src, HEADER)
            if hdr is None:
                break
            marker, version, msg, client, req, size = struct.unpack("<4sHHIII", hdr[:20])
            rest = recv_exact(src, size + 4)
            if rest is None:
                raw.write(hdr)
                break
            payload, tail = rest[:size], rest[size:]
            if rewrite and msg == 2 and direction == "s2c":
                payload = rewrite(payload)
            frame = hdr + payload + tail
            raw.write(frame)
            raw.flush()
            with lock:
                log.write(json.dumps({"conn": conn, "dir": direction, "marker": marker.decode("latin1"),
                                      "version": version, "msg": msg, "client": client >> 1,
                                      "control": client & 1, "request": req, "size": size,
                                      "tail": tail.decode("latin1")}) + "\n")
                log.flush()
            dst.sendall(frame)
    except OSError:
        pass
    finally:
        raw.close()
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(listen_sock, target, name, log, args, rewrite_data):
    while True:
        client, _ = listen_sock.accept()
        with lock:
            counter[0] += 1
            conn = counter[0]
        server = socket.create_connection(target)

        def rewrite(payload, conn=conn):
            if not rewrite_data:
                return payload
            # Open a forwarding listener for the data port named in the reply.
            data_listen = socket.socket()
            data_listen.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            data_listen.bind(("127.0.0.1", 0))
            data_listen.listen(4)
            new_port = data_listen.getsockname()[1]
            out, old = rewrite_port(payload, new_port)
            if old is None:
                data_listen.close()
                return payload
            threading.Thread(target=serve, args=(data_listen, (target[0], old), f"{name}-data{conn}", log, args, False),
                             daemon=True).start()
            return out

        threading.Thread(target=pump, args=(client, server, name, conn, "c2s", log, args, None), daemon=True).start()
        threading.Thread(target=pump, args=(server, client, name, conn, "s2c", log, args, rewrite), daemon=True).start()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", type=int, required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", default="cap")
    args = ap.parse_args()
    host, port = args.target.rsplit(":", 1)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", args.listen))
    s.listen(16)
    log = open(f"{args.out}/{args.name}.jsonl", "a")
    print(f"proxy {args.name}: 127.0.0.1:{args.listen} -> {args.target}", file=sys.stderr, flush=True)
    serve(s, (host, int(port)), args.name, log, args, True)


if __name__ == "__main__":
    main()
