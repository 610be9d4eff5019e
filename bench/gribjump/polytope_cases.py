#!/usr/bin/env python3
"""The Polytope requests of bench/gribjump/run.sh, as polytope_run.py cases
(crates/fieldstore-gribjump/tests/python): over the benchmark's N fields on
the 0.25° grid (Polytope's `regular` mapper of resolution 360).

Usage: polytope_cases.py N GRID_MD5 > cases.json; also writes hashes.json
"""
import json
import sys

n, md5 = int(sys.argv[1]), sys.argv[2]
req = {"class": "od", "stream": "oper", "type": "fc", "date": "20240101", "time": "0000", "levtype": "sfc",
       "expver": "0001", "domain": "g", "param": "167"}
cases = [
    {"name": "timeseries_1_point_all_steps", "grid": "bench", "request": dict(
        req, step=f"0/to/{n - 1}", feature={"type": "timeseries", "points": [[15.0, 175.0]], "time_axis": "step"})},
    {"name": "timeseries_1_point_10_steps", "grid": "bench", "request": dict(
        req, step="0/to/9", feature={"type": "timeseries", "points": [[15.0, 175.0]], "time_axis": "step"})},
    {"name": "boundingbox_1deg_1_step", "grid": "bench", "request": dict(
        req, step="0", feature={"type": "boundingbox", "points": [[45.0, 5.0], [46.0, 6.0]]})},
    {"name": "polygon_10_steps", "grid": "bench", "request": dict(
        req, step="0/to/9", feature={"type": "polygon",
                                     "shape": [[45.0, 5.0], [47.0, 6.0], [46.0, 8.0], [44.5, 7.0], [45.0, 5.0]]})},
]
json.dump({"bench": md5}, open("hashes.json", "w"))
json.dump(cases, sys.stdout)
