"""The build backend writes nothing into a checkout the user cannot write:
the extension is built under the user's cache instead of ``target/``."""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
from pathlib import Path

import pytest

BACKEND = Path(__file__).resolve().parents[1] / "build_backend" / "fieldstore_build.py"


def backend():
    pytest.importorskip("maturin")
    spec = importlib.util.spec_from_file_location("fieldstore_build_under_test", BACKEND)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_writable_checkout_builds_in_its_target(tmp_path: Path) -> None:
    assert backend().target_dir(tmp_path) == tmp_path / "target" / "python"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere: a read-only directory is not")
def test_a_read_only_checkout_builds_under_the_cache(tmp_path: Path, monkeypatch) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    checkout.chmod(stat.S_IRUSR | stat.S_IXUSR)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    try:
        got = backend().target_dir(checkout)
    finally:
        checkout.chmod(stat.S_IRWXU)
    assert got == tmp_path / "cache" / "fieldstore" / "python-target"


def test_an_unwritable_checkout_as_root_too(tmp_path: Path, monkeypatch) -> None:
    """os.access decides; as root a read-only mount is what stops writes,
    so the decision is checked with os.access itself made to say no."""
    module = backend()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(module.os, "access", lambda path, mode: False)
    assert module.target_dir(tmp_path) == tmp_path / "cache" / "fieldstore" / "python-target"
