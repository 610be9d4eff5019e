"""anemoi-datasets 0.5.47 unchanged with no server: its ``fdb`` source
through earthkit-data 0.20 and the legacy pyfdb 0.1.3 on fieldstore's own
``libfdb5.so`` (found by findlibs through ``FDB5_DIR``) reading a local
store of the 48 fields, as ``fieldstore archive`` wrote them: the dataset
is the fields' values, bit for bit, as it is through either server
(test_anemoi.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from servers import write_fields
from test_anemoi import assert_as_written, create


def test_dataset_from_fieldstores_own_library(tmp_path: Path) -> None:
    import pyfdb

    # The library pyfdb 0.1.3 loads (anemoi's subprocess too) is fieldstore's.
    assert Path(pyfdb.lib.path).resolve().is_relative_to(Path(os.environ["FDB5_DIR"]).resolve()), pyfdb.lib.path
    grib = tmp_path / "fields.grib"
    assert write_fields(grib) == 48
    root = tmp_path / "root"
    root.mkdir()
    config = {"type": "local", "engine": "toc", "schema": os.environ["FIELDSTORE_SCHEMA"],
              "spaces": [{"handler": "Default", "roots": [{"path": str(root)}]}]}
    env = {**os.environ, "FIELDSTORE_ROOT": str(root)}
    subprocess.run([os.environ["FIELDSTORE_BIN"], "archive", str(grib)], env=env, check=True, capture_output=True)
    ds = create(config, "local", tmp_path)
    assert ds["data"].shape[:3] == (2, 6, 1)
    assert_as_written(ds, grib)
