"""fieldstore's libfdb5.so and Python's `eccodes` in one process, in a plain
venv (run by scripts/test-pyfdb-suite.sh): the venv's eccodeslib/eckitlib
wheels are files of their own, not those fieldstore's library was built
against. Whichever is imported first, the process must map one ecCodes and
one eckit (eckit aborts when a second copy registers), and archive,
list and retrieve must work.

Needs FIELDSTORE_CAPI_PREFIX (scripts/install-capi.sh's prefix) and
FIELDSTORE_BUILD_ECCODES (the libeccodes.so the library was built against).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]
GRIB = REPO / "tests" / "fixtures" / "grib" / "x138-300.grib"
SCHEMA = REPO / "tests" / "fixtures" / "schema" / "ecmwf.schema"

CHILD = r"""
import json, sys
first, root, grib, schema = sys.argv[1:5]
if first == "eccodes":
    import eccodes
import pyfdb
fdb = pyfdb.FDB(dict(type="local", engine="toc", schema=schema,
                     spaces=[dict(handler="Default", roots=[{"path": root}])]))
data = open(grib, "rb").read()
fdb.archive(data)  # ecCodes is needed here: the message's MARS key
fdb.flush()
import eccodes
request = {"class": "rd", "expver": "xxxx", "stream": "oper", "date": "20191110",
           "time": "0000", "domain": "g", "type": "an", "levtype": "pl",
           "step": "0", "levelist": "300", "param": "138"}
listed = list(fdb.list(request, True, True))
got = fdb.retrieve(request).read(len(data) + 1)
message = next(eccodes.StreamReader(fdb.retrieve(request)))
maps = sorted({line.split()[-1] for line in open("/proc/self/maps")
               if line.rstrip().endswith(("/libeccodes.so", "/libeckit.so"))})
print(json.dumps({"paths": [el["path"] for el in listed], "same_bytes": got == data,
                  "shortName": message["shortName"], "points": len(message.data),
                  "maps": maps}))
"""


@pytest.mark.parametrize("first", ["pyfdb", "eccodes"])
def test_one_eccodes_and_eckit_whichever_is_imported_first(first, tmp_path):
    import eccodeslib
    import eckitlib

    wheel_eccodes = os.path.realpath(Path(eccodeslib.__file__).parent / "lib64" / "libeccodes.so")
    wheel_eckit = os.path.realpath(Path(eckitlib.__file__).parent / "lib64" / "libeckit.so")
    built = os.path.realpath(os.environ["FIELDSTORE_BUILD_ECCODES"])
    # Otherwise this proves nothing: the venv's wheel must be other files.
    assert wheel_eccodes != built, f"the venv's ecCodes is the build's ({built})"

    env = dict(os.environ, FDB5_DIR=os.environ["FIELDSTORE_CAPI_PREFIX"])
    root = tmp_path / "root"
    root.mkdir()
    run = subprocess.run(
        [sys.executable, "-c", CHILD, first, str(root), str(GRIB), str(SCHEMA)],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, f"exit {run.returncode}:\n{run.stderr[-3000:]}"
    result = json.loads(run.stdout.strip().splitlines()[-1])
    maps = [os.path.realpath(p) for p in result["maps"]]
    assert sorted(maps) == sorted([wheel_eccodes, wheel_eckit]), result["maps"]
    assert result["same_bytes"]
    assert result["shortName"] == "vo" and result["points"] == 1639680
    # FDB5's data file names: the collocation's values first.
    assert len(result["paths"]) == 1
    path = result["paths"][0]
    assert f"{root}/rd:xxxx:oper:20191110:0000:g/an:pl" in path, path
    assert path.endswith(".data"), path
