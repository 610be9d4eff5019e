#!/usr/bin/env python3
"""The FDB5 half of crates/fieldstore-cli/tests/fdb5_agreement.rs.

Archives GRIB files into a fresh FDB5 (the real one: PyPI wheels pyfdb and
fdb5lib, `scripts/setup-fdb5.sh`) with a given schema, then records what
FDB5 answers, as JSON into the file --out (not standard output: eckit logs
there):

    {
      "versions": {"pyfdb": ..., "fdb5lib": ..., "eccodeslib": ...},
      "list":  {"<request>": {"1": RESULT, "2": RESULT, "3": RESULT}},
      "axes":  {"<request>": {"1": RESULT, "2": RESULT, "3": RESULT}},
      "fields": [{"key": "<fdb-list line>", "md5_list": "<hex>", "length": N,
                  "md5": "<hex>" or "retrieve_error": "<FDB5's words>"}]
    }

RESULT is {"ok": true, "lines": [...]} for `fdb-list --porcelain` (lines in
FDB5's order) or {"ok": true, "axes": {...}} for `fdb-axes --json`, or
{"ok": false, "error": "<FDB5's last words>"} when the tool fails. The
request "" means everything (`--all`). "fields" has one entry per stored
field (pyfdb's list at level 3): the md5 of the bytes its list element's data
handle reads, and of what retrieve() returns for its full key alone.

Usage:
    python3 fdb5_side.py --schema FILE --workdir DIR --out JSON [--request R ...] GRIB...

Everything FDB5 writes stays in DIR (root, config, an empty FDB_HOME so that
no system-wide FDB configuration leaks in).
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from isolated import isolate, one_root_config  # before libfdb5 is loaded


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--schema", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--request", action="append", default=[])
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()

    work = isolate(args.workdir)
    root = work / "root"
    root.mkdir(parents=True, exist_ok=True)

    import eccodeslib
    import fdb5lib
    import pyfdb
    import yaml

    config = one_root_config(args.schema, root)
    config_file = work / "config.yaml"
    config_file.write_text(yaml.safe_dump(config, sort_keys=False))

    fdb = pyfdb.FDB(config)
    for f in args.files:
        fdb.archive(Path(f).read_bytes())
    fdb.flush()

    bin_dir = Path(fdb5lib.__file__).resolve().parent / "bin"
    env = dict(os.environ, FDB5_CONFIG_FILE=str(config_file))

    def tool(name: str, options: list, request: str) -> subprocess.CompletedProcess:
        target = [request] if request else ["--all"]
        return subprocess.run(
            [str(bin_dir / name), "--minimum-keys=", *options, *target],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    def failure(proc: subprocess.CompletedProcess) -> dict:
        lines = [l for l in proc.stderr.splitlines() if l.strip()]
        said = next((l for l in lines if l.startswith("Exception:")), lines[-1] if lines else "")
        return {"ok": False, "error": f"exit {proc.returncode}: {said.strip()}"}

    out = {
        "versions": {
            "pyfdb": pyfdb.__version__,
            "fdb5lib": fdb5lib.__version__,
            "eccodeslib": eccodeslib.__version__,
        },
        "list": {},
        "axes": {},
        "fields": [],
    }
    for request in [""] + args.request:
        out["list"][request] = {}
        out["axes"][request] = {}
        for depth in (1, 2, 3):
            p = tool("fdb-list", ["--porcelain", f"--depth={depth}"], request)
            out["list"][request][str(depth)] = (
                {"ok": True, "lines": [l for l in p.stdout.splitlines() if l]}
                if p.returncode == 0
                else failure(p)
            )
            p = tool("fdb-axes", ["--json", f"--level={depth}"], request)
            out["axes"][request][str(depth)] = (
                {"ok": True, "axes": json.loads(p.stdout)} if p.returncode == 0 else failure(p)
            )

    # Every field, read two ways: through the list element's data handle
    # (where FDB5 says the field is) and with retrieve() by its full key.
    for element in fdb.list({}, level=3):
        levels = element.keys()
        line = "".join(
            "{" + ",".join(f"{k}={v}" for k, v in level.items() if v) + "}" for level in levels
        )
        with element.data_handle as handle:
            stored = handle.readall()
        field = {"key": line, "md5_list": hashlib.md5(stored).hexdigest(), "length": len(stored)}
        key = {k: v for level in levels for k, v in level.items() if v}
        try:
            with fdb.retrieve(key) as handle:
                field["md5"] = hashlib.md5(handle.readall()).hexdigest()
        except RuntimeError as e:
            field["retrieve_error"] = str(e)
        out["fields"].append(field)

    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
