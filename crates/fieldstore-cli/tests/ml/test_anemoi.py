"""anemoi-datasets 0.5.47 unchanged: ``anemoi-datasets create`` with its
``fdb`` source (earthkit-data 0.20 over the legacy pyfdb 0.1.3 and FDB5's
own library and remote client) builds the same training dataset (Zarr)
from ``fieldstore serve`` as from FDB5's ``fdb-server``, holding the same
48 fields, and its values are what was written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml
import zarr

from conftest import remote_config
from servers import Servers


# Without it anemoi-datasets' fdb source fails on any param list (on FDB5
# too): it looks short names up in MARS's parameter service.
PARAM_ID_MAP = {"t": 130, "z": 129, "2t": 167, "msl": 151}


def recipe(config: dict) -> dict:
    base = {"class": "od", "expver": "0001", "stream": "oper", "type": "fc", "time": "0000"}
    return {
        "dates": {"start": "2024-01-01T00:00:00", "end": "2024-01-02T00:00:00", "frequency": "24h"},
        "input": {"join": [
            {"fdb": {"fdb_request": {**base, "levtype": "pl", "param": ["t", "z"], "levelist": [500, 850]},
                     "fdb_config": config, "param_id_map": PARAM_ID_MAP}},
            {"fdb": {"fdb_request": {**base, "levtype": "sfc", "param": ["2t", "msl"]}, "fdb_config": config,
                     "param_id_map": PARAM_ID_MAP}},
        ]},
    }


def create(config: dict, side: str, work: Path) -> zarr.Group:
    """``anemoi-datasets create`` of the recipe on the store ``config``."""
    path = work / f"{side}.yaml"
    path.write_text(yaml.safe_dump(recipe(config)))
    out = work / f"{side}.zarr"
    anemoi = Path(sys.executable).parent / "anemoi-datasets"
    r = subprocess.run([str(anemoi), "create", str(path), str(out)], capture_output=True, text=True,
                       env={**os.environ, "ANEMOI_DATASETS_LOG_LEVEL": "WARNING"})
    assert r.returncode == 0, r.stderr[-3000:]
    return zarr.open(str(out), mode="r")


def test_same_dataset_from_both_servers(servers: Servers, tmp_path: Path) -> None:
    got = {side: create(remote_config(getattr(servers, side).config), side, tmp_path)
           for side in ("fdb5", "fieldstore")}
    fs, fdb5 = got["fieldstore"], got["fdb5"]
    assert fs["data"].shape == fdb5["data"].shape
    # Two dates, six variables (t and z at two levels, 2t, msl), one member.
    assert fs["data"].shape[:3] == (2, 6, 1), fs["data"].shape
    assert np.array_equal(fs["data"][:], fdb5["data"][:])
    for name in ("latitudes", "longitudes", "dates"):
        assert np.array_equal(fs[name][:], fdb5[name][:]), name
    assert json.dumps(fs.attrs["variables"]) == json.dumps(fdb5.attrs["variables"])
    assert_as_written(fs, servers.grib)


def assert_as_written(ds: zarr.Group, grib: Path) -> None:
    """The dataset's values are the fields' (step 0 of each date) as ecCodes
    decodes them, in float32, bit for bit."""
    import eccodes

    want = {}
    with open(grib, "rb") as f:
        while (h := eccodes.codes_grib_new_from_file(f)) is not None:
            if eccodes.codes_get(h, "endStep") == 0:
                want[(eccodes.codes_get(h, "dataDate"), eccodes.codes_get(h, "shortName"),
                      eccodes.codes_get(h, "level"))] = eccodes.codes_get_values(h)
            eccodes.codes_release(h)
    variables = ds.attrs["variables"]
    for d, date in enumerate((20240101, 20240102)):
        for v, name in enumerate(variables):
            short, _, level = name.partition("_")
            key = (date, short, int(level) if level else 0)
            assert np.array_equal(ds["data"][d, v, 0], want[key].astype(np.float32)), (date, name)
