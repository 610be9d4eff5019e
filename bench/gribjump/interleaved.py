#!/usr/bin/env python3
"""Side by side, interleaved: the same pygribjump and Polytope requests on
GribJump 0.13 and on fieldstore's libgribjump, one warm process per library
(a process loads one libgribjump), the driver alternating between them
request by request (order swapped at each repetition), so that the load of
a shared machine falls on both alike. Part of bench/gribjump/run.sh.

Each measurement is one call, timed in its process: the wall time, and the
time inside the library (the sum over every `gribjump_*` call pygribjump
makes: requests, extraction, iterator, results, axes, deletions). The
rest of the wall time is the client's Python (pygribjump's objects, NumPy,
Polytope), the same code on both sides.

Output (JSON lines, one per case): per side the 25th percentile, median
and 75th percentile of the wall time, the library time, the client's
(wall − library) and the process's CPU time (all threads); of the per-repetition ratios GribJump ÷ fieldstore; the
number of repetitions where fieldstore's wall time was the longer; and the
ratio's ceiling (GribJump's wall ÷ the client's own time on fieldstore's
side: what a library taking no time would reach).

FIELDSTORE_BENCH_HEAP_BUMP=B among both sides' ENV words: each worker
first mallocs and frees B bytes (see worker()), so that both start from the
same glibc malloc state; the rows then say "heap": "same".

Usage:
  interleaved.py REPS N MD5 CASES.json HASHES.json -- ORACLE_ENV... -- OURS_ENV...
  (the ENV lists are VAR=value words; the worker role is internal)
"""
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(HERE, "..", "..", "crates", "fieldstore-gribjump", "tests", "python")


def pygribjump_cases(n, md5):
    base = {"class": "od", "expver": "0001", "stream": "oper", "date": "20240101", "time": "0000",
            "domain": "g", "type": "fc", "levtype": "sfc", "param": "167"}
    ni = 1440
    point = 300 * ni + 700
    region = [((300 + r) * ni + 700, (300 + r) * ni + 710) for r in range(10)]
    return {
        "series_1_point": ("per_field", base, [(point, point + 1)]),
        "series_1_point_single": ("single", base, [(point, point + 1)]),
        "series_100_point_region": ("per_field", base, region),
        "series_10000_range": ("per_field", base, [(500_000, 510_000)]),
        "one_point_one_field": ("one", base, [(point, point + 1)]),
    }


def worker(n, md5, cases_path, hashes_path):
    """Answer one measurement per line of standard input."""
    # Replies on the original standard output; everything else written to
    # it (GribJump's and Polytope's prints) goes to standard error.
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    # FIELDSTORE_BENCH_HEAP_BUMP=B: one B-byte block malloc'ed and freed
    # first. glibc then serves blocks up to B from the heap and trims the
    # heap's top only beyond 2B (its dynamic mmap and trim thresholds). In
    # GribJump's process, metkit's static initialiser frees a 15,659,008-byte
    # block when the library loads, which does the same; fieldstore's
    # library frees no such block, so its process keeps glibc's 128 KiB
    # thresholds, and covjsonkit's ~17 MB of JSON decoding per Polytope
    # request is given back to the kernel and faulted in again each time
    # (docs/benchmarks.md). With the same B on both sides, both processes
    # start from the same allocator state.
    bump = int(os.environ.get("FIELDSTORE_BENCH_HEAP_BUMP", "0"))
    if bump:
        block = bytearray(bump)
        del block
    import pygribjump
    from pygribjump import pygribjump as module

    spent = [0.0]
    lib = module.lib
    for name in dir(lib):
        fn = getattr(lib, name)
        if name.startswith("gribjump_") and callable(fn):
            def timed(*a, _fn=fn):
                t = time.perf_counter()
                try:
                    return _fn(*a)
                finally:
                    spent[0] += time.perf_counter() - t
            setattr(lib, name, timed)
    sys.path.insert(0, TESTS)
    import polytope_run
    from polytope_mars.api import PolytopeMars

    gj = pygribjump.GribJump()
    raw = pygribjump_cases(n, md5)
    polytope = {c["name"]: c for c in json.load(open(cases_path))}
    hashes = json.load(open(hashes_path))

    def drain(it):
        total = 0.0
        for r in it:
            for v in r.values:  # the values in NumPy, as Polytope reads them
                total += float(v.sum())
        return total

    def run(name):
        if name in raw:
            how, base, ranges = raw[name]
            if how == "per_field":
                return drain(gj.extract([(dict(base, step=str(s)), ranges, md5) for s in range(n)]))
            if how == "single":
                return drain(gj.extract_single(dict(base, step=[str(s) for s in range(n)]), ranges, md5))
            return drain(gj.extract([(dict(base, step="0"), ranges, md5)]))
        case = polytope[name]
        config = {"datacube": {"type": "gribjump"},
                  "options": polytope_run.options(case["grid"], case.get("md5", hashes[case["grid"]]))}
        return len(json.dumps(PolytopeMars(config).extract(dict(case["request"])), default=str))

    for line in sys.stdin:
        name = line.strip()
        repeat = 25 if raw.get(name, ("",))[0] == "one" else 1
        walls, inside, cpu = [], [], []
        for _ in range(repeat):
            spent[0] = 0.0
            t, c = time.perf_counter(), time.process_time()
            check = run(name)
            walls.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            inside.append(spent[0])
        print(json.dumps({"wall": statistics.median(walls), "library": statistics.median(inside),
                          "cpu": statistics.median(cpu), "check": check}), file=reply, flush=True)
    os._exit(0)  # GribJump 0.13's wheel aborts in an exit-time destructor


def quartiles(xs):
    xs = sorted(xs)
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return q[0], statistics.median(xs), q[2]


def main():
    if sys.argv[1] == "--worker":
        worker(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
        return 0
    reps, n, md5, cases_path, hashes_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    rest = sys.argv[6:]
    cut = [i for i, a in enumerate(rest) if a == "--"]
    envs = {"oracle": rest[cut[0] + 1:cut[1]], "ours": rest[cut[1] + 1:]}
    procs = {}
    for side, words in envs.items():
        env = dict(os.environ)
        for w in words:
            k, v = w.split("=", 1)
            env[k] = v
        for k in [k for k in env if k.startswith(("FDB", "FIELDSTORE_CONFIG", "FIELDSTORE_ROOT", "GRIBJUMP"))
                  and not any(w.startswith(k + "=") for w in words)]:
            del env[k]
        if not any(w.startswith("PYTHONPATH=") for w in words):
            env.pop("PYTHONPATH", None)
        procs[side] = subprocess.Popen([sys.executable, __file__, "--worker", str(n), md5, cases_path, hashes_path],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                       text=True, env=env, cwd=os.path.dirname(os.path.abspath(cases_path)))
    names = list(pygribjump_cases(n, md5)) + [c["name"] for c in json.load(open(cases_path))]
    heap = "same" if any(w.startswith("FIELDSTORE_BENCH_HEAP_BUMP=") for w in envs["ours"]) else "as loaded"

    def ask(side, name):
        p = procs[side]
        p.stdin.write(name + "\n")
        p.stdin.flush()
        line = p.stdout.readline()
        if not line:
            raise SystemExit(f"the {side} worker stopped at {name}")
        return json.loads(line)

    got = {name: {"oracle": [], "ours": []} for name in names}
    for name in names:  # warm: page cache, jump info on first extraction
        for side in procs:
            ask(side, name)
    for rep in range(reps):
        order = ["oracle", "ours"] if rep % 2 == 0 else ["ours", "oracle"]
        for name in names:
            for side in order:
                got[name][side].append(ask(side, name))
    for p in procs.values():
        p.stdin.close()
        p.wait(timeout=60)
    for name in names:
        o, f = got[name]["oracle"], got[name]["ours"]
        row = {"what": name, "reps": reps, "heap": heap,
               "same_values": all(a["check"] == b["check"] for a, b in zip(o, f))}
        for side, xs in (("gribjump", o), ("fieldstore", f)):
            for key in ("wall", "library"):
                row[f"{side}_{key}_ms"] = [round(x * 1e3, 3) for x in quartiles([m[key] for m in xs])]
            # The client's own time: the wall time outside the library.
            row[f"{side}_client_ms"] = [round(x * 1e3, 3) for x in quartiles([m["wall"] - m["library"] for m in xs])]
            # The CPU time of the process, every thread: what load on a
            # shared machine barely moves.
            row[f"{side}_cpu_ms"] = [round(x * 1e3, 3) for x in quartiles([m["cpu"] for m in xs])]
        for key in ("wall", "library", "cpu"):
            row[f"ratio_{key}"] = [round(x, 2) for x in quartiles([a[key] / b[key] for a, b in zip(o, f)])]
        row["fieldstore_slower_wall_reps"] = sum(b["wall"] > a["wall"] for a, b in zip(o, f))
        row["fieldstore_more_cpu_reps"] = sum(b["cpu"] > a["cpu"] for a, b in zip(o, f))
        # The best wall ratio a library taking no time at all would reach.
        row["ratio_wall_ceiling"] = round(row["gribjump_wall_ms"][1] / row["fieldstore_client_ms"][1], 2)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
