"""The drop-in script: one script, run unchanged against pyfdb and fieldstore.

    python dropin.py MODULE ROOT SCHEMA GRIB_DIR OUT_DIR

MODULE is ``pyfdb`` or ``fieldstore``; the script only uses what pyfdb 5.25
offers (``MODULE.FDB(config)``, ``archive``, ``flush``, ``list``,
``retrieve``, ``axes``, ``ListElement.keys()/combined_key()/length()/
has_location()/data_handle``, ``DataHandle`` as a context manager). It
archives every GRIB file of GRIB_DIR into a fresh store under ROOT, lists at
each level, retrieves every listed field and a multi-field request to files
in OUT_DIR, asks for axes, and writes what it saw to OUT_DIR/result.json
(no paths or offsets: those differ between the two stores by design). Errors
are recorded, not raised, so that both sides can be compared call by call.

For pyfdb, the caller sets ``FDB_HOME`` to an empty directory before this
runs (a system FDB5 installation would otherwise leak in).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
from pathlib import Path

SELECTIONS = [
    {},
    {"class": "od"},
    {"class": "e6", "param": "228143"},
    {"class": "ei", "levelist": 50},
    {"class": ["od", "rd"], "levtype": "sfc"},
    {"class": "od", "levtype": "sfc"},
    {"class": "rd", "levtype": "sfc"},
    {"class": "e6", "step": "6/to/12"},
    {"class": "e6", "step": "6/to/18/by/6", "time": 1800},
    {"class": "rd", "expver": "xxxx", "levelist": [300.0, "500"], "param": [138, "155"]},
]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def element(el) -> dict:
    return {
        "keys": el.keys(),
        "combined_key": el.combined_key(),
        "has_location": el.has_location(),
        "length": el.length(),
    }


def api(fdbmod) -> dict:
    """The names, parameters and defaults of the API, to compare."""
    import inspect

    def params(f) -> list:
        return [
            [p.name, repr(p.default) if p.default is not inspect.Parameter.empty else None]
            for p in inspect.signature(f).parameters.values()
        ]

    classes = {
        "FDB": ["__init__", "archive", "flush", "retrieve", "list", "inspect", "axes", "dirty",
                "config", "enabled", "status", "wipe", "purge", "stats", "control",
                "__enter__", "__exit__"],
        "DataHandle": ["open", "close", "size", "read", "readinto", "readall", "__enter__",
                       "__exit__"],
        "ListElement": ["keys", "combined_key", "offset", "length", "has_location"],
    }
    out: dict = {"exports": sorted(n for n in getattr(fdbmod, "__all__", []))}
    for cls, methods in classes.items():
        c = getattr(fdbmod, cls)
        out[cls] = {m: params(getattr(c, m)) for m in methods}
    out["ListElement"]["properties"] = sorted(
        n for n in ("uri", "data_handle") if isinstance(getattr(fdbmod.ListElement, n), property)
    )
    out["ControlIdentifier"] = {m.name: int(m) for m in fdbmod.ControlIdentifier}
    out["ControlAction"] = {m.name: int(m) for m in fdbmod.ControlAction}
    return out


def attempt(f):  # type: ignore[no-untyped-def]
    try:
        return f()
    except Exception as e:
        return {"error": type(e).__name__}


def manage(fdbmod, fdb, config) -> dict:
    """Data management: stats, control (lock and unlock), status, wipe."""
    out: dict = {}
    rd = {"class": "rd", "expver": "xxxx", "stream": "oper", "date": "20201102", "time": "0000",
          "domain": "g", "type": "fc", "levtype": "sfc", "step": 12, "param": 166}
    (stats,) = fdb.stats({"class": "rd", "date": 20201102})
    out["stats"] = {
        line.split(":")[0].strip(): line.split(":")[1].split("(")[0].strip()
        for line in stats.index_statistics().splitlines()
        if line.split(":")[0].strip() in ("Fields", "Duplicated fields", "Reacheable fields",
                                          "Size of fields")
    }
    ids = [fdbmod.ControlIdentifier.RETRIEVE, fdbmod.ControlIdentifier.LIST]
    locked = list(fdb.control({"class": "rd"}, fdbmod.ControlAction.DISABLE, ids))
    out["locked"] = [[str(i) for i in e.controlIdentifiers()] for e in locked]
    out["locked_keys"] = [e.key() for e in locked]
    other = fdbmod.FDB(config)
    out["status"] = [[str(i) for i in e.controlIdentifiers()] for e in other.status({"class": "rd"})]
    out["retrieve_locked"] = attempt(lambda: len(other.retrieve(rd).readall()))
    out["list_locked"] = attempt(lambda: len(list(other.list({"class": "rd"}))))
    unlocked = list(fdb.control({"class": "rd"}, fdbmod.ControlAction.ENABLE, ids))
    out["unlocked"] = [[str(i) for i in e.controlIdentifiers()] for e in unlocked]
    out["retrieve_unlocked"] = len(fdbmod.FDB(config).retrieve(rd).readall())
    fresh = fdbmod.FDB(config)
    out["wipe_dry"] = sorted({e.type().name for e in fresh.wipe({"class": "rd"})})
    out["after_dry"] = len(list(fresh.list({"class": "rd"})))
    list(fresh.wipe({"class": "rd"}, doit=True))
    out["after_wipe"] = len(list(fdbmod.FDB(config).list({"class": "rd"})))
    out["others_after_wipe"] = len(list(fdbmod.FDB(config).list({})))
    return out


def main() -> None:
    module, root, schema, grib_dir, out_dir = sys.argv[1:6]
    fdbmod = importlib.import_module(module)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config = {
        "type": "local",
        "engine": "toc",
        "schema": schema,
        "spaces": [{"handler": "Default", "roots": [{"path": root}]}],
    }
    fdb = fdbmod.FDB(config)
    result: dict = {"archived": [], "list": {}, "retrieve": {}, "axes": {}, "api": api(fdbmod)}

    originals = b""
    for f in sorted(Path(grib_dir).glob("*.grib")):
        data = f.read_bytes()
        originals += data
        fdb.archive(data)
        result["archived"].append(f.name)
    fdb.flush()

    for i, sel in enumerate(SELECTIONS):
        for level in (1, 2, 3):
            name = f"{i}:{json.dumps(sel, sort_keys=True)}:level={level}"
            try:
                result["list"][name] = [element(e) for e in fdb.list(sel, level=level)]
            except Exception as e:  # recorded: the test compares errors too
                result["list"][name] = {"error": type(e).__name__, "message": str(e)[:200]}

    # Retrieve every field on its own, by its key (empty values left out),
    # into a file; and once through the list element's data handle.
    fields = {}
    for el in fdb.list({}, level=3):
        key = {k: v for k, v in el.combined_key().items() if v != ""}
        name = ",".join(f"{k}={v}" for k, v in sorted(key.items()))
        target = out / (sha(name.encode()) + ".grib")
        try:
            with fdb.retrieve(key) as dh, open(target, "wb") as f:
                size = dh.size()
                f.write(dh.read())
        except Exception as e:
            fields[name] = {"error": type(e).__name__, "message": str(e)[:200]}
            continue
        data = target.read_bytes()
        via_list = el.data_handle
        via_list.open()
        listed_bytes = via_list.readall()
        fields[name] = {
            "size": size,
            "sha": sha(data),
            "in_input": data in originals,
            "starts": data[:4].decode("latin-1"),
            "ends": data[-4:].decode("latin-1"),
            "data_handle_sha": sha(listed_bytes),
        }
    result["retrieve"]["fields"] = fields

    # A multi-field request: values in a chosen order, a range, a list.
    multi = {
        "class": "e6",
        "expver": "5659",
        "stream": "oper",
        "date": "20161230",
        "time": "1800",
        "domain": "g",
        "type": "fc",
        "levtype": "sfc",
        "timespan": "none",
        "step": [18, 6, 12],
        "param": 167,
    }
    dh = fdb.retrieve(multi)
    data = dh.readall()
    (out / "multi.grib").write_bytes(data)
    result["retrieve"]["multi"] = {"size": len(data), "sha": sha(data)}

    missing = dict(multi, step=24)
    dh = fdb.retrieve(missing)
    result["retrieve"]["missing"] = {"size": dh.size(), "data": len(dh.readall())}

    for i, sel in enumerate(SELECTIONS):
        for level in (1, 2, 3):
            name = f"{i}:{json.dumps(sel, sort_keys=True)}:level={level}"
            try:
                axes = fdb.axes(sel, level=level)
                result["axes"][name] = {k: list(v) for k, v in axes.items()}
            except Exception as e:
                result["axes"][name] = {"error": type(e).__name__, "message": str(e)[:200]}

    result["manage"] = manage(fdbmod, fdb, config)
    (out / "result.json").write_text(json.dumps(result, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
