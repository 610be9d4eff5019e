"""Polytope and pygribjump, unchanged, on fieldstore's libgribjump against
FDB5 + GribJump 0.13 (their PyPI wheels), on the same GRIB fields.

Run by scripts/test-gribjump-python.sh, which provides:
- FIELDSTORE_GRIBJUMP_PREFIX: fieldstore's library installed
  (lib/libgribjump.so), found by pygribjump through GRIBJUMP_DIR;
- FIELDSTORE_GRIBJUMP_ORACLE: a directory holding the gribjumplib wheel,
  put on PYTHONPATH for GribJump's side (findlibs takes the package first);
- FIELDSTORE_CLI: fieldstore's command line, which archives the fields;
- FIELDSTORE_CAPI_PREFIX: fieldstore's libfdb5.so and fdb_c.h installed
  (scripts/install-capi.sh), to archive through the C API;
- FIELDSTORE_PY_PYTHON (when the Python package's venv exists: CI builds
  it in an earlier stage): a Python with fieldstore's package.

Each side runs in its own process (one libgribjump per process):
`polytope_run.py` (polytope-mars feature requests → CoverageJSON) and
`gj_run.py` (direct pygribjump calls).
"""
import copy
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
REPO = HERE.parents[3]
PREFIX = os.environ.get("FIELDSTORE_GRIBJUMP_PREFIX")
ORACLE = os.environ.get("FIELDSTORE_GRIBJUMP_ORACLE")
CLI = os.environ.get("FIELDSTORE_CLI")
if not (PREFIX and ORACLE and CLI):
    pytest.skip("run through scripts/test-gribjump-python.sh", allow_module_level=True)

SFC = {"class": "od", "stream": "oper", "type": "fc", "time": "0000", "levtype": "sfc", "domain": "g"}
PL = dict(SFC, levtype="pl")


def sfc(expver, **kw):
    return dict(SFC, expver=expver, **kw)


def pl(expver, **kw):
    return dict(PL, expver=expver, **kw)


# Polytope feature requests: every feature type, on both grids (regular
# lat-lon with simple packing at the surface and CCSDS on pressure levels;
# octahedral O32 the other way round), with points in the bitmaps' missing
# areas (south of 60 S, longitudes 100-130 E).
CASES = []
for grid, expver in [("regular", "0001"), ("octahedral", "0002")]:
    CASES += [
        {"name": f"{grid}-timeseries", "grid": grid, "request": sfc(
            expver, date="20240101", param="167/228", step="0/to/12/by/3",
            feature={"type": "timeseries", "points": [[51.5, 0.1], [-33.9, 18.4], [10.0, 115.0], [-70.0, 200.0]],
                     "time_axis": "step"})},
        {"name": f"{grid}-timeseries-two-dates", "grid": grid, "request": sfc(
            expver, date="20240101/20240102", param="228", step="0/to/12/by/3",
            feature={"type": "timeseries", "points": [[45.0, 7.0]], "time_axis": "step"})},
        {"name": f"{grid}-verticalprofile", "grid": grid, "request": pl(
            expver, date="20240102", param="130", step="6", levelist="1000/850/500",
            feature={"type": "verticalprofile", "points": [[38.9, -77.0]], "axes": "levelist"})},
        {"name": f"{grid}-boundingbox", "grid": grid, "request": sfc(
            expver, date="20240101", param="167/228", step="0/6",
            feature={"type": "boundingbox", "points": [[-65.0, 95.0], [-40.0, 140.0]]})},
        {"name": f"{grid}-polygon", "grid": grid, "request": sfc(
            expver, date="20240102", param="167/228", step="3",
            feature={"type": "polygon", "shape": [[40.0, 0.0], [60.0, 10.0], [50.0, 30.0], [35.0, 20.0], [40.0, 0.0]]})},
        {"name": f"{grid}-trajectory", "grid": grid, "request": sfc(
            expver, date="20240101", param="167", step="0",
            feature={"type": "trajectory", "points": [[0.0, 100.0], [10.0, 120.0], [20.0, 125.0]],
                     "axes": ["latitude", "longitude"], "inflation": 6.0, "inflate": "round"})},
        {"name": f"{grid}-circle", "grid": grid, "request": sfc(
            expver, date="20240101", param="228", step="12",
            feature={"type": "circle", "center": [[-58.0, 110.0]], "radius": 12.0})},
    ]
# Errors and edges: a grid hash that is not the fields', steps the store
# does not have (only some / none), a date not stored.
CASES += [
    {"name": "wrong-grid-hash", "grid": "regular", "md5": "0" * 32, "request": sfc(
        "0001", date="20240101", param="167", step="0",
        feature={"type": "timeseries", "points": [[51.5, 0.1]], "time_axis": "step"})},
    {"name": "some-steps-missing", "grid": "regular", "request": sfc(
        "0001", date="20240101", param="167", step="0/to/24/by/3",
        feature={"type": "timeseries", "points": [[51.5, 0.1]], "time_axis": "step"})},
    {"name": "date-not-stored", "grid": "octahedral", "request": sfc(
        "0002", date="20240105", param="167", step="0",
        feature={"type": "timeseries", "points": [[51.5, 0.1]], "time_axis": "step"})},
]


def plain(x):
    """JSON with NaN as a string, so that equal answers compare equal."""
    if isinstance(x, float) and math.isnan(x):
        return "NaN"
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [plain(v) for v in x]
    return x


def base_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FDB", "FIELDSTORE_CONFIG", "FIELDSTORE_ROOT", "GRIBJUMP", "PYTHONPATH"))}
    return env


@pytest.fixture(scope="session")
def stores(tmp_path_factory):
    work = tmp_path_factory.mktemp("polytope")
    grib = work / "fields.grib"
    hashes = subprocess.run([sys.executable, str(HERE / "make_fields.py"), str(grib)],
                            check=True, capture_output=True, text=True).stdout
    (work / "hashes.json").write_text(hashes)
    (work / "fdb5").mkdir()
    (work / "fdb5.yaml").write_text(
        f"type: local\nengine: toc\nschema: {REPO}/tests/fixtures/schema/ecmwf.schema\n"
        f"spaces:\n  - handler: Default\n    roots:\n      - path: {work}/fdb5\n")
    (work / "gribjump.yaml").write_text("type: local\n")
    oracle = dict(base_env(), PYTHONPATH=ORACLE, FDB5_CONFIG_FILE=str(work / "fdb5.yaml"),
                  GRIBJUMP_CONFIG_FILE=str(work / "gribjump.yaml"))
    subprocess.run([sys.executable, "-c",
                    "import pyfdb, sys; f = pyfdb.FDB(); f.archive(open(sys.argv[1], 'rb').read()); f.flush()",
                    str(grib)], check=True, env=oracle)
    ours = dict(base_env(), GRIBJUMP_DIR=PREFIX, FIELDSTORE_ROOT=str(work / "fieldstore"))
    subprocess.run([CLI, "archive", "-q", str(grib)], check=True, env=ours)
    return {"work": work, "grib": grib, "hashes": json.loads(hashes), "oracle": oracle, "fieldstore": ours}


def run(stores, side, script, payload, env=None, extra=()):
    work = stores["work"]
    cases = work / f"{script}-{side}-in.json"
    out = work / f"{script}-{side}-out.json"
    cases.write_text(json.dumps(payload))
    args = [sys.executable, str(HERE / script), str(cases)]
    if script == "polytope_run.py":
        args.append(str(work / "hashes.json"))
    args += [str(out), *extra]
    p = subprocess.run(args, env=env or stores[side], capture_output=True, text=True, timeout=900)
    assert out.exists(), f"{script} on {side} wrote nothing (rc {p.returncode}):\n{p.stderr[-3000:]}"
    return plain(json.loads(out.read_text()))


@pytest.fixture(scope="session")
def polytope_answers(stores):
    return {side: run(stores, side, "polytope_run.py", CASES) for side in ("oracle", "fieldstore")}


@pytest.mark.parametrize("case", [c["name"] for c in CASES])
def test_polytope_coveragejson_is_identical(polytope_answers, case):
    theirs = polytope_answers["oracle"][case]
    ours = polytope_answers["fieldstore"][case]
    if "error" in theirs:
        assert "error" in ours, f"GribJump failed ({theirs['error'][:300]}) but fieldstore answered"
        # The same exception reaches Polytope's caller.
        assert ours["error"].split(":")[0] == theirs["error"].split(":")[0], (ours["error"], theirs["error"])
        return
    assert "covjson" in ours, f"fieldstore failed: {ours['error'][:2000]}"
    assert ours["covjson"] == theirs["covjson"]


def test_the_cases_extract_values(polytope_answers):
    """The comparison compares something: every feature case gives values,
    missing ones (the bitmaps) among them."""
    answered = {k: v for k, v in polytope_answers["oracle"].items() if "covjson" in v}
    features = [c["name"] for c in CASES if c["name"].startswith(("regular-", "octahedral-"))]
    assert set(features) <= set(answered), {k: v.get("error", "")[:200] for k, v in polytope_answers["oracle"].items()}
    text = json.dumps(answered)
    assert '"NaN"' in text or "null" in text, "no missing value among the answers"
    assert "Grid hash mismatch" in polytope_answers["oracle"]["wrong-grid-hash"]["error"]
    assert "Grid hash mismatch" in polytope_answers["fieldstore"]["wrong-grid-hash"]["error"]


def direct_ops(h):
    reg, octa = h["regular"], h["octahedral"]
    r0 = sfc("0001", date="20240101", param="228", step="0")
    o0 = sfc("0002", date="20240102", param="167", step="6")
    return [
        # values and masks, a bitmap's missing points included, several ranges
        {"op": "extract", "requests": [[r0, [[0, 5], [2500, 2592]], reg],
                                       [sfc("0001", date="20240101", param="167", step="3"), [[700, 780]], reg],
                                       [o0, [[0, 64], [3000, 3100], [5200, 5248]], octa]]},
        # (GribJump 0.13 lists one union of a call's requests: pressure
        # levels and surface fields in one call find too few fields there.)
        {"op": "extract", "requests": [[pl("0001", date="20240102", param="130", step="9", levelist="850"),
                                        [[1000, 1100]], reg],
                                       [pl("0002", date="20240101", param="130", step="12", levelist="500"),
                                        [[0, 5248]], octa]]},
        {"op": "extract_single", "request": sfc("0002", date="20240101", param="167", step=["0", "6", "12"]),
         "ranges": [[10, 20], [4000, 4100]], "hash": octa},
        # errors: a field not stored, a key the store does not have, a wrong
        # hash, no hash, a range past the grid
        {"op": "extract", "requests": [[sfc("0001", date="20240101", param="167", step="15"), [[0, 3]], reg]]},
        {"op": "extract", "requests": [[dict(r0, foo="bar"), [[0, 3]], reg]]},
        {"op": "extract", "requests": [[r0, [[0, 3]], "0" * 32]]},
        {"op": "extract", "requests": [[r0, [[0, 3]], None]]},
        {"op": "extract", "requests": [[r0, [[2590, 2600]], reg]]},
        {"op": "axes", "request": {"class": "od", "expver": "0001"}},
        {"op": "axes", "request": {"class": "od", "expver": "0002", "levtype": "pl"}},
    ]


def partial_ops(h):
    """Some but not all of the requested fields stored (step 15 is not)."""
    reg, octa = h["regular"], h["octahedral"]
    one = lambda step: [sfc("0001", date="20240101", param="167", step=step), [[0, 3]], reg]  # noqa: E731
    single = lambda **kw: {"op": "extract_single", "ranges": [[10, 20]], "hash": octa,  # noqa: E731
                           "request": sfc("0002", date="20240101", param="167", **kw)}
    return [
        {"op": "extract", "requests": [one("0"), one("15"), one("3")]},
        {"op": "extract", "requests": [one("0"), one("3"), one("6"), one("15"), one("9")]},
        single(step=["0", "15", "6"]),
        single(step="0/to/15/by/3"),
        single(step="0/to/12/by/3"),
        {**single(step="0"), "request": dict(sfc("0002", date="20240101", step="0"), param=["167", "130"])},
        # no step: GribJump matches whole keys, so none
        {**single(), "request": sfc("0002", date="20240101", param="167")},
    ]


def test_some_requested_fields_missing_fail_as_gribjumps(stores):
    """gribjump_extract and gribjump_extract_single when some (not all) of
    the fields asked for are stored: GribJump 0.13 fails the whole call
    ("Matched M fields but N were requested"), and so does the drop-in; what
    is all there is extracted, the same on both."""
    ops = partial_ops(stores["hashes"])
    a = {side: run(stores, side, "gj_run.py", ops)["answers"] for side in ("oracle", "fieldstore")}
    for i, op in enumerate(ops):
        theirs, ours = a["oracle"][i], a["fieldstore"][i]
        if "results" in theirs:
            assert ours == theirs, (op, ours)
            continue
        assert "error" in ours, (op, theirs["error"][:300], ours)
        matched = theirs["error"].split("DataNotFound. ")[1].split(" were requested")[0]
        assert f"DataNotFound. {matched} were requested" in ours["error"], (op, theirs["error"], ours["error"])
    assert [("error" in x) for x in a["oracle"]] == [True, True, True, True, False, True, True], a["oracle"]
    assert len(a["fieldstore"][4]["results"]) == 5


def extracted_ops(h):
    reg, octa = h["regular"], h["octahedral"]
    return [{"op": "extract", "requests": [[sfc("0001", date="20240101", param=p, step=str(s)), [[0, 2592]], reg]
                                           for s in (0, 3) for p in ("167", "228")]},
            {"op": "extract", "requests": [[sfc("0002", date="20240102", param="167", step="12"),
                                            [[0, 5248]], octa]]},
            {"op": "extract_single", "request": pl("0002", date="20240101", param="130", step="6",
                                                   levelist=["1000", "850", "500"]),
             "ranges": [[0, 100], [5000, 5248]], "hash": octa},
            {"op": "axes", "request": sfc("0001"), "level": 3}]


def test_fields_archived_through_the_c_api_are_extracted_as_those_archived_by_the_cli(stores, tmp_path):
    """A C program archives the fields through fieldstore's libfdb5.so
    (fdb_c.h's fdb_archive_multiple, fdb_flush); the drop-in extracts them
    (jump info made on first extraction) exactly as from the CLI's store."""
    prefix = os.environ.get("FIELDSTORE_CAPI_PREFIX")
    assert prefix, "scripts/test-gribjump-python.sh installs fieldstore's libfdb5 (FIELDSTORE_CAPI_PREFIX)"
    exe = tmp_path / "archive_capi"
    subprocess.run([os.environ.get("CC", "cc"), str(HERE / "archive_capi.c"), "-o", str(exe),
                    f"-I{prefix}/include", f"-L{prefix}/lib", "-lfdb5", f"-Wl,-rpath,{prefix}/lib"],
                   check=True, timeout=300)
    root = tmp_path / "capi-root"
    p = subprocess.run([str(exe), str(stores["grib"])], env=dict(base_env(), FIELDSTORE_ROOT=str(root)),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "archived" in p.stdout, (p.stdout, p.stderr[-2000:])
    ops = extracted_ops(stores["hashes"])
    via_c = run(stores, "fieldstore", "gj_run.py", ops,
                env=dict(base_env(), GRIBJUMP_DIR=PREFIX, FIELDSTORE_ROOT=str(root)))["answers"]
    cli = run(stores, "fieldstore", "gj_run.py", ops)["answers"]
    assert all("error" not in x for x in via_c), via_c
    assert len(via_c[0]["results"]) == 4 and len(via_c[2]["results"]) == 3
    assert via_c == cli


def test_fields_archived_through_the_python_package_are_extracted_as_those_archived_by_the_cli(stores, tmp_path):
    """fieldstore's Python package (`fieldstore.FDB().archive`) writes the
    fields; the drop-in extracts them exactly as from the CLI's store."""
    python = os.environ.get("FIELDSTORE_PY_PYTHON")
    if not python:
        pytest.skip("fieldstore's Python package is not built (scripts/test-python.sh builds it; "
                    "FIELDSTORE_PY_PYTHON names its venv's python)")
    root = tmp_path / "py-root"
    subprocess.run([python, "-c", "import fieldstore, sys; f = fieldstore.FDB(); "
                    "f.archive(open(sys.argv[1], 'rb').read()); f.flush()", str(stores["grib"])],
                   check=True, timeout=300, env=dict(base_env(), FIELDSTORE_ROOT=str(root)))
    ops = extracted_ops(stores["hashes"])
    via_py = run(stores, "fieldstore", "gj_run.py", ops,
                 env=dict(base_env(), GRIBJUMP_DIR=PREFIX, FIELDSTORE_ROOT=str(root)))["answers"]
    cli = run(stores, "fieldstore", "gj_run.py", ops)["answers"]
    assert all("error" not in x for x in via_py), via_py
    assert via_py == cli


@pytest.fixture(scope="session")
def direct_answers(stores):
    ops = direct_ops(stores["hashes"])
    return ops, {side: run(stores, side, "gj_run.py", ops) for side in ("oracle", "fieldstore")}


def test_pygribjump_loads_fieldstores_library_the_way_it_loads_gribjumps(direct_answers):
    _, a = direct_answers
    assert a["fieldstore"]["library"].startswith("fieldstore "), a["fieldstore"]["library"]
    assert not a["oracle"]["library"].startswith("fieldstore")
    assert a["fieldstore"]["version"] == a["oracle"]["version"] == "0.13.1"


def test_pygribjump_values_and_masks_are_identical(direct_answers):
    ops, a = direct_answers
    for i in (0, 1, 2):
        assert "results" in a["oracle"]["answers"][i], a["oracle"]["answers"][i]
        assert a["fieldstore"]["answers"][i] == a["oracle"]["answers"][i], ops[i]
    first = a["fieldstore"]["answers"][0]["results"][0]
    assert "NaN" in first["values"][1] and first["masks"][1][0] != (1 << 64) - 1, "the bitmap's missing points"
    assert len(a["fieldstore"]["answers"][2]["results"]) == 3


def test_pygribjump_errors_as_gribjumps(direct_answers):
    _, a = direct_answers
    theirs, ours = a["oracle"]["answers"], a["fieldstore"]["answers"]
    for i, words in [(3, ["DataNotFound"]), (5, ["Grid hash mismatch", "0" * 32]),
                     (6, ["Grid hash was not specified"])]:
        assert "error" in theirs[i] and "error" in ours[i], (i, theirs[i], ours[i])
        for w in words:
            assert w in theirs[i]["error"] and w in ours[i]["error"], (i, w, ours[i]["error"])
    # A range past the grid: fieldstore names it. GribJump 0.13 fails in
    # most runs but answered NaNs with an all-zero mask in one CI run (it
    # reads past the field), so only fieldstore's answer is pinned.
    assert "out of range" in ours[7].get("error", ""), ours[7]
    assert "error" in theirs[7] or theirs[7]["results"][0]["masks"] == [[0]], theirs[7]
    # A key the store does not have: GribJump finds no field; fieldstore
    # names the keyword.
    assert "DataNotFound" in theirs[4]["error"]
    assert "foo" in ours[4]["error"], ours[4]["error"]


def test_axes_are_gribjumps(direct_answers):
    _, a = direct_answers
    for i in (8, 9):
        theirs = {k: sorted(v) for k, v in a["oracle"]["answers"][i]["axes"].items()}
        ours = {k: sorted(v) for k, v in a["fieldstore"]["answers"][i]["axes"].items()}
        assert ours == theirs


def test_replaced_purged_and_wiped_fields_through_the_library(stores, tmp_path):
    """A field archived again is extracted with its new values, also after a
    purge; a wiped one is not found (fieldstore only: the jump info kept on first extraction
    must follow the field)."""
    grib = stores["grib"]
    root = tmp_path / "fs"
    env = dict(base_env(), GRIBJUMP_DIR=PREFIX, FIELDSTORE_ROOT=str(root))
    subprocess.run([CLI, "archive", "-q", str(grib)], check=True, env=env)
    reg = stores["hashes"]["regular"]
    req = sfc("0001", date="20240101", param="167", step="0")
    ops = [{"op": "extract", "requests": [[req, [[0, 2592]], reg]]}]
    before = run(stores, "fieldstore", "gj_run.py", ops, env=env)["answers"][0]["results"][0]["values"][0]
    # The same key again, other values: written with ecCodes from the step-3 field.
    newer = tmp_path / "newer.grib"
    subprocess.run([sys.executable, "-c", """
import sys, eccodes
with open(sys.argv[1], 'rb') as f, open(sys.argv[2], 'wb') as out:
    while (h := eccodes.codes_grib_new_from_file(f)) is not None:
        if (eccodes.codes_get(h, 'expver'), eccodes.codes_get(h, 'paramId'), eccodes.codes_get(h, 'step'),
                eccodes.codes_get(h, 'date'), eccodes.codes_get(h, 'levtype')) == ('0001', 167, 0, 20240101, 'sfc'):
            eccodes.codes_set_values(h, eccodes.codes_get_values(h) + 100.0)
            out.write(eccodes.codes_get_message(h))
        eccodes.codes_release(h)
""", str(grib), str(newer)], check=True)
    subprocess.run([CLI, "archive", "-q", str(newer)], check=True, env=env)
    after = run(stores, "fieldstore", "gj_run.py", ops, env=env)["answers"][0]["results"][0]["values"][0]
    assert len(after) == len(before) == 2592
    assert all(abs(a - b - 100.0) < 0.01 for a, b in zip(after, before)), (before[:3], after[:3])
    # Purge what the replacement left: the new field is still the one read.
    subprocess.run([CLI, "purge", "-q", "--doit"], check=True, env=env)
    purged = run(stores, "fieldstore", "gj_run.py", ops, env=env)["answers"][0]["results"][0]["values"][0]
    assert purged == after
    # Wipe the dataset: the field is gone.
    ds = "class=od,stream=oper,expver=0001,date=20240101,time=0000,domain=g"
    subprocess.run([CLI, "wipe", "-q", "--doit", ds], check=True, env=env)
    gone = run(stores, "fieldstore", "gj_run.py", ops, env=env)["answers"][0]
    assert "DataNotFound" in gone.get("error", ""), gone


def test_a_forked_child_gets_an_error_not_the_parents_handle(stores, tmp_path):
    script = tmp_path / "fork.py"
    script.write_text("""
import os, sys, pygribjump
gj = pygribjump.GribJump()
req = {"class": "od", "expver": "0001", "stream": "oper", "type": "fc", "date": "20240101", "time": "0000",
       "domain": "g", "levtype": "sfc", "param": "167", "step": "0"}
assert list(gj.extract([(req, [(0, 3)], sys.argv[1])]))
pid = os.fork()
if pid == 0:
    try:
        list(gj.extract([(req, [(0, 3)], sys.argv[1])]))
        os._exit(3)
    except Exception as e:
        os._exit(0 if "forked" in str(e) else 4)
    os._exit(5)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
os._exit(0)
""")
    p = subprocess.run([sys.executable, str(script), stores["hashes"]["regular"]], env=stores["fieldstore"],
                       capture_output=True, text=True, timeout=120)
    assert p.stdout.strip() == "0", (p.stdout, p.stderr[-2000:])


def test_the_library_exports_gribjumps_functions():
    """`nm -D`: the functions GribJump 0.13's wheel exports, no more (but
    fieldstore's own, named so)."""

    def exported(lib):
        out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], check=True, capture_output=True,
                             text=True).stdout
        return {line.split()[-1] for line in out.splitlines() if line.split()[1:2] == ["T"]}

    theirs = {s for s in exported(Path(ORACLE) / "gribjumplib/lib64/libgribjump.so") if s.startswith("gribjump_")}
    ours = exported(Path(PREFIX) / "lib/libgribjump.so")
    assert len(theirs) == 27
    assert {s for s in ours if s.startswith("gribjump_")} == theirs
    assert all(s.startswith(("gribjump_", "fieldstore_")) for s in ours), sorted(ours - theirs)


def test_ignore_grid_hash_and_local_paths_as_gribjump(stores):
    """GRIBJUMP_IGNORE_GRID=1: a request without a grid hash is extracted by
    both; gribjump_extract_from_paths on a local GRIB file gives the same
    values and masks."""
    grib = stores["grib"]
    data = grib.read_bytes()
    second = data.index(b"GRIB", 4)  # the second message's offset
    reg = stores["hashes"]["regular"]
    ops = [
        {"op": "extract", "requests": [[sfc("0001", date="20240102", param="228", step="9"), [[0, 40], [2000, 2100]],
                                        None]]},
        {"op": "extract_from_paths", "requests": [[str(grib), 0, [[0, 10], [2580, 2592]], reg],
                                                  [str(grib), second, [[0, 40], [2000, 2100]], reg]]},
    ]
    a = {side: run(stores, side, "gj_run.py", ops, env=dict(stores[side], GRIBJUMP_IGNORE_GRID="1"))
         for side in ("oracle", "fieldstore")}
    assert a["fieldstore"]["library"].startswith("fieldstore ")
    for i in range(len(ops)):
        assert "results" in a["oracle"]["answers"][i], a["oracle"]["answers"][i]
        assert a["fieldstore"]["answers"][i] == a["oracle"]["answers"][i], i
    assert any(v == "NaN" for part in a["fieldstore"]["answers"][1]["results"][1]["values"] for v in part)


def test_a_long_lived_process_sees_fields_archived_after_it_opened_the_store(stores, tmp_path):
    """Handles on one store share it within a process (Polytope makes one per
    request): a field archived by another process afterwards is found by the
    next handle, and by the same one."""
    grib, root = stores["grib"], tmp_path / "fs"
    env = dict(base_env(), GRIBJUMP_DIR=PREFIX, FIELDSTORE_ROOT=str(root))
    subprocess.run([CLI, "archive", "-q", str(grib)], check=True, env=env)
    later = tmp_path / "later.grib"
    subprocess.run([sys.executable, "-c", """
import sys, eccodes
with open(sys.argv[1], 'rb') as f, open(sys.argv[2], 'wb') as out:
    h = eccodes.codes_grib_new_from_file(f)
    eccodes.codes_set(h, 'step', 15)
    out.write(eccodes.codes_get_message(h))
""", str(grib), str(later)], check=True)
    script = tmp_path / "later.py"
    script.write_text("""
import os, subprocess, sys, pygribjump
req = {"class": "od", "expver": "0001", "stream": "oper", "type": "fc", "date": "20240101", "time": "0000",
       "domain": "g", "levtype": "sfc", "param": "167", "step": "15"}
first = pygribjump.GribJump()
assert list(first.extract([(dict(req, step="0"), [(0, 3)], sys.argv[1])]))
try:
    list(first.extract([(req, [(0, 3)], sys.argv[1])]))
    print("found before it was archived"); os._exit(1)
except Exception as e:
    assert "DataNotFound" in str(e), e
subprocess.run([sys.argv[2], "archive", "-q", sys.argv[3]], check=True)
for gj in (pygribjump.GribJump(), first):
    (r,) = list(gj.extract([(req, [(0, 3)], sys.argv[1])]))
    assert len(r.values[0]) == 3
print("ok")
os._exit(0)
""")
    p = subprocess.run([sys.executable, str(script), stores["hashes"]["regular"], CLI, str(later)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.stdout.strip().endswith("ok"), (p.stdout, p.stderr[-2000:])


def test_fields_archived_through_serve_are_extracted_as_those_archived_by_the_cli(stores, tmp_path):
    """pyfdb 5.25 (FDB5's own remote client) archives the fields into
    `fieldstore serve`; the drop-in then extracts them from that root (jump
    info made on first extraction) exactly as from the CLI's store."""
    root = tmp_path / "served"
    root.mkdir()
    config = tmp_path / "serve.yaml"
    config.write_text(f"type: catalogue\nengine: toc\nstore: file\nschema: {REPO}/tests/fixtures/schema/ecmwf.schema\n"
                      f"serverPort: 0\nspaces: [{{handler: Default, roots: [{{path: {root}}}]}}]\n")
    serve = subprocess.Popen([CLI, "--config", str(config), "serve"], env=base_env(), stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = serve.stderr.readline()
        assert "listening on 127.0.0.1:" in line, line
        port = int(line.split("listening on 127.0.0.1:")[1].split()[0])
        client = tmp_path / "client.yaml"
        client.write_text(f"type: remote\nengine: remote\nstore: remote\nhost: localhost\nport: {port}\n")
        (tmp_path / "home").mkdir()
        subprocess.run([sys.executable, "-c",
                        "import pyfdb, sys; f = pyfdb.FDB(); f.archive(open(sys.argv[1], 'rb').read()); f.flush()",
                        str(stores["grib"])], check=True, timeout=300,
                       env=dict(base_env(), FDB5_CONFIG_FILE=str(client), FDB_HOME=str(tmp_path / "home")))
    finally:
        serve.kill()
        serve.wait()
    reg = stores["hashes"]["regular"]
    ops = [{"op": "extract", "requests": [[sfc("0001", date="20240101", param="167", step=str(s)), [[0, 2592]], reg]
                                          for s in (0, 3)]},
           {"op": "axes", "request": sfc("0001"), "level": 3}]
    served = run(stores, "fieldstore", "gj_run.py", ops,
                 env=dict(base_env(), GRIBJUMP_DIR=PREFIX, FIELDSTORE_ROOT=str(root)))["answers"]
    cli = run(stores, "fieldstore", "gj_run.py", ops)["answers"]
    assert "error" not in served[0], served[0]
    assert len(served[0]["results"]) == 2 and len(served[0]["results"][0]["values"][0]) == 2592
    assert served == cli
