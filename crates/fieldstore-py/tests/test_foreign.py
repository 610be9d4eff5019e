"""Any centre's GRIB by its own identity (``docs/schemas/foreign.schema``),
judged on other centres' real files: NCEP's GFS, NAM (eta), NGM, RAP and
southern-Africa model and NDFD, Environment Canada's regional model, DMI's
rotated grid, ZAMG's, Météo-France's ecoclimap, ECMWF's TIGGE and ecCodes'
own samples, as pygrib's sdist
ships them. Set ``FIELDSTORE_PYGRIB_SAMPLES`` to its ``sampledata``
directory (``scripts/test-python.sh`` fetches it once); without it these
tests skip, or fail with ``FIELDSTORE_PY_STRICT=1`` (CI).

Every message is stored under a key of its own and comes back byte for
byte; the array view is cfgrib's, labels and bits, wherever cfgrib opens
the file."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

import fieldstore

from test_arrays import cfgrib, same_dataset  # noqa: F401 (fixtures)
from test_earthkit import need

need("xarray")
eccodes = need("eccodes")

SAMPLES = Path(os.environ.get("FIELDSTORE_PYGRIB_SAMPLES") or "/nonexistent")
# CI (FIELDSTORE_PY_STRICT=1, scripts/test-python.sh fetches them) fails
# without the files; elsewhere these tests skip.
STRICT = os.environ.get("FIELDSTORE_PY_STRICT") == "1"
pytestmark = pytest.mark.skipif(not SAMPLES.is_dir() and not STRICT,
                                reason="FIELDSTORE_PYGRIB_SAMPLES names no directory")
SCHEMA = Path(__file__).resolve().parents[3] / "docs" / "schemas" / "foreign.schema"

# Files of one or more messages; Météo-France's ecoclimap (a record header
# before each message), NCEP's NDFD (`ds.*.bin`, `dspr.temp.bin`: a
# `****` header) and `flux.grb` (trailing bytes) hold bytes around them,
# skipped as ecCodes skips them.
AROUND = ["cl00010000_ecoclimap_rot.grib1", "ds.maxt.bin", "ds.waveh.bin", "dspr.temp.bin", "flux.grb"]
FILES = [*AROUND, "CMC_reg_WIND_ISBL_300_ps60km_2010052400_P012.grib", "ecmwf_tigge.grb", "eta.grb", "gfs.grb",
         "gfs.t12z.pgrbf120.2p5deg.grib2", "ngm.grb", "no-radius-shapeOfEarth-7.grb2", "rap.wrfnat.grib2",
         "reduced_latlon_surface.grib2", "regular_latlon_surface.grib2", "rotated_ll.grib1", "safrica.grib2",
         "scanning_mode.grib2", "scanning_mode_with_bitmap.grib2", "spherical_pressure_level.grib1"]
# Those cfgrib's open_dataset opens (it refuses eta's and GFS's mixed step
# types and drops TIGGE's 2 m fields beside its 10 m winds); the files with
# bytes around messages are judged by their keys and bytes alone.
CFGRIB_OPENS = [f for f in FILES if f not in ("ecmwf_tigge.grb", "eta.grb", "gfs.grb",
                                              "gfs.t12z.pgrbf120.2p5deg.grib2", *AROUND)]


@pytest.fixture
def foreign(tmp_path: Path) -> fieldstore.FDB:
    if not fieldstore.HAS_GRIB:
        pytest.skip("no GRIB support in this build")
    if not SAMPLES.is_dir():
        pytest.fail(f"FIELDSTORE_PYGRIB_SAMPLES names no directory ({SAMPLES}): pygrib's sample files are needed")
    (tmp_path / "foreign").mkdir()
    return fieldstore.FDB({"type": "local", "engine": "toc", "schema": str(SCHEMA),
                           "spaces": [{"handler": "Default", "roots": [{"path": str(tmp_path / "foreign")}]}]})


def messages(path: Path) -> list[bytes]:
    """The messages of ``path`` as ecCodes reads them."""
    out = []
    with open(path, "rb") as f:
        while (h := eccodes.codes_grib_new_from_file(f)) is not None:
            out.append(eccodes.codes_get_message(h))
            eccodes.codes_release(h)
    return out


@pytest.mark.parametrize("name", FILES)
def test_every_message_is_stored_under_its_own_key(foreign: fieldstore.FDB, name: str) -> None:
    """No --defaults, no duplicates: as many fields as ecCodes reads
    messages, each retrieved by its listed key as its own bytes (GFS: 308
    messages where MARS keys give 269)."""
    path = SAMPLES / name
    want = messages(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        foreign.archive(path.read_bytes())
    assert not [w for w in caught if issubclass(w.category, fieldstore.DuplicateKeyWarning)]
    skipped = [w for w in caught if issubclass(w.category, fieldstore.SkippedBytesWarning)]
    assert len(skipped) == (name in AROUND), [str(w.message) for w in caught]
    foreign.flush()
    listed = list(foreign.list({"date": "all"}))
    assert len(listed) == len(want)
    got = []
    for el in listed:
        key = {k: v for k, v in el.combined_key().items() if v != ""}
        with foreign.retrieve(key) as handle:
            got.append(handle.read())
    assert sorted(got) == sorted(want)


@pytest.mark.parametrize("name", CFGRIB_OPENS)
def test_the_view_is_cfgribs(foreign: fieldstore.FDB, name: str) -> None:
    """Variables named by the GRIB's own parameter (NGM: ``acpcp``,
    ``orog``, ``sp``, ``tp`` beside ``pwat``, where MARS keys kept one),
    levels, grids (rotated, Lambert, polar stereographic as y/x) and bits
    as cfgrib gives them."""
    path = SAMPLES / name
    foreign.archive(path.read_bytes())
    foreign.flush()
    centres = sorted({el.combined_key()["centre"] for el in foreign.list({"date": "all"})})
    same_dataset(fieldstore.open_dataset({"centre": centres}, fdb=foreign), cfgrib(path, {}), name)


def test_mars_keys_collapse_what_the_foreign_schema_keeps_apart(foreign: fieldstore.FDB, tmp_path: Path) -> None:
    """GFS keyed by MARS keys (a schema of MARS keywords, with defaults for
    what ecCodes gives no MARS value): 308 messages share 269 keys, and
    archiving warns of each; the foreign schema keeps all 308."""
    (tmp_path / "mars").mkdir()
    schema = tmp_path / "mars.schema"
    schema.write_text("[ class, expver, stream, date, time [ type, levtype, timespan? [ step, levelist?, param ]]]\n")
    mars = fieldstore.FDB({"type": "local", "engine": "toc", "schema": str(schema),
                           "spaces": [{"handler": "Default", "roots": [{"path": str(tmp_path / "mars")}]}]})
    data = (SAMPLES / "gfs.grb").read_bytes()
    with pytest.warns(fieldstore.DuplicateKeyWarning):
        mars.archive(data, defaults={"class": "od", "expver": "0001", "stream": "oper", "type": "fc"})
    mars.flush()
    foreign.archive(data)
    foreign.flush()
    assert len(list(mars.list({"class": "od"}))) == 269
    assert len(list(foreign.list({"date": "all"}))) == 308
