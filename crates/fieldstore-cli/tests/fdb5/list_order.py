#!/usr/bin/env python3
"""The FDB5 half of the list-order agreement test
(crates/fieldstore-cli/tests/fdb5_agreement.rs, `list_order_*`).

Replays a store history into a fresh FDB5 (the real one: pyfdb + fdb5lib
wheels) and records the order in which FDB5 lists what it holds, as JSON
into --out (not standard output: eckit logs there):

    {"versions": {...},
     "list": ["<fdb-list --porcelain line>", ...],
     "full": ["<fdb-list --porcelain --full line>", ...],
     "pyfdb": ["<key of pyfdb's list element>", ...]}

The history (--history, JSON) is a list of steps, each one of
    {"archive": "k=v,k=v,...", "data": "<text stored as the field>"}
    {"flush": true}
and the handle is flushed once more at the end. Keys are archived as given
(pyfdb's explicit identifier: no GRIB involved).

With --config FILE instead of --schema, the configuration is that YAML, in
which "@ROOTS@" stands for the work directory (the roots it names, in
`spaces` or in each of `fdbs`, are created).

Usage:
    python3 list_order.py (--schema FILE | --config FILE) --workdir DIR --history JSON --out JSON
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from isolated import isolate, one_root_config  # before libfdb5 is loaded


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--schema")
    ap.add_argument("--config")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--history", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    work = isolate(args.workdir)
    root = work / "root"
    root.mkdir(parents=True, exist_ok=True)

    import eccodeslib
    import fdb5lib
    import pyfdb
    import yaml

    if args.config:
        config = yaml.safe_load(Path(args.config).read_text().replace("@ROOTS@", str(work)))
        for store in config.get("fdbs", [config]):
            for space in store["spaces"]:
                for r in space["roots"]:
                    Path(r["path"]).mkdir(parents=True, exist_ok=True)
    else:
        config = one_root_config(args.schema, root)
    config_file = work / "config.yaml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))

    fdb = pyfdb.FDB(config)
    for step in json.loads(Path(args.history).read_text()):
        if "flush" in step:
            fdb.flush()
            continue
        key = dict(item.split("=", 1) for item in step["archive"].split(","))
        fdb.archive(step.get("data", step["archive"]).encode(), identifier=key)
    fdb.flush()

    bin_dir = Path(fdb5lib.__file__).resolve().parent / "bin"
    env = dict(os.environ, FDB5_CONFIG_FILE=str(config_file))

    def fdb_list(*options: str) -> list:
        p = subprocess.run(
            [str(bin_dir / "fdb-list"), "--minimum-keys=", "--porcelain", *options, "--all"],
            env=env, capture_output=True, text=True, check=True,
        )
        return [l for l in p.stdout.splitlines() if l]

    out = {
        "versions": {
            "pyfdb": pyfdb.__version__,
            "fdb5lib": fdb5lib.__version__,
            "eccodeslib": eccodeslib.__version__,
        },
        "list": fdb_list(),
        "full": fdb_list("--full"),
        "pyfdb": [
            ",".join(f"{k}={v}" for level in e.keys() for k, v in level.items() if v)
            for e in fdb.list({}, level=3)
        ],
    }
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
