#!/usr/bin/env python3
"""What FDB5 spends, in CPU time per field, on extracting a GRIB message's
MARS key: the same message archived N times through pyfdb as GRIB
(`fdb.archive(bytes)`: FDB5 decodes it with ecCodes, as fdb-hammer and
fdb-write do) and N times with its key given (`fdb.archive(bytes, key)`: no
decoding), in alternating rounds; the difference is the key extraction.
Flushes are outside the timed part. User CPU time of the process: decoding
is user time, while the copies into the page cache (system time) are the
same on both paths but vary a lot on a shared machine; medians over the
rounds (user+system is printed too).

Run with the FDB5 venv (`bash scripts/setup-fdb5.sh` prints its python):

    PY=$(bash scripts/setup-fdb5.sh)
    $PY crates/fieldstore-grib/scripts/fdb5_key_cost.py FILE.grib [N] [ROUNDS]

FILE.grib: its first message (e.g. the 1 MiB template of
make_bench_template.py). Results: docs/benchmarks.md.
"""
import os
import resource
import statistics
import sys
import tempfile
from pathlib import Path


def main() -> int:
    if len(sys.argv) not in (2, 3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    data = Path(sys.argv[1]).read_bytes()
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    length = int.from_bytes(data[8:16], "big") if data[7] == 2 else int.from_bytes(data[4:7], "big")
    message = data[:length]

    work = Path(tempfile.mkdtemp(prefix="fdb5-key-cost-"))
    (work / "home").mkdir()
    (work / "root").mkdir()
    os.environ["FDB_HOME"] = str(work / "home")
    import pyfdb

    schema = Path(__file__).resolve().parents[3] / "tests/fixtures/schema/ecmwf.schema"
    fdb = pyfdb.FDB(
        {
            "type": "local",
            "engine": "toc",
            "schema": str(schema),
            "spaces": [{"handler": "Default", "roots": [{"path": str(work / "root")}]}],
        }
    )
    fdb.archive(message)
    fdb.flush()
    element = next(iter(fdb.list({}, level=3)))
    key = {k: v for level in element.keys() for k, v in level.items() if v}

    def timed(archive):
        start = resource.getrusage(resource.RUSAGE_SELF)
        for _ in range(n):
            archive()
        end = resource.getrusage(resource.RUSAGE_SELF)
        fdb.flush()
        user = (end.ru_utime - start.ru_utime) / n
        return user, user + (end.ru_stime - start.ru_stime) / n

    grib, keyed = [], []
    for _ in range(rounds):
        grib.append(timed(lambda: fdb.archive(message)))
        keyed.append(timed(lambda: fdb.archive(message, key)))

    def show(name, runs):
        user = statistics.median(u for u, _ in runs)
        total = statistics.median(t for _, t in runs)
        rounds = ", ".join(f"{u * 1e6:.0f}" for u, _ in runs)
        print(f"{name}: {user * 1e6:6.0f} us user CPU per field (rounds: {rounds}); "
              f"user+system {total * 1e6:.0f} us")
        return user

    print(f"message: {len(message)} bytes, key {key}")
    g = show("FDB5 archive as GRIB    ", grib)
    k = show("FDB5 archive, key given ", keyed)
    print(f"FDB5 key extraction     : {(g - k) * 1e6:6.0f} us user CPU per field")
    return 0


if __name__ == "__main__":
    sys.exit(main())
