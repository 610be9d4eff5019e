#!/usr/bin/env python3
"""The hammer workload against the real ECMWF FDB5, through pyfdb with explicit keys.

Mirrors `fieldstore hammer` (crates/fieldstore-hammer) so the two can be compared in one run:
the same keys (class, expver, stream, date, time, type, levtype, step, number, levelist, param),
the same process layout (process p writes members number + p*nensembles ...), one flush per
(step, member), the same phases (pattern A: write, drop caches, read, list; w+r: populate,
writers alone, drop caches, writers + readers), the same barrier (every worker says "ready" on
stdout after opening FDB, the coordinator sends one byte to all of them at once) and the same
JSON report shape (rows with global timing bandwidth, fields/s and start spread; medians).

Subcommands:
  run        the benchmark (coordinator; spawns worker processes of this script)
  worker     internal: one process (task on stdin)
  params     print the paramIds FDB5 accepts for the base keys (retrieve expands requests
             through metkit, which rejects params unknown for a stream/type/levtype)
  hammer-setup  prepare FDB5's own C++ fdb-hammer: a runnable copy of the wheel's binary (its
             start-up crash worked around, see below) and GRIB templates of 1 MiB and 64 KiB
  hammer-run    pattern A with fdb-hammer itself (keys decoded from the GRIB by ecCodes),
             processes released together by a start file; same JSON shape
  summarise  read fieldstore and FDB5 JSON reports, print ratios, write CSV/JSON and a plot
  replot     redraw the plot from summarise's JSON (docs/bench/compare*.json)

The wheel's fdb-hammer (fdb5lib 5.25.0.33) dies with SIGSEGV before main: it is a non-PIE
executable whose copy relocation of an eckit object lands in its PT_GNU_RELRO segment, which
libeckit's static constructors write after the loader made it read-only. hammer-setup copies it
with that program header turned into PT_NULL (no code changed) and runs it with the wheel's
libraries on LD_LIBRARY_PATH (shared/docs/reference/fdb5-measured.md, caveat 1).

Needs: pyfdb, fdb5lib (pip install pyfdb fdb5lib eccodes); matplotlib for the plot.
"""
import argparse
import csv
import json
import os
import socket
import statistics
import subprocess
import sys
import time

MIB = 1024.0 * 1024.0


def now():
    return time.time()


# ------------------------------------------------------------------------------------------
# plan (same as fieldstore_hammer::plan)
# ------------------------------------------------------------------------------------------

def add_days(date, days):
    import datetime
    d = datetime.date(int(date[:4]), int(date[4:6]), int(date[6:8])) + datetime.timedelta(days=days)
    return d.strftime("%Y%m%d")


def plan(a, rep, writers, readers):
    params = a.params[: a.nparams] if a.params else list(range(1, a.nparams + 1))
    base = {"class": a.klass, "expver": a.expver, "stream": a.stream,
            "date": add_days(a.date, rep), "time": a.time, "type": a.type, "levtype": a.levtype}
    levels = list(range(a.level, a.level + a.nlevels))

    def members(p):
        first = a.number + p * a.nensembles
        return list(range(first, first + a.nensembles))

    def task(role, rank, steps, mem):
        return {"role": role, "rank": rank, "config": a.config, "base": base, "steps": steps,
                "members": mem, "levels": levels, "params": params,
                "field_size": a.field_size, "batch": a.batch,
                "poll_period_ms": getattr(a, "poll_period_ms", 0)}

    def group(name, role, steps, drop):
        return {"name": name, "drop": drop,
                "tasks": [task(role, p, steps, members(p)) for p in range(writers)]}

    ns, s0, drop = a.nsteps, a.step, not a.no_drop_caches
    rng = lambda first, n: list(range(first, first + n))
    if a.scenario == "a":
        return [group("write", "write", rng(s0, ns), False),
                group("read", "read", rng(s0, ns), drop),
                group("list", "list", rng(s0, ns), False)]
    if a.scenario == "write":
        return [group("write", "write", rng(s0, ns), False)]
    if a.scenario == "read":
        return [group("read", "read", rng(s0, ns), drop)]
    if a.scenario == "follow":
        # As fieldstore's --scenario follow: readers follow every member of
        # the steps being written, polling list (FDB5 cannot wait).
        following = rng(s0 + ns, ns)
        everyone = rng(a.number, writers * a.nensembles)
        fol = group("follow", "write", following, False)
        for r in range(readers):
            fol["tasks"].append(task("follow", writers + r, following, everyone))
        return [group("write-alone", "write", rng(s0, ns), False), fol]
    k = max(1, a.read_multiplier)
    populated = rng(s0, ns * k)
    cont = group("wr", "write", rng(s0 + ns * (k + 1), ns), drop)
    for r in range(readers):
        cont["tasks"].append(task("read", writers + r, populated, members(r % max(1, writers))))
    return [group("populate", "write", populated, False),
            group("write-alone", "write", rng(s0 + ns * k, ns), False),
            cont]


# ------------------------------------------------------------------------------------------
# worker
# ------------------------------------------------------------------------------------------

def worker():
    from pathlib import Path
    import pyfdb

    task = json.loads(sys.stdin.readline())
    t_setup = now()
    fdb = pyfdb.FDB(Path(task["config"]))
    base = task["base"]
    ops = {}

    def add(name, t0):
        t1 = time.perf_counter()
        o = ops.setdefault(name, [0.0, 0])
        o[0] += t1 - t0
        o[1] += 1
        return t1

    res = {"rank": task["rank"], "role": task["role"], "host": socket.gethostname(),
           "pid": os.getpid(), "fields": 0, "bytes": 0, "expected": 0, "missing": 0,
           "setup_secs": now() - t_setup}
    data = os.urandom(task["field_size"]) if task["role"] == "write" else None
    steps, members, levels, params = task["steps"], task["members"], task["levels"], task["params"]
    sl = lambda v: [str(x) for x in v]
    if task["role"] == "read":
        if task["batch"] == "all":
            reqs = [(dict(base, step=sl(steps), number=sl(members), levelist=sl(levels),
                          param=sl(params)), len(steps) * len(members) * len(levels) * len(params))]
        else:
            reqs = [(dict(base, step=[str(s)], number=[str(m)], levelist=sl(levels), param=sl(params)),
                     len(levels) * len(params)) for s in steps for m in members]
        buf = bytearray(64 << 20)
        mv = memoryview(buf)
    res["t_ready"] = now()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.buffer.read(1)
    res["t_release"] = now()
    c0 = os.times()
    res["t_first_io"] = now()
    if task["role"] == "write":
        for s in steps:
            for m in members:
                for lev in levels:
                    for p in params:
                        t = time.perf_counter()
                        fdb.archive(data, dict(base, step=str(s), number=str(m), levelist=str(lev),
                                               param=str(p)))
                        add("archive", t)
                        res["fields"] += 1
                        res["bytes"] += len(data)
                t = time.perf_counter()
                fdb.flush()
                add("flush", t)
                res.setdefault("flushed_at", []).append([s, m, now()])
    elif task["role"] == "read":
        for req, expected in reqs:
            t = time.perf_counter()
            dh = fdb.retrieve(req)
            t = add("retrieve", t)
            got = 0
            with dh:
                while True:
                    n = dh.readinto(mv)
                    if not n:
                        break
                    got += n
            add("read", t)
            res["bytes"] += got
            found = got // task["field_size"]
            res["fields"] += found
            res["expected"] += expected
            res["missing"] += max(0, expected - found)
    elif task["role"] == "follow":
        # Poll list of each step until all of it is there, read what is
        # new, note when each (step, member) was first seen.
        per_step = len(members) * len(levels) * len(params)
        res["expected"] = per_step * len(steps)
        seen, got = {}, set()
        deadline = time.time() + 600
        for s in steps:
            req = dict(base, step=[str(s)], number=sl(members), levelist=sl(levels), param=sl(params))
            have = 0
            while have < per_step and time.time() < deadline:
                t = time.perf_counter()
                listed = list(fdb.list(req, level=3))
                at = now()
                t = add("list (poll)", t)
                have = len(listed)
                for el in listed:
                    k = el.combined_key() if hasattr(el, "combined_key") else el["keys"]
                    ident = (int(k["step"]), int(k["number"]), k["levelist"], k["param"])
                    if ident in got:
                        continue
                    got.add(ident)
                    seen.setdefault((ident[0], ident[1]), at)
                    t = time.perf_counter()
                    with el.data_handle as dh:
                        n = len(dh.read())
                    add("read", t)
                    res["fields"] += 1
                    res["bytes"] += n
                if have < per_step and task["poll_period_ms"]:
                    time.sleep(task["poll_period_ms"] / 1000)
        res["missing"] = res["expected"] - res["fields"]
        res["seen_at"] = sorted(([st, m, t] for (st, m), t in seen.items()), key=lambda x: x[2])
    else:
        first = True
        for s in steps:
            req = dict(base, step=[str(s)], number=sl(members), levelist=sl(levels), param=sl(params))
            t = time.perf_counter()
            n = sum(1 for _ in fdb.list(req, level=3))
            add("list (first)" if first else "list", t)
            first = False
            expected = len(members) * len(levels) * len(params)
            res["fields"] += n
            res["expected"] += expected
            res["missing"] += max(0, expected - n)
    res["t_last_io"] = now()
    c1 = os.times()
    res["cpu_user"] = c1.user - c0.user
    res["cpu_sys"] = c1.system - c0.system
    res["ops"] = {k: {"secs": v[0], "calls": v[1]} for k, v in ops.items()}
    sys.stdout.write(json.dumps(res) + "\n")
    sys.stdout.flush()


# ------------------------------------------------------------------------------------------
# coordinator
# ------------------------------------------------------------------------------------------

def drop_caches():
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def machine_busy():
    """CPU seconds the machine was busy since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v[i] for i in (0, 1, 2, 5, 6, 7) if i < len(v)) / os.sysconf("SC_CLK_TCK")


def run_group(tasks, before_release=None):
    """Start one process per task, wait until all are ready (store open), call
    before_release (the page-cache drop of cold phases, right before the start, as
    fieldstore-hammer does), then release them together."""
    env = dict(os.environ)
    procs = []
    try:
        for t in tasks:
            p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "worker"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
            p.stdin.write((json.dumps(t) + "\n").encode())
            p.stdin.flush()
            procs.append(p)
        for i, p in enumerate(procs):
            line = p.stdout.readline().decode()
            if line.strip() != "ready":
                raise RuntimeError(f"worker {i}: {line!r} instead of ready")
        if before_release:
            before_release()
        busy0, t0 = machine_busy(), time.time()
        for p in procs:
            p.stdin.write(b"g")
            p.stdin.flush()
        out = []
        for i, p in enumerate(procs):
            line = p.stdout.readline().decode()
            if not line:
                raise RuntimeError(f"worker {i} died")
            out.append(json.loads(line))
        busy, elapsed = machine_busy() - busy0, time.time() - t0
        for i, p in enumerate(procs):
            if p.wait() != 0:
                raise RuntimeError(f"worker {i} exited with {p.returncode}")
        own = sum(p["cpu_user"] + p["cpu_sys"] for p in out)
        others = min(100.0, max(0.0, busy - own) / (elapsed * os.cpu_count()) * 100) if elapsed >= 0.2 else None
        return out, others
    except BaseException:
        for p in procs:
            if p.poll() is None:
                p.kill()
        raise


def spread(v):
    return max(v) - min(v) if v else 0.0


def row(phase, procs):
    t0 = min(p["t_first_io"] for p in procs)
    t1 = max(p["t_last_io"] for p in procs)
    w = t1 - t0
    fields = sum(p["fields"] for p in procs)
    nbytes = sum(p["bytes"] for p in procs)
    ops = {}
    for p in procs:
        for k, o in p["ops"].items():
            e = ops.setdefault(k, {"secs": 0.0, "calls": 0})
            e["secs"] += o["secs"]
            e["calls"] += o["calls"]
    return {"phase": phase, "procs": len(procs), "fields": fields, "bytes": nbytes, "window_s": w,
            "gtb_mib_s": nbytes / MIB / w if nbytes and w > 0 else None,
            "fields_per_s": fields / w if w > 0 else None,
            "start_spread_ms": spread([p["t_first_io"] for p in procs]) * 1e3,
            "release_spread_ms": spread([p["t_release"] for p in procs]) * 1e3,
            "cpu_s": sum(p["cpu_user"] + p["cpu_sys"] for p in procs),
            "missing": sum(p["missing"] for p in procs), "ops": ops,
            "process_s": sum(p["t_last_io"] - p["t_first_io"] for p in procs),
            "per_process": procs}


def latency(writers, followers):
    """Flush-to-visible latency as fieldstore_hammer::report::Latency."""
    done = {(s, m): t for w in writers for s, m, t in w.get("flushed_at", [])}
    ms, before = [], 0
    for f in followers:
        for s, m, t in f.get("seen_at", []):
            if (s, m) in done:
                d = (t - done[(s, m)]) * 1000.0
                before += d < 0
                ms.append(max(0.0, d))
    if not ms:
        return None
    ms.sort()
    at = lambda q: ms[round((len(ms) - 1) * q)]
    return {"samples": len(ms), "p50_ms": at(0.5), "p99_ms": at(0.99), "max_ms": ms[-1],
            "before_return": before}


def summarise_values(v):
    v = sorted(x for x in v if x is not None)
    if not v:
        return None
    med = statistics.median(v)
    return {"n": len(v), "median": med, "min": v[0], "max": v[-1],
            "spread_pct": (v[-1] - v[0]) / med * 100 if med else 0.0}


def run(a):
    writers = max(1, a.processes)
    readers = a.readers or writers
    report = {"system": "fdb5-pyfdb", "scenario": a.scenario, "processes": writers,
              "readers": readers if a.scenario in ("wr", "follow") else 0, "field_bytes": a.field_size,
              "load_before": open("/proc/loadavg").read().split()[:3], "repetitions": []}
    for rep in range(a.repetitions):
        r = {"index": rep, "rows": [], "caches_dropped": None}
        for g in plan(a, rep, writers, readers):
            def drop():
                r["caches_dropped"] = drop_caches()
            res, others = run_group(g["tasks"], drop if g["drop"] else None)
            if g["name"] == "wr":
                new = [row("wr-write", [p for p in res if p["role"] == "write"]),
                       row("wr-read", [p for p in res if p["role"] == "read"])]
            elif g["name"] == "follow":
                w = [p for p in res if p["role"] == "write"]
                f = [p for p in res if p["role"] == "follow"]
                fr = row("follow-read", f)
                fr["latency"] = latency(w, f)
                new = [row("follow-write", w), fr]
            else:
                new = [row(g["name"], res)]
            for rw in new:
                rw["others_cpu_pct"] = others
            r["rows"].extend(new)
        report["repetitions"].append(r)
    report["load_after"] = open("/proc/loadavg").read().split()[:3]
    phases = []
    for rep in report["repetitions"]:
        for rw in rep["rows"]:
            if rw["phase"] not in phases:
                phases.append(rw["phase"])
    report["summary"] = [
        {"phase": ph,
         "gtb_mib_s": summarise_values([rw["gtb_mib_s"] for rep in report["repetitions"]
                                        for rw in rep["rows"] if rw["phase"] == ph]),
         "fields_per_s": summarise_values([rw["fields_per_s"] for rep in report["repetitions"]
                                           for rw in rep["rows"] if rw["phase"] == ph]),
         "max_start_spread_ms": max(rw["start_spread_ms"] for rep in report["repetitions"]
                                    for rw in rep["rows"] if rw["phase"] == ph)}
        for ph in phases]
    report["problems"] = [f"rep {rep['index']} {rw['phase']}: {rw['missing']} fields missing"
                          for rep in report["repetitions"] for rw in rep["rows"] if rw["missing"]]
    text = json.dumps(report, indent=1)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text)
    for s in report["summary"]:
        g, fps = s["gtb_mib_s"], s["fields_per_s"]
        print(f"fdb5 {a.scenario} P={writers} {s['phase']:<12} "
              f"{(g or {}).get('median', 0):10.1f} MiB/s {(fps or {}).get('median', 0):10.0f} fields/s "
              f"spread {s['max_start_spread_ms']:.2f} ms")
    for p in report["problems"]:
        print("PROBLEM:", p)
    return 1 if report["problems"] else 0


def probe_params(a):
    from pathlib import Path
    import pyfdb
    fdb = pyfdb.FDB(Path(a.config))
    base = {"class": a.klass, "expver": a.expver, "stream": a.stream, "date": a.date,
            "time": a.time, "type": a.type, "levtype": a.levtype}
    ok = []
    for p in range(1, 1000):
        try:
            with fdb.retrieve(dict(base, step="0", number="1", levelist="1", param=str(p))) as dh:
                dh.read()
            ok.append(p)
        except Exception:
            pass
        if len(ok) >= a.nparams:
            break
    print(",".join(map(str, ok)))


# ------------------------------------------------------------------------------------------
# FDB5's C++ fdb-hammer
# ------------------------------------------------------------------------------------------

PT_GNU_RELRO = 0x6474E552


def wheel_dirs():
    import fdb5lib
    site = os.path.dirname(os.path.dirname(fdb5lib.__file__))
    libs = [os.path.join(site, d, "lib64") for d in ("fdb5lib", "metkitlib", "eckitlib", "eccodeslib")]
    return os.path.join(site, "fdb5lib", "bin", "fdb-hammer"), [d for d in libs if os.path.isdir(d)]


def unrelro(src, dst):
    """Copy an ELF64 executable with its PT_GNU_RELRO program header set to PT_NULL."""
    import struct
    b = bytearray(open(src, "rb").read())
    if b[:4] != b"\x7fELF" or b[4] != 2:
        raise SystemExit(f"{src}: not an ELF64 file")
    phoff = struct.unpack_from("<Q", b, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", b, 54)
    n = 0
    for i in range(phnum):
        off = phoff + i * phentsize
        if struct.unpack_from("<I", b, off)[0] == PT_GNU_RELRO:
            struct.pack_into("<I", b, off, 0)
            n += 1
    with open(dst, "wb") as f:
        f.write(b)
    os.chmod(dst, 0o755)
    return n


def make_template(path, ni, nj):
    """An ensemble (type=pf, stream=enfo) GRIB2 field on a ni x nj grid, 16 bits per value."""
    import eccodes
    import numpy as np
    h = eccodes.codes_grib_new_from_samples("regular_ll_pl_grib2")
    for k, v in (("setLocalDefinition", 1), ("localDefinitionNumber", 1), ("class", "od"),
                 ("stream", "enfo"), ("type", "pf"), ("expver", "0001"),
                 ("productDefinitionTemplateNumber", 1), ("number", 1),
                 ("numberOfForecastsInEnsemble", 51), ("Ni", ni), ("Nj", nj),
                 ("latitudeOfFirstGridPointInDegrees", 90.0),
                 ("latitudeOfLastGridPointInDegrees", -90.0),
                 ("longitudeOfFirstGridPointInDegrees", 0.0),
                 ("longitudeOfLastGridPointInDegrees", 360.0 - 360.0 / ni),
                 ("iDirectionIncrementInDegrees", 360.0 / ni),
                 ("jDirectionIncrementInDegrees", 180.0 / (nj - 1)), ("bitsPerValue", 16)):
        if isinstance(v, str):
            eccodes.codes_set_string(h, k, v)
        else:
            eccodes.codes_set(h, k, v)
    eccodes.codes_set_values(h, np.random.default_rng(7).random(ni * nj) * 50.0 + 250.0)
    with open(path, "wb") as f:
        eccodes.codes_write(h, f)
    eccodes.codes_release(h)
    return os.path.getsize(path)


def hammer_setup(a):
    os.makedirs(a.out, exist_ok=True)
    src, libs = wheel_dirs()
    exe = os.path.join(a.out, "fdb-hammer")
    n = unrelro(src, exe)
    with open(os.path.join(a.out, "ld_library_path"), "w") as f:
        f.write(":".join(libs))
    sizes = {name: make_template(os.path.join(a.out, f"tmpl_{name}.grib"), ni, nj)
             for name, (ni, nj) in {"1m": (1024, 512), "64k": (256, 128)}.items()}
    print(f"{exe} ({n} RELRO header(s) disabled); templates {sizes}")


def parse_hammer(text):
    import re
    num = lambda pat: [float(x) for x in re.findall(pat, text)]
    first = lambda pats: next((v[0] for v in (num(p) for p in pats) if v), None)
    return {"fields": int(first([r"Fields (?:written|read|listed): (\d+)"]) or 0),
            "bytes": int(first([r"Bytes (?:written|read): (\d+)"]) or 0),
            "t0": first([r"Timestamp before first IO: ([0-9.]+)"]),
            "t1": first([r"Timestamp after last IO: ([0-9.]+)"]),
            "list_s": first([r"List duration: ([0-9.eE+-]+)"]),
            "grib_s": first([r"GRIB duration: ([0-9.eE+-]+)"]),
            "writing_s": first([r"Writing duration: ([0-9.eE+-]+)"]),
            "read_s": first([r"Data read duration: ([0-9.eE+-]+)"])}


def hammer_group(a, mode, procs, before_release=None):
    exe = os.path.join(a.setup, "fdb-hammer")
    ldp = open(os.path.join(a.setup, "ld_library_path")).read().strip()
    env = dict(os.environ, FDB5_CONFIG_FILE=a.config,
               LD_LIBRARY_PATH=ldp + (":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else ""))
    go = os.path.join(a.setup, f".go.{os.getpid()}")
    if os.path.exists(go):
        os.remove(go)
    ps = []
    for i in range(procs):
        cmd = [exe, f"--expver={a.expver}", f"--class={a.klass}", f"--nsteps={a.nsteps}",
               f"--nlevels={a.nlevels}", f"--nparams={a.nparams}", "--nensembles=1",
               f"--number={a.number + i}", "--no-randomise-data"]
        cmd += {"write": [], "read": ["--read"], "list": ["--list"]}[mode]
        cmd.append(a.template)
        # Each process waits for the start file, then becomes fdb-hammer (exec).
        wait = ("import os, sys, time\n"
                "while not os.path.exists(sys.argv[1]): time.sleep(0.0005)\n"
                "os.execv(sys.argv[2], sys.argv[2:])\n")
        ps.append(subprocess.Popen([sys.executable, "-c", wait, go] + cmd, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    import resource
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    time.sleep(0.3)
    if before_release:
        before_release()
    busy0, t0 = machine_busy(), time.time()
    open(go, "w").close()
    outs = [p.communicate()[0].decode(errors="replace") for p in ps]
    busy, elapsed = machine_busy() - busy0, time.time() - t0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    # Whole processes (start-up, FDB open, template read included): fdb-hammer has no own CPU timer.
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    os.remove(go)
    for p, o in zip(ps, outs):
        if p.returncode != 0:
            raise RuntimeError(f"fdb-hammer failed ({p.returncode}):\n{o[-2000:]}")
    procs_out = []
    for i, o in enumerate(outs):
        h = parse_hammer(o)
        if h["t0"] is None:           # list prints only a duration
            h["t0"], h["t1"] = 0.0, h["list_s"] or 0.0
        ops = {}
        for k, name in (("grib_s", "grib (ecCodes)"), ("writing_s", "archive+flush"), ("read_s", "retrieve+read"),
                        ("list_s", "list")):
            if h[k] is not None:
                ops[name] = {"secs": h[k], "calls": 1}
        procs_out.append({"rank": i, "role": mode, "fields": h["fields"], "bytes": h["bytes"],
                          "t_first_io": h["t0"], "t_last_io": h["t1"], "t_release": h["t0"],
                          "cpu_user": cpu if i == 0 else 0.0, "cpu_sys": 0.0, "missing": 0, "ops": ops})
    others = min(100.0, max(0.0, busy - cpu) / (elapsed * os.cpu_count()) * 100) if elapsed >= 0.2 else None
    return procs_out, others, elapsed


def hammer_run(a):
    procs = max(1, a.processes)
    report = {"system": "fdb-hammer", "scenario": "a", "processes": procs, "repetitions": []}
    for rep in range(a.repetitions):
        r = {"index": rep, "rows": []}
        for mode in ("write", "read", "list"):
            def drop():
                r["caches_dropped"] = drop_caches()
            cold = mode == "read" and not a.no_drop_caches
            res, others, _ = hammer_group(a, mode, procs, drop if cold else None)
            rw = row(mode, res)
            rw["others_cpu_pct"] = others
            if mode == "list":            # no timestamps: the window is the longest list
                rw["gtb_mib_s"] = None
            if mode == "read" and rw["bytes"] == 0:
                report.setdefault("problems", []).append(f"rep {rep}: fdb-hammer read nothing")
            r["rows"].append(rw)
        report["repetitions"].append(r)
    phases = ["write", "read", "list"]
    report["summary"] = [
        {"phase": ph,
         "gtb_mib_s": summarise_values([rw["gtb_mib_s"] for rep in report["repetitions"]
                                        for rw in rep["rows"] if rw["phase"] == ph]),
         "fields_per_s": summarise_values([rw["fields_per_s"] for rep in report["repetitions"]
                                           for rw in rep["rows"] if rw["phase"] == ph]),
         "max_start_spread_ms": max(rw["start_spread_ms"] for rep in report["repetitions"]
                                    for rw in rep["rows"] if rw["phase"] == ph)}
        for ph in phases]
    report.setdefault("problems", [])
    with open(a.json, "w") as f:
        json.dump(report, f, indent=1)
    for s in report["summary"]:
        g, fps = s["gtb_mib_s"], s["fields_per_s"]
        print(f"fdb-hammer a P={procs} {s['phase']:<6} {(g or {}).get('median', 0):10.1f} MiB/s "
              f"{(fps or {}).get('median', 0):10.0f} fields/s spread {s['max_start_spread_ms']:.2f} ms")
    return 1 if report["problems"] else 0


# ------------------------------------------------------------------------------------------
# summarise: both systems side by side
# ------------------------------------------------------------------------------------------

def summarise(a):
    """Reports are named <system>_<size>_<pattern>_P<n>[_r<k>].json; repetitions of one
    configuration may be spread over several files (interleaved runs)."""
    groups = {}
    paired = {}   # (size, pattern, procs, phase, rep) -> {system: fields/s}
    for path in a.reports:
        rep = json.load(open(path))
        parts = os.path.basename(path)[:-5].split("_")
        system, size, pattern, p = parts[:4]
        k = parts[4] if len(parts) > 4 else "r1"
        procs = int(p[1:])
        g = groups.setdefault((system, size, pattern, procs), {"rows": [], "problems": 0})
        g["problems"] += len(rep.get("problems", []))
        if system == "bare":
            # `--scenario bare`: the write phase's bytes and fdatasyncs with no store, so
            # that fieldstore's write phase pairs with the disk's ceiling of its own run.
            for r in rep["repetitions"]:
                for rw in r["rows"]:
                    if rw["phase"] == "bare-write":
                        rw["phase"] = "write"
        for i, r in enumerate(rep["repetitions"]):
            whole = whole_run(r["rows"])
            rows_i = r["rows"] + ([whole] if whole else [])
            g["rows"].extend(rows_i)
            for rw in rows_i:
                if rw["fields_per_s"]:
                    paired.setdefault((size, pattern, procs, rw["phase"], f"{k}.{i}"), {})[system] = \
                        rw["fields_per_s"]
    rows = []
    for (system, size, pattern, procs), g in groups.items():
        phases = []
        for r in g["rows"]:
            if r["phase"] not in phases:
                phases.append(r["phase"])
        for ph in phases:
            rr = [r for r in g["rows"] if r["phase"] == ph]
            gtb = summarise_values([r["gtb_mib_s"] for r in rr])
            fps = summarise_values([r["fields_per_s"] for r in rr])
            fields = sum(r["fields"] for r in rr) or 1
            ops = {}
            for r in rr:
                for k, o in r["ops"].items():
                    ops[k] = ops.get(k, 0.0) + o["secs"]
            others = [r.get("others_cpu_pct") for r in rr if r.get("others_cpu_pct") is not None]
            rows.append({"system": system, "size": size, "pattern": pattern, "procs": procs,
                         "phase": ph,
                         "mib_s": (gtb or {}).get("median"), "mib_s_min": (gtb or {}).get("min"),
                         "mib_s_max": (gtb or {}).get("max"), "fields_s": (fps or {}).get("median"),
                         "spread_pct": (fps or {}).get("spread_pct"), "reps": (fps or {}).get("n"),
                         "start_spread_ms": max(r["start_spread_ms"] for r in rr),
                         "others_cpu_pct": statistics.median(others) if others else None,
                         "cpu_s_per_gib": sum(r["cpu_s"] for r in rr) / max(1, sum(r["bytes"] for r in rr)) * 2**30
                         if any(r["bytes"] for r in rr) else None,
                         "us_per_field": {k: v / fields * 1e6 for k, v in sorted(ops.items())},
                         "problems": g["problems"]})
    pr = {}
    for (size, pattern, procs, phase, _), v in paired.items():
        for ours, theirs in PAIRS:
            if ours in v and theirs in v:
                pr.setdefault((ours, theirs), {}).setdefault((size, pattern, procs, phase), []).append(
                    v[ours] / v[theirs])
    with open(a.csv, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    key = lambda r: (r["size"], r["pattern"], r["procs"], r["phase"])
    tables, ratios = [], []
    for ours, theirs in PAIRS:
        t, rr = ratio_table(rows, pr.get((ours, theirs), {}), key, ours, theirs)
        if rr:
            tables.append(t)
            ratios.extend(rr)
    table = "\n\n".join(tables)
    print(table)
    with open(a.out_json, "w") as fh:
        json.dump({"rows": rows, "ratios": ratios, "table": table}, fh, indent=1)
    if a.plot:
        plot(rows, a.plot)


# (ours, theirs) pairs of systems whose ratios are printed: FDB5 through pyfdb; FDB5's own
# fdb-hammer; bare writes of the same bytes and flushes (the share of the disk's ceiling).
PAIRS = (("fieldstore", "fdb5"), ("fieldstoretmpl", "fdbhammer"), ("fieldstore", "bare"))


def whole_run(rows):
    """One row for all the I/O phases of a repetition (lists excepted): bytes and fields
    summed, over the windows summed. On this VM the cost of first touching a page the host
    has reclaimed (free page reporting) lands on whichever phase allocates it, so single
    phases swing both ways between repetitions; the whole run shows what each system needs
    for the same work."""
    io = [r for r in rows if r["phase"] != "list" and r["window_s"]]
    if len(io) < 2:
        return None
    t = sum(r["window_s"] for r in io)
    fields = sum(r["fields"] for r in io)
    nbytes = sum(r["bytes"] for r in io)
    ops = {}
    for r in io:
        for k, o in r["ops"].items():
            ops.setdefault(k, {"secs": 0.0, "calls": 0})
            ops[k]["secs"] += o["secs"]
            ops[k]["calls"] += o["calls"]
    others = [r["others_cpu_pct"] for r in io if r.get("others_cpu_pct") is not None]
    return {"phase": "whole run", "fields": fields, "bytes": nbytes, "window_s": t,
            "gtb_mib_s": nbytes / t / 2**20, "fields_per_s": fields / t,
            "start_spread_ms": max(r["start_spread_ms"] for r in io),
            "cpu_s": sum(r["cpu_s"] for r in io), "ops": ops,
            "others_cpu_pct": statistics.median(others) if others else None}


def ratio_table(rows, pr, key, ours, theirs):
    fs = {key(r): r for r in rows if r["system"] == ours}
    fdb = {key(r): r for r in rows if r["system"] == theirs}
    ratios = []
    lines = [f"| field | pattern | P | phase | {ours} MiB/s | {theirs} MiB/s | {ours} fields/s | "
             f"{theirs} fields/s | ratio of medians | paired ratio median (min-max) | CPU s/GiB ours / theirs | "
             "others' CPU % ours / theirs |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    order = {"write": 0, "read": 1, "list": 2, "populate": 3, "write-alone": 4, "wr-write": 5, "wr-read": 6,
             "whole run": 7}
    for k in sorted(set(fs) & set(fdb), key=lambda k: (k[0] != "1m", k[1], k[2], order.get(k[3], 9))):
        r1, r2 = fs[k], fdb[k]
        ratio = (r1["fields_s"] / r2["fields_s"]) if r1["fields_s"] and r2["fields_s"] else None
        pv = pr.get(k, [])
        pmed = statistics.median(pv) if pv else None
        ratios.append({"size": k[0], "pattern": k[1], "procs": k[2], "phase": k[3], "ratio": ratio,
                       "paired_ratio_median": pmed, "paired_ratios": pv, "ours": ours, "theirs": theirs,
                       "fieldstore": r1, "fdb5": r2})
        f = lambda v, d=1: "-" if v is None else f"{v:,.{d}f}"
        prange = f"{min(pv):.2f}-{max(pv):.2f}" if pv else "-"
        lines.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {f(r1['mib_s'])} | {f(r2['mib_s'])} | "
                     f"{f(r1['fields_s'], 0)} | {f(r2['fields_s'], 0)} | {f(ratio, 2)}x | "
                     f"**{f(pmed, 2)}x** ({prange}) | "
                     f"{f(r1['cpu_s_per_gib'], 2)} / {f(r2['cpu_s_per_gib'], 2)} | "
                     f"{f(r1['others_cpu_pct'], 0)} / {f(r2['others_cpu_pct'], 0)} |")
    title = {"fdb5": "fieldstore vs FDB5 (pyfdb, explicit keys)",
             "bare": "fieldstore vs bare writes of the same bytes and fdatasyncs, no store "
                     "(the disk's ceiling for this workload)"}.get(theirs, f"{ours} vs {theirs}")
    return f"{title}\n\n" + "\n".join(lines), ratios


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
        return
    panels = [("1m", "a", ["write", "read"]), ("1m", "wr", ["wr-write", "wr-read"]),
              ("64k", "a", ["write", "read"]), ("64k", "wr", ["wr-write", "wr-read"])]
    # One colour per system, one line style per phase (first phase solid, second dashed): the
    # eye groups by colour first, so which system is which reads at a glance. The bare writes
    # (a write-phase ceiling, no store) are grey and dotted.
    colours = {"fieldstore": "tab:blue", "fdb5": "tab:red", "bare": "tab:gray"}
    markers = {"fieldstore": "o", "fdb5": "s", "bare": "^"}
    offsets = {"fieldstore": -0.04, "fdb5": 0.04, "bare": 0.0}
    fig, axs = plt.subplots(2, 2, figsize=(11, 8))
    for ax, (size, pattern, phases) in zip(axs.flat, panels):
        for system in ("fieldstore", "fdb5", "bare"):
            for ph, style in zip(phases, ("-", "--")):
                pts = sorted((r["procs"], r["mib_s"], r["mib_s_min"], r["mib_s_max"]) for r in rows
                             if r["system"] == system and r["size"] == size
                             and r["pattern"] == pattern and r["phase"] == ph and r["mib_s"])
                if pts:
                    xs = [p[0] + offsets[system] for p in pts]
                    ys = [p[1] for p in pts]
                    err = [[p[1] - p[2] for p in pts], [p[3] - p[1] for p in pts]]
                    ax.errorbar(xs, ys, yerr=err, fmt=":" if system == "bare" else style,
                                marker=markers[system], color=colours[system], capsize=3,
                                alpha=0.9, label=f"{system} {ph}" if system != "bare"
                                else "bare writes, no store (disk's ceiling)")
        ax.set_title(f"{'1 MiB' if size == '1m' else '64 KiB'} fields, "
                     f"{'pattern A' if pattern == 'a' else 'w+r contention'}")
        ax.set_xlabel("processes" + (" (writers + readers)" if pattern == "wr" else ""))
        ax.set_ylabel("global timing bandwidth, MiB/s")
        ax.set_xticks([2, 4] if pattern == "wr" else [1, 2, 4])
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8, handlelength=4)
    fig.suptitle("fieldstore vs FDB5 (pyfdb, explicit keys): same workload, same run "
                 "(median, bars: min-max of the repetitions)")
    fig.tight_layout()
    fig.savefig(path)
    print(f"plot: {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("worker")
    for name in ("run", "params"):
        p = sub.add_parser(name)
        p.add_argument("--config", required=True, help="FDB5 config YAML")
        p.add_argument("--scenario", choices=["a", "wr", "write", "read", "follow"], default="a")
        p.add_argument("--poll-period-ms", type=int, default=0)
        p.add_argument("--processes", type=int, default=1)
        p.add_argument("--readers", type=int)
        p.add_argument("--nsteps", type=int, default=1)
        p.add_argument("--step", type=int, default=0)
        p.add_argument("--nlevels", type=int, default=1)
        p.add_argument("--level", type=int, default=0)
        p.add_argument("--nparams", type=int, default=1)
        p.add_argument("--params", type=lambda s: [int(x) for x in s.split(",") if x], default=[])
        p.add_argument("--nensembles", type=int, default=1)
        p.add_argument("--number", type=int, default=1)
        p.add_argument("--class", dest="klass", default="od")
        p.add_argument("--expver", default="xxxx")
        p.add_argument("--stream", default="enfo")
        p.add_argument("--date", default="20240101")
        p.add_argument("--time", default="0000")
        p.add_argument("--type", default="pf")
        p.add_argument("--levtype", default="pl")
        p.add_argument("--field-size", type=int, default=1 << 20)
        p.add_argument("--read-multiplier", type=int, default=4)
        p.add_argument("--batch", choices=["step", "all"], default="step")
        p.add_argument("--repetitions", type=int, default=1)
        p.add_argument("--no-drop-caches", action="store_true")
        # fieldstore-hammer's opt-in spelling, accepted so that one argument list
        # serves both harnesses (this one drops unless --no-drop-caches).
        p.add_argument("--drop-caches", action="store_true")
        p.add_argument("--json")
    hs = sub.add_parser("hammer-setup")
    hs.add_argument("--out", required=True)
    hr = sub.add_parser("hammer-run")
    hr.add_argument("--setup", required=True, help="the hammer-setup directory")
    hr.add_argument("--config", required=True)
    hr.add_argument("--template", required=True)
    hr.add_argument("--processes", type=int, default=1)
    hr.add_argument("--nsteps", type=int, default=1)
    hr.add_argument("--nlevels", type=int, default=1)
    hr.add_argument("--nparams", type=int, default=1)
    hr.add_argument("--number", type=int, default=1)
    hr.add_argument("--class", dest="klass", default="od")
    hr.add_argument("--expver", default="hamm")
    hr.add_argument("--repetitions", type=int, default=1)
    hr.add_argument("--no-drop-caches", action="store_true")
    hr.add_argument("--drop-caches", action="store_true")
    hr.add_argument("--json", required=True)
    s = sub.add_parser("summarise")
    s.add_argument("--csv", required=True)
    s.add_argument("--out-json", required=True)
    s.add_argument("--plot")
    s.add_argument("reports", nargs="+")
    rp = sub.add_parser("replot", help="redraw the plot from a summary JSON (summarise --out-json)")
    rp.add_argument("summary")
    rp.add_argument("--plot", required=True)
    a = ap.parse_args()
    if a.cmd == "worker":
        worker()
    elif a.cmd == "params":
        probe_params(a)
    elif a.cmd == "run":
        sys.exit(run(a))
    elif a.cmd == "hammer-setup":
        hammer_setup(a)
    elif a.cmd == "hammer-run":
        sys.exit(hammer_run(a))
    elif a.cmd == "replot":
        with open(a.summary) as fh:
            plot(json.load(fh)["rows"], a.plot)
    else:
        summarise(a)


if __name__ == "__main__":
    main()
