"""The read-only Zarr v3 store (fieldstore.zarr_store): the same arrays as
the xarray view, one field per chunk, absent fields NaN, nothing written."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import fieldstore
from fieldstore import _fieldstore

from test_arrays import cube_store, holey_store, param_cache, same_bits, store  # noqa: F401 (fixtures)
from test_earthkit import need

zarr = need("zarr")
xr = need("xarray")

REQ = {"class": "od", "date": "20251125"}


def test_open_array_gives_the_views_values(cube_store: fieldstore.FDB) -> None:
    from fieldstore.zarr_store import FieldStoreZarr

    z = FieldStoreZarr(REQ, fdb=cube_store)
    ds = fieldstore.open_dataset(REQ, fdb=cube_store)
    for name in ("t", "t2m"):
        a = zarr.open_array(z, path=name, mode="r")
        assert a.shape == ds[name].shape
        assert a.metadata.dimension_names == ds[name].dims
        assert a.attrs["units"] == "K"
        same_bits(a[:], ds[name].values, name)
    g = zarr.open_group(z, mode="r")
    assert {"t", "t2m", "latitude", "longitude"} <= set(g.array_keys())
    same_bits(g["latitude"][:], ds["latitude"].values, "latitude")


def test_chunks_are_fields_and_reads_touch_only_theirs(cube_store: fieldstore.FDB,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from fieldstore.zarr_store import FieldStoreZarr

    req = {"class": "e6", "timespan": "none"}
    a = zarr.open_array(FieldStoreZarr(req, fdb=cube_store), path="t2m", mode="r")
    assert a.chunks == (1, 654400)
    calls: list[int] = []
    real = _fieldstore.decode_into
    monkeypatch.setattr(_fieldstore, "decode_into",
                        lambda e, *args, **kw: (calls.append(len(e)), real(e, *args, **kw))[1])
    part = a[2, 100:110]
    assert calls == [1]
    same_bits(part, fieldstore.open_dataset(req, fdb=cube_store)["t2m"].values[2, 100:110], "part")


def test_xarray_reads_the_store_back(cube_store: fieldstore.FDB) -> None:
    from fieldstore.zarr_store import FieldStoreZarr

    req = {"class": "e6", "timespan": "none"}
    back = xr.open_zarr(FieldStoreZarr(req, fdb=cube_store), consolidated=False)
    view = fieldstore.open_dataset(req, fdb=cube_store)
    same_bits(back["t2m"].values, view["t2m"].values, "t2m")
    assert set(view.coords) <= set(back.coords)
    assert np.array_equal(back["valid_time"].values, view["valid_time"].values)


def test_absent_fields_are_absent_chunks_and_nothing_is_written(holey_store: fieldstore.FDB) -> None:
    from fieldstore.zarr_store import FieldStoreZarr

    z = FieldStoreZarr({"class": "e6", "timespan": "none"}, fdb=holey_store)
    a = zarr.open_array(z, path="t2m", mode="r")
    assert a.shape == (2, 3, 654400)
    assert asyncio.run(z.exists("t2m/c/1/0/0"))
    assert not asyncio.run(z.exists("t2m/c/1/1/0"))
    assert not asyncio.run(z.exists("nosuch/zarr.json"))
    chunks = [k for k in asyncio.run(_list(z)) if k.startswith("t2m/c/")]
    assert sorted(chunks) == ["t2m/c/0/0/0", "t2m/c/0/1/0", "t2m/c/0/2/0", "t2m/c/1/0/0"]
    values = a[:]
    assert not np.isnan(values[0]).any() and not np.isnan(values[1, 0]).any()
    assert np.isnan(values[1, 1:]).all()
    with pytest.raises(PermissionError, match="read-only"):
        asyncio.run(z.set("t2m/c/0/0/0", None))  # type: ignore[arg-type]
    with pytest.raises(PermissionError, match="read-only"):
        asyncio.run(z.delete("t2m/zarr.json"))
    same_bits(values, fieldstore.open_dataset({"class": "e6", "timespan": "none"}, fdb=holey_store)["t2m"].values,
              "t2m")


async def _list(z) -> list[str]:  # type: ignore[no-untyped-def]
    return [k async for k in z.list()]
