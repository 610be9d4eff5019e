"""earthkit-data source ``"fieldstore"``, registered through earthkit-data's
entry points (``earthkit.data.sources``):

>>> import earthkit.data as ekd
>>> data = ekd.from_source("fieldstore", {"class": "od", "param": [130, 167]},
...                        config="/etc/fieldstore.yaml")      # or fdb=an open FDB
>>> fields = data.to_fieldlist()            # GRIB fields, with their metadata
>>> ds = data.to_xarray()                   # earthkit's xarray engine

The request is a mapping, ``request=``, or keywords (merged in that
order; ``class`` can only come in a mapping), and may be partial, as for
``fieldstore.open_dataset``: the fields it names are listed, then retrieved
once, and read from memory (``stream=True``: read as a stream instead, one
field at a time). For lazy arrays over many fields, use
``fieldstore.open_dataset``.
"""

from __future__ import annotations

import io
from typing import Any, Iterable, Mapping

from earthkit.data.sources import Source

from ._fdb import FDB
from .errors import InvalidInputError


class FieldStoreSource(Source):
    """The fields a MARS request names in a fieldstore."""

    name = "fieldstore"

    def __init__(self, *args: Any, request: Mapping[str, Any] | None = None, config: Any = None,
                 fdb: FDB | None = None, stream: bool = False, **kwargs: Any) -> None:
        super().__init__()
        merged: dict[str, Any] = {}
        for a in args:
            if not isinstance(a, Mapping):
                raise InvalidInputError(f"fieldstore source: a request is a mapping, not {a!r}")
            merged.update(a)
        merged.update(request or {})
        merged.update(kwargs)
        if not merged:
            raise InvalidInputError("fieldstore source: an empty request (give the MARS keywords of the fields)")
        self.request = merged
        self._fdb = fdb
        self._config = config
        self.stream = stream

    def mutate(self) -> Source:
        from earthkit.data.sources.memory import MemorySource
        from earthkit.data.sources.stream import StreamSource

        fdb = self._fdb if self._fdb is not None else FDB(self._config)
        requests = _complete(fdb, self.request)
        if not requests:
            raise InvalidInputError(f"fieldstore source: the request names no stored field: {self.request}")
        handles = [fdb.retrieve(r) for r in requests]
        if self.stream:
            for h in handles:
                h.open()
            return StreamSource(io.BufferedReader(_Chain(handles)))
        data = []
        for h in handles:
            with h:
                data.append(h.read())
        return MemorySource(b"".join(data))

    def __repr__(self) -> str:
        return f"FieldStoreSource({self.request!r})"


def _complete(fdb: FDB, request: Mapping[str, Any]) -> list[dict[str, list[str]]]:
    """Requests that name every keyword of the fields a (partial) request
    names, for ``retrieve``: the listed keys grouped by their keywords, each
    group the product of its values (every field of that product that
    exists was listed: a request constrains each keyword alone)."""
    groups: dict[tuple[str, ...], dict[str, list[str]]] = {}
    for el in fdb.list(request):
        # An optional keyword a field lacks lists as "": left out.
        key = {k: v for k, v in el.combined_key().items() if v != ""}
        group = groups.setdefault(tuple(sorted(key)), {k: [] for k in sorted(key)})
        for k, v in key.items():
            if v not in group[k]:
                group[k].append(v)
    return [{k: sorted(vs, key=_order) for k, vs in g.items()} for g in groups.values()]


def _order(value: str) -> tuple[int, float, str]:
    """Numbers in numeric order (steps 6, 12, 18), then other values."""
    try:
        return (0, float(value), "")
    except ValueError:
        return (1, 0.0, value)


class _Chain(io.RawIOBase):
    """The data handles' bytes one after the other, as one stream."""

    def __init__(self, handles: Iterable[Any]) -> None:
        self._handles = list(handles)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._handles:
            n = self._handles[0].readinto(buffer)
            if n:
                return int(n)
            self._handles.pop(0).close()
        return 0


source = FieldStoreSource
