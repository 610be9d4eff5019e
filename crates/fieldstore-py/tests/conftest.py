"""Shared fixtures: the repository's test data and fresh stores."""

from __future__ import annotations

from pathlib import Path

import pytest

import fieldstore

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"
GRIB = FIXTURES / "grib"
SCHEMA = FIXTURES / "schema" / "ecmwf.schema"

# A complete key of the ECMWF schema (od/oper/fc/sfc).
KEY = {
    "class": "od",
    "expver": "0001",
    "stream": "oper",
    "date": "20231201",
    "time": "1200",
    "domain": "g",
    "type": "fc",
    "levtype": "sfc",
    "step": "6",
    "param": "167",
}


def config(root: Path, schema: Path | None = SCHEMA) -> dict:
    c: dict = {
        "type": "local",
        "engine": "toc",
        "spaces": [{"handler": "Default", "roots": [{"path": str(root)}]}],
    }
    if schema is not None:
        c["schema"] = str(schema)
    return c


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir()
    return r


@pytest.fixture
def fdb(root: Path) -> fieldstore.FDB:
    return fieldstore.FDB(config(root))


@pytest.fixture(scope="session")
def grib_files() -> list[Path]:
    files = sorted(GRIB.glob("*.grib"))
    assert files, f"no GRIB fixtures in {GRIB}"
    return files


@pytest.fixture
def grib_fdb(fdb: fieldstore.FDB, grib_files: list[Path]) -> fieldstore.FDB:
    if not fieldstore.HAS_GRIB:
        pytest.skip("this build of fieldstore has no GRIB support")
    for f in grib_files:
        fdb.archive(f.read_bytes())
    fdb.flush()
    return fdb
