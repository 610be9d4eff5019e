"""Arrays benchmark (docs/benchmarks.md, "Arrays"): a cube of real shape read
as arrays through fieldstore's xarray view and Zarr store, z3fdb over FDB5,
cfgrib on the GRIB file, and on-disk Zarr v3 written by xarray with the same
chunks (one field per chunk: the ceiling).

    python bench/arrays/bench.py prepare DIR     # GRIB, fieldstore, FDB5, Zarr
    python bench/arrays/bench.py run DIR [--repeat N] > results.json
    python bench/arrays/bench.py plot results.json out.png
    python bench/arrays/bench.py table results.json     # markdown for docs
    bash bench/arrays/run.sh [DIR] [REPEAT]             # all of it

The cube: 2 dates x 4 times x 10 parameters x 13 pressure levels on a 1
degree grid (360 x 181), 1040 GRIB2 fields of 16-bit simple packing written
with ecCodes. Cases: (a) the whole cube, (b) one variable at all times and
levels, (c) a time series at one grid point (one variable, one level, all 8
times). Each measurement runs in a fresh process: open + read, wall time,
and the growth of peak RSS during it (against the bytes of the array read).
Cold: the data files are dropped from the page cache first
(posix_fadvise DONTNEED on every file); warm: read once before.

Needs (bench/arrays/run.sh sets it up): fieldstore, pyfdb + fdb5lib, z3fdb,
xarray, cfgrib, zarr 3, eccodes, matplotlib.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

DATES = [20240101, 20240102]
TIMES = [0, 600, 1200, 1800]
PARAMS = [130, 131, 132, 133, 129, 135, 157, 138, 155, 203]  # t u v q z w r vo d o3
LEVELS = [1000, 925, 850, 700, 600, 500, 400, 300, 250, 200, 150, 100, 50]
NI, NJ = 360, 181
REQUEST = {
    "class": "od", "expver": "0001", "stream": "oper", "domain": "g", "type": "an",
    "levtype": "pl", "step": "0",
    "date": [str(d) for d in DATES], "time": [f"{t:04d}" for t in TIMES],
    "param": [str(p) for p in PARAMS], "levelist": [str(lv) for lv in LEVELS],
}
REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "tests" / "fixtures" / "schema" / "ecmwf.schema"
POINT = (45, 123)          # latitude index, longitude index of case (c)
LEVEL_INDEX = 5            # 500 hPa
METHODS = ["fieldstore", "fieldstore-zarr", "z3fdb", "cfgrib", "zarr"]
CASES = ["a", "b", "c"]


def config(root: Path) -> dict:
    return {"type": "local", "engine": "toc", "schema": str(SCHEMA),
            "spaces": [{"handler": "Default", "roots": [{"path": str(root)}]}]}


def write_grib(path: Path) -> None:
    import eccodes
    import numpy as np

    rng = np.random.default_rng(1)
    lat = np.linspace(90, -90, NJ)[:, None]
    lon = np.linspace(0, 359, NI)[None, :]
    base = np.cos(np.radians(lat)) * np.sin(np.radians(2 * lon))
    template = eccodes.codes_grib_new_from_samples("regular_ll_pl_grib2")
    eccodes.codes_set(template, "setLocalDefinition", 1)
    eccodes.codes_set(template, "localDefinitionNumber", 1)
    for k, v in {"Ni": NI, "Nj": NJ, "latitudeOfFirstGridPointInDegrees": 90.0,
                 "longitudeOfFirstGridPointInDegrees": 0.0, "latitudeOfLastGridPointInDegrees": -90.0,
                 "longitudeOfLastGridPointInDegrees": 359.0, "iDirectionIncrementInDegrees": 1.0,
                 "jDirectionIncrementInDegrees": 1.0, "bitsPerValue": 16}.items():
        eccodes.codes_set(template, k, v)
    with open(path, "wb") as out:
        for d in DATES:
            for t in TIMES:
                for i, p in enumerate(PARAMS):
                    for j, lv in enumerate(LEVELS):
                        h = eccodes.codes_clone(template)
                        eccodes.codes_set(h, "dataDate", d)
                        eccodes.codes_set(h, "dataTime", t)
                        eccodes.codes_set(h, "paramId", p)
                        eccodes.codes_set(h, "level", lv)
                        values = 250 + 10 * i + j + 20 * base * (1 + t / 2400) + rng.normal(0, 0.5, base.shape)
                        eccodes.codes_set_values(h, values.reshape(-1))
                        eccodes.codes_write(h, out)
                        eccodes.codes_release(h)


def prepare(d: Path) -> None:
    import warnings

    import pyfdb
    import xarray as xr

    import fieldstore

    d.mkdir(parents=True, exist_ok=True)
    grib = d / "cube.grib"
    if not grib.exists():
        t = time.time()
        write_grib(grib)
        print(f"wrote {grib} ({grib.stat().st_size >> 20} MiB) in {time.time() - t:.1f} s", file=sys.stderr)
    data = grib.read_bytes()
    for name in ("fieldstore", "fdb5"):
        (d / name).mkdir(exist_ok=True)
    fs = fieldstore.FDB(config(d / "fieldstore"))
    fs.archive(data)
    fs.flush()
    (d / "fdb5.yaml").write_text(json.dumps(config(d / "fdb5")))
    fdb = pyfdb.FDB(config(d / "fdb5"))
    fdb.archive(data)
    fdb.flush()
    # On-disk Zarr v3 by xarray, one field per chunk (as every other view).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = xr.open_dataset(grib, engine="cfgrib", backend_kwargs={"indexpath": ""})
    enc = {v: {"chunks": (1, 1) + ds[v].shape[2:]} for v in ds.data_vars}
    ds.to_zarr(d / "cube.zarr", mode="w", zarr_format=3, encoding=enc, consolidated=False)
    print(f"prepared {d}", file=sys.stderr)


# ---- one measurement (in its own process) -------------------------------

def _open(method: str, d: Path):  # type: ignore[no-untyped-def]
    import warnings

    warnings.simplefilter("ignore")
    if method == "fieldstore":
        import fieldstore

        return fieldstore.open_dataset(REQUEST, config=config(d / "fieldstore"))
    if method == "fieldstore-zarr":
        import zarr

        from fieldstore.zarr_store import FieldStoreZarr

        return zarr.open_group(FieldStoreZarr(REQUEST, config=config(d / "fieldstore")), mode="r")
    if method == "z3fdb":
        import zarr
        from z3fdb import AxisDefinition, Chunking, ExtractorType, SimpleStoreBuilder

        b = SimpleStoreBuilder(d / "fdb5.yaml")
        b.add_part(REQUEST, [AxisDefinition(["date", "time"], Chunking.SINGLE_VALUE),
                             AxisDefinition(["param"], Chunking.SINGLE_VALUE),
                             AxisDefinition(["levelist"], Chunking.SINGLE_VALUE)], ExtractorType.GRIB)
        return zarr.open_array(b.build(), mode="r")
    if method == "cfgrib":
        import xarray as xr

        return xr.open_dataset(d / "cube.grib", engine="cfgrib", backend_kwargs={"indexpath": ""})
    if method == "zarr":
        import xarray as xr

        return xr.open_zarr(d / "cube.zarr", consolidated=False, chunks=None)
    raise ValueError(method)


def _read(method: str, case: str, view):  # type: ignore[no-untyped-def]
    """The array(s) of `case`, as NumPy; returns their bytes."""
    import numpy as np

    lat, lon = POINT
    if method == "z3fdb":
        # (date x time, param, level, values); values row-major on the grid.
        if case == "a":
            out = [view[:]]
        elif case == "b":
            out = [view[:, 0]]
        else:
            out = [view[:, 0, LEVEL_INDEX, lat * NI + lon]]
    elif method == "fieldstore-zarr":
        names = sorted(k for k in view.array_keys() if len(view[k].shape) == 4)
        if case == "a":
            out = [view[n][:] for n in names]
        elif case == "b":
            out = [view["t"][:]]
        else:
            out = [view["t"][:, LEVEL_INDEX, lat, lon]]
    else:
        if case == "a":
            out = [view[n].values for n in view.data_vars]
        elif case == "b":
            out = [view["t"].values]
        else:
            out = [view["t"].isel(isobaricInhPa=LEVEL_INDEX, latitude=lat, longitude=lon).values]
    return sum(np.asarray(o).nbytes for o in out), out


def data_files(method: str, d: Path) -> list[Path]:
    where = {"fieldstore": d / "fieldstore", "fieldstore-zarr": d / "fieldstore", "z3fdb": d / "fdb5",
             "cfgrib": d / "cube.grib", "zarr": d / "cube.zarr"}[method]
    return [where] if where.is_file() else [p for p in where.rglob("*") if p.is_file()]


def drop_cache(files: list[Path]) -> None:
    for p in files:
        fd = os.open(p, os.O_RDONLY)
        try:
            # Clean pages (the files were written long before) are dropped.
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _imports(method: str) -> None:
    """Import what `method` needs, outside the measurement."""
    import importlib
    import importlib.util

    mods = {"fieldstore": ["xarray", "fieldstore", "fieldstore.xarray_backend"],
            "fieldstore-zarr": ["zarr", "fieldstore", "fieldstore.zarr_store"],
            "z3fdb": ["zarr", "z3fdb"], "cfgrib": ["xarray", "cfgrib"], "zarr": ["xarray", "zarr"]}[method]
    for m in mods:
        importlib.import_module(m)
    if "xarray" in mods:
        # xarray imports its duck-array modules (dask…) at the first
        # Variable: a once-per-process cost, not the store's.
        import xarray as xr

        xr.Variable(("x",), [1.0]).chunk() if importlib.util.find_spec("dask") else None


class RssSampler:
    """Peak resident memory of this process while it runs, sampled every
    millisecond from /proc/self/statm (ru_maxrss cannot see growth below
    the peak the imports left)."""

    def __init__(self) -> None:
        import threading

        self.page = os.sysconf("SC_PAGE_SIZE")
        self.peak = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self.page

    def _run(self) -> None:
        while not self.done.wait(0.001):
            self.peak = max(self.peak, self.rss())

    def start(self) -> None:
        self.peak = self.rss()
        self.thread.start()

    def stop(self) -> int:
        self.done.set()
        self.thread.join()
        return max(self.peak, self.rss())


def measure(method: str, case: str, d: Path) -> dict:
    """In this process: open + read once, time and memory (imports done
    before)."""
    import numpy as np

    _imports(method)
    sampler = RssSampler()
    base = sampler.rss()
    sampler.start()
    c0 = os.times()
    t0 = time.perf_counter()
    view = _open(method, d)
    t1 = time.perf_counter()
    nbytes, out = _read(method, case, view)
    t2 = time.perf_counter()
    peak = sampler.stop()
    c1 = os.times()
    cpu = (c1.user - c0.user) + (c1.system - c0.system)
    checksum = float(sum(np.nansum(np.asarray(o, dtype=np.float64)) for o in out))
    return {"method": method, "case": case, "open_s": t1 - t0, "read_s": t2 - t1, "total_s": t2 - t0,
            "cpu_s": cpu, "bytes": nbytes, "rss_growth": peak - base, "checksum": checksum}


def run(d: Path, repeat: int) -> None:
    results = []
    for case in CASES:
        for method in METHODS:
            files = data_files(method, d)
            for cache in ("cold", "warm"):
                for _ in range(repeat):
                    if cache == "cold":
                        drop_cache(files)
                    else:
                        for p in files:  # warm: everything in the page cache
                            p.read_bytes()
                    r = subprocess.run([sys.executable, __file__, "one", str(d), method, case],
                                       capture_output=True, text=True, check=False)
                    if r.returncode != 0:
                        print(f"{method} {case}: FAILED\n{r.stderr[-2000:]}", file=sys.stderr)
                        continue
                    m = json.loads(r.stdout)
                    m["cache"] = cache
                    results.append(m)
                    print(f"{case} {method:16s} {cache}: {m['total_s']:.3f} s (open {m['open_s']:.3f}), "
                          f"{m['bytes'] / 2**20:.1f} MiB read, RSS +{m['rss_growth'] / 2**20:.0f} MiB",
                          file=sys.stderr)
    json.dump(results, sys.stdout, indent=1)


def plot(results: Path, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    rs = json.loads(results.read_text())
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    titles = {"a": "(a) whole cube (1040 fields)", "b": "(b) one variable (104 fields)",
              "c": "(c) time series at a point (8 fields)"}
    for ax, case in zip(axes, CASES):
        x = np.arange(len(METHODS))
        for k, cache in enumerate(("cold", "warm")):
            best = [min((r["total_s"] for r in rs if r["method"] == m and r["case"] == case
                         and r["cache"] == cache), default=np.nan) for m in METHODS]
            ax.bar(x + (k - 0.5) * 0.4, best, 0.4, label=cache)
        ax.set_xticks(x, METHODS, rotation=30, ha="right")
        ax.set_yscale("log")
        ax.set_ylabel("open + read, s (log)")
        ax.set_title(titles[case])
        ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def table(results: Path) -> None:
    """Markdown: best of the runs per case, method and cache; ratios to
    z3fdb and to on-disk Zarr (>1: fieldstore's view is faster); memory
    growth over the bytes read (median of the runs)."""
    import statistics

    rs = json.loads(results.read_text())

    def best(m: str, c: str, cache: str) -> float:
        return min((r["total_s"] for r in rs if r["method"] == m and r["case"] == c and r["cache"] == cache),
                   default=float("nan"))

    def mem(m: str, c: str) -> float:
        g = [r["rss_growth"] / r["bytes"] for r in rs if r["method"] == m and r["case"] == c and r["bytes"]]
        return statistics.median(g) if g else float("nan")

    print("| case | cache | " + " | ".join(METHODS) + " | z3fdb / fieldstore | Zarr / fieldstore |")
    print("|---|---|" + "---:|" * (len(METHODS) + 2))
    for c in CASES:
        for cache in ("cold", "warm"):
            t = {m: best(m, c, cache) for m in METHODS}
            print(f"| {c} | {cache} | " + " | ".join(f"{t[m]:.3f}" for m in METHODS)
                  + f" | {t['z3fdb'] / t['fieldstore']:.2f} | {t['zarr'] / t['fieldstore']:.2f} |")
    print()
    print("CPU seconds (user + system, open + read; median of the runs, cold and warm):")
    print()
    print("| case | " + " | ".join(METHODS) + " | z3fdb / fieldstore |")
    print("|---|" + "---:|" * (len(METHODS) + 1))
    for c in CASES:
        cpu = {m: statistics.median([r["cpu_s"] for r in rs if r["method"] == m and r["case"] == c] or [float("nan")])
               for m in METHODS}
        print(f"| {c} | " + " | ".join(f"{cpu[m]:.3f}" for m in METHODS) + f" | {cpu['z3fdb'] / cpu['fieldstore']:.2f} |")
    print()
    print("Peak RSS growth during open + read, MiB (median), and over the bytes read:")
    print()
    print("| case | bytes read | " + " | ".join(METHODS) + " |")
    print("|---|---:|" + "---:|" * len(METHODS))
    for c in CASES:
        nbytes = next(r["bytes"] for r in rs if r["case"] == c)

        def cell(m: str) -> str:
            g = [r["rss_growth"] for r in rs if r["method"] == m and r["case"] == c]
            mib = statistics.median(g) / 2**20 if g else float("nan")
            return f"{mib:.0f} ({mem(m, c):.2f}x)" if nbytes >= 2**20 else f"{mib:.0f}"

        print(f"| {c} | {nbytes / 2**20:.2f} MiB | " + " | ".join(cell(m) for m in METHODS) + " |")


def main() -> None:
    cmd = sys.argv[1]
    if cmd == "prepare":
        prepare(Path(sys.argv[2]))
    elif cmd == "run":
        repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
        run(Path(sys.argv[2]), repeat)
    elif cmd == "one":
        print(json.dumps(measure(sys.argv[3], sys.argv[4], Path(sys.argv[2]))))
    elif cmd == "table":
        table(Path(sys.argv[2]))
    elif cmd == "plot":
        plot(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
