#!/usr/bin/env python3
"""`cargo test ARGS`, with the test binaries run two at a time.

    python3 scripts/run-tests.py [--jobs N] [--select KEY]... CARGO-TEST-ARGS...

`cargo test` runs one test binary after another. Ours mostly wait: on a
throwaway Ceph cluster, on writer and server processes they kill, on S3
servers. Run serially they took 840 s on 2 cores with the CPU idle half of it.

cargo-nextest would run them in parallel too, but it runs every test in a
process of its own, and our binaries share one throwaway Ceph cluster (or S3
server) among their tests through a process-wide static: that would become a
cluster per test. So this script keeps cargo's unit, one binary, and only
runs binaries side by side:

1. `cargo test ARGS --no-run --message-format=json` builds every test
   binary and says where each is;
2. each binary runs the way `cargo test` runs it (in its package's
   directory, with cargo's runtime environment), its output captured and
   printed whole when it ends, under a line naming the binary, its package,
   how it ended and how long it took;
3. the longest first, by the durations of the last run on this machine
   (kept under ~/.cache/fieldstore; scripts/test-durations.json, the slow
   ones' from one run, on a machine that has none), so that the lanes end
   together;
4. the doc tests (`cargo test ARGS --doc`) as one more job.

`--select PACKAGE::test::NAME` (repeatable) runs only those binaries, in
that order and without the doc tests: scripts/debug-build.sh's
fieldstore_run_tests runs binaries the workspace's build made already (a
`cargo test -p` of its own would unify features differently and build
again). Only a whole run records durations.

Every binary runs even when one fails; the exit status is 1 if any failed,
and the failures are listed at the end.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


# A binary still running after this long is killed and counts as failed:
# the slowest takes ~3 minutes, and a hang should name itself, not eat CI's
# time limit.
LIMIT_S = 900


def cache_dir() -> Path:
    root = os.environ.get("FIELDSTORE_CACHE") or os.path.expanduser("~/.cache/fieldstore")
    return Path(root)


def parse_args(argv):
    jobs = 2
    select = []
    rest = []
    i = 0
    while i < len(argv):
        if argv[i] in ("--jobs", "--select") and i + 1 < len(argv):
            if argv[i] == "--jobs":
                jobs = int(argv[i + 1])
            else:
                select.append(argv[i + 1])
            i += 2
            continue
        rest.append(argv[i])
        i += 1
    return max(1, jobs), select, rest


def build(cargo_args):
    """Builds the test binaries; returns one dict per binary to run."""
    cmd = ["cargo", "test", *cargo_args, "--no-run", "--message-format=json-render-diagnostics"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(proc.returncode)
    binaries = []
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") != "compiler-artifact" or not msg.get("profile", {}).get("test"):
            continue
        exe = msg.get("executable")
        if not exe:
            continue
        target = msg["target"]
        manifest = Path(msg["manifest_path"])
        package = package_name(msg["package_id"], manifest)
        binaries.append({
            "key": f"{package}::{target['kind'][0]}::{target['name']}",
            "package": package,
            "dir": manifest.parent,
            "src": target["src_path"],
            "exe": exe,
        })
    return binaries


def package_name(package_id: str, manifest: Path) -> str:
    # "path+file:///…/fieldstore-core#0.1.0" or "fieldstore-core 0.1.0 (path+…)".
    if "#" in package_id:
        tail = package_id.rsplit("#", 1)[1]
        return tail.split("@", 1)[0] if "@" in tail else manifest.parent.name
    return package_id.split(" ", 1)[0]


def cargo_env(binary, target_dir: Path):
    """The environment `cargo test` gives a test binary at run time."""
    env = dict(os.environ)
    env["CARGO_MANIFEST_DIR"] = str(binary["dir"])
    env["CARGO_PKG_NAME"] = binary["package"]
    env["CARGO_CRATE_NAME"] = binary["package"].replace("-", "_")
    env.setdefault("CARGO", "cargo")
    deps = str(target_dir / "debug" / "deps")
    env["LD_LIBRARY_PATH"] = deps + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def save_durations(path: Path, durations):
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(durations, indent=1, sort_keys=True))
        tmp.replace(path)
    except OSError:
        pass  # only the next run's order suffers


def main():
    jobs, select, cargo_args = parse_args(sys.argv[1:])
    root = Path(__file__).resolve().parent.parent
    target_dir = Path(os.environ.get("CARGO_TARGET_DIR") or root / "target").resolve()
    binaries = build(cargo_args)

    # The last run's durations on this machine, else the slow ones' as the
    # repository has them (scripts/test-durations.json: only the order
    # depends on them, so they may be stale).
    times_file = cache_dir() / "test-durations.json"
    past = {}
    for source in (root / "scripts" / "test-durations.json", times_file):
        try:
            past.update(json.loads(source.read_text()))
        except (OSError, ValueError):
            pass
    doc = {"key": "doc-tests", "cmd": ["cargo", "test", *cargo_args, "--doc"], "dir": root,
           "label": "Doc-tests (cargo test --doc)"}
    work = []
    for b in binaries:
        rel_exe = os.path.relpath(b["exe"], root)
        rel_src = os.path.relpath(b["src"], b["dir"])
        work.append({"key": b["key"], "cmd": [b["exe"]], "dir": b["dir"],
                     "env": cargo_env(b, target_dir),
                     "label": f"Running {rel_src} ({rel_exe}) of {b['package']}"})
    if select:
        by_key = {w["key"]: w for w in work}
        missing = [k for k in select if k not in by_key]
        if missing:
            sys.exit(f"run-tests: no test binary {', '.join(missing)} in this build")
        work = [by_key[k] for k in select]
    else:
        work.append(doc)
        # The longest first; a binary not timed yet counts as 10 s.
        work.sort(key=lambda w: -past.get(w["key"], 10.0))

    lock = threading.Lock()
    queue = list(work)
    failed = []
    durations = {}

    def lane():
        while True:
            with lock:
                if not queue:
                    return
                w = queue.pop(0)
            with tempfile.TemporaryFile() as out:
                start = time.monotonic()
                child = subprocess.Popen(w["cmd"], cwd=w["dir"], env=w.get("env"),
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
                try:
                    rc = child.wait(timeout=LIMIT_S)
                except subprocess.TimeoutExpired:
                    child.kill()
                    child.wait()
                    rc = f"killed after {LIMIT_S} s"
                took = time.monotonic() - start
                out.seek(0)
                text = out.read().decode("utf-8", "replace")
            with lock:
                durations[w["key"]] = round(took, 2)
                status = "ok" if rc == 0 else f"FAILED ({'exit ' if isinstance(rc, int) else ''}{rc})"
                print(f"     {w['label']}: {status} in {took:.1f}s", flush=True)
                sys.stdout.write(text)
                sys.stdout.flush()
                if rc != 0:
                    failed.append(w["label"])

    start = time.monotonic()
    threads = [threading.Thread(target=lane) for _ in range(min(jobs, len(work)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"run-tests: {len(work)} jobs, {jobs} at a time, in {time.monotonic() - start:.0f}s", flush=True)

    if not select:
        save_durations(times_file, {**past, **durations})
    if failed:
        print("run-tests: FAILED:", file=sys.stderr)
        for f in failed:
            print(f"    {f}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
