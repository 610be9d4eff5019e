#!/usr/bin/env python3
"""The FDB5 half of crates/fieldstore-cli/tests/fdb5_spaces.rs.

Archives GRIB files into the real FDB5 (pyfdb + fdb5lib wheels) with a
multi-space, multi-root configuration, then records which root holds each
database directory, as JSON into --out:

    {"versions": {...}, "placed": {"<database directory>": ["<root name>", ...]},
     "listed": {"<database directory>": ["<root name>", ...]}}

"listed" says, for the de-duplicated listing of everything, which roots the
listed fields' data files are in, per database.

The configuration is --config, YAML in which "@ROOTS@" stands for the
directory holding the roots (--roots); the roots named in it (in `spaces`,
or in the `spaces` of each of `fdbs` for a select configuration) are
created there. With --local ROOT GRIB (repeatable), GRIB is first archived
through a local configuration of the one root ROOT (a database the select
configuration will find in a sub-FDB that does not select it). The
environment (FDB_EXPVER_FILE, the envvar handler's variables) is the
caller's. Everything else FDB5 writes stays in --workdir.

Usage:
    python3 fdb5_spaces.py --config FILE --roots DIR --workdir DIR --out JSON
        [--local ROOT GRIB]... GRIB...
"""
import argparse
import json
import sys
from pathlib import Path

from isolated import isolate  # before libfdb5 is loaded


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--roots", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--local", nargs=2, action="append", default=[])
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()

    work = isolate(args.workdir)
    roots = Path(args.roots)

    import eccodeslib
    import fdb5lib
    import pyfdb
    import yaml

    text = Path(args.config).read_text().replace("@ROOTS@", str(roots))
    config = yaml.safe_load(text)
    for store in config.get("fdbs", [config]):
        for space in store["spaces"]:
            for root in space["roots"]:
                Path(root["path"]).mkdir(parents=True, exist_ok=True)

    for root, grib in args.local:
        local = {
            "type": "local",
            "engine": "toc",
            "schema": config["schema"],
            "spaces": [{"roots": [{"path": str(roots / root)}]}],
        }
        other = pyfdb.FDB(local)
        other.archive(Path(grib).read_bytes())
        other.flush()
        del other

    fdb = pyfdb.FDB(config)
    for f in args.files:
        fdb.archive(Path(f).read_bytes())
    fdb.flush()

    placed = {}
    for root in sorted(roots.iterdir()):
        for db in sorted(root.iterdir()):
            if (db / "toc").exists():
                placed.setdefault(db.name, []).append(root.name)
    listed = {}
    for element in fdb.list({}, level=3):
        data = Path(str(element.uri))
        listed.setdefault(data.parent.name, set()).add(data.parent.parent.name)
    out = {
        "listed": {db: sorted(r) for db, r in listed.items()},
        "versions": {
            "pyfdb": pyfdb.__version__,
            "fdb5lib": fdb5lib.__version__,
            "eccodeslib": eccodeslib.__version__,
        },
        "placed": placed,
    }
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
