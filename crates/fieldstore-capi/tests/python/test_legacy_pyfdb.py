"""The real legacy pyfdb (PyPI pyfdb==0.1.3, cffi over fdb_c) on fieldstore's
library, unchanged, against the same script on FDB5's own libfdb5 (the
fdb5lib wheel); and earthkit-data's "fdb" source reading through it into
xarray. Run by scripts/test-capi-python.sh, which sets:

- FIELDSTORE_CAPI_PREFIX: where scripts/install-capi.sh put fieldstore's
  library (pyfdb finds PREFIX/lib/libfdb5.so through findlibs and FDB5_DIR);
- FIELDSTORE_CAPI_FDB5_PYTHON: the python of a venv with pyfdb 0.1.3 and
  fdb5lib (findlibs finds FDB5's library in the fdb5lib package).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
GRIB = REPO / "tests" / "fixtures" / "grib"
SCHEMA = REPO / "tests" / "fixtures" / "schema" / "ecmwf.schema"
PREFIX = Path(os.environ["FIELDSTORE_CAPI_PREFIX"])
FDB5_PYTHON = os.environ["FIELDSTORE_CAPI_FDB5_PYTHON"]


def fieldstore_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FDB", "FIELDSTORE_ROOT", "FIELDSTORE_CONFIG"))}
    env["FDB5_DIR"] = str(PREFIX)
    return env


def run_client(python: str, root: Path, out: Path, env: dict[str, str]) -> dict:
    proc = subprocess.run(
        [python, str(HERE / "legacy_client.py"), str(root), str(SCHEMA), str(GRIB), str(out)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, f"{python}: {proc.stdout}\n{proc.stderr[-4000:]}"
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("legacy")


@pytest.fixture(scope="module")
def results(legacy: Path) -> tuple[dict, dict]:
    fdb5 = run_client(FDB5_PYTHON, legacy / "fdb5-root", legacy / "fdb5.json", dict(os.environ))
    fs = run_client(sys.executable, legacy / "fieldstore-root", legacy / "fieldstore.json", fieldstore_env())
    return fdb5, fs


def test_each_side_loaded_the_library_it_should(results: tuple[dict, dict]) -> None:
    fdb5, fs = results
    assert "fdb5lib" in fdb5["library"], fdb5["library"]
    assert Path(fs["library"]) == PREFIX / "lib" / "libfdb5.so"
    assert fdb5["version"] == fs["version"] == "5.25.0"


def normal(value):
    """An error compares as `error` whatever its words."""
    if isinstance(value, str) and value.startswith("error: "):
        return "error"
    return value


def is_error(v, words: str = "") -> bool:
    return isinstance(v, str) and v.startswith("error: ") and words in v


def is_list(v) -> bool:
    return isinstance(v, list) and len(v) > 0


def same_set_fdb5_repeats(a, b) -> bool:
    """The same elements; FDB5 gives some several times, fieldstore once."""
    return isinstance(a, list) and isinstance(b, list) and set(a) == set(b) and len(a) > len(b) == len(set(b))


def same_set_fdb5_more_copies(a, b) -> bool:
    """The same keys; FDB5 has more (masked) copies of some."""
    return isinstance(a, list) and isinstance(b, list) and set(a) == set(b) and len(a) > len(b)


# Where the two differ, and why. Results must be identical (errors compare
# as errors, whatever their words) unless an entry names them; an entry must
# describe every difference it names and name at least one (an entry that
# stops being true fails the test).
DIVERGENCES = [
    (
        "list",
        r"^(all|class=e6,param=228143|class=ei) depth=1 ",
        lambda a, b: is_error(a, "requiredPredicateCount") and is_list(b),
        "FDB5 bug: a depth-1 listing over a dataset whose level-1 key has fewer values than some rule "
        "requires (e6: time at level 3; ei/dacl: no date) fails an assertion; fieldstore lists it",
    ),
    (
        "list",
        r" depth=2 duplicates=False$",
        same_set_fdb5_repeats,
        "without deduplication FDB5 repeats a collocation once per index holding it (one per writer and "
        "flush); fieldstore lists each collocation once",
    ),
    (
        "list",
        r"^class=od after archive request missing$",
        same_set_fdb5_more_copies,
        "archive(data, request=...) whose request names fields the data lacks: FDB5 archives the messages, "
        "then fails; fieldstore checks first and archives nothing",
    ),
    (
        "retrieve",
        r"^class=ei,date=0101,",
        lambda a, b: is_error(a, "Invalid date 0101") and isinstance(b, list),
        "FDB5 bug: a climatology (ClimateDaily) field cannot be retrieved by the key FDB5 lists",
    ),
]


def divergence(section: str, tag: str):
    for sec, pattern, holds, why in DIVERGENCES:
        if sec == section and re.search(pattern, tag):
            return holds, why
    return None


def test_the_same_keys_and_bytes_on_fieldstore_as_on_fdb5(results: tuple[dict, dict]) -> None:
    fdb5, fs = results
    used = set()
    problems = []
    for section in ("archive", "list", "retrieve"):
        assert set(fdb5[section]) == set(fs[section]), section
        for tag in sorted(fdb5[section]):
            a, b = fdb5[section][tag], fs[section][tag]
            if normal(a) == normal(b):
                continue
            d = divergence(section, tag)
            if d is None:
                problems.append(f"{section} {tag}:\n  FDB5:       {str(a)[:400]}\n  fieldstore: {str(b)[:400]}")
                continue
            holds, why = d
            used.add(why)
            if not holds(a, b):
                problems.append(f"{section} {tag}: the divergence no longer holds ({why}):\n  FDB5: {str(a)[:300]}\n  fieldstore: {str(b)[:300]}")
    assert not problems, "\n".join(problems)
    assert used == {why for *_, why in DIVERGENCES}, "a divergence matched nothing"
    # What was compared.
    fields = [v for v in fs["retrieve"].values() if isinstance(v, list)]
    assert len(fields) >= 16
    assert sum(len(v) for k, v in fs["list"].items() if isinstance(v, list) and "depth=3" in k) > 50


def test_a_root_holding_fdb5s_format_is_refused_by_name(results: tuple[dict, dict], legacy: Path) -> None:
    # The root FDB5 wrote for the comparison above.
    root = legacy / "fdb5-root"
    code = (
        "import pyfdb\n"
        f"cfg = {{'type': 'local', 'engine': 'toc', 'spaces': [{{'roots': [{{'path': '{root}'}}]}}]}}\n"
        "try:\n"
        "    pyfdb.FDB(cfg)\n"
        "except pyfdb.pyfdb.FDBException as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=fieldstore_env(), capture_output=True, text=True)
    assert "holds FDB5's own on-disk format" in out.stdout, out.stdout + out.stderr
    assert str(root) in out.stdout


def test_fdb5s_config_variables_configure_a_handle(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    config = {"type": "local", "engine": "toc", "schema": str(SCHEMA), "spaces": [{"roots": [{"path": str(root)}]}]}
    env = fieldstore_env()
    env["FDB5_CONFIG"] = json.dumps(config)
    code = (
        "import pyfdb\n"
        f"fdb = pyfdb.FDB()\n"
        f"fdb.archive(open('{GRIB / 'rd-fc.grib'}', 'rb').read())\n"
        "fdb.flush()\n"
        "print(len(list(fdb.list({'class': 'rd'}))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "1", out.stdout + out.stderr
    assert any(root.iterdir())


# ---- earthkit-data -----------------------------------------------------

# The three 2 m temperature fields of timespan.grib (GRIB2, steps 6/12/18).
T2M = {
    "class": "e6",
    "expver": "5659",
    "stream": "oper",
    "date": "20161230",
    "time": "1800",
    "domain": "g",
    "type": "fc",
    "levtype": "sfc",
    "timespan": "none",
    "step": [6, 12, 18],
    "param": 167,
}

EARTHKIT = """
import json, sys
import numpy as np
import pyfdb
import earthkit.data as ekd

root, grib, schema, t2m = sys.argv[1:5]
t2m = json.loads(t2m)
config = {"type": "local", "engine": "toc", "schema": schema, "spaces": [{"handler": "Default", "roots": [{"path": root}]}]}
fdb = pyfdb.FDB(config)
fdb.archive(open(grib, "rb").read())
fdb.flush()
reference = ekd.from_source("file", grib).to_fieldlist()[0:3].to_xarray()
out = {"library": pyfdb.lib.path}
for stream in (True, False):
    source = ekd.from_source("fdb", t2m, config=config, stream=stream)
    fields = source.to_fieldlist(read_all=True) if stream else source.to_fieldlist()
    ds = fields.to_xarray()
    out[f"stream={stream}"] = {
        "type": type(ds).__name__,
        "vars": list(ds.data_vars),
        "sizes": dict(ds.sizes),
        "equal": bool(np.array_equal(reference["2t"].values, ds["2t"].values)),
    }
by_name = ekd.from_source("fdb", dict(t2m, param="2t"), config=config).to_fieldlist(read_all=True)
out["by name"] = [f.metadata("step") for f in by_name]
lazy = ekd.from_source("fdb", t2m, config=config, lazy=True).to_fieldlist()
out["lazy"] = sorted(r["step"] for r in lazy.request_mapper.field_requests)
print(json.dumps(out))
"""


def test_earthkit_data_reads_fields_through_it_into_xarray(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", EARTHKIT, str(root), str(GRIB / "timespan.grib"), str(SCHEMA), json.dumps(T2M)],
        env=fieldstore_env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(out["library"]) == PREFIX / "lib" / "libfdb5.so"
    for stream in (True, False):
        got = out[f"stream={stream}"]
        assert got["type"] == "Dataset"
        assert got["vars"] == ["2t"]
        assert got["sizes"]["step"] == 3
        assert got["equal"], got
    assert out["lazy"] == [6, 12, 18]
    assert out["by name"] == [6, 12, 18]  # param=2t, made 167 by the expansion
