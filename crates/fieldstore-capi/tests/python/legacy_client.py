"""One client script of the legacy pyfdb (0.1.x, cffi over fdb_c), run
unchanged on FDB5's libfdb5 and on fieldstore's library; the caller
compares what it prints. It archives the GRIB fixtures, lists them at every
depth for several requests (with and without duplicates), and retrieves
every listed field.

    python legacy_client.py ROOT SCHEMA GRIBDIR OUT.json
"""

import hashlib
import json
import os
import sys

import pyfdb

root, schema, gribdir, out = sys.argv[1:5]
os.makedirs(root, exist_ok=True)
config = {
    "type": "local",
    "engine": "toc",
    "schema": schema,
    "spaces": [{"handler": "Default", "roots": [{"path": root}]}],
}


def error(e):
    """An error, as `error: ` and the first line of its message (the
    comparison looks only at whether there was one)."""
    return "error: " + str(e).strip().splitlines()[0][:300]


result = {
    "library": pyfdb.lib.path,
    "version": pyfdb.lib.version,
    "archive": {},
    "list": {},
    "retrieve": {},
}

fdb = pyfdb.FDB(config)
files = sorted(f for f in os.listdir(gribdir) if f.endswith(".grib"))
for name in files:
    with open(os.path.join(gribdir, name), "rb") as f:
        data = f.read()
    try:
        fdb.archive(data)
        result["archive"][name] = "ok"
    except pyfdb.pyfdb.FDBException as e:
        result["archive"][name] = error(e)
fdb.flush()

# A field archived again (replacing the first in a later flush), one with an
# explicit key, and messages checked against a request.
with open(os.path.join(gribdir, "rd-fc.grib"), "rb") as f:
    rd = f.read()
fdb.archive(rd)
fdb.flush()
explicit = {
    "class": "rd", "expver": "xxxx", "stream": "oper", "date": "20201102", "time": "0000",
    "domain": "g", "type": "fc", "levtype": "sfc", "step": "24", "param": "166",
}
fdb.archive(b"explicit bytes", key=explicit)
fdb.flush()

requests = {
    "all": None,
    "class=od": {"class": "od"},
    "class=rd": {"class": "rd"},
    "class=rd,step=12/24": {"class": "rd", "step": ["12", "24"]},
    "od pl 1000": {"class": "od", "levtype": "pl", "levelist": 1000},
    "class=ea": {"class": "ea"},
    "class=e6,param=228143": {"class": "e6", "param": 228143},
    "class=ei": {"class": "ei"},
    "nothing": {"class": "od", "expver": "9999"},
}
for label, request in requests.items():
    for depth in (1, 2, 3):
        for duplicates in (True, False):
            tag = f"{label} depth={depth} duplicates={duplicates}"
            try:
                els = []
                for el in fdb.list(request, duplicates=duplicates, keys=True, depth=depth):
                    item = {"keys": el["keys"]}
                    if depth == 3:
                        item["length"] = el["length"]
                        item["has_path"] = bool(el["path"])
                    els.append(json.dumps(item, sort_keys=True))
                result["list"][tag] = sorted(els)
            except pyfdb.pyfdb.FDBException as e:
                result["list"][tag] = error(e)

# Every field, retrieved by the key it is listed under.
for el in fdb.list(None, duplicates=True, keys=True):
    request = {k: v for k, v in el["keys"].items() if v != ""}
    tag = ",".join(f"{k}={v}" for k, v in sorted(request.items()))
    try:
        data = fdb.retrieve(request).read()
        result["retrieve"][tag] = [len(data), hashlib.md5(data).hexdigest()]
    except pyfdb.pyfdb.FDBException as e:
        result["retrieve"][tag] = error(e)

# A multi-field retrieve, in request order, read in small pieces.
request = dict(explicit, step=["24", "12"])
reader = fdb.retrieve(request)
reader.open()
pieces = []
while True:
    piece = reader.read(1000)
    if not piece:
        break
    pieces.append(bytes(piece))
reader.close()
data = b"".join(pieces)
result["retrieve"]["multi, in request order"] = [len(data), hashlib.md5(data).hexdigest()]

# Messages checked against a request: all of them named (archived), some
# not named, some named but missing (refused). Then what is listed.
with open(os.path.join(gribdir, "levtypes.grib"), "rb") as f:
    levtypes = f.read()
for name, request in [
    ("matching", {"class": "od", "levtype": ["pl", "sfc"]}),
    ("unexpected", {"class": "od", "levtype": "sfc"}),
    ("missing", {"class": "od", "levtype": ["pl", "sfc"], "param": ["130", "167"]}),
]:
    try:
        fdb.archive(levtypes, request=request)
        result["archive"]["request " + name] = "ok"
    except pyfdb.pyfdb.FDBException as e:
        result["archive"]["request " + name] = error(e)
    fdb.flush()
    result["list"]["class=od after archive request " + name] = sorted(
        json.dumps(el["keys"], sort_keys=True) for el in fdb.list({"class": "od"}, duplicates=False, keys=True)
    )

with open(out, "w") as f:
    json.dump(result, f, indent=1, sort_keys=True)
