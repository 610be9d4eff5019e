"""pyfdb 5.25 through a `type: remote` config: archive files, flush, then
report what list (levels 1-3), axes (levels 1-3), each listed field's data
handle and retrieve by its key give, as JSON.

Usage: remote_side.py --config CLIENT_YAML --home DIR --out JSON FILE...
Run by crates/fieldstore-cli/tests/fdb5_serve.rs against FDB5's fdb-server
and against `fieldstore serve`; the two reports must agree.
"""
import argparse
import hashlib
import json
import os
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--home", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    from isolated import LEAKS
    for var in LEAKS:
        os.environ.pop(var, None)
    os.environ["FDB_HOME"] = args.home
    os.environ["FDB5_CONFIG_FILE"] = args.config

    import pyfdb

    fdb = pyfdb.FDB()
    for f in args.files:
        fdb.archive(Path(f).read_bytes())
    fdb.flush()

    def attempt(f):
        try:
            return {"ok": True, "value": f()}
        except Exception as e:  # FDB5's own failures are reported, not raised
            return {"ok": False, "error": str(e).splitlines()[0] if str(e) else type(e).__name__}

    def braced(levels):
        return "".join("{" + ",".join(f"{k}={v}" for k, v in l.items() if v) + "}" for l in levels)

    out = {"list": {}, "axes": {}, "fields": []}
    for level in (1, 2, 3):
        out["list"][level] = attempt(lambda: sorted(braced(e.keys()) for e in fdb.list({}, level=level)))
        out["axes"][level] = attempt(
            lambda: {k: sorted(v) for k, v in fdb.axes({"class": "od"}, level=level).items()}
        )
    for element in fdb.list({}, level=3):
        levels = element.keys()
        # The keys as pyfdb gives them, empty values included: FDB5's
        # listings carry only the keywords a field's rule used.
        field = {"key": braced(levels), "keys": levels, "combined_key": element.combined_key()}
        with element.data_handle as handle:
            field["md5_list"] = hashlib.md5(handle.readall()).hexdigest()
        key = {k: v for level in levels for k, v in level.items() if v}
        try:
            with fdb.retrieve(key) as handle:
                field["md5"] = hashlib.md5(handle.readall()).hexdigest()
        except RuntimeError as e:
            field["retrieve_error"] = str(e).splitlines()[0] if str(e) else "error"
        out["fields"].append(field)
    out["fields"].sort(key=lambda f: f["key"])
    Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
