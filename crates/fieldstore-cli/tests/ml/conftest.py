"""The servers fixture of the ML clients' tests (servers.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import pytest

from servers import LEAKS, Servers


@pytest.fixture(scope="session")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    s = Servers(tmp_path_factory.mktemp("ml"))
    for var in LEAKS:
        os.environ.pop(var, None)
    os.environ["FDB_HOME"] = str(s.home)
    try:
        yield s
    finally:
        s.stop()


def remote_config(path: Path) -> dict:
    """A client config file as the mapping pyfdb and earthkit take."""
    import yaml

    return yaml.safe_load(path.read_text())
