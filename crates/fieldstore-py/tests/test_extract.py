"""FDB.extract (docs/extract.md): values at points of stored GRIB fields,
as NumPy arrays with their keys, bit-identical to the ecCodes Python
binding decoding the whole field; every selection form; the
pygribjump-shaped call; bad selections are ValueError/InvalidInputError
naming what is wrong."""

from __future__ import annotations

import numpy as np
import pytest

import fieldstore
from conftest import GRIB

LABELS = {"class": "od", "expver": "0001", "stream": "oper", "type": "fc"}
REQUEST = {**LABELS, "date": "20070323", "time": "1200", "levtype": "sfc", "step": "0", "param": "130"}


def whole(path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ecCodes' values (missing NaN), latitudes and longitudes."""
    import eccodes

    with open(path, "rb") as f:
        h = eccodes.codes_grib_new_from_file(f)
    try:
        eccodes.codes_set(h, "missingValue", 1e300)
        v = eccodes.codes_get_values(h).astype(np.float64)
        v[v == 1e300] = np.nan
        return v, eccodes.codes_get_array(h, "latitudes"), eccodes.codes_get_array(h, "longitudes")
    finally:
        eccodes.codes_release(h)


def archive(fdb, path) -> dict:
    """Archive a fixture (no MARS labelling of its own) and return its request."""
    import eccodes

    with open(path, "rb") as f:
        h = eccodes.codes_grib_new_from_file(f)
        key = {k: eccodes.codes_get_string(h, k) for k in ("date", "time", "step", "levtype", "shortName")}
        edition = eccodes.codes_get(h, "edition")
        mars_type = eccodes.codes_get_string(h, "marsType") if edition == 1 else "fc"
        eccodes.codes_release(h)
    ident = {**LABELS, "type": mars_type, "date": key["date"], "time": f"{int(key['time']):04d}",
             "domain": "g", "levtype": key["levtype"], "step": key["step"], "param": "130"}
    fdb.archive(path.read_bytes(), identifier=ident)
    fdb.flush()
    return ident


@pytest.mark.parametrize("name", ["ccsds-g2-bitmap.grib", "simple-g2-decimal.grib", "simple-g1-bitmap.grib", "complex-g2.grib"])
def test_every_selection_form_bit_identical_to_eccodes(fdb, name):
    path = GRIB / "extract" / name
    request = archive(fdb, path)
    want, lats, lons = whole(path)
    n = want.size
    cases = [
        (dict(indices=[n - 1, 0, 7, 7]), [n - 1, 0, 7, 7]),
        (dict(ranges=[(3, 9), (n - 2, n)]), list(range(3, 9)) + [n - 2, n - 1]),
        (dict(mask=np.arange(n) % 97 == 5), list(np.nonzero(np.arange(n) % 97 == 5)[0])),
        (dict(points=[(lats[10], lons[10]), (lats[123] + 0.01, lons[123] - 0.01)]), [10, 123]),
    ]
    for i, (kwargs, indices) in enumerate(cases):
        got = fdb.extract(request, **kwargs)
        assert len(got) == 1
        f = got[0]
        assert f.key["param"] == "130"
        assert list(f.indices) == indices, kwargs
        assert f.values.dtype == np.float64
        np.testing.assert_array_equal(f.values.view(np.uint64), want[indices].view(np.uint64))
        if "points" in kwargs:
            # Where each point was answered from: the grid point's
            # coordinates as ecCodes gives them, and how far it is.
            np.testing.assert_array_equal(f.grid_latitudes, lats[indices])
            np.testing.assert_array_equal(f.grid_longitudes, lons[indices])
            assert f.distances_km[0] == 0.0
            assert 0.0 < f.distances_km[1] < 2.0, f.distances_km
        else:
            assert f.grid_latitudes is None and f.distances_km is None
        if name == "complex-g2.grib":
            assert f.method.startswith("decoded whole: "), f.method
        else:
            # Built on the first extraction and kept with the entry.
            assert f.method == ("jump info computed" if i == 0 else "jump info"), (i, f.method)


def test_pygribjump_shaped_call(fdb):
    path = GRIB / "extract" / "ccsds-g2-bitmap.grib"
    request = archive(fdb, path)
    want, _, _ = whole(path)
    out = fdb.extract([(request, [(0, 5), (100, 103)])])
    assert len(out) == 1
    r = out[0]
    assert [len(v) for v in r.values] == [5, 3]
    np.testing.assert_array_equal(np.concatenate(r.values).view(np.uint64),
                                  np.concatenate([want[0:5], want[100:103]]).view(np.uint64))
    np.testing.assert_array_equal(np.concatenate(r.masks), ~np.isnan(np.concatenate(r.values)))


def test_grib_jump_info_kept_on_first_extraction(fdb):
    """archive(bytes) without a key reads the message's own key; the first
    extraction builds the field's jump info and keeps it with the entry,
    where the next one (another handle too) finds it; the same values."""
    path = GRIB / "rd-fc.grib"
    fdb.archive(path.read_bytes())
    fdb.flush()
    request = {"class": "rd", "expver": "xxxx", "stream": "oper", "date": "20201102", "time": "0000",
               "domain": "g", "type": "fc", "levtype": "sfc", "step": "12", "param": "166"}
    want, _, _ = whole(path)
    for method in ["jump info computed", "jump info"]:
        got = fdb.extract(request, indices=[0, 145])
        assert got[0].method == method
        np.testing.assert_array_equal(got[0].values.view(np.uint64), want[[0, 145]].view(np.uint64))


def test_bad_selections_are_named(fdb):
    request = archive(fdb, GRIB / "extract" / "simple-g2.grib")
    with pytest.raises(ValueError, match="give exactly one of"):
        fdb.extract(request)
    with pytest.raises(ValueError, match="give exactly one of"):
        fdb.extract(request, indices=[1], points=[(0, 0)])
    with pytest.raises(fieldstore.InvalidInputError, match="index 1000 is out of range: the field has 1000 points"):
        fdb.extract(request, indices=[1000])
    with pytest.raises(fieldstore.InvalidInputError, match="latitude must be within -90..90"):
        fdb.extract(request, points=[(95.0, 0.0)])
    with pytest.raises(ValueError, match=r"\(request, ranges\) tuple"):
        fdb.extract([request])
    with pytest.warns(fieldstore.MissingFieldsWarning, match="the one field the request names is missing: "):
        assert fdb.extract({**request, "step": "6"}, indices=[0]) == []


def test_missing_fields_are_warned_of(fdb):
    """A request naming fields beside the one stored extracts that one and
    warns how many are missing, naming the first in request order."""
    request = archive(fdb, GRIB / "extract" / "simple-g2.grib")
    steps = ["6", request["step"], "12"]
    with pytest.warns(fieldstore.MissingFieldsWarning) as caught:
        got = fdb.extract({**request, "step": steps}, indices=[0])
    assert len(got) == 1
    message = str(caught[0].message)
    assert message.startswith("2 of the 3 fields the request names are missing, the first: "), message
    assert "step=6," in message, message


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_xarray_view_reads_few_points_through_extraction(fdb, monkeypatch, dtype):
    """`.sel(latitude=, longitude=, method="nearest")` and `.isel` of a few
    points give the values the whole-field path gives, bit for bit, without
    decoding a whole field (decode_into is not called)."""
    import xarray  # noqa: F401 (the view needs it)

    from fieldstore import _fieldstore

    # Three steps of the same CCSDS field with a bitmap, archived as GRIB
    # under their own keys (jump info built on the first extraction).
    import eccodes

    with open(GRIB / "extract" / "ccsds-g2-bitmap.grib", "rb") as f:
        h = eccodes.codes_grib_new_from_file(f)
    eccodes.codes_set(h, "setLocalDefinition", 1)
    for k, v in [("class", "od"), ("stream", "oper"), ("type", "fc"), ("expver", "0001")]:
        eccodes.codes_set(h, k, v)
    for step in (0, 6, 12):
        eccodes.codes_set(h, "step", step)
        fdb.archive(eccodes.codes_get_message(h))
    eccodes.codes_release(h)
    fdb.flush()
    request = {**LABELS, "date": "20070323", "time": "1200", "levtype": "sfc", "param": "130"}
    ds = fieldstore.open_dataset(request, fdb=fdb, dtype=dtype)
    var = next(iter(ds.data_vars))
    whole = ds[var].values  # every field decoded whole, once
    lat, lon = 55.3, 3.1
    nearest_i = int(np.abs(ds.latitude.values - lat).argmin())
    nearest_j = int(np.abs(ds.longitude.values - lon).argmin())

    def no_whole_fields(*args, **kwargs):
        raise AssertionError("decode_into called: the few points were not extracted")

    monkeypatch.setattr(_fieldstore, "decode_into", no_whole_fields)
    ds = fieldstore.open_dataset(request, fdb=fdb, dtype=dtype)
    got = ds[var].sel(latitude=lat, longitude=lon, method="nearest").values
    def bits(a):
        return np.ascontiguousarray(a).view(np.uint8)

    np.testing.assert_array_equal(bits(got), bits(whole[..., nearest_i, nearest_j]))
    got = ds[var].isel(latitude=[0, 5, 99], longitude=slice(10, 14)).values
    np.testing.assert_array_equal(bits(got), bits(whole[..., [0, 5, 99], 10:14]))
    assert got.dtype == np.dtype(dtype)
    assert np.isnan(whole).any(), "the field has missing points: NaN must come through"
