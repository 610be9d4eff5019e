#!/usr/bin/env python3
"""The FDB5 half of crates/fieldstore-cli/tests/param_names.rs.

Archives one GRIB file into a fresh FDB5 (the real one: PyPI wheels pyfdb
and fdb5lib, `scripts/setup-fdb5.sh`) with a given schema, then, for each
parameter spelling given, records which paramIds pyfdb's list of
`<list request>,param=<spelling>` finds and the md5 of what retrieve of
each `<retrieve request>,param=<spelling>` returns, as JSON into --out (not
standard output: eckit logs there):

    {"<spelling>": {"list": ["130", ...] or {"error": "..."},
                    "retrieve": ["<md5>" or {"error": "..."}, ...]}}

Usage:
    python3 param_names_side.py --schema FILE --workdir DIR --out JSON
        --list REQUEST --retrieve REQUEST [--retrieve REQUEST ...]
        --grib FILE SPELLING...
"""
import argparse
import hashlib
import json
import sys
from pathlib import Path

from isolated import isolate  # before libfdb5 is loaded


def request(text: str, spelling: str) -> dict:
    r = dict(kv.split("=", 1) for kv in text.split(","))
    r["param"] = spelling
    return r


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--schema", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--list", required=True)
    ap.add_argument("--retrieve", action="append", required=True)
    ap.add_argument("--grib", required=True)
    ap.add_argument("spellings", nargs="+")
    args = ap.parse_args()

    work = isolate(args.workdir)
    root = work / "root"
    root.mkdir(parents=True, exist_ok=True)

    import pyfdb

    fdb = pyfdb.FDB(
        {
            "type": "local",
            "engine": "toc",
            "schema": str(Path(args.schema).resolve()),
            "spaces": [{"handler": "Default", "roots": [{"path": str(root)}]}],
        }
    )
    fdb.archive(Path(args.grib).read_bytes())
    fdb.flush()

    out = {}
    for s in args.spellings:
        answer = {}
        try:
            listed = fdb.list(request(args.list, s), level=3)
            answer["list"] = sorted({e.keys()[2]["param"] for e in listed})
        except RuntimeError as e:
            answer["list"] = {"error": str(e)}
        answer["retrieve"] = []
        for r in args.retrieve:
            try:
                with fdb.retrieve(request(r, s)) as handle:
                    answer["retrieve"].append(hashlib.md5(handle.readall()).hexdigest())
            except RuntimeError as e:
                answer["retrieve"].append({"error": str(e)})
        out[s] = answer
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
