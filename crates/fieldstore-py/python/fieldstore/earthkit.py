"""earthkit-data source ``"fieldstore"``, registered through earthkit-data's
entry points (``earthkit.data.sources``):

>>> import earthkit.data as ekd
>>> data = ekd.from_source("fieldstore", {"class": "od", "param": [130, 167]},
...                        config="/etc/fieldstore.yaml")      # or fdb=an open FDB
>>> fields = data.to_fieldlist()            # GRIB fields, with their metadata
>>> ds = data.to_xarray()                   # earthkit's xarray engine

The request is a mapping, ``request=``, or keywords (merged in that
order; ``class`` can only come in a mapping). The fields named are retrieved once, in request order, and read
from memory (``stream=True``: read as a stream instead, one field at a
time). For lazy arrays over many fields, use ``fieldstore.open_dataset``.
"""

from __future__ import annotations

from typing import Any, Mapping

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
        handle = fdb.retrieve(self.request)
        if handle.count() == 0:
            raise InvalidInputError(f"fieldstore source: the request names no stored field: {self.request}")
        if self.stream:
            handle.open()
            return StreamSource(handle)
        with handle:
            return MemorySource(handle.read())

    def __repr__(self) -> str:
        return f"FieldStoreSource({self.request!r})"


source = FieldStoreSource
