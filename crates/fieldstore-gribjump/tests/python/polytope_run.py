#!/usr/bin/env python3
"""Run Polytope feature requests (polytope-mars, unchanged, over whatever
`libgribjump` pygribjump finds) and write each one's CoverageJSON, or its
error, as JSON: the side of the comparison in test_polytope.py that runs in
one process per library. With --time, also the time each request took and
the part of it spent inside the library's extract and axes calls.

Usage: polytope_run.py CASES.json HASHES.json OUT.json [--time REPS]
"""
import json
import os
import sys
import time


def options(grid, md5):
    if grid == "regular":
        mapper = {"name": "mapper", "type": "regular", "resolution": 18, "axes": ["latitude", "longitude"]}
    elif grid == "bench":
        # bench/gribjump: the 0.25° grid of bench/extract/make_fields.py.
        mapper = {"name": "mapper", "type": "regular", "resolution": 360, "axes": ["latitude", "longitude"]}
    else:
        mapper = {"name": "mapper", "type": "octahedral", "resolution": 32, "axes": ["latitude", "longitude"]}
    if md5 is not None:
        mapper["md5_hash"] = md5
    return {
        "axis_config": [
            {"axis_name": "date", "transformations": [{"name": "merge", "other_axis": "time", "linkers": ["T", "00"]}]},
            {"axis_name": "values", "transformations": [mapper]},
            {"axis_name": "latitude", "transformations": [{"name": "reverse", "is_reverse": True}]},
            {"axis_name": "longitude", "transformations": [{"name": "cyclic", "range": [0, 360]}]},
            {"axis_name": "step", "transformations": [{"name": "type_change", "type": "int"}]},
            {"axis_name": "levelist", "transformations": [{"name": "type_change", "type": "int"}]},
        ],
        "compressed_axes_config": ["longitude", "latitude", "levtype", "step", "date", "domain", "expver",
                                   "param", "class", "stream", "type", "levelist"],
        "pre_path": {"class": "od", "expver": "0002" if grid == "octahedral" else "0001", "stream": "oper",
                     "type": "fc"},
    }


class GribJump:
    """Wraps pygribjump's GribJump, adding up the time spent in its calls
    (named so: Polytope picks its datacube by the class's name)."""

    spent = 0.0

    def __init__(self, inner):
        self._inner = inner

    def axes(self, *a, **k):
        t = time.perf_counter()
        try:
            return self._inner.axes(*a, **k)
        finally:
            GribJump.spent += time.perf_counter() - t

    def extract(self, *a, **k):
        t = time.perf_counter()
        try:
            # Polytope drains the iterator afterwards: drain it here, so that
            # the extraction is counted whichever library does it lazily.
            return Drained(self._inner.extract(*a, **k))
        finally:
            GribJump.spent += time.perf_counter() - t


class Drained:
    """An extraction iterator's results, with the iterator kept alive as
    long as they are (GribJump 0.13 frees what its results point to with
    the iterator)."""

    def __init__(self, iterator):
        self.iterator = iterator
        self.results = list(iterator)

    def __iter__(self):
        return iter(self.results)


def main() -> int:
    cases = json.load(open(sys.argv[1]))
    hashes = json.load(open(sys.argv[2]))
    reps = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[4] == "--time" else 0
    import pygribjump
    from polytope_mars.api import PolytopeMars

    if reps:
        real = pygribjump.GribJump
        import polytope_mars.api as api

        class Wrapped:
            GribJump = staticmethod(lambda: GribJump(real()))

        api.gj = Wrapped
    out = {}
    for case in cases:
        md5 = case.get("md5", hashes[case["grid"]])
        config = {"datacube": {"type": "gribjump"}, "options": options(case["grid"], md5)}
        try:
            result = PolytopeMars(config).extract(dict(case["request"]))
            entry = {"covjson": json.loads(json.dumps(result, default=str))}
        except Exception as e:  # the error is the answer
            entry = {"error": f"{type(e).__name__}: {e}"}
        if reps:
            walls, inside = [], []
            for _ in range(reps):
                GribJump.spent = 0.0
                t = time.perf_counter()
                PolytopeMars(config).extract(dict(case["request"]))
                walls.append(time.perf_counter() - t)
                inside.append(GribJump.spent)
            walls.sort()
            inside.sort()
            entry["wall_s"] = walls[len(walls) // 2]
            entry["library_s"] = inside[len(inside) // 2]
        out[case["name"]] = entry
    with open(sys.argv[3], "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip the libraries' exit-time destructors: GribJump 0.13's wheel
    # aborts in one ("free(): invalid pointer") after the work is done.
    os._exit(rc)
