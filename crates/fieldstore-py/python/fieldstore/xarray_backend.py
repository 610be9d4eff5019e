"""xarray backend ``engine="fieldstore"``: a lazy :class:`xarray.Dataset`
over the fields a MARS request names.

>>> import xarray as xr
>>> ds = xr.open_dataset({"class": "od", "stream": "oper", "levtype": "pl"},
...                      engine="fieldstore", config="/etc/fieldstore.yaml")
>>> ds["t"].sel(isobaricInhPa=500).isel(step=0).values   # reads one field

Structure and naming are :class:`fieldstore._cube.Cube`'s. Values are read
only when asked for, and only the fields a selection touches; with dask
(``chunks={}``), one chunk is one field (``preferred_chunks``), or what
``chunks=`` says.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from ._cube import COORD_ATTRS, Cube, listed, step_type_parts
from ._fdb import FDB


class FieldArray(BackendArray):
    """One variable's values: indexing reads and decodes the fields the
    index touches (outer indexing), nothing else."""

    def __init__(self, cube: Cube, name: str) -> None:
        var = cube.variables[name]
        grid = cube.grid
        assert grid is not None
        self.cube = cube
        self.name = name
        self.shape = var.fields.shape + grid.shape
        self.dtype = cube.dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._raw_getitem
        )

    def _raw_getitem(self, key: tuple[Any, ...]) -> np.ndarray:
        return self.cube.read(self.name, key)


def to_dataset(cube: Cube, drop_variables: Iterable[str] | None = None) -> xr.Dataset:
    """The cube as a lazy dataset."""
    drop = set(drop_variables or ())
    return _dataset(cube, {n: n for n in cube.variables if n not in drop}, None, drop)


def to_datasets(cube: Cube, drop_variables: Iterable[str] | None = None) -> list[xr.Dataset]:
    """The cube as cfgrib's ``open_datasets`` splits a file: the whole
    view as one dataset, unless labels would conflict in it (variables at
    one level each, not the same one: soil layers ``stl1``-``stl4``; ``t``
    on ``hybrid`` and on ``isobaricInhPa``, named ``t`` and ``t_pl`` side
    by side). Then one dataset per level of those variables, the level a
    scalar coordinate, not an attribute, and each variable with cfgrib's
    name (``t`` in both)."""
    drop = set(drop_variables or ())
    kept = {n: v for n, v in cube.variables.items() if n not in drop}
    conflict = any(v.base and v.base != n for n, v in kept.items()) or any(
        c in v.attrs for v in kept.values() for c in v.scalar_coords)
    if not conflict:
        return [to_dataset(cube, drop)]
    groups: dict[tuple[tuple[str, Any], ...], dict[str, str]] = {}
    for name, var in kept.items():
        level = tuple((c, v) for c, v in var.scalar_coords.items() if c not in ("number", "time", "step"))
        names = groups.setdefault(level, {})
        names[var.base if var.base and var.base not in names else name] = name
    out = []
    for names in groups.values():
        # The scalars of the dataset's own variables (a `surface` of some
        # other variables is none of theirs).
        scalars = {c: v for n in names.values() for c, v in cube.variables[n].scalar_coords.items()}
        out.append(_dataset(cube, names, scalars, drop))
    return out


def _dataset(cube: Cube, names: Mapping[str, str], scalars: Mapping[str, Any] | None,
             drop: set[str]) -> xr.Dataset:
    """The dataset of the cube's variables ``names`` (dataset name -> the
    cube's), with the cube's coordinates their dimensions use and the
    scalar coordinates ``scalars`` (None: the cube's shared ones)."""
    grid = cube.grid
    assert grid is not None
    data_vars = {}
    used: set[str] = set()
    for name, own in names.items():
        var = cube.variables[own]
        data = indexing.LazilyIndexedArray(FieldArray(cube, own))
        v = xr.Variable(var.dims, data, attrs={k: a for k, a in var.attrs.items() if k not in (scalars or ())})
        v.encoding["preferred_chunks"] = {
            **{d: 1 for d in var.header_dims},
            **dict(zip(grid.dims, grid.shape)),
        }
        v.encoding["dtype"] = cube.dtype
        data_vars[name] = v
        used |= set(var.dims)
    coords: dict[str, Any] = {}
    for c, (dims, values, attrs) in cube.coords.items():
        if c in drop or not set(dims) <= used:
            continue
        coords[c] = xr.Variable(dims, values, attrs=dict(attrs))
    for c, value in (cube.scalar_coords if scalars is None else scalars).items():
        if c not in coords and c not in drop:
            attrs = COORD_ATTRS.get(c, {"long_name": f"original GRIB coordinate for key: level({c})", "units": "1"})
            coords[c] = xr.Variable((), value, attrs=dict(attrs))
    first = cube.variables[next(iter(names.values()))] if scalars is not None else None
    ds = xr.Dataset(data_vars, coords=coords, attrs=dict(first.globals if first else cube.attrs))
    ds.encoding["source"] = cube.request
    return ds


def open_dataset(
    request: Mapping[str, Any],
    *,
    fdb: Any = None,
    config: Any = None,
    dims: Any = None,
    combine_date_time: bool = True,
    dtype: Any = "float32",
    threads: int | None = None,
    **kwargs: Any,
) -> xr.Dataset:
    """A lazy :class:`xarray.Dataset` over the fields ``request`` names
    (``xr.open_dataset(request, engine="fieldstore", ...)``; ``kwargs`` go
    to :func:`xarray.open_dataset`: ``chunks={}`` for dask, one field per
    chunk)."""
    return xr.open_dataset(
        request,  # type: ignore[arg-type]
        engine=FieldStoreBackend,
        fdb=fdb,
        config=config,
        dims=dims,
        combine_date_time=combine_date_time,
        dtype=dtype,
        threads=threads,
        **kwargs,
    )


def open_datasets(
    request: Mapping[str, Any],
    *,
    fdb: Any = None,
    config: Any = None,
    dims: Any = None,
    combine_date_time: bool = True,
    dtype: Any = "float32",
    threads: int | None = None,
    drop_variables: Iterable[str] | None = None,
    chunks: Any = None,
) -> list[xr.Dataset]:
    """Lazy datasets over the fields ``request`` names, split as cfgrib's
    ``open_datasets`` splits a file (:func:`to_datasets`); ``chunks`` as
    :meth:`xarray.Dataset.chunk` takes it (dask)."""
    fdb = fdb if fdb is not None else FDB(config)
    # One cube per step type (cfgrib's split), listed once; the caller's
    # dims may make the step type a dimension instead.
    parts = [None] if dims is not None or not isinstance(request, Mapping) or not request \
        else step_type_parts(listed(fdb, request))
    cubes = [Cube(request, fdb=fdb, dims=dims, combine_date_time=combine_date_time, dtype=dtype,
                  threads=threads, _entries=part) for part in parts]
    out = [ds for c in cubes for ds in to_datasets(c, drop_variables)]
    return out if chunks is None else [ds.chunk(chunks) for ds in out]


class FieldStoreBackend(BackendEntrypoint):
    """``engine="fieldstore"``: ``filename_or_obj`` is a MARS request (a
    mapping); ``fdb`` an open :class:`fieldstore.FDB` or ``config`` one's
    configuration."""

    description = "Lazy arrays over the fields a MARS request names in a fieldstore (FDB)"
    url = "https://github.com/ecmwf/fdb (fieldstore re-implements it)"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "fdb", "config", "dims",
                               "combine_date_time", "dtype", "threads")

    def open_dataset(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        drop_variables: Iterable[str] | None = None,
        fdb: Any = None,
        config: Any = None,
        dims: Any = None,
        combine_date_time: bool = True,
        dtype: Any = "float32",
        threads: int | None = None,
    ) -> xr.Dataset:
        cube = Cube(filename_or_obj, fdb=fdb, config=config, dims=dims,
                    combine_date_time=combine_date_time, dtype=dtype, threads=threads)
        return to_dataset(cube, drop_variables)

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        return isinstance(filename_or_obj, Mapping)
