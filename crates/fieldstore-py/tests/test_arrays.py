"""Array views (fieldstore._cube, xarray_backend): the same dimensions,
coordinates, attributes and values (to the last bit) as cfgrib gives for the
same fields of the repository's GRIB files; NaN for missing fields; clear
errors; lazy reads of only the fields a selection touches."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fieldstore
from fieldstore import _fieldstore

from conftest import GRIB
from test_earthkit import need

xr = need("xarray")
need("cfgrib")

# (file, request naming its fields, cfgrib's filter for the same fields)
CASES = [
    ("levtypes.grib", {"class": "od", "date": "20251125", "levtype": "pl"}, {"typeOfLevel": "isobaricInhPa"}),
    ("levtypes.grib", {"class": "od", "date": "20251125", "levtype": "sfc"}, {"typeOfLevel": "surface"}),
    ("timespan.grib", {"class": "e6", "timespan": "none"}, {"stepType": "instant"}),
    ("timespan.grib", {"class": "e6", "timespan": "1h"}, {"stepType": "accum"}),
    ("synth11.grib", {"class": "od", "date": "20230508"}, {}),
    ("rd-fc.grib", {"class": "rd", "type": "fc"}, {}),
    ("template.grib", {"class": "ea"}, {}),
    ("climatology.grib", {"class": "ei"}, {}),
]


def cfgrib(path: Path, filter_by_keys: dict[str, Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.open_dataset(path, engine="cfgrib",
                               backend_kwargs={"indexpath": "", "filter_by_keys": filter_by_keys})


def same_attrs(got: dict[str, Any], want: dict[str, Any], what: str) -> None:
    assert sorted(got) == sorted(want), f"{what}: attribute names differ"
    for k, v in want.items():
        if isinstance(v, np.ndarray):
            assert np.array_equal(got[k], v), f"{what}: attribute {k}"
        else:
            assert got[k] == v, f"{what}: attribute {k}: {got[k]!r} != {v!r}"


def same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    assert got.dtype == want.dtype, what
    assert got.shape == want.shape, what
    as_int = {4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    diff = np.count_nonzero(got.view(as_int) != want.view(as_int))
    assert diff == 0, f"{what}: {diff} values differ in their bits"


@pytest.fixture(autouse=True)
def param_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of parameter names (fieldstore._params) of the test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def store(fdb: fieldstore.FDB) -> fieldstore.FDB:
    if not fieldstore.HAS_GRIB:
        pytest.skip("no GRIB support in this build")
    return fdb


@pytest.mark.parametrize(("name", "request_", "filter_by_keys"), CASES,
                         ids=[f"{c[0]}-{'-'.join(map(str, c[2].values())) or 'all'}" for c in CASES])
def test_same_as_cfgrib(store: fieldstore.FDB, name: str, request_: dict, filter_by_keys: dict) -> None:
    store.archive((GRIB / name).read_bytes())
    store.flush()
    same_dataset(fieldstore.open_dataset(request_, fdb=store), cfgrib(GRIB / name, filter_by_keys), name)


def test_regular_gaussian_is_2d_as_cfgrib(store: fieldstore.FDB, tmp_path: Path) -> None:
    """A regular Gaussian grid (ecCodes' N32 sample: 64 Gaussian latitudes
    x 128 longitudes), two parameters at two steps, with values that use
    the packing's whole range: latitude and longitude dimensions,
    coordinates and values as cfgrib gives them."""
    import eccodes  # the ecCodes Python binding cfgrib uses

    path = tmp_path / "regular_gg.grib"
    with open(path, "wb") as out:
        for param, base in ((167, 250.0), (151, 100000.0)):
            for step in (0, 6):
                h = eccodes.codes_grib_new_from_samples("regular_gg_sfc_grib1")
                for k, v in (("dataDate", 20251125), ("dataTime", 1200), ("type", "fc"), ("stepRange", step),
                             ("paramId", param)):
                    eccodes.codes_set(h, k, v)
                n = eccodes.codes_get_size(h, "values")
                eccodes.codes_set_values(h, base + np.sin(np.arange(n) * 0.01 + step) * 30.0)
                out.write(eccodes.codes_get_message(h))
                eccodes.codes_release(h)
    store.archive(path.read_bytes())
    store.flush()
    got = fieldstore.open_dataset({"class": "od", "date": "20251125", "type": "fc"}, fdb=store)
    want = cfgrib(path, {})
    assert got["t2m"].dims == want["t2m"].dims == ("step", "latitude", "longitude")
    assert got["t2m"].shape == (2, 64, 128)
    same_dataset(got, want, "regular_gg")


def same_dataset(got: Any, want: Any, name: str) -> None:
    """The same variables, sizes, coordinates (values and attributes),
    variables' attributes and values (bits), and global attributes."""
    assert sorted(got.data_vars) == sorted(want.data_vars)
    assert dict(got.sizes) == dict(want.sizes)
    assert sorted(got.coords) == sorted(want.coords)
    for c in want.coords:
        assert got[c].dims == want[c].dims, c
        assert np.array_equal(got[c].values, want[c].values), c
        same_attrs(got[c].attrs, want[c].attrs, f"coordinate {c}")
    for v in want.data_vars:
        assert got[v].dims == want[v].dims, v
        same_attrs(got[v].attrs, want[v].attrs, f"variable {v}")
        same_bits(got[v].values, want[v].values, f"{name} {v}")
    for k in ("GRIB_edition", "GRIB_centre", "GRIB_centreDescription", "GRIB_subCentre", "Conventions", "institution"):
        assert got.attrs[k] == want.attrs[k], k


@pytest.mark.parametrize("name", ["levtypes.grib", "timespan.grib"])
def test_the_parameter_cache_gives_what_the_fields_say(store: fieldstore.FDB, param_cache: Path,
                                                       monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    # GRIB1 and GRIB2 2t (levtypes, timespan): same paramId, other cfName.
    for f in ("levtypes.grib", "timespan.grib"):
        store.archive((GRIB / f).read_bytes())
    store.flush()
    req = {"class": "od" if name == "levtypes.grib" else "e6", "levtype": "sfc"}
    first = fieldstore.open_dataset(req, fdb=store)
    assert list(param_cache.rglob("*.json")), "nothing cached"
    cached = fieldstore.open_dataset(req, fdb=store)
    monkeypatch.setenv("FIELDSTORE_PARAM_CACHE", "0")
    uncached = fieldstore.open_dataset(req, fdb=store)
    for v in uncached.data_vars:
        assert first[v].attrs.keys() == cached[v].attrs.keys() == uncached[v].attrs.keys()
        for k in uncached[v].attrs:
            assert np.array_equal(cached[v].attrs[k], uncached[v].attrs[k]), (v, k)
            assert np.array_equal(first[v].attrs[k], uncached[v].attrs[k]), (v, k)


def test_bitmap_points_are_nan(store: fieldstore.FDB) -> None:
    store.archive((GRIB / "synth11.grib").read_bytes())
    store.flush()
    so = fieldstore.open_dataset({"class": "od", "date": "20230508"}, fdb=store)["so"].values
    missing = int(_fieldstore.field_keys(next(iter(store._store.list([("class", ["od"])], False, 3))),
                                         ["numberOfMissing"])[0])
    assert missing > 0
    assert np.count_nonzero(np.isnan(so)) == missing


def test_spherical_harmonics_are_one_values_dimension(store: fieldstore.FDB) -> None:
    store.archive((GRIB / "x138-300.grib").read_bytes())
    store.flush()
    ds = fieldstore.open_dataset({"class": "rd", "type": "an"}, fdb=store)
    want = cfgrib(GRIB / "x138-300.grib", {})
    assert ds["vo"].dims == want["vo"].dims == ("values",)
    same_bits(ds["vo"].values, want["vo"].values, "vo")


@pytest.fixture
def cube_store(store: fieldstore.FDB) -> fieldstore.FDB:
    """t2m at steps 6/12/18 (timespan.grib) and 2t/t at 2025-11-25
    (levtypes.grib)."""
    for f in ("timespan.grib", "levtypes.grib"):
        store.archive((GRIB / f).read_bytes())
    store.flush()
    return store


@pytest.fixture
def holey_store(cube_store: fieldstore.FDB) -> fieldstore.FDB:
    """cube_store and t2m step 6 of the next day: t2m then has 2 dates x 3
    steps with 2 holes."""
    import eccodes  # the ecCodes Python binding cfgrib uses

    with open(GRIB / "timespan.grib", "rb") as f:
        h = eccodes.codes_grib_new_from_file(f)
    eccodes.codes_set(h, "dataDate", 20161231)
    cube_store.archive(eccodes.codes_get_message(h))
    eccodes.codes_release(h)
    cube_store.flush()
    return cube_store


def test_a_key_with_no_field_is_nan(holey_store: fieldstore.FDB) -> None:
    ds = fieldstore.open_dataset({"class": "e6", "timespan": "none"}, fdb=holey_store)
    t2m = ds["t2m"]
    assert t2m.dims == ("time", "step", "values")
    assert t2m.shape == (2, 3, 654400)
    values = t2m.values
    assert not np.isnan(values[0]).any()
    assert not np.isnan(values[1, 0]).any()          # the rewritten field
    assert np.isnan(values[1, 1:]).all()              # never stored: NaN


def test_values_the_request_names_are_coordinates_stored_or_not(cube_store: fieldstore.FDB) -> None:
    # Step 24 and the next day are named but not stored (a forecast still
    # running): their rows are there, NaN, so the array has the asked shape.
    request = {"class": "e6", "timespan": "none", "date": [20161230, 20161231],
               "time": 1800, "step": "6/to/24/by/6"}
    t2m = fieldstore.open_dataset(request, fdb=cube_store)["t2m"]
    assert t2m.dims == ("time", "step", "values")
    assert t2m.shape == (2, 4, 654400)
    assert list(t2m["step"].values.astype("timedelta64[h]").astype(int)) == [6, 12, 18, 24]
    assert str(t2m["time"].values[1])[:10] == "2016-12-31"
    values = t2m.values
    assert not np.isnan(values[0, :3]).any()
    assert np.isnan(values[0, 3]).all() and np.isnan(values[1]).all()
    # Spelled otherwise (time=18), the request names the same coordinates.
    again = fieldstore.open_dataset({**request, "time": "18"}, fdb=cube_store)["t2m"]
    assert again.shape == t2m.shape
    # A range too long for any array is refused, naming the keyword.
    with pytest.raises(fieldstore.InvalidInputError, match="step"):
        fieldstore.open_dataset({**request, "step": "0/to/6000000"}, fdb=cube_store)


def test_a_selection_reads_only_the_fields_it_needs(cube_store: fieldstore.FDB, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = fieldstore.open_dataset({"class": "e6", "timespan": "none"}, fdb=cube_store)
    calls: list[int] = []
    real = _fieldstore.decode_into

    def counting(entries, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(sum(e is not None for e in entries))
        return real(entries, *args, **kwargs)

    monkeypatch.setattr(_fieldstore, "decode_into", counting)
    # A few points are extracted instead of decoded (docs/extract.md):
    # the fields they touch are counted alike.
    real_extract = _fieldstore.extract_into

    def counting_extract(entries, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(sum(e is not None for e in entries))
        return real_extract(entries, *args, **kwargs)

    monkeypatch.setattr(_fieldstore, "extract_into", counting_extract)
    one = ds["t2m"].isel(step=1).isel(values=slice(0, 10)).values
    assert calls == [1]
    assert one.shape == (10,)
    point = ds["t2m"].isel(values=1234).values
    assert calls == [1, 3] and point.shape == (3,)
    full = ds["t2m"].values
    same_bits(full[1, :10], one, "isel")
    same_bits(full[:, 1234], point, "point")


def test_dask_chunks_are_one_field(cube_store: fieldstore.FDB) -> None:
    need("dask")
    ds = fieldstore.open_dataset({"class": "e6", "timespan": "none"}, fdb=cube_store, chunks={})
    t2m = ds["t2m"]
    assert t2m.chunks == ((1, 1, 1), (654400,))
    eager = fieldstore.open_dataset({"class": "e6", "timespan": "none"}, fdb=cube_store)["t2m"].values
    same_bits(t2m.compute().values, eager, "dask")


def test_threads_and_precision(cube_store: fieldstore.FDB) -> None:
    req = {"class": "od", "date": "20251125"}
    one = fieldstore.open_dataset(req, fdb=cube_store, threads=1)
    many = fieldstore.open_dataset(req, fdb=cube_store, threads=4)
    double = fieldstore.open_dataset(req, fdb=cube_store, dtype="float64")
    for v in ("t", "t2m"):
        same_bits(one[v].values, many[v].values, v)
        assert double[v].dtype == np.float64
        same_bits(double[v].values.astype(np.float32), one[v].values, v)


def test_the_caller_chooses_dimensions(cube_store: fieldstore.FDB) -> None:
    req = {"class": "e6", "timespan": "none"}
    ds = fieldstore.open_dataset(req, fdb=cube_store, dims=["time", "step"])
    assert ds["t2m"].dims == ("time", "step", "values")
    assert ds["t2m"].shape == (1, 3, 654400)
    with pytest.raises(fieldstore.InvalidInputError, match="step"):
        fieldstore.open_dataset(req, fdb=cube_store, dims=["time"])
    with pytest.raises(fieldstore.InvalidInputError, match="nosuch"):
        fieldstore.open_dataset(req, fdb=cube_store, dims=["nosuch"])
    apart = fieldstore.open_dataset(req, fdb=cube_store, dims=["date", "time", "step"], combine_date_time=False)
    assert apart["t2m"].dims == ("date", "time", "step", "values")


def test_a_request_that_names_nothing_is_a_clear_error(cube_store: fieldstore.FDB) -> None:
    with pytest.raises(fieldstore.InvalidInputError, match="names no stored field.*class=od.*date=19990101"):
        fieldstore.open_dataset({"class": "od", "date": "19990101"}, fdb=cube_store)
    with pytest.raises(fieldstore.InvalidInputError, match="non-empty"):
        fieldstore.open_dataset({}, fdb=cube_store)


def test_mixed_grids_are_refused_naming_them(cube_store: fieldstore.FDB) -> None:
    cube_store.archive((GRIB / "template.grib").read_bytes())
    cube_store.flush()
    # 2t of levtypes.grib (regular_ll) and of template.grib (reduced_gg).
    with pytest.raises(fieldstore.InvalidInputError, match="different grids.*regular_ll.*reduced_gg|different grids.*reduced_gg.*regular_ll"):
        fieldstore.open_dataset({"class": ["od", "ea"], "param": 167}, fdb=cube_store)


def test_the_xarray_entry_point(cube_store: fieldstore.FDB) -> None:
    ds = xr.open_dataset({"class": "od", "date": "20251125"}, engine="fieldstore", fdb=cube_store)
    assert sorted(ds.data_vars) == ["t", "t2m"]
    from importlib.metadata import entry_points

    names = [e.name for e in entry_points(group="xarray.backends")]
    assert "fieldstore" in names


def test_the_wheels_ecCodes_decodes_on_several_threads() -> None:
    """The eccodeslib wheel the package links says it is thread-safe
    (codes_get_features: ECCODES_THREADS), so decoding runs on threads."""
    try:
        import eccodeslib  # noqa: F401
    except ImportError:
        pytest.skip("not linked against the eccodeslib wheel")
    assert _fieldstore.parallel_decoding()


def test_a_time_span_is_no_dimension_where_cfgrib_has_none(store: fieldstore.FDB) -> None:
    """timespan.grib holds an instant t2m and a 1-hour accumulation (cp):
    the view has no ``timespan`` dimension (each variable's fields name one
    time span; it is in their step range), and each variable is what
    cfgrib gives for its step type, with no NaN-filled half."""
    path = GRIB / "timespan.grib"
    store.archive(path.read_bytes())
    store.flush()
    ds = fieldstore.open_dataset({"class": "e6"}, fdb=store)
    assert "timespan" not in ds.dims and "timespan" not in ds.coords
    for var, step_type in (("t2m", "instant"), ("cp", "accum")):
        want = cfgrib(path, {"stepType": step_type})
        assert ds[var].dims == want[var].dims, var
        same_bits(ds[var].values, want[var].values, var)
        assert not np.isnan(ds[var].values).any(), var
    # Naming the time spans changes nothing.
    named = fieldstore.open_dataset({"class": "e6", "timespan": ["none", "1h"]}, fdb=store)
    assert dict(named.sizes) == dict(ds.sizes)
