"""The recipe of the README: retrieved GRIB opens in earthkit-data and in
xarray through cfgrib. Skipped without those packages, unless
``FIELDSTORE_PY_STRICT=1`` (CI), where they are required."""

from __future__ import annotations

import importlib
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import fieldstore

from conftest import GRIB

STRICT = os.environ.get("FIELDSTORE_PY_STRICT") == "1"

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


def need(module: str):  # type: ignore[no-untyped-def]
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if STRICT:
            pytest.fail(f"{module} is not installed: {e}")
        pytest.skip(f"{module} is not installed")


@pytest.fixture
def t2m_file(grib_fdb: fieldstore.FDB, tmp_path: Path) -> Path:
    out = tmp_path / "t2m.grib"
    with grib_fdb.retrieve(T2M) as dh, open(out, "wb") as f:
        shutil.copyfileobj(dh, f)
    return out


def test_earthkit_reads_a_retrieved_file(t2m_file: Path) -> None:
    ekd = need("earthkit.data")
    fields = ekd.from_source("file", str(t2m_file)).to_fieldlist()
    assert len(fields) == 3
    assert fields.metadata("param") == ["2t"] * 3
    assert fields.metadata("step") == [6, 12, 18]
    reference = ekd.from_source("file", str(GRIB / "timespan.grib")).to_fieldlist()
    ref = [f for f in reference if f.metadata("param") == "2t"]
    for got, want in zip(fields, ref):
        assert (got.values == want.values).all()


def test_earthkit_reads_the_data_handle_as_a_stream(grib_fdb: fieldstore.FDB) -> None:
    ekd = need("earthkit.data")
    with grib_fdb.retrieve(T2M) as dh:
        fields = [(f.metadata("step"), f.values.shape) for f in ekd.from_source("stream", dh).to_fieldlist()]
    assert fields == [(6, (654400,)), (12, (654400,)), (18, (654400,))]


def test_xarray_opens_a_retrieved_file_through_cfgrib(t2m_file: Path) -> None:
    xr = need("xarray")
    need("cfgrib")
    ds = xr.open_dataset(t2m_file, engine="cfgrib", backend_kwargs={"indexpath": ""})
    assert list(ds.data_vars) == ["t2m"]
    assert ds["t2m"].shape == (3, 654400)
    assert [int(s / 3600e9) for s in ds["step"].values.astype("int64")] == [6, 12, 18]


@pytest.mark.parametrize("stream", [True, False])
def test_earthkits_fdb_source_runs_over_fieldstore(
    grib_fdb: fieldstore.FDB, root: Path, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    ekd = need("earthkit.data")
    import sys

    from conftest import config

    # earthkit-data's "fdb" source imports pyfdb when first used.
    monkeypatch.setitem(sys.modules, "pyfdb", fieldstore)
    monkeypatch.delitem(sys.modules, "earthkit.data.sources.fdb", raising=False)
    fields = ekd.from_source("fdb", T2M, config=config(root), stream=stream).to_fieldlist()
    assert [(f.metadata("param"), f.metadata("step")) for f in fields] == [
        ("2t", 6), ("2t", 12), ("2t", 18)
    ]


def test_the_fieldstore_source_plugin(grib_fdb: fieldstore.FDB, root: Path) -> None:
    """``from_source("fieldstore", request)``: registered by the package's
    entry point; fields, metadata and to_xarray as from the GRIB file."""
    ekd = need("earthkit.data")
    from conftest import config

    for kwargs in ({"fdb": grib_fdb}, {"config": config(root)}, {"fdb": grib_fdb, "stream": True}):
        fields = ekd.from_source("fieldstore", T2M, **kwargs).to_fieldlist()
        assert [(f.metadata("param"), f.metadata("step")) for f in fields] == [("2t", 6), ("2t", 12), ("2t", 18)]
    reference = [f for f in ekd.from_source("file", str(GRIB / "timespan.grib")).to_fieldlist()
                 if f.metadata("param") == "2t"]
    fields = ekd.from_source("fieldstore", T2M, fdb=grib_fdb).to_fieldlist()
    for got, want in zip(fields, reference):
        assert (got.values == want.values).all()
    ds = ekd.from_source("fieldstore", T2M, fdb=grib_fdb).to_xarray()
    assert ds["2t"].shape[-1] == 654400
    with pytest.raises(fieldstore.InvalidInputError, match="names no stored field"):
        ekd.from_source("fieldstore", {**T2M, "date": 19990101}, fdb=grib_fdb).to_fieldlist()


def test_the_fieldstore_source_takes_a_partial_request(grib_fdb: fieldstore.FDB) -> None:
    """Issue 28: a request without ``param`` (or any keyword a rule needs)
    names the fields ``open_dataset`` opens for it; it answered "the request
    names no stored field". Memory and stream alike, every field listed, in
    the listing's value order per keyword, the bytes as retrieved."""
    ekd = need("earthkit.data")
    partial = {"class": "e6", "levtype": "sfc"}
    listed = sorted((e.combined_key()["param"], int(e.combined_key()["step"])) for e in grib_fdb.list(partial))
    assert len(listed) == 6
    ds = fieldstore.open_dataset(partial, fdb=grib_fdb)
    assert sorted(ds.data_vars) == ["cp", "t2m"]
    for stream in (False, True):
        fields = ekd.from_source("fieldstore", partial, fdb=grib_fdb, stream=stream).to_fieldlist()
        got = sorted((str(f.metadata("paramId")), f.metadata("step")) for f in fields)
        assert got == listed, stream
    one = ekd.from_source("fieldstore", {"class": "e6", "param": 167}, fdb=grib_fdb).to_fieldlist()
    assert [f.metadata("step") for f in one] == [6, 12, 18]
    full = fieldstore.open_dataset({"class": "e6", "param": 167}, fdb=grib_fdb)
    for i, f in enumerate(one):
        assert np.array_equal(f.values.astype("float32"), full["t2m"].isel(step=i).values.reshape(-1))
