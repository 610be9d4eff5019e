"""FDB5's remote protocol, server against server, on loopback: FDB5's own client (the wheel's
fdb-hammer, and pyfdb 5.25 for one field's round trip) against FDB5's `fdb-server` and against
`fieldstore serve`, side by side in one run, same disk, same roots layout.

Per server kind, per repetition (the kinds interleaved, the order alternating), fresh servers on a
fresh root: FDB5's catalogue server and store server (two processes, `serverThreaded: true`
so that neither forks per connection), or one `fieldstore serve` serving both roles, then

  write  P fdb-hammer processes archive+flush NSTEPS x NLEVELS x NPARAMS fields each
  read   the same processes retrieve them (page cache warm: the servers' work, not the disk's)
  list   the same processes list them
  rtt    one pyfdb process retrieves one small field N times: p50/p90 of the round trip

and the servers' CPU (utime+stime from /proc, every server process) per phase, per GiB moved.

Prints a table with ratios (fieldstore / FDB5) and writes a JSON report.

Usage (bench/serve/run.sh sets up the venv and builds fieldstore):
  serve_bench.py --work DIR --fieldstore BIN [--kinds fdb5,fieldstore] [--sizes 64k,1m]
                 [--procs 1,4] [--reps 3] [--wl "2 10 10"] [--rtt 300] --json OUT
"""

import argparse
import importlib.util
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# The fdb-hammer runner of the FDB5 comparison (process groups released together, output parsed).
_spec = importlib.util.spec_from_file_location("hammerlib", os.path.join(REPO, "bench", "fdb5_pyfdb_hammer.py"))
hammerlib = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hammerlib)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, what, timeout=20.0):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}; see its log")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} is not listening on {port} after {timeout} s")


def cpu_secs(pid):
    """utime + stime of a process, seconds (/proc/<pid>/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Servers:
    """A catalogue server and a store server of one kind on a fresh root."""

    def __init__(self, kind, work, schema, fieldstore, ld_library_path, fdb_server):
        self.kind, self.dir = kind, os.path.join(work, kind)
        shutil.rmtree(self.dir, ignore_errors=True)
        root = os.path.join(self.dir, "root")
        os.makedirs(root)
        cport, sport = free_port(), free_port()
        common = (f"engine: toc\nstore: file\nschema: {schema}\nserverThreaded: true\n"
                  f"spaces: [{{handler: Default, roots: [{{path: {root}}}]}}]\n")
        # No dataPortStart/dataPortCount: FDB5's server takes a port of that range per data
        # connection and, here, ran out of them ("Data ports exhausted") and hung its clients.
        configs = {
            "catalogue": f"type: catalogue\nserverPort: {cport}\n"
                         f"stores: [{{default: \"localhost:{sport}\"}}]\n" + common,
            "store": f"type: store\nserverPort: {sport}\n" + common,
        }
        self.client = os.path.join(self.dir, "client.yaml")
        with open(self.client, "w") as f:
            f.write(f"type: remote\nengine: remote\nstore: remote\nhost: localhost\nport: {cport}\n")
        # fieldstore's own client: the same, with its time-out (FDB5's tools refuse unknown keys).
        self.fs_client = os.path.join(self.dir, "fs-client.yaml")
        with open(self.fs_client, "w") as f:
            f.write(f"type: remote\nhost: localhost\nport: {cport}\ntimeout: 120\n")
        env = dict(os.environ, LD_LIBRARY_PATH=ld_library_path)
        self.procs = []
        # FDB5: a store server and a catalogue server. fieldstore serves both roles from one
        # process (the catalogue config, whose `stores:` names its own store port).
        roles = (("store", sport), ("catalogue", cport)) if kind == "fdb5" else (("catalogue", cport),)
        for role, port in roles:
            path = os.path.join(self.dir, f"{role}.yaml")
            with open(path, "w") as f:
                f.write(configs[role])
            cmd = [fdb_server] if kind == "fdb5" else [fieldstore, "serve", "--config", path]
            log = open(os.path.join(self.dir, f"{role}.log"), "w")
            p = subprocess.Popen(cmd, env=dict(env, FDB5_CONFIG_FILE=path), stdout=log, stderr=subprocess.STDOUT)
            self.procs.append(p)
            wait_listening(port, p, f"{kind} {role} server")
        if kind != "fdb5":
            wait_listening(sport, self.procs[0], f"{kind} store port")

    def cpu(self):
        return sum(cpu_secs(p.pid) for p in self.procs)

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def fs_hammer_group(a, hammer, client, mode, procs):
    """fieldstore's own client: fieldstore-hammer with a `type: remote` config, the same workload
    as fdb-hammer's (same template bytes, keys, counts; one retrieve per field as fdb-hammer does),
    P processes released together by its barrier. Returns the phase's fields/s, fields and bytes."""
    cmd = [hammer, "--config", client, f"--class={a.klass}", f"--expver={a.expver}",
           f"--nsteps={a.nsteps}", f"--nlevels={a.nlevels}", f"--nparams={a.nparams}",
           "--nensembles=1", f"--number={a.number}", f"--processes={procs}",
           f"--template={a.template}", "--no-randomise-data", "--no-drop-caches", "--batch=field", "--json"]
    cmd += {"write": [], "read": ["--read"], "list": ["--list"]}[mode]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"fieldstore-hammer {mode} failed:\n{r.stderr[-3000:]}")
    d = json.loads(r.stdout)
    row = next(x for x in d["summary"] if x["phase"] == mode)
    fields = int(a.nsteps) * int(a.nlevels) * int(a.nparams) * procs
    return row["fields_per_s"]["median"], fields, fields * os.path.getsize(a.template)


def fs_rtt(python, client, n):
    """fieldstore's own client through its Python package: as `rtt`, seconds per round trip."""
    code = r"""
import json, sys, time
import fieldstore
fdb = fieldstore.FDB(sys.argv[1])
el = list(fdb.list({"class": "rd", "expver": "xxxx"}, level=3))[0]
req = {k: [v] for k, v in el.combined_key().items() if v}
out = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    data = fdb.retrieve(req).read()
    out.append(time.perf_counter() - t)
    assert data[:4] == b"GRIB", data[:4]
print(json.dumps(out))
"""
    r = subprocess.run([python, "-c", code, client, str(n)], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"fieldstore round trips failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def rtt(client_config, n, env):
    """One pyfdb process: list one field, then retrieve it n times; seconds per round trip."""
    code = r"""
import json, sys, time
from pathlib import Path
import pyfdb
fdb = pyfdb.FDB(Path(sys.argv[1]))
# The whole listing is read: FDB5's remote client hangs a retrieve behind an unfinished list.
el = list(fdb.list({"class": "rd", "expver": sys.argv[3]}, level=3))[0]
req = {k: [v] for k, v in el.combined_key().items()}
buf = bytearray(8 << 20)
out = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    got = 0
    with fdb.retrieve(req) as dh:  # FDB5's remote handle has no size(): read to the end
        while True:
            k = dh.readinto(memoryview(buf)[got:])
            if not k:
                break
            got += k
    out.append(time.perf_counter() - t)
    assert buf[:4] == b"GRIB" and got > 0, (got, bytes(buf[:4]))
print(json.dumps(out))
"""
    r = subprocess.run([sys.executable, "-c", code, client_config, str(n), "xxxx"], env=env,
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"pyfdb round trips failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--fieldstore", required=True, help="the fieldstore binary (with `serve`)")
    ap.add_argument("--kinds", default="fdb5,fieldstore,fsclient",
                    help="fdb5: FDB5's client and fdb-server; fieldstore: FDB5's client and fieldstore "
                         "serve; fsclient: fieldstore's client (fieldstore-hammer) and fieldstore serve")
    ap.add_argument("--hammer", help="fieldstore-hammer (default: beside --fieldstore)")
    ap.add_argument("--fs-python", help="a python with fieldstore's package, for fsclient's round trip")
    ap.add_argument("--sizes", default="64k,1m")
    ap.add_argument("--procs", default="1,4")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--wl", default="2 10 10", help="nsteps nlevels nparams per process")
    ap.add_argument("--rtt", type=int, default=300, help="round trips of one 64 KiB field")
    ap.add_argument("--json", required=True)
    a = ap.parse_args()

    a.hammer = a.hammer or os.path.join(os.path.dirname(a.fieldstore), "fieldstore-hammer")
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    hs = os.path.join(work, "hammer")
    if not os.path.exists(os.path.join(hs, "fdb-hammer")):
        hammerlib.hammer_setup(SimpleNamespace(out=hs))
    ldp = open(os.path.join(hs, "ld_library_path")).read().strip()
    fdb_server = os.path.join(os.path.dirname(ldp.split(":")[0]), "bin", "fdb-server")
    # FDB5's hammer derives keys from the GRIB (ecCodes adds `domain`).
    schema = os.path.join(work, "schema")
    with open(os.path.join(REPO, "crates", "fieldstore-hammer", "src", "hammer.schema")) as f:
        text = f.read().replace("[ class, expver, stream, date, time\n", "[ class, expver, stream, date, time, domain?\n")
    with open(schema, "w") as f:
        f.write(text)
    nsteps, nlevels, nparams = a.wl.split()
    kinds = a.kinds.split(",")
    results = []
    env = dict(os.environ, LD_LIBRARY_PATH=ldp)
    n = 0
    for size in a.sizes.split(","):
        for procs in [int(p) for p in a.procs.split(",")]:
            for rep in range(a.reps):
                order = kinds if n % 2 == 0 else list(reversed(kinds))
                n += 1
                for kind in order:
                    # fsclient: fieldstore's own client against fieldstore serve.
                    srv = Servers("fdb5" if kind == "fdb5" else "fieldstore", work, schema,
                                  a.fieldstore, ldp, fdb_server)
                    try:
                        h = SimpleNamespace(setup=hs, config=srv.client, expver="xxxx", klass="rd",
                                            nsteps=nsteps, nlevels=nlevels, nparams=nparams, number=1,
                                            template=os.path.join(hs, f"tmpl_{size}.grib"))
                        for mode in ("write", "read", "list"):
                            c0 = srv.cpu()
                            others = None
                            if kind == "fsclient":
                                fps, fields, nbytes = fs_hammer_group(h, a.hammer, srv.fs_client, mode, procs)
                                row = {"fields": fields, "bytes": nbytes, "fields_per_s": fps}
                            else:
                                res, others, elapsed = hammerlib.hammer_group(h, mode, procs)
                                row = hammerlib.row(mode, res)
                                if mode == "list":
                                    window = max(p["t_last_io"] for p in res)
                                    row["fields_per_s"] = row["fields"] / window if window > 0 else None
                            cpu = srv.cpu() - c0
                            gib = row["bytes"] / 2**30
                            results.append({"kind": kind, "size": size, "procs": procs, "rep": rep,
                                            "phase": mode, "fields": row["fields"],
                                            "fields_per_s": row["fields_per_s"],
                                            "server_cpu_s": cpu,
                                            "server_cpu_s_per_gib": cpu / gib if gib > 0 else None,
                                            "others_cpu_pct": others})
                            print(f"[serve-bench] {kind:<10} {size:>3} P={procs} rep {rep} {mode:<5} "
                                  f"{row['fields']:6d} fields {row['fields_per_s'] or 0:10.0f} fields/s "
                                  f"server CPU {cpu:6.2f} s", file=sys.stderr, flush=True)
                        if size == "64k" and procs == 1 and a.rtt > 0 and (kind != "fsclient" or a.fs_python):
                            times = (fs_rtt(a.fs_python, srv.fs_client, a.rtt) if kind == "fsclient" else
                                     rtt(srv.client, a.rtt, dict(env, FDB5_CONFIG_FILE=srv.client)))
                            times.sort()
                            results.append({"kind": kind, "size": size, "procs": 1, "rep": rep,
                                            "phase": "rtt", "p50_ms": 1e3 * times[len(times) // 2],
                                            "p90_ms": 1e3 * times[int(len(times) * 0.9)]})
                            print(f"[serve-bench] {kind:<10} one-field round trip p50 "
                                  f"{results[-1]['p50_ms']:.3f} ms p90 {results[-1]['p90_ms']:.3f} ms",
                                  file=sys.stderr, flush=True)
                    finally:
                        srv.stop()
    # Medians per configuration, ratios fieldstore / fdb5.
    def med(kind, size, procs, phase, key):
        v = [r[key] for r in results if (r["kind"], r["size"], r["procs"], r["phase"]) == (kind, size, procs, phase)
             and r.get(key) is not None]
        return statistics.median(v) if v else None

    table = []
    for size in a.sizes.split(","):
        for procs in [int(p) for p in a.procs.split(",")]:
            for phase in ("write", "read", "list"):
                row = {"size": size, "procs": procs, "phase": phase}
                for kind in kinds:
                    row[kind] = med(kind, size, procs, phase, "fields_per_s")
                    row[f"{kind}_cpu_s_per_gib"] = med(kind, size, procs, phase, "server_cpu_s_per_gib")
                for kind in kinds:
                    if kind != "fdb5" and row.get("fdb5") and row[kind]:
                        row[f"{kind}_ratio"] = row[kind] / row["fdb5"]
                table.append(row)
    rtts = {kind: med(kind, "64k", 1, "rtt", "p50_ms") for kind in kinds}
    others = [k for k in kinds if k != "fdb5"]
    print("\nsize  P  phase  " + "  ".join(f"{k + ' fields/s':>20}" for k in kinds)
          + "".join(f"  {k + '/fdb5':>16}" for k in others))
    for row in table:
        print(f"{row['size']:>4} {row['procs']:2d}  {row['phase']:<5}  "
              + "  ".join(f"{(row[k] or 0):20.0f}" for k in kinds)
              + "".join(f"  {row[k + '_ratio']:15.2f}x" if row.get(k + "_ratio") else f"  {'':>16}"
                        for k in others))
    print("one 64 KiB field's round trip, p50: " + ", ".join(f"{k} {v:.3f} ms" for k, v in rtts.items() if v))
    with open(a.json, "w") as f:
        json.dump({"results": results, "table": table, "rtt_p50_ms": rtts,
                   "machine": hammerlib.machine_info() if hasattr(hammerlib, "machine_info") else None},
                  f, indent=1)


if __name__ == "__main__":
    main()
