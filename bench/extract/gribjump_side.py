#!/usr/bin/env python3
"""The extraction benchmark's FDB5 + GribJump side (bench/extract/run.sh):
archive the fields of GRIB into FDB5 (pyfdb), build GribJump's jump info
(`gribjump-scan`, timed), then, warm, the same extractions as the fieldstore
side (a one-point time series over every field, a 100-point region, a
10,000-index range, one point of one field's latency). One JSON object per
result on standard output. Needs FDB5_CONFIG_FILE (and GRIBJUMP_CONFIG_FILE)
set, pyfdb and pygribjump importable.

Usage: gribjump_side.py GRIB N REPS
"""
import json
import os
import subprocess
import sys
import time


def as_dict(request: str) -> dict:
    return dict(kv.split("=", 1) for kv in request.split(","))


def main() -> int:
    grib, n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    import pyfdb
    import pygribjump

    fdb = pyfdb.FDB()
    t = time.perf_counter()
    with open(grib, "rb") as f:
        fdb.archive(f.read())
    fdb.flush()
    archive_s = time.perf_counter() - t
    t = time.perf_counter()
    base = "class=od,expver=0001,stream=oper,date=20240101,time=0000,domain=g,type=fc,levtype=sfc,param=167"
    scan = subprocess.run(
        ["gribjump-scan", f"{base},step=" + "/".join(str(s) for s in range(n))],
        capture_output=True, text=True)
    scan_s = time.perf_counter() - t
    print(json.dumps({"what": "gribjump_archive", "fields": n, "fdb5_archive_seconds": round(archive_s, 4),
                      "scan_seconds": round(scan_s, 4), "scan_rc": scan.returncode,
                      "scan_err": scan.stderr[-300:]}), flush=True)

    import eccodes
    with open(grib, "rb") as f:
        h = eccodes.codes_grib_new_from_file(f)
        grid_hash = eccodes.codes_get(h, "md5GridSection")
        eccodes.codes_release(h)
    gj = pygribjump.GribJump()
    ni = 1440
    point = 300 * ni + 700
    region = [((300 + r) * ni + 700 + c, (300 + r) * ni + 700 + c + 1) for r in range(10) for c in range(10)]
    series = base + ",step=" + "/".join(str(s) for s in range(n))
    cases = [
        ("series_1_point", [(point, point + 1)]),
        ("series_100_point_region", region),
        ("series_10000_range", [(500_000, 510_000)]),
    ]
    for what, ranges in cases:
        def run():
            req = as_dict(base)
            req["step"] = [str(s) for s in range(n)]
            out = list(gj.extract_single(req, ranges, grid_hash))
            for r in out:
                r.values  # the values in NumPy, as fieldstore returns them
            return out
        run()  # warm
        best = float("inf")
        for _ in range(reps):
            t = time.perf_counter()
            out = run()
            best = min(best, time.perf_counter() - t)
        first = out[0]
        v0 = float(first.values[0][0]) if hasattr(first, "values") else None
        print(json.dumps({"what": what, "fields": len(out), "seconds": round(best, 5),
                          "fields_per_s": round(len(out) / best, 1), "value0": v0}), flush=True)
    one = base + ",step=0"
    lat = []
    for _ in range(200):
        t = time.perf_counter()
        for r in gj.extract([(as_dict(one), [(point, point + 1)], grid_hash)]):
            r.values
        lat.append((time.perf_counter() - t) * 1e3)
    lat.sort()
    print(json.dumps({"what": "one_point_one_field", "p50_ms": round(lat[len(lat) // 2], 4),
                      "p90_ms": round(lat[int(len(lat) * 0.9)], 4)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
