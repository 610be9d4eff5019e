"""Issue 28's cases on cfgrib's own sample files, where they were found.
The files are not in the repository: set ``FIELDSTORE_CFGRIB_SAMPLES`` to
the ``tests/sample-data`` directory of cfgrib's sdist (the version the venv
uses: ``pip download --no-deps --no-binary :all: cfgrib==<version>``, then
unpack it; ``scripts/test-python.sh`` does so once, into
``target/fieldstore-py``); without it these tests skip. ``test_arrays_labels.py`` covers
the same cases on files the tests write, always."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import fieldstore

from test_arrays import cfgrib, param_cache, same_bits, same_dataset, store  # noqa: F401 (fixtures)
from test_earthkit import need

need("xarray")
cfgrib_module = need("cfgrib")

SAMPLES = Path(os.environ.get("FIELDSTORE_CFGRIB_SAMPLES") or "/nonexistent")
pytestmark = pytest.mark.skipif(not SAMPLES.is_dir(), reason="FIELDSTORE_CFGRIB_SAMPLES names no directory")


def archived(store: fieldstore.FDB, name: str) -> Path:
    path = SAMPLES / name
    store.archive(path.read_bytes())
    store.flush()
    return path


def test_missing_values(store: fieldstore.FDB) -> None:
    path = archived(store, "fields_with_missing_values.grib")
    same_dataset(fieldstore.open_dataset({"class": "od"}, fdb=store), cfgrib(path, {}), path.name)


def test_hpa_and_pa(store: fieldstore.FDB) -> None:
    path = archived(store, "hpa_and_pa.grib")
    got = fieldstore.open_dataset({"class": "od", "levtype": "pl"}, fdb=store)
    assert list(got["isobaricInhPa"].values) == [1.0, 0.1, 0.01]
    for hpa, (type_of_level, level) in zip([1.0, 0.1, 0.01], [("isobaricInhPa", 1), ("isobaricInPa", 10),
                                                              ("isobaricInPa", 1)]):
        want = cfgrib(path, {"typeOfLevel": type_of_level, "level": level})["t"]
        same_bits(got["t"].sel(isobaricInhPa=hpa).values, want.values, f"{hpa} hPa")


def test_soil_layers(store: fieldstore.FDB) -> None:
    path = archived(store, "soil-surface-level-mix.grib")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wanted = {v: ds for ds in cfgrib_module.open_datasets(path, indexpath="") for v in ds.data_vars}
    got = fieldstore.open_dataset({"class": "ea"}, fdb=store)
    assert sorted(got.data_vars) == sorted(wanted)
    for v, want in wanted.items():
        same_bits(got[v].values, want[v].values, v)
        for level in ("depthBelowLandLayer", "surface"):
            if level in want.coords:
                assert got[v].attrs[level] == want[level].item(), (v, level)


def _scalars(ds) -> tuple:  # type: ignore[no-untyped-def]
    """A dataset's variables and its scalar level and member coordinates."""
    return (tuple(sorted(ds.data_vars)),
            tuple(sorted((c, ds[c].item()) for c in ds.coords
                         if ds[c].ndim == 0 and c not in ("time", "step", "valid_time"))))


@pytest.mark.parametrize(("name", "request_"), [("soil-surface-level-mix.grib", {"class": "ea"}),
                                                ("t_on_different_level_types.grib", {"class": "od"})])
def test_open_datasets_splits_as_cfgrib(store: fieldstore.FDB, name: str, request_: dict) -> None:
    """Variables at one level each, not the same one: cfgrib's
    ``open_datasets`` gives one dataset per level, the level a scalar
    coordinate (``ds.t.hybrid``), and so does fieldstore's, with the same
    names, labels and bits."""
    path = archived(store, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = {_scalars(ds): ds for ds in cfgrib_module.open_datasets(path, indexpath="")}
    got = {_scalars(ds): ds for ds in fieldstore.open_datasets(request_, fdb=store)}
    assert sorted(got) == sorted(want)
    assert len(got) > 1
    for k, ds in want.items():
        same_dataset(got[k], ds, f"{name} {k}")
        for v in ds.data_vars:
            for c, value in k[1]:
                assert got[k][v][c].item() == value, (v, c)


def test_monthly_means(store: fieldstore.FDB) -> None:
    path = archived(store, "cams-egg4-monthly.grib")
    got = fieldstore.open_dataset({"stream": "moda", "param": 167}, fdb=store)
    same_dataset(got, cfgrib(path, {"paramId": 167}), path.name)
    assert np.array_equal(got["t2m"].values, fieldstore.open_dataset({"stream": "moda", "param": "t2m"},
                                                                     fdb=store)["t2m"].values, equal_nan=True)


def test_a_resolution_upgrade_is_refused_at_open(store: fieldstore.FDB) -> None:
    """tp at 4140 points on 2017-10-17, 2664 points on 2017-10-18: refused
    when opened, naming both grids and dates (cfgrib's ``open_dataset``
    refuses the file too); each date alone is what cfgrib gives for its
    grid."""
    path = archived(store, "tp_on_different_grid_resolutions.grib")
    with pytest.raises(fieldstore.InvalidInputError) as e:
        fieldstore.open_dataset({"class": "od", "param": "tp"}, fdb=store)
    assert str(e.value).startswith(
        "the grid of tp (sfc) changes between dates: regular_ll of 4140 points at date=20171017,time=1200, "
        "regular_ll of 2664 points at date=20171018,time=1200"), str(e.value)
    for date, points in ((20171017, 4140), (20171018, 2664)):
        got = fieldstore.open_dataset({"class": "od", "param": "tp", "date": date}, fdb=store)
        same_dataset(got, cfgrib(path, {"numberOfPoints": points}), f"{path.name} {points} points")


@pytest.mark.parametrize("name", ["forecast_monthly_ukmo.grib", "ncep-seasonal-monthly.grib"])
def test_seasonal_monthly_means_of_lagged_ensembles(store: fieldstore.FDB, name: str) -> None:
    """C3S monthly means (stream=msmm, keyed by fcmonth) of lagged ensembles,
    whose members start on other days than MARS's ``date``: cfgrib's
    ``number x time x step`` (UK Met Office: 28 x 8 x 20; NCEP: 124 x 124 x
    92, starts every 6 hours that ecCodes gives in minutes), the same
    labels and bits; no ``fcmonth`` dimension."""
    path = archived(store, name)
    got = fieldstore.open_dataset({"class": "c3", "stream": "msmm"}, fdb=store)
    same_dataset(got, cfgrib(path, {}), name)
    assert got["t2m"].dims == ("number", "time", "step", "latitude", "longitude")


# GRIB from other centres, or ECMWF's without MARS keys: ecCodes gives them
# no MARS class, so ECMWF's schema refuses them (FDB5 too) unless the keys
# are given (issue 28, item 18).
FOREIGN = ["cfrzr_and_cprat.grib", "cfrzr_and_cprat_0s.grib", "ds.waveh.5.grib", "lambert_grid.grib",
           "regular_gg_wrong_increment.grib", "regular_ll_msl.grib", "regular_ll_wrong_increment.grib",
           "step_60m.grib"]
DEFAULTS = {"class": "od", "expver": "0001", "stream": "oper", "type": "fc"}


@pytest.mark.parametrize("name", FOREIGN)
def test_grib_without_a_mars_class_archives_with_defaults(store: fieldstore.FDB, name: str) -> None:
    data = (SAMPLES / name).read_bytes()
    with pytest.raises(fieldstore.InvalidInputError, match="missing keyword 'class'"):
        store.archive(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", fieldstore.DuplicateKeyWarning)
        store.archive(data, defaults=DEFAULTS)
    store.flush()
    messages = data.count(b"GRIB")  # these files hold no 'GRIB' inside a message
    assert len(list(store.list({"class": "od"}))) == messages


@pytest.mark.parametrize("name", ["regular_ll_msl.grib", "regular_ll_wrong_increment.grib", "ds.waveh.5.grib",
                                  "lambert_grid.grib", "step_60m.grib"])
def test_grib_from_other_centres_opens_as_cfgrib_opens_it(store: fieldstore.FDB, name: str) -> None:
    """Archived with defaults, the view is cfgrib's (ds.waveh.5: a Mercator
    grid in alternating rows, which cfgrib leaves as ecCodes gives them;
    lambert_grid: ``y`` x ``x`` with 2-D latitude and longitude; step_60m:
    steps in minutes, ``GRIB_stepUnits`` 1 as cfgrib reads them)."""
    store.archive((SAMPLES / name).read_bytes(), defaults=DEFAULTS)
    store.flush()
    same_dataset(fieldstore.open_dataset({"class": "od"}, fdb=store), cfgrib(SAMPLES / name, {}), name)


def test_an_inconsistent_grid_is_refused_as_cfgrib_refuses_it(store: fieldstore.FDB) -> None:
    """regular_gg_wrong_increment.grib: Ni x Nj = 192 x 64, 18432 points;
    cfgrib raises, the view names the field and what ecCodes found."""
    path = SAMPLES / "regular_gg_wrong_increment.grib"
    store.archive(path.read_bytes(), defaults=DEFAULTS)
    store.flush()
    with pytest.raises(Exception, match="Grid description is wrong or inconsistent"):
        cfgrib(path, {})
    with pytest.raises(fieldstore.InvalidInputError, match=r"Ni\*Nj!=numberOfDataPoints \(192\*64!=18432\)"):
        fieldstore.open_dataset({"class": "od"}, fdb=store)


@pytest.mark.parametrize("name", ["cfrzr_and_cprat.grib", "cfrzr_and_cprat_0s.grib"])
def test_mixed_step_types_are_refused_by_open_dataset_and_split_by_open_datasets(store: fieldstore.FDB,
                                                                                 name: str) -> None:
    """cfrzr and cpr, each instant and averaged (MARS keys them apart by
    timespan alone): cfgrib's ``open_dataset`` refuses the file, and so
    does fieldstore's, naming the step types; ``open_datasets`` gives one
    dataset per step type, as cfgrib's."""
    path = SAMPLES / name
    store.archive(path.read_bytes(), defaults=DEFAULTS)
    store.flush()
    with pytest.raises(Exception, match="multiple values for"):
        cfgrib(path, {})
    with pytest.raises(fieldstore.InvalidInputError, match=r"several step types \(timespan '' and 'none'\)"):
        fieldstore.open_dataset({"class": "od"}, fdb=store)

    def step_type(ds):  # type: ignore[no-untyped-def]
        return tuple(sorted(ds.data_vars)), {ds[v].attrs["GRIB_stepType"] for v in ds.data_vars}.pop()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = {step_type(ds): ds for ds in cfgrib_module.open_datasets(path, indexpath="")}
    got = {step_type(ds): ds for ds in fieldstore.open_datasets({"class": "od"}, fdb=store)}
    assert sorted(got) == sorted(want) == [(("cfrzr", "cpr"), "avg"), (("cfrzr", "cpr"), "instant")]
    for k, ds in want.items():
        same_dataset(got[k], ds, f"{name} {k}")
