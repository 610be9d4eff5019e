#!/usr/bin/env python3
"""The pygribjump side of bench/gribjump/run.sh: the same extractions
through the unmodified pygribjump 0.13.1, on whichever libgribjump it
finds (GribJump 0.13's wheel, or fieldstore's through GRIBJUMP_DIR), warm.
One JSON object per result on standard output.

Cases, over the N fields of bench/extract/make_fields.py (steps 0..N-1):
- series_1_point: one point of every field, as Polytope asks
  (`gj.extract` with one request per field);
- series_1_point_single: the same as one request (`gj.extract_single`);
- series_100_point_region: a 10 x 10 block (10 ranges of 10);
- series_10000_range: 10,000 consecutive indices;
- one_point_one_field: latency of one point of one field (p50, p90).

Usage: pygribjump_bench.py N GRID_MD5 REPS
"""
import json
import os
import sys
import time


def main() -> int:
    n, md5, reps = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    import pygribjump

    gj = pygribjump.GribJump()
    library = pygribjump.ffi.string(pygribjump.lib.gribjump_git_sha1()).decode()
    base = {"class": "od", "expver": "0001", "stream": "oper", "date": "20240101", "time": "0000",
            "domain": "g", "type": "fc", "levtype": "sfc", "param": "167"}
    ni = 1440
    point = 300 * ni + 700
    region = [((300 + r) * ni + 700, (300 + r) * ni + 710) for r in range(10)]

    def per_field(ranges):
        return lambda: gj.extract([(dict(base, step=str(s)), ranges, md5) for s in range(n)])

    def single(ranges):
        return lambda: gj.extract_single(dict(base, step=[str(s) for s in range(n)]), ranges, md5)

    cases = [
        ("series_1_point", per_field([(point, point + 1)])),
        ("series_1_point_single", single([(point, point + 1)])),
        ("series_100_point_region", per_field(region)),
        ("series_10000_range", per_field([(500_000, 510_000)])),
    ]
    for what, call in cases:
        def run():
            total, fields = 0.0, 0
            for r in call():
                for v in r.values:  # the values in NumPy, as Polytope reads them
                    total += float(v.sum())
                fields += 1
            return fields, total
        run()  # warm: page cache, and fieldstore's jump info on first extraction
        best = float("inf")
        for _ in range(reps):
            t = time.perf_counter()
            fields, total = run()
            best = min(best, time.perf_counter() - t)
        print(json.dumps({"library": library, "what": what, "fields": fields, "seconds": round(best, 5),
                          "fields_per_s": round(fields / best, 1), "checksum": total}), flush=True)
    one = dict(base, step="0")
    lat = []
    for _ in range(300):
        t = time.perf_counter()
        for r in gj.extract([(one, [(point, point + 1)], md5)]):
            r.values
        lat.append((time.perf_counter() - t) * 1e3)
    lat.sort()
    print(json.dumps({"library": library, "what": "one_point_one_field", "p50_ms": round(lat[len(lat) // 2], 4),
                      "p90_ms": round(lat[int(len(lat) * 0.9)], 4)}), flush=True)
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    os._exit(rc)  # GribJump 0.13's wheel aborts in an exit-time destructor
