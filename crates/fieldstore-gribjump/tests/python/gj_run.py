#!/usr/bin/env python3
"""Direct pygribjump calls (no Polytope) on whatever `libgribjump` pygribjump
finds: each operation's answer (values and masks per result, axes, or the
error) as JSON, for test_polytope.py to compare between the libraries.

Operations (a JSON list):
  {"op": "extract", "requests": [[request, [[start, end], ...], hash], ...]}
  {"op": "extract_single", "request": {...}, "ranges": [...], "hash": "..."}
  {"op": "axes", "request": {...}, "level": 3}
  {"op": "extract_from_paths", "requests": [[path, offset, [[start, end], ...], hash], ...]}

Usage: gj_run.py OPS.json OUT.json
"""
import json
import math
import os
import sys


def plain(x):
    x = float(x)
    return "NaN" if math.isnan(x) else x


def main() -> int:
    ops = json.load(open(sys.argv[1]))
    import pygribjump

    gj = pygribjump.GribJump()
    library = pygribjump.ffi.string(pygribjump.lib.gribjump_git_sha1()).decode()
    out = {"library": library, "version": pygribjump.library_version(), "answers": []}
    for op in ops:
        try:
            if op["op"] == "axes":
                answer = {"axes": gj.axes(op["request"], op.get("level", 3))}
            else:
                if op["op"] == "extract":
                    it = gj.extract([(r, [tuple(x) for x in rg], h) for r, rg, h in op["requests"]])
                elif op["op"] == "extract_from_paths":
                    it = gj.extract_from_paths([pygribjump.PathExtractionRequest(
                        path, "file", offset, "", 0, [tuple(x) for x in rg], h) for path, offset, rg, h in op["requests"]])
                else:
                    it = gj.extract_single(op["request"], [tuple(x) for x in op["ranges"]], op.get("hash"))
                results = []
                for r in it:
                    results.append({"values": [[plain(v) for v in part] for part in r.values],
                                    "masks": [[int(m) for m in part] for part in r.masks]})
                answer = {"results": results}
        except Exception as e:
            answer = {"error": f"{type(e).__name__}: {e}"}
        out["answers"].append(answer)
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # GribJump 0.13's wheel aborts in an exit-time destructor.
    os._exit(rc)
