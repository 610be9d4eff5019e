"""Waiting for data: ``FDB.watch`` yields each field as a flush makes it
visible (another process's flushes included), and ``retrieve(..., wait=)``
waits for every field of a request."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import fieldstore

from conftest import KEY, config


def key(step: int) -> dict:
    return {**KEY, "step": str(step)}


def test_watch_yields_what_is_there_then_each_flush(root: Path) -> None:
    writer = fieldstore.FDB(config(root))
    writer.archive(b"zero", key(0))
    writer.flush()
    watcher = fieldstore.FDB(config(root))
    seen: list[tuple[str, bool, bytes]] = []

    def watch() -> None:
        for e in watcher.watch({"class": "od"}, count=3, timeout=60):
            seen.append((e.combined_key()["step"], e.replaced, e.data_handle.read()))

    t = threading.Thread(target=watch)
    t.start()
    time.sleep(0.1)
    writer.archive(b"six", key(6))
    writer.flush()
    writer.archive(b"zero again", key(0))
    writer.flush()
    t.join(60)
    assert not t.is_alive()
    assert seen[0] == ("0", False, b"zero")
    assert sorted(seen[1:]) == [("0", True, b"zero again"), ("6", False, b"six")]


def test_watch_sees_another_process_flush(root: Path, tmp_path: Path) -> None:
    watcher = fieldstore.FDB(config(root))
    events = watcher.watch({"class": "od"}, since="now", count=1, timeout=60)
    script = tmp_path / "writer.py"
    script.write_text(
        "import sys, fieldstore\n"
        f"fdb = fieldstore.FDB({config(root)!r})\n"
        f"fdb.archive(b'from another process', {key(12)!r})\n"
        "fdb.flush()\n"
    )
    subprocess.run([sys.executable, str(script)], check=True)
    (e,) = list(events)
    assert e.combined_key()["step"] == "12"
    assert e.data_handle.read() == b"from another process"


def test_watch_ends_and_reports_errors(root: Path) -> None:
    fdb = fieldstore.FDB(config(root))
    start = time.monotonic()
    assert list(fdb.watch({"class": "od"}, timeout=0.2)) == []
    assert time.monotonic() - start < 30
    with pytest.raises(ValueError):
        list(fdb.watch({"class": "od"}, since="later"))


def test_retrieve_waits_for_every_field(root: Path) -> None:
    writer = fieldstore.FDB(config(root))
    writer.archive(b"zero", key(0))
    writer.flush()
    reader = fieldstore.FDB(config(root))

    def late() -> None:
        time.sleep(0.2)
        writer.archive(b"six", key(6))
        writer.flush()

    t = threading.Thread(target=late)
    t.start()
    both = {**KEY, "step": ["0", "6"]}
    assert reader.retrieve(both, wait=60).read() == b"zerosix"
    t.join()
    with pytest.raises(fieldstore.TimedOutError) as e:
        reader.retrieve(key(18), wait=0.1)
    assert isinstance(e.value, TimeoutError)
    assert "step=18" in str(e.value)
