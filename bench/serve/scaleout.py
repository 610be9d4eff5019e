"""Scale-out by simulation on one machine: fieldstore's remote roles as FDB5 deploys them.

Configurations, each on fresh roots, fieldstore's own client (fieldstore-hammer, `type: remote`):

  one      one `fieldstore serve` playing catalogue and store (the default shape)
  split    one catalogue-only server and N store-only servers (N processes, N roots); each writer
           sends a dataset's fields to one store, picked by a hash of the dataset and the client, so
           the members of an ensemble spread over the stores while the catalogue indexes them all

Phases per configuration and repetition:

  write    P writer processes archive+flush NSTEPS x NLEVELS x NPARAMS fields of SIZE each
  read     the same processes read them back (one retrieve per field)
  flushes  P processes flush after every field (NLEVELS = NPARAMS = 1): what the catalogue
           serves per second when every flush is one field, i.e. where it becomes the bottleneck

and every server process's CPU seconds per phase, so that the catalogue's share is visible.

Usage (bench/serve/run-scaleout.sh builds and runs it):
  scaleout.py --fieldstore BIN --work DIR [--stores 3] [--procs 1,4,8] [--size 1m] [--reps 3]
              [--wl "4 10 10"] [--flush-steps 200] --json OUT
"""

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

_spec = importlib.util.spec_from_file_location("serve_bench", os.path.join(HERE, "serve_bench.py"))
sb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sb)


def start(fieldstore, config, what):
    """A `fieldstore serve` with `config`; (process, port) once it listens."""
    log = open(config + ".log", "w+")
    p = subprocess.Popen([fieldstore, "--config", config, "serve"], stdout=log, stderr=subprocess.STDOUT)
    t0 = time.time()
    while time.time() - t0 < 20:
        log.seek(0)
        text = log.read()
        if "listening on" in text:
            return p, int(text.split("listening on 127.0.0.1:")[1].split()[0])
        if p.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not start: {open(config + '.log').read()}")


class Deployment:
    """Servers of one shape on fresh roots, and the client config reaching them."""

    def __init__(self, shape, work, schema, fieldstore, stores):
        self.dir = os.path.join(work, shape)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.procs = []

        def config(name, head):
            root = os.path.join(self.dir, name)
            os.makedirs(root)
            path = os.path.join(self.dir, f"{name}.yaml")
            with open(path, "w") as f:
                f.write(head + f"engine: toc\nstore: file\nschema: {schema}\n"
                        f"spaces: [{{roots: [{{path: {root}}}]}}]\n")
            return path

        if shape == "one":
            p, port = start(fieldstore, config("server", "type: catalogue\nserverPort: 0\n"), "server")
            self.procs.append(("catalogue+store", p))
        else:
            endpoints = []
            for i in range(stores):
                p, sport = start(fieldstore, config(f"store{i}", "type: store\nserverPort: 0\n"), f"store {i}")
                self.procs.append((f"store{i}", p))
                endpoints.append(f'{{default: "localhost:{sport}"}}')
            head = f"type: catalogue\nserverPort: 0\nstores: [{', '.join(endpoints)}]\n"
            p, port = start(fieldstore, config("catalogue", head), "catalogue")
            self.procs.append(("catalogue", p))
        self.client = os.path.join(self.dir, "client.yaml")
        with open(self.client, "w") as f:
            f.write(f"type: remote\nhost: localhost\nport: {port}\ntimeout: 120\n")

    def cpu(self):
        return {name: sb.cpu_secs(p.pid) for name, p in self.procs}

    def stop(self):
        for _, p in self.procs:
            p.terminate()
        for _, p in self.procs:
            p.wait(10)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fieldstore", required=True)
    ap.add_argument("--hammer", help="fieldstore-hammer (default: beside --fieldstore)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--stores", type=int, default=3)
    ap.add_argument("--procs", default="1,4,8")
    ap.add_argument("--size", default="1m", help="64k or 1m (the template of that size)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--wl", default="4 10 10", help="nsteps nlevels nparams per process")
    ap.add_argument("--flush-steps", type=int, default=200, help="one-field flushes per process")
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    a.hammer = a.hammer or os.path.join(os.path.dirname(a.fieldstore), "fieldstore-hammer")
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    # The same synthetic GRIB templates as the remote-access benchmark.
    template = os.path.join(work, f"tmpl_{a.size}.grib")
    if not os.path.exists(template):
        size = {"64k": 64 << 10, "1m": 1 << 20}[a.size]
        with open(os.path.join(REPO, "tests", "fixtures", "grib", "synth11.grib"), "rb") as f:
            head = f.read()
        # Any bytes do: the hammer's keys are explicit, the store never parses them.
        with open(template, "wb") as f:
            f.write((head * (size // len(head) + 1))[:size])
    schema = os.path.join(REPO, "crates", "fieldstore-hammer", "src", "hammer.schema")
    nsteps, nlevels, nparams = a.wl.split()
    results = []
    n = 0
    for procs in [int(p) for p in a.procs.split(",")]:
        for rep in range(a.reps):
            shapes = ["one", "split"] if n % 2 == 0 else ["split", "one"]
            n += 1
            for shape in shapes:
                d = Deployment(shape, work, schema, a.fieldstore, a.stores)
                try:
                    phases = [("write", nsteps, nlevels, nparams, "write"),
                              ("read", nsteps, nlevels, nparams, "read"),
                              ("flushes", str(a.flush_steps), "1", "1", "write")]
                    for phase, s, l, p_, mode in phases:
                        h = sb.SimpleNamespace(klass="rd", expver="xxxx" if phase != "flushes" else "xxxy",
                                               nsteps=s, nlevels=l, nparams=p_, number=1, template=template)
                        c0 = d.cpu()
                        fps, fields, nbytes = sb.fs_hammer_group(h, a.hammer, d.client, mode, procs)
                        c1 = d.cpu()
                        cpu = {k: c1[k] - c0[k] for k in c0}
                        results.append({"shape": shape, "procs": procs, "rep": rep, "phase": phase,
                                        "fields_per_s": fps, "fields": fields, "bytes": nbytes,
                                        "server_cpu_s": cpu})
                        print(f"[scaleout] {shape:<5} P={procs} rep {rep} {phase:<7} {fps:10.0f} fields/s "
                              f"server CPU " + " ".join(f"{k} {v:.2f}s" for k, v in cpu.items()),
                              file=sys.stderr, flush=True)
                finally:
                    d.stop()

    def med(shape, procs, phase):
        v = [r["fields_per_s"] for r in results if (r["shape"], r["procs"], r["phase"]) == (shape, procs, phase)]
        return statistics.median(v) if v else None

    table = []
    print(f"\n P  phase      one server fields/s   1 catalogue + {a.stores} stores   split/one")
    for procs in [int(p) for p in a.procs.split(",")]:
        for phase in ("write", "read", "flushes"):
            one, split = med("one", procs, phase), med("split", procs, phase)
            table.append({"procs": procs, "phase": phase, "one": one, "split": split,
                          "ratio": split / one if one and split else None})
            print(f"{procs:2d}  {phase:<8} {one or 0:22.0f} {split or 0:24.0f} {table[-1]['ratio'] or 0:10.2f}x")
    with open(a.json, "w") as f:
        json.dump({"results": results, "table": table, "stores": a.stores, "size": a.size,
                   "wl": a.wl, "cpus": os.cpu_count()}, f, indent=1)


if __name__ == "__main__":
    main()
