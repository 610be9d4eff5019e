"""FDB5's own client (pyfdb 5.25 and ecCodes from the wheels) as the
clients of crates/fieldstore-cli/tests/serve_faults.rs, which kills and
restarts `fieldstore serve` around them.

Usage:
  serve_faults.py gen SPEC_JSON OUT_DIR
      GRIB files from a template: SPEC_JSON is
      {"template": PATH, "files": [{"name": N, "date": D, "time": T,
      "steps": [S, ...]}, ...]}; each file holds one message per step.
      Writes OUT_DIR/manifest.json: {"DATE/TIME/STEP": md5 of the message}.
  serve_faults.py write --config C --home H --log L FILE...
      Archive each FILE and flush it (one flush per file), appending
      "SENT i" before and "ACK i" after each flush to L; on a failure
      "FAIL i SECONDS-SINCE-EPOCH MESSAGE" and exit 3 at once.
  serve_faults.py archive-as --config C --home H --key JSON FILE --repeat N
      Archive FILE's bytes N times over as one field under the key, flush.
  serve_faults.py verify --config C --home H --out JSON [--request JSON]
      List (level 3) what the request selects (all by default), retrieve
      every listed field by its key; write {"fields": {"DATE/TIME/STEP" or
      the braced key: md5 or "ERROR: ..."}}.
  serve_faults.py slow-read --config C --home H --key JSON --stop-after N
      Retrieve the field; once N bytes more are resident, say "STOPPING"
      on stdout and stop itself (SIGSTOP), mid-stream, until killed.
"""
import hashlib
import json
import os
import signal
import sys
import time
from pathlib import Path


def args_of(argv):
    """--name value pairs and the positional rest."""
    opts, rest = {}, []
    i = 0
    while i < len(argv):
        if argv[i].startswith("--"):
            opts[argv[i][2:]] = argv[i + 1]
            i += 2
        else:
            rest.append(argv[i])
            i += 1
    return opts, rest


def fdb(opts):
    from isolated import LEAKS
    for var in LEAKS:
        os.environ.pop(var, None)
    os.environ["FDB_HOME"] = opts["home"]
    os.environ["FDB5_CONFIG_FILE"] = opts["config"]
    import pyfdb
    return pyfdb.FDB()


def gen(spec_path, out):
    import eccodes
    spec = json.loads(Path(spec_path).read_text())
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with open(spec["template"], "rb") as fh:
        template = eccodes.codes_grib_new_from_file(fh)
    manifest = {}
    for f in spec["files"]:
        messages = []
        for step in f["steps"]:
            h = eccodes.codes_clone(template)
            eccodes.codes_set(h, "date", int(f["date"]))
            eccodes.codes_set(h, "time", int(f["time"]))
            eccodes.codes_set(h, "step", int(step))
            m = eccodes.codes_get_message(h)
            eccodes.codes_release(h)
            manifest[f"{f['date']}/{f['time']}/{step}"] = hashlib.md5(m).hexdigest()
            messages.append(m)
        (out / f["name"]).write_bytes(b"".join(messages))
    (out / "manifest.json").write_text(json.dumps(manifest, sort_keys=True))


def write(opts, files):
    db = fdb(opts)
    with open(opts["log"], "a") as log:
        for i, f in enumerate(files):
            try:
                db.archive(Path(f).read_bytes())
                log.write(f"SENT {i}\n")
                log.flush()
                db.flush()
                log.write(f"ACK {i}\n")
                log.flush()
            except Exception as e:  # the server went away: say when and why
                msg = " ".join(str(e).split()) or type(e).__name__
                log.write(f"FAIL {i} {time.time():.3f} {msg}\n")
                log.flush()
                print(f"write {f}: {msg}", file=sys.stderr)
                sys.stderr.flush()
                # At once: FDB5's destructor would flush again and, after a
                # lost connection, may wait forever for store locations.
                os._exit(3)
    return 0


def archive_as(opts, files):
    db = fdb(opts)
    data = Path(files[0]).read_bytes() * int(opts["repeat"])
    db.archive(data, identifier=json.loads(opts["key"]))
    db.flush()
    return 0


def name_of(key):
    if {"date", "time", "step"} <= key.keys():
        return f"{key['date']}/{key['time']}/{key['step']}"
    return ",".join(f"{k}={v}" for k, v in sorted(key.items()))


def verify(opts):
    db = fdb(opts)
    request = json.loads(opts.get("request", "{}"))
    fields = {}
    # The whole listing first: a retrieve while a long listing is still
    # being received deadlocks FDB5's client (its connection thread waits
    # for room in the listing's queue, the retrieve for its reply).
    keys = [{k: v for level in e.keys() for k, v in level.items() if v}
            for e in db.list(request, level=3)]
    for key in keys:
        try:
            with db.retrieve(key) as handle:
                fields[name_of(key)] = hashlib.md5(handle.readall()).hexdigest()
        except Exception as e:
            fields[name_of(key)] = "ERROR: " + (" ".join(str(e).split()) or type(e).__name__)
    Path(opts["out"]).write_text(json.dumps({"fields": fields}, sort_keys=True))
    return 0


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def slow_read(opts):
    db = fdb(opts)
    base = rss()
    handle = db.retrieve(json.loads(opts["key"]))
    handle.open()
    # FDB5's client receives the whole field on its own thread, into
    # memory: stop this process once part of it has come, so that the
    # server is left blocked sending the rest.
    deadline = time.time() + 30
    while rss() < base + int(opts["stop-after"]) and time.time() < deadline:
        time.sleep(0.0002)
    print(f"STOPPING {rss() - base}", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(600)
    return 0


def main() -> int:
    command, argv = sys.argv[1], sys.argv[2:]
    if command == "gen":
        gen(argv[0], argv[1])
        return 0
    opts, rest = args_of(argv)
    if command == "write":
        return write(opts, rest)
    if command == "archive-as":
        return archive_as(opts, rest)
    if command == "verify":
        return verify(opts)
    if command == "slow-read":
        return slow_read(opts)
    raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    raise SystemExit(main())
