"""A read-only Zarr v3 store (zarr-python 3) over the fields a MARS request
names: what z3fdb offers over FDB5, for users of ``zarr.open_array`` and
``zarr.open_group``.

>>> import zarr
>>> from fieldstore.zarr_store import FieldStoreZarr
>>> store = FieldStoreZarr({"class": "od", "levtype": "pl"}, config="fs.yaml")
>>> t = zarr.open_array(store, path="t", mode="r")
>>> t[0, :, 10, 20]                          # reads the fields it touches

The store is one group: one array per variable of the request's
:class:`~fieldstore._cube.Cube` (same names, dimensions — as
``dimension_names`` — and attributes as the xarray view), chunked one
field per chunk (``chunk_shape`` 1 along every dimension but the grid's),
raw little-endian values with NaN as fill value; a chunk whose field is not
stored is absent (reads as NaN). Numeric coordinates (``latitude``,
``longitude``, levels, ``number``) are arrays of one chunk; ``time``,
``step`` and ``valid_time`` are int64 seconds (since 1970-01-01 for times),
as their ``units`` attribute says (``step`` also has xarray's ``dtype``
attribute, ``timedelta64[ns]``, so ``xr.open_zarr`` gives it as a timedelta). Chunks are decoded on a thread each
(``asyncio.to_thread``), so zarr's concurrent reads decode at once.
Every variable's ``coordinates`` attribute names the coordinates, so
``xarray.open_zarr(store)`` gives the same variables and coordinates as
``fieldstore.open_dataset`` (strings, such as a varying ``expver``, are not
held: Zarr v3 has no settled string type).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Iterable, Mapping

import numpy as np
from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, Store, SuffixByteRequest
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype

from ._cube import Cube

_META = "zarr.json"


def _json_value(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return str(v)
    return v


def _coordinate(values: np.ndarray, attrs: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]] | None:
    """A coordinate as Zarr can hold it (None for strings)."""
    attrs = dict(attrs)
    if values.dtype.kind == "M":
        attrs["units"] = "seconds since 1970-01-01T00:00:00"
        attrs["calendar"] = "proleptic_gregorian"
        return values.astype("datetime64[s]").astype(np.int64), attrs
    if values.dtype.kind == "m":
        # The `dtype` attribute is how xarray marks (and, since it stopped
        # guessing from `units` alone, recognises) a timedelta: without it
        # `xr.open_zarr` gives plain int64 seconds and `sel(step="24h")` fails.
        attrs["units"] = "seconds"
        attrs["dtype"] = "timedelta64[ns]"
        return values.astype("timedelta64[s]").astype(np.int64), attrs
    if values.dtype.kind in "fiu":
        return values.copy(order="C"), attrs
    return None


class FieldStoreZarr(Store):
    """The fields ``request`` names, as a read-only Zarr v3 group.

    Arguments as :class:`fieldstore._cube.Cube` (``fdb`` or ``config``,
    ``dims``, ``combine_date_time``, ``dtype``, ``threads``), or ``cube``: an
    open one.
    """

    supports_writes = False
    supports_deletes = False
    supports_partial_writes = False
    supports_listing = True

    def __init__(self, request: Mapping[str, Any] | None = None, *, cube: Cube | None = None,
                 **cube_args: Any) -> None:
        super().__init__(read_only=True)
        if cube is None:
            if request is None:
                raise TypeError("FieldStoreZarr needs a request or a cube")
            cube = Cube(request, **cube_args)
        self.cube = cube
        self._meta: dict[str, bytes] = {}
        self._coords: dict[str, np.ndarray] = {}
        self._build()

    def _build(self) -> None:
        cube = self.cube
        grid = cube.grid
        assert grid is not None
        attrs = {k: _json_value(v) for k, v in cube.attrs.items()}
        self._meta[_META] = json.dumps({"zarr_format": 3, "node_type": "group", "attributes": attrs}).encode()
        for name, var in cube.variables.items():
            shape = list(var.fields.shape + grid.shape)
            chunks = [1] * var.fields.ndim + list(grid.shape)
            self._meta[f"{name}/{_META}"] = self._array_meta(
                shape, chunks, cube.dtype, list(var.dims),
                {k: _json_value(v) for k, v in var.attrs.items()}, fill="NaN")
        from ._cube import COORD_ATTRS

        coords = dict(cube.coords)
        for c, value in cube.scalar_coords.items():
            coords.setdefault(c, ((), np.asarray(value), COORD_ATTRS.get(c, {})))
        names = " ".join(coords)
        for var in cube.variables.values():
            var_meta = json.loads(self._meta[f"{var.name}/{_META}"])
            var_meta["attributes"]["coordinates"] = names
            self._meta[f"{var.name}/{_META}"] = json.dumps(var_meta).encode()
        for name, (dims, values, cattrs) in coords.items():
            held = _coordinate(np.asarray(values), cattrs)
            if held is None or name in cube.variables:
                continue
            data, cattrs = held
            self._coords[name] = data
            shape = list(data.shape)
            self._meta[f"{name}/{_META}"] = self._array_meta(
                shape, shape, data.dtype, list(dims),
                {k: _json_value(v) for k, v in cattrs.items()}, fill=0)

    @staticmethod
    def _array_meta(shape: list[int], chunks: list[int], dtype: np.dtype, dims: list[str],
                    attrs: dict[str, Any], fill: Any) -> bytes:
        return json.dumps({
            "zarr_format": 3,
            "node_type": "array",
            "shape": shape,
            "data_type": np.dtype(dtype).name,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "attributes": attrs,
            "dimension_names": dims,
        }).encode()

    # ---- keys ------------------------------------------------------------

    def _chunk(self, key: str) -> tuple[str, tuple[int, ...]] | None:
        """``<array>/c/i/j/…`` (``<array>/c`` for 0-d) as (array, chunk
        index), if it names one."""
        if key.endswith("/c"):
            return key[:-2], ()
        name, sep, rest = key.partition("/c/")
        if not sep or not all(p.isdigit() for p in rest.split("/")):
            return None
        return name, tuple(int(p) for p in rest.split("/"))

    def _field_at(self, name: str, index: tuple[int, ...]) -> Any:
        var = self.cube.variables.get(name)
        if var is None:
            return None
        nh = var.fields.ndim
        head, tail = index[:nh], index[nh:]
        if len(index) != len(var.dims) or any(t != 0 for t in tail):
            return None
        if any(i >= n for i, n in zip(head, var.fields.shape)):
            return None
        return var.fields[head] if nh else var.fields[()]

    def _value(self, key: str) -> np.ndarray | bytes | None:
        if key in self._meta:
            return self._meta[key]
        chunk = self._chunk(key)
        if chunk is None:
            return None
        name, index = chunk
        if name in self._coords:
            data = self._coords[name]
            return data.astype(data.dtype.newbyteorder("<"), copy=False) if all(i == 0 for i in index) else None
        if self._field_at(name, index) is None:
            return None
        nh = self.cube.variables[name].fields.ndim
        values = self.cube.read(name, tuple(index[:nh]))
        return values.astype(values.dtype.newbyteorder("<"), copy=False)

    # ---- Store -----------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldStoreZarr) and other.cube is self.cube

    def __hash__(self) -> int:
        return id(self.cube)

    async def get(self, key: str, prototype: BufferPrototype | None = None,
                  byte_range: ByteRequest | None = None) -> Buffer | None:
        prototype = prototype or default_buffer_prototype()
        value = await asyncio.to_thread(self._value, key)
        if value is None:
            return None
        raw = np.frombuffer(value, dtype=np.uint8) if isinstance(value, bytes) \
            else np.ascontiguousarray(value).reshape(-1).view(np.uint8)
        n = len(raw)
        if byte_range is None:
            start, stop = 0, n
        elif isinstance(byte_range, RangeByteRequest):
            start, stop = byte_range.start, byte_range.end
        elif isinstance(byte_range, OffsetByteRequest):
            start, stop = byte_range.offset, n
        elif isinstance(byte_range, SuffixByteRequest):
            start, stop = max(0, n - byte_range.suffix), n
        else:
            raise ValueError(f"unexpected byte range {byte_range!r}")
        return prototype.buffer.from_array_like(raw[start:stop])

    async def get_partial_values(self, prototype: BufferPrototype,
                                 key_ranges: Iterable[tuple[str, ByteRequest | None]]) -> list[Buffer | None]:
        return list(await asyncio.gather(*(self.get(k, prototype, r) for k, r in key_ranges)))

    async def exists(self, key: str) -> bool:
        if key in self._meta:
            return True
        chunk = self._chunk(key)
        if chunk is None:
            return False
        name, index = chunk
        if name in self._coords:
            return all(i == 0 for i in index)
        return self._field_at(name, index) is not None

    async def set(self, key: str, value: Buffer) -> None:
        raise PermissionError("a fieldstore Zarr view is read-only: archive fields with fieldstore.FDB")

    async def delete(self, key: str) -> None:
        raise PermissionError("a fieldstore Zarr view is read-only: wipe with fieldstore.FDB")

    def _keys(self) -> Iterable[str]:
        yield from self._meta
        for name, data in self._coords.items():
            yield f"{name}/c" + "".join("/0" for _ in data.shape)
        for name, var in self.cube.variables.items():
            geo = "/".join("0" for _ in self.cube.grid.shape)  # type: ignore[union-attr]
            for index in np.argwhere(np.vectorize(lambda f: f is not None, otypes=[bool])(var.fields)):
                yield "/".join([name, "c", *(str(int(i)) for i in index), geo])

    async def list(self) -> AsyncIterator[str]:
        for k in self._keys():
            yield k

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for k in self._keys():
            if k.startswith(prefix):
                yield k

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        prefix = prefix.rstrip("/")
        seen = set()
        for k in self._keys():
            if prefix and not k.startswith(prefix + "/"):
                continue
            rest = k[len(prefix) + 1:] if prefix else k
            head = rest.split("/", 1)[0]
            if head not in seen:
                seen.add(head)
                yield head

    def __repr__(self) -> str:
        return f"FieldStoreZarr({self.cube.request!r})"


def open_zarr_group(request: Mapping[str, Any], **kwargs: Any) -> Any:
    """``zarr.open_group`` over :class:`FieldStoreZarr` (read-only)."""
    import zarr

    return zarr.open_group(FieldStoreZarr(request, **kwargs), mode="r")
