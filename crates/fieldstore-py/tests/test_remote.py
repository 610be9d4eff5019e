"""The Python package as a client of a server (``type: remote``): a real
``fieldstore serve`` (the CLI built by ``cargo test``, or ``$FIELDSTORE_BIN``)
on a temporary root, reached through FDB5's remote protocol. Skipped when
no binary is found, unless ``FIELDSTORE_PY_STRICT=1`` (CI), where it fails."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

import fieldstore
from fieldstore import errors

from conftest import KEY, REPO, SCHEMA

STRICT = os.environ.get("FIELDSTORE_PY_STRICT") == "1"


def binary() -> Path:
    b = Path(os.environ.get("FIELDSTORE_BIN") or REPO / "target" / "debug" / "fieldstore")
    if not b.exists():
        if STRICT:
            pytest.fail(f"no fieldstore binary at {b} (build it with cargo, or set FIELDSTORE_BIN)")
        pytest.skip(f"no fieldstore binary at {b}")
    return b


@pytest.fixture
def server(tmp_path: Path):
    root = tmp_path / "root"
    root.mkdir()
    cfg = tmp_path / "server.yaml"
    cfg.write_text(
        f"type: catalogue\nengine: toc\nstore: file\nschema: {SCHEMA}\nserverPort: 0\n"
        f"spaces: [{{roots: [{{path: {root}}}]}}]\n"
    )
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        p = subprocess.Popen([str(binary()), "--config", str(cfg), "serve"], stderr=out)
    try:
        deadline = time.time() + 20
        while "listening on" not in log.read_text():
            assert p.poll() is None and time.time() < deadline, log.read_text()
            time.sleep(0.05)
        port = int(log.read_text().split("listening on 127.0.0.1:")[1].split()[0])
        yield {"type": "remote", "host": "127.0.0.1", "port": port, "timeout": 20}
    finally:
        p.kill()
        p.wait()


def test_archive_list_retrieve_through_a_server(server: dict) -> None:
    fdb = fieldstore.FDB(server)
    for step in ("0", "6", "12"):
        fdb.archive(f"GRIB step {step} 7777".encode(), {**KEY, "step": step})
    fdb.flush()
    # Another handle, another connection: what was flushed is there.
    other = fieldstore.FDB(server)
    listed = list(other.list({"class": "od", "step": ["0", "6", "12"]}))
    assert sorted(e.combined_key()["step"] for e in listed) == ["0", "12", "6"]
    data = other.retrieve({**KEY, "step": "6"}).read()
    assert data == b"GRIB step 6 7777"
    assert sorted(other.axes({"class": "od"}, level=3)["step"]) == ["0", "12", "6"]
    # The configuration says what it is.
    assert other.config()[0]["type"] == "remote"


def test_a_server_not_there_is_unavailable() -> None:
    with pytest.raises(errors.UnavailableError, match="server 127.0.0.1:1"):
        fieldstore.FDB({"type": "remote", "host": "127.0.0.1", "port": 1, "timeout": 2})
