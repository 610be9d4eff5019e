"""earthkit-data 1.3 unchanged (its ``fdb`` source, through pyfdb 5.25 and
FDB5's own remote client) on ``fieldstore serve`` and on FDB5's
``fdb-server``, holding the same 48 fields: the same fields, arrays and
xarray datasets, streamed and not, equal to what was written."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import earthkit.data as ekd
from conftest import remote_config
from servers import DATES, PL, SFC, STEPS, Servers

BASE = {"class": "od", "expver": "0001", "stream": "oper", "type": "fc", "date": list(DATES), "time": "0000",
        "step": list(STEPS)}
REQUESTS = {
    "pl": {**BASE, "levtype": "pl", "param": PL["param"], "levelist": PL["levelist"]},
    "sfc": {**BASE, "levtype": "sfc", "param": SFC["param"]},
}


def written(servers: Servers) -> dict[tuple, np.ndarray]:
    """The values written, by (param, level, date, step)."""
    import eccodes

    out = {}
    with open(servers.grib, "rb") as f:
        while (h := eccodes.codes_grib_new_from_file(f)) is not None:
            key = tuple(eccodes.codes_get(h, k) for k in ("paramId", "level", "dataDate", "endStep"))
            out[key] = eccodes.codes_get_values(h)
            eccodes.codes_release(h)
    return out


def fields(servers: Servers, side: str, request: dict, stream: bool):
    config = remote_config(getattr(servers, side).config)
    return ekd.from_source("fdb", request, config=config, stream=stream).to_fieldlist()


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "file"])
@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_same_fields_and_arrays_from_both_servers(servers: Servers, name: str, stream: bool) -> None:
    want = written(servers)
    got = {}
    for side in ("fdb5", "fieldstore"):
        fl = fields(servers, side, REQUESTS[name], stream)
        got[side] = [(f.metadata("paramId"), f.metadata("level"), f.metadata("dataDate"), f.metadata("endStep"),
                      f.to_numpy(flatten=True)) for f in fl]
    assert len(got["fieldstore"]) == len(got["fdb5"]) == (32 if name == "pl" else 16)
    order = sorted(range(len(got["fdb5"])), key=lambda i: got["fdb5"][i][:4])
    for side in got:
        got[side].sort(key=lambda f: f[:4])
    for a, b in zip(got["fdb5"], got["fieldstore"]):
        assert a[:4] == b[:4]
        assert np.array_equal(a[4], b[4])
        # 16-bit packing: within its precision of what was written.
        assert np.allclose(b[4], want[b[:4]], atol=0.01)
    assert order  # FDB5 answered


@pytest.mark.parametrize("name", sorted(REQUESTS))
def test_same_xarray_from_both_servers(servers: Servers, name: str) -> None:
    ds = {side: ekd.from_source("fdb", REQUESTS[name], config=remote_config(getattr(servers, side).config), stream=False).to_xarray() for side in ("fdb5", "fieldstore")}
    xr.testing.assert_identical(ds["fieldstore"], ds["fdb5"])
    assert set(ds["fieldstore"].data_vars) == ({"t", "z"} if name == "pl" else {"2t", "msl"})
