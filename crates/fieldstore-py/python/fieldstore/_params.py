"""What ecCodes calls a parameter (``shortName``, ``name``, ``units``,
``cfName``, ``cfVarName``), remembered across processes.

ecCodes finds these through its concept tables, which it parses the first
time a process asks (about 0.3 s, most of opening an array view). They are
a function of the GRIB edition (``cfName`` differs), the originating centre
(centres have local tables), the parameter id and the definitions ecCodes
reads (its version, and ``ECCODES_DEFINITION_PATH`` /
``ECCODES_EXTRA_DEFINITION_PATH`` if set), so a small JSON file per
version and definitions under ``$XDG_CACHE_HOME/fieldstore``
(``~/.cache/fieldstore``) keeps them:
``"<edition>/<centre>/<paramId>" -> {key: value}``. The file is written
atomically (a new file renamed over it); one that cannot be read or
written is ignored (the keys are then read from the field, as without it).
``FIELDSTORE_PARAM_CACHE=0`` turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from . import _fieldstore

# The keys this cache holds: the concept keys that cost the first read.
KEYS = ["paramId", "shortName", "name", "units", "cfName", "cfVarName"]


def _path() -> Path | None:
    if os.environ.get("FIELDSTORE_PARAM_CACHE") == "0":
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    paths = "\0".join(os.environ.get(v, "") for v in ("ECCODES_DEFINITION_PATH", "ECCODES_EXTRA_DEFINITION_PATH"))
    tag = hashlib.sha256(paths.encode()).hexdigest()[:12]
    return Path(base) / "fieldstore" / f"grib-params-eccodes-{_fieldstore.eccodes_version()}-{tag}.json"


class ParamCache:
    """The cache file's contents; :meth:`save` writes what was added."""

    def __init__(self) -> None:
        self.path = _path()
        self.known: dict[str, dict[str, Any]] = {}
        self.added = False
        if self.path is not None:
            try:
                loaded = json.loads(self.path.read_text())
                if isinstance(loaded, dict):
                    self.known = {k: v for k, v in loaded.items() if isinstance(v, dict)}
            except (OSError, ValueError):
                pass

    def get(self, edition: Any, centre: Any, param_id: Any) -> dict[str, Any] | None:
        return self.known.get(f"{edition}/{centre}/{param_id}")

    def put(self, edition: Any, centre: Any, param_id: Any, values: dict[str, Any]) -> None:
        key = f"{edition}/{centre}/{param_id}"
        if self.known.get(key) != values:
            self.known[key] = values
            self.added = True

    def save(self) -> None:
        if self.path is None or not self.added:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".params-")
            with os.fdopen(fd, "w") as f:
                json.dump(self.known, f)
            os.replace(tmp, self.path)
            self.added = False
        except OSError:
            pass
