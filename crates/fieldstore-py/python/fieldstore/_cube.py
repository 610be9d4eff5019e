"""From a (partial) MARS request to named arrays: what the stored fields it
names look like as variables with dimensions and coordinates, and how to
read any part of them.

The xarray backend (``xarray_backend.py``), the Zarr store
(``zarr_store.py``) and the earthkit-data source (``earthkit.py``) are views
over one :class:`Cube`:

- Opening a cube *lists* the request (keys only) and reads the first field
  of each variable for its metadata (parameter names, units, grid,
  coordinates). No other field is read until its values are asked for.
- Each parameter and level type is one variable, named as cfgrib names it
  (ecCodes ``cfVarName``, else ``shortName``, else ``paramId``).
- The keywords whose values differ among the fields become dimensions
  (unless the caller chooses them: ``dims=``): ``date`` and ``time``
  combined into one ``time`` axis (datetime64) by default, ``step`` as
  timedelta64, ``number``, and levels (``levelist``) as one dimension per
  level type, named as cfgrib names it (``isobaricInhPa``). Any other
  keyword (``expver``, ``type``…) that varies is a dimension of strings
  named by the keyword, except ``fcmonth`` (seasonal monthly means), which
  is relabelled as cfgrib labels it: ``time`` and ``step`` from the GRIB. Coordinates are the values found in the store; a
  combination with no stored field reads as NaN.
- Regular lat/lon and regular Gaussian grids are 2-D (``latitude``,
  ``longitude``); every other grid is one ``values`` dimension with
  ``latitude``/``longitude`` coordinates, as cfgrib does. All variables of
  a cube must share one grid: a request over several grids is refused with
  an error naming them (request them separately), found at open, also when
  a variable's grid changes between dates (a resolution upgrade).
- Values are decoded in Rust through ecCodes, several fields at once on
  threads, without the GIL, straight into the NumPy array returned
  (:meth:`Cube.read`).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Mapping, Sequence

import numpy as np

from . import _fieldstore, _params
from ._fdb import FDB, _selection
from .errors import InvalidInputError, UnsupportedError

# What cfgrib reads of a variable's first field as attributes (`GRIB_<key>`),
# by grid type for the geometry.
_DATA_KEYS = [
    "paramId", "dataType", "numberOfPoints", "typeOfLevel", "stepUnits", "stepType",
    "gridType", "uvRelativeToGrid", "shortName", "units", "name", "cfName", "cfVarName",
    "totalNumber", "numberOfDirections", "numberOfFrequencies", "NV",
    "gridDefinitionDescription",
]
_LL = [
    "Nx", "Ny", "iDirectionIncrementInDegrees", "jDirectionIncrementInDegrees",
    "iScansNegatively", "jScansPositively", "jPointsAreConsecutive",
    "latitudeOfFirstGridPointInDegrees", "latitudeOfLastGridPointInDegrees",
    "longitudeOfFirstGridPointInDegrees", "longitudeOfLastGridPointInDegrees",
]
_PROJECTED = [
    "Nx", "Ny", "DxInMetres", "DyInMetres", "LaDInDegrees", "LoVInDegrees",
    "iScansNegatively", "jScansPositively", "jPointsAreConsecutive",
    "latitudeOfFirstGridPointInDegrees", "longitudeOfFirstGridPointInDegrees",
]
_GRID_KEYS: dict[str, list[str]] = {
    "regular_ll": _LL,
    "regular_gg": ["N", "Ni", "Nj", *[k for k in _LL if k not in ("Nx", "Ny", "jDirectionIncrementInDegrees")]],
    "reduced_gg": ["N"],
    "reduced_ll": ["Ny", "jDirectionIncrementInDegrees", "jPointsAreConsecutive", "jScansPositively",
                   "latitudeOfFirstGridPointInDegrees", "latitudeOfLastGridPointInDegrees"],
    "sh": ["M", "K", "J"],
    "rotated_ll": [*_LL, "angleOfRotationInDegrees", "latitudeOfSouthernPoleInDegrees",
                   "longitudeOfSouthernPoleInDegrees"],
    # Projected grids (cfgrib's y/x grids): their projection's keys.
    "lambert": [*_PROJECTED, "Latin1InDegrees", "Latin2InDegrees", "latitudeOfSouthernPoleInDegrees",
                "longitudeOfSouthernPoleInDegrees"],
    # cfgrib gives a polar stereographic grid none of its keys.
    "polar_stereographic": [],
}
# Grids cfgrib gives as ``y`` x ``x`` with 2-D latitude and longitude.
_YX_GRIDS = ("lambert", "polar_stereographic", "rotated_ll")
# Array keys of the geometry (read with `field_array`).
_GRID_ARRAYS = {"reduced_gg": ["pl"]}
# Keys that say whether two fields are on the same grid: the kind, the
# number of points and where they are (_GEOMETRY); the grid section's bytes
# only for the kinds _GEOMETRY does not know.
_GRID_IDENTITY = ["gridType", "numberOfPoints", "md5GridSection"]
_GEOMETRY: dict[str, list[str]] = {
    **{kind: keys for kind, keys in _GRID_KEYS.items() if kind != "reduced_gg"},
    "reduced_gg": ["N", "latitudeOfFirstGridPointInDegrees", "latitudeOfLastGridPointInDegrees",
                   "longitudeOfFirstGridPointInDegrees", "longitudeOfLastGridPointInDegrees"],
}
# Angles closer than GRIB1's precision (a millidegree; GRIB2 has a
# microdegree) are the same: one grid written in both editions.
_ANGLE_TOLERANCE = 1e-3
# Other keys the cube needs from the first field of a variable.
_OTHER_KEYS = ["level", "number", "edition", "centre", "centreDescription", "subCentre", "Nx", "Ny"]

# The values cfgrib asks ecCodes for where a bitmap says "missing".
MISSING_VALUE = float(np.finfo(np.float32).max)

# Coordinate attributes, as cfgrib gives them (CF).
COORD_ATTRS: dict[str, dict[str, str]] = {
    "latitude": {"units": "degrees_north", "standard_name": "latitude", "long_name": "latitude"},
    "longitude": {"units": "degrees_east", "standard_name": "longitude", "long_name": "longitude"},
    "number": {"long_name": "ensemble member numerical id", "units": "1", "standard_name": "realization"},
    "time": {"long_name": "initial time of forecast", "standard_name": "forecast_reference_time"},
    "step": {"long_name": "time since forecast_reference_time", "standard_name": "forecast_period"},
    "valid_time": {"standard_name": "time", "long_name": "time"},
    "isobaricInhPa": {"units": "hPa", "positive": "down", "stored_direction": "decreasing",
                      "standard_name": "air_pressure", "long_name": "pressure"},
    "isobaricInPa": {"units": "Pa", "positive": "down", "stored_direction": "decreasing",
                     "standard_name": "air_pressure", "long_name": "pressure"},
    "hybrid": {"units": "1", "positive": "down", "long_name": "hybrid level",
               "standard_name": "atmosphere_hybrid_sigma_pressure_coordinate"},
    "heightAboveGround": {"units": "m", "positive": "up", "long_name": "height above the surface",
                          "standard_name": "height"},
    "depthBelowLandLayer": {"units": "m", "positive": "down", "long_name": "soil depth",
                            "standard_name": "depth"},
}

# The order of dimensions: cfgrib's, then other keywords by name.
_ORDER = ["number", "time", "date", "step"]
# Keywords along which a variable's grid does not change (see _same_grid).
_SAME_GRID_KEYWORDS = {"date", "time", "step", "number", "levelist", "param", "levtype"}
# At most this many message lengths along a variable's dates: one field of
# each is checked for its grid (Cube._same_grid); more, bisection.
_FEW_LENGTHS = 8
# Keywords that never become dimensions: they make the variable.
_VARIABLE_KEYWORDS = {"param", "levtype", "levelist"}
# Keywords of a schema keyed by the GRIB's own identity
# (docs/schemas/foreign.schema) that the view reads in MARS's roles
# (_mars_roles): the parameter by its GRIB code, the level type and level.
_IDENTITY_KEYWORDS = {"centre", "edition", "typeOfLevel", "stepType", "discipline", "parameterCategory",
                      "parameterNumber", "table2Version", "indicatorOfParameter", "topLevel",
                      "bottomLevel", "startStep"}


def default_threads() -> int:
    """Threads decoding at once: the CPUs this process may use, at most 8."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(8, n))


@dataclass(frozen=True)
class Geometry:
    """Where a field's points are, as comparable keys: two fields are on
    one grid when their geometries are equal, whatever their encoding (GRIB1
    and GRIB2 grid sections of one grid differ in every byte).

    ``keys`` are (name, value) pairs of ecCodes keys, in a fixed order for
    a kind: the grid's sizes, scanning and corners in degrees (equal within
    GRIB1's millidegree), ``pl`` for reduced Gaussian grids; for a kind this
    module does not know, the grid section's MD5 (bytes, so such a grid in
    two editions is two grids)."""

    kind: str
    points: int
    keys: tuple[tuple[str, Any], ...]

    @classmethod
    def of(cls, meta: Mapping[str, Any], pl: Sequence[int] | None = None) -> Geometry:
        kind = str(meta.get("gridType"))
        names = _GEOMETRY.get(kind)
        keys: list[tuple[str, Any]] = [(k, meta.get(k)) for k in names] if names is not None \
            else [("md5GridSection", meta.get("md5GridSection"))]
        if pl is not None:
            keys.append(("pl", tuple(int(p) for p in pl)))
        return cls(kind, int(meta.get("numberOfPoints") or 0), tuple(keys))

    def difference(self, other: Geometry) -> str | None:
        """What differs between two geometries (the first key that does),
        or None for one grid."""
        if (self.kind, self.points) != (other.kind, other.points):
            return f"{self} and {other}"
        for (name, a), (_, b) in zip(self.keys, other.keys):
            if not _same_value(a, b):
                shown = (a, b) if name != "pl" else ("one list", "another")
                return f"{self}, {name} {shown[0]} and {shown[1]}"
        return None

    def __str__(self) -> str:
        return f"{self.kind} of {self.points} points"


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        try:
            return abs(float(a) - float(b)) <= _ANGLE_TOLERANCE
        except (TypeError, ValueError):
            return False
    return bool(a == b)


@dataclass
class Grid:
    """The geometry every field of a cube shares."""

    dims: tuple[str, ...]
    shape: tuple[int, ...]
    points: int
    identity: Geometry
    # name -> (dims, values, attrs)
    coords: dict[str, tuple[tuple[str, ...], np.ndarray, dict[str, str]]] = field(default_factory=dict)
    # Whether the points are in ecCodes' order (not reordered rows), once known.
    message_order: bool | None = None


@dataclass
class Variable:
    """One parameter at one level type: its fields over the cube's
    dimensions, and its attributes."""

    name: str
    param: str
    levtype: str
    dims: tuple[str, ...]          # header dims (the fields' array), then the grid's
    fields: np.ndarray             # object array of native entries or None
    attrs: dict[str, Any]
    scalar_coords: dict[str, Any]  # coordinates of length 1 (squeezed)
    # cfgrib's name: ``name`` without the ``_<levtype>`` that keeps two
    # level types of one parameter apart in one dataset.
    base: str = ""
    # The attributes of a dataset of this variable alone (its first field's
    # edition and centre).
    globals: dict[str, Any] = field(default_factory=dict)

    @property
    def header_dims(self) -> tuple[str, ...]:
        return self.dims[: self.fields.ndim]


def _time_value(date: str, time: str) -> np.datetime64 | None:
    if len(date) != 8 or not date.isdigit() or not time.isdigit():
        return None
    t = time.zfill(4)
    return np.datetime64(f"{date[:4]}-{date[4:6]}-{date[6:]}T{t[:2]}:{t[2:]}", "ns")


def _step_value(step: str) -> np.timedelta64 | None:
    if step.isdigit():
        return np.timedelta64(int(step), "h").astype("timedelta64[ns]")
    if step.endswith("m") and step[:-1].isdigit():
        return np.timedelta64(int(step[:-1]), "m").astype("timedelta64[ns]")
    return None


class Cube:
    """The fields a request names, as variables over named dimensions.

    ``fdb``: a :class:`fieldstore.FDB` (or the ``config`` to open one);
    ``dims``: the MARS keywords to make dimensions, in order (default: those
    whose values differ among the fields); ``combine_date_time``: ``date``
    and ``time`` as one ``time`` axis; ``dtype``: ``float32`` (cfgrib's) or
    ``float64``; ``threads``: fields decoded at once.
    """

    def __init__(
        self,
        request: Mapping[str, Any],
        fdb: FDB | None = None,
        config: Any = None,
        dims: Sequence[str] | None = None,
        combine_date_time: bool = True,
        dtype: Any = "float32",
        threads: int | None = None,
        _entries: Sequence[Any] | None = None,
    ) -> None:
        if not hasattr(_fieldstore, "decode_into"):
            raise UnsupportedError(
                "this build of fieldstore has no GRIB support (fieldstore.HAS_GRIB is false): "
                "array views need ecCodes to decode fields"
            )
        if not isinstance(request, Mapping) or not request:
            raise InvalidInputError(f"an array view needs a non-empty MARS request (a mapping), not {request!r}")
        self.request = dict(request)
        self.fdb = fdb if fdb is not None else FDB(config)
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.dtype("float32"), np.dtype("float64")):
            raise InvalidInputError(f"dtype must be float32 or float64, not {self.dtype}")
        self.threads = default_threads() if threads is None else max(1, int(threads))
        # `_entries`: a part of the request's fields (open_datasets' step types).
        entries = list(_entries) if _entries is not None else listed(self.fdb, self.request)
        if not entries:
            raise InvalidInputError(f"the request names no stored field: {_show(self.request)}")
        keys = [_mars_roles(e.combined_key()) for e in entries]
        _untimed(entries, keys)
        monthly = _monthly(entries, keys, self.threads)
        # What the request names explicitly is in the coordinates, stored or
        # not: a value with no field yet (a step not flushed) reads as NaN.
        self.requested = dict(self.fdb._store.requested_values(_selection(self.request)))
        for k in monthly:
            # Relabelled from the GRIB: the request's MARS values are no labels.
            self.requested.pop(k, None)
        self._build(entries, keys, dims, combine_date_time)

    # ---- structure -------------------------------------------------------

    def _build(self, entries: list[Any], keys: list[dict[str, str]], dims: Sequence[str] | None,
               combine: bool) -> None:
        keywords = sorted({k for key in keys for k in key} - _VARIABLE_KEYWORDS)
        values = {k: sorted({key.get(k, "") for key in keys} | set(self.requested.get(k, ())))
                  for k in keywords}
        if dims is None:
            chosen = [k for k in keywords if len(values[k]) > 1]
            # A statistically processed field's time span is in its step
            # range (cfgrib has no such dimension): no dimension while each
            # variable's fields name it alone.
            if "timespan" in chosen and _determined(keys, "timespan"):
                chosen.remove("timespan")
            elif "timespan" in chosen:
                # One parameter both instant and processed (MARS keys them
                # apart by timespan alone): one step type would label both.
                raise InvalidInputError(
                    "the request names fields of several step types (timespan "
                    + " and ".join(repr(v) for v in values["timespan"]) + ") "
                    "of the same parameters; cfgrib refuses them too: fieldstore.open_datasets opens one "
                    "dataset per step type, or name one timespan in the request (or dims=[..., 'timespan'])")
            if combine and ("date" in chosen or "time" in chosen):
                chosen = [k for k in chosen if k not in ("date", "time")] + ["date", "time"]
        else:
            chosen = list(dims)
            unknown = [d for d in chosen if d not in keywords and d not in ("time",)]
            if unknown:
                raise InvalidInputError(
                    f"dims={list(dims)}: {unknown} are not keywords of the stored fields "
                    f"(they have {keywords}; levels follow the level type)")
            if combine and "time" in chosen and "date" in keywords:
                chosen.append("date")
            left = [k for k in keywords if len(values[k]) > 1 and k not in chosen]
            if left:
                raise InvalidInputError(
                    "dims=" + repr(list(dims)) + " leaves out keywords whose values differ among the fields: "
                    + ", ".join(f"{k} ({'/'.join(values[k])})" for k in left))
        # Header axes: name -> (list of key-tuples, coordinate values).
        axes: list[tuple[str, list[tuple[str, ...]], tuple[str, ...], np.ndarray]] = []
        taken: set[str] = set()
        combined = combine and "date" in chosen and "time" in keywords
        if combined:
            pairs = sorted({(key.get("date", ""), key.get("time", "")) for key in keys})
            if "date" in self.requested or "time" in self.requested:
                # Every date the request names at every time it names (or
                # the stored ones, for the one it leaves open).
                pairs = sorted(set(pairs) | {(d, t) for d in values.get("date", [""])
                                             for t in values.get("time", [""])})
            stamps = [_time_value(d, t) for d, t in pairs]
            if all(s is not None for s in stamps):
                axes.append(("time", pairs, ("date", "time"), np.array(stamps, dtype="datetime64[ns]")))
                taken |= {"date", "time"}
        for k in chosen:
            if k in taken or k == "date" and combined and "date" in taken:
                continue
            vals = values[k]
            coord: np.ndarray
            if k == "step" and all(_step_value(v) is not None for v in vals):
                order = sorted(vals, key=lambda v: _step_value(v))  # type: ignore[arg-type,return-value]
                coord = np.array([_step_value(v) for v in order], dtype="timedelta64[ns]")
                vals = order
            elif k == "number" and all(v.lstrip("-").isdigit() for v in vals):
                vals = sorted(vals, key=int)
                coord = np.array([int(v) for v in vals], dtype="int64")
            else:
                coord = np.array(vals, dtype=object)
            axes.append((k, [(v,) for v in vals], (k,), coord))
            taken.add(k)
        if dims is None:
            axes.sort(key=lambda a: (_ORDER.index(a[0]) if a[0] in _ORDER else len(_ORDER), a[0]))
        else:
            # The caller's order ("date" stands for a combined "time").
            place = {d: i for i, d in enumerate(dims)}
            axes.sort(key=lambda a: min(place.get(k, len(place)) for k in (a[0], *a[2])))
        self.header = axes
        self._params = _params.ParamCache()
        # Group fields by variable (param, levtype).
        groups: dict[tuple[str, str], list[int]] = {}
        for i, key in enumerate(keys):
            groups.setdefault((key.get("param", ""), key.get("levtype", "")), []).append(i)
        self.coords: dict[str, tuple[tuple[str, ...], np.ndarray, dict[str, str]]] = {}
        for name, _, _, coord in axes:
            self.coords[name] = ((name,), coord, dict(COORD_ATTRS.get(name, {})))
        self.variables: dict[str, Variable] = {}
        self.grid: Grid | None = None
        grid_of: dict[str, Grid] = {}
        first_meta: dict[str, Any] | None = None
        ordered = sorted(groups.items())
        # The first field of each variable, read on threads at once (the
        # reads and ecCodes release the GIL).
        with ThreadPoolExecutor(max_workers=min(self.threads, len(ordered))) as pool:
            metas = list(pool.map(lambda g: self._metadata(entries[g[1][0]], g[0][0]), ordered))
        grids: list[Grid] = []
        unknowns = sum(1 for m in metas if _grib_name(m) == "unknown")
        for ((param, levtype), members), meta in zip(ordered, metas):
            first = entries[members[0]]
            if first_meta is None:
                first_meta = meta
            identity = _geometry(first, meta)
            grid = next((g for g in grids if g.identity.difference(identity) is None), None)
            if grid is None:
                grid = self._grid(first, meta, identity)
                grids.append(grid)
            self._same_grid(f"{meta.get('shortName', param)} ({levtype})", grid, members, entries, keys)
            name = _grib_name(meta)
            if name == "unknown" and unknowns > 1:
                # Parameters ecCodes has no name for, told apart by their
                # GRIB code (cfgrib calls each "unknown" and merges them).
                name = str(meta.get("paramId") or param)
            base = name
            if name in self.variables:
                name = f"{name}_{levtype}"
            grid_of[name] = grid
            self.variables[name] = self._variable(name, param, levtype, meta, grid, members, entries, keys)
            self.variables[name].base = base
            self.variables[name].globals = self._global_attrs(meta)
        self._params.save()
        if len(grids) > 1:
            why = grids[0].identity.difference(grids[1].identity)
            raise InvalidInputError(
                f"the request names fields on different grids ({why}); request each grid separately: "
                + "; ".join(f"{n}: {g.identity}" for n, g in grid_of.items()))
        self.grid = next(iter(grid_of.values()))
        for c, spec in self.grid.coords.items():
            self.coords[c] = spec
        self._valid_time()
        self.scalar_coords = self._shared_scalars()
        assert first_meta is not None
        self.attrs = self._global_attrs(first_meta)

    def _global_attrs(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """A dataset's attributes, as cfgrib's: from its first field."""
        attrs = {
            "GRIB_edition": meta.get("edition"),
            "GRIB_centre": meta.get("centre"),
            "GRIB_centreDescription": meta.get("centreDescription"),
            "GRIB_subCentre": meta.get("subCentre"),
            "Conventions": "CF-1.7",
            "institution": meta.get("centreDescription"),
            "history": f"fieldstore {_fieldstore.__version__}: {_show(self.request)}",
        }
        return {k: v for k, v in attrs.items() if v is not None}

    def _metadata(self, entry: Any, param: str) -> dict[str, Any]:
        """The keys of a variable's first field; the parameter's names from
        the cache (``_params``) when known for its centre, as reading them
        costs ecCodes a parse of its concept tables per process."""
        names = [k for k in _DATA_KEYS + _GRID_IDENTITY + _OTHER_KEYS
                 + sorted({k for ks in _GRID_KEYS.values() for k in ks}) if k not in _params.KEYS]
        got = dict(zip(names, _fieldstore.field_keys(entry, names)))
        meta = {k: v for k, v in got.items() if v is not None}
        where = (meta.get("edition"), meta.get("centre"), param)
        known = self._params.get(*where) if param.isdigit() else None
        if known is None:
            read = dict(zip(_params.KEYS, _fieldstore.field_keys(entry, _params.KEYS)))
            known = {k: v for k, v in read.items() if v is not None}
            if param.isdigit() and str(known.get("paramId")) == param:
                self._params.put(*where, known)
        meta.update(known)
        return meta

    def _grid(self, entry: Any, meta: dict[str, Any], identity: Geometry) -> Grid:
        kind = str(meta.get("gridType"))
        points = int(meta["numberOfPoints"])

        def array(key: str) -> np.ndarray:
            return np.frombuffer(_fieldstore.field_array(entry, key), dtype=np.float64)

        if kind in ("regular_ll", "regular_gg"):
            # In the order of the field's rows and columns, as cfgrib uses them.
            lat, lon = array("distinctLatitudes"), array("distinctLongitudes")
            lat_attrs = dict(COORD_ATTRS["latitude"])
            if len(lat) > 1 and lat[0] > lat[-1]:
                lat_attrs["stored_direction"] = "decreasing"
            return Grid(("latitude", "longitude"), (len(lat), len(lon)), points, identity, {
                "latitude": (("latitude",), lat, lat_attrs),
                "longitude": (("longitude",), lon, dict(COORD_ATTRS["longitude"])),
            })
        if kind in _YX_GRIDS and int(meta.get("Nx", 0)) * int(meta.get("Ny", 0)) == points:
            # Rows of Nx points, as ecCodes gives them (cfgrib's y/x).
            shape = (int(meta["Ny"]), int(meta["Nx"]))
            return Grid(("y", "x"), shape, points, identity, {
                "latitude": (("y", "x"), array("latitudes").reshape(shape), dict(COORD_ATTRS["latitude"])),
                "longitude": (("y", "x"), array("longitudes").reshape(shape), dict(COORD_ATTRS["longitude"])),
            })
        coords = {}
        try:
            coords["latitude"] = (("values",), array("latitudes"), dict(COORD_ATTRS["latitude"]))
            coords["longitude"] = (("values",), array("longitudes"), dict(COORD_ATTRS["longitude"]))
        except Exception:  # noqa: BLE001 - spectral fields have no points on Earth
            coords = {}
        return Grid(("values",), (points,), points, identity, coords)

    def _same_grid(self, what: str, grid: Grid, members: list[int], entries: list[Any],
                   keys: list[dict[str, str]]) -> None:
        """Refuse a variable whose fields are on different grids, at open
        (decoding such a field would fail at ``.load()``). Grids differ
        between datasets and streams, and between dates when a model is
        upgraded (a resolution upgrade), not between the steps, members
        and levels of one forecast. So the first field of each combination
        of the other keywords is checked, and along the dates and times of
        each: when their messages have few lengths (simple packing: one
        grid, one length), one field per length; otherwise (packings whose
        length varies with the values) the first and last dates, and, when
        they differ, the dates between by bisection to name where the grid
        changes. A few reads: at most one for fields of one length."""
        groups: dict[tuple[str, ...], dict[tuple[str, str], int]] = {}
        for i in members:
            other = tuple(f"{k}={v}" for k, v in sorted(keys[i].items()) if k not in _SAME_GRID_KEYWORDS)
            groups.setdefault(other, {}).setdefault((keys[i].get("date", ""), keys[i].get("time", "")), i)
        names = _GRID_IDENTITY + sorted({k for ks in _GEOMETRY.values() for k in ks})
        known: dict[int, Geometry] = {members[0]: grid.identity}

        def geometry(i: int) -> Geometry:
            if i not in known:
                meta = dict(zip(names, _fieldstore.field_keys(entries[i], names)))
                known[i] = _geometry(entries[i], meta)
            return known[i]

        def refuse(ref: int, i: int) -> None:
            why = geometry(ref).difference(geometry(i))
            if why is None:
                return
            a, b = keys[ref], keys[i]
            if all(a.get(k) == v for k, v in b.items() if k not in _SAME_GRID_KEYWORDS):
                # One dataset and stream at another date: the model's grid changed.
                detail = f" ({why})" if str(geometry(ref)) == str(geometry(i)) else ""
                raise InvalidInputError(
                    f"the grid of {what} changes between dates: {geometry(ref)} at "
                    f"date={a.get('date', '')},time={a.get('time', '')}, {geometry(i)} at "
                    f"date={b.get('date', '')},time={b.get('time', '')}{detail}; "
                    f"request the dates of each grid separately")
            changed = ",".join(f"{k}={v}" for k, v in sorted(b.items()) if k not in _SAME_GRID_KEYWORDS)
            raise InvalidInputError(
                f"the request names fields of {what} on different grids ({why}, the second at "
                f"{changed}); request each grid separately")

        few: list[tuple[int, list[int]]] = []    # (earliest, one field per other length)
        bisect: list[list[int]] = []
        todo: list[int] = []                       # read on threads first
        for dated in groups.values():
            ordered = [dated[d] for d in sorted(dated)]
            by_length: dict[Any, int] = {}
            for i in ordered:
                by_length.setdefault(entries[i].length(), i)
            todo.append(ordered[0])
            if len(by_length) <= _FEW_LENGTHS:
                reps = [i for i in by_length.values() if i != ordered[0]]
                few.append((ordered[0], reps))
                todo += reps
            else:
                bisect.append(ordered)
                todo.append(ordered[-1])
        todo = [i for i in dict.fromkeys(todo) if i not in known]
        if todo:
            with ThreadPoolExecutor(max_workers=min(self.threads, len(todo))) as pool:
                for i, g in zip(todo, pool.map(geometry, todo)):
                    known[i] = g
        for ordered in bisect:
            # Where the grid changes between the first and last dates (a
            # change there and back again is not looked for: it fails when
            # decoded, naming the field).
            lo, hi = 0, len(ordered) - 1
            if geometry(ordered[lo]).difference(geometry(ordered[hi])) is None:
                continue
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if geometry(ordered[lo]).difference(geometry(ordered[mid])) is None:
                    lo = mid
                else:
                    hi = mid
            refuse(ordered[lo], ordered[hi])
        for earliest, reps in few:
            for i in reps:
                refuse(earliest, i)
        for dated in groups.values():
            refuse(members[0], dated[min(dated)])

    def _variable(self, name: str, param: str, levtype: str, meta: dict[str, Any], grid: Grid,
                  members: list[int], entries: list[Any], keys: list[dict[str, str]]) -> Variable:
        first = entries[members[0]]
        level_name = str(meta.get("typeOfLevel", levtype))
        # Every variable of a level type has the levels of all of them.
        stored_levels = {k.get("levelist", "") for k in keys if k.get("levtype", "") == levtype}
        if stored_levels - {""}:
            # A level type with levels has every level the request names.
            stored_levels |= set(self.requested.get("levelist", ()))
        levels = sorted(stored_levels, key=_level_sort)
        if COORD_ATTRS.get(level_name, {}).get("stored_direction") == "decreasing":
            levels.reverse()
        header = list(self.header)
        scalar: dict[str, Any] = {}
        if len(levels) > 1:
            level_name, coord = _level_coordinate(level_name, levels)
            header.append((level_name, [(v,) for v in levels], ("levelist",), coord))
            if level_name not in self.coords:
                attrs = COORD_ATTRS.get(level_name, {"long_name": f"original GRIB coordinate for key: level({level_name})", "units": "1"})
                self.coords[level_name] = ((level_name,), coord, dict(attrs))
        else:
            scalar[level_name] = float(meta.get("level", 0))
        shape = tuple(len(h[1]) for h in header)
        fields = np.full(shape, None, dtype=object)
        where = [{v: j for j, v in enumerate(h[1])} for h in header]
        for i in members:
            key = keys[i]
            try:
                index = tuple(w[tuple(key.get(k, "") for k in h[2])] for w, h in zip(where, header))
            except KeyError:
                continue
            fields[index] = entries[i]
        attrs: dict[str, Any] = {}
        wanted = ["paramId", "dataType", "numberOfPoints", "typeOfLevel", "stepUnits", "stepType",
                  "gridType", "uvRelativeToGrid", *_GRID_KEYS.get(str(meta.get("gridType")), []),
                  "NV", "cfName", "cfVarName", "gridDefinitionDescription", "missingValue", "name",
                  "numberOfDirections", "numberOfFrequencies", "shortName", "totalNumber", "units"]
        for k in wanted:
            if k == "typeOfLevel" and len(levels) > 1:
                attrs["GRIB_typeOfLevel"] = level_name  # the dimension's name, as cfgrib's
            elif k == "stepUnits":
                # Steps are read in hours whatever unit the message uses (cfgrib's).
                attrs["GRIB_stepUnits"] = 1
            elif k == "missingValue":
                attrs["GRIB_missingValue"] = MISSING_VALUE
            elif k in _GRID_ARRAYS.get(str(meta.get("gridType")), []):
                pass
            elif k in meta:
                attrs[f"GRIB_{k}"] = meta[k]
        for k in _GRID_ARRAYS.get(str(meta.get("gridType")), []):
            attrs[f"GRIB_{k}"] = np.frombuffer(_fieldstore.field_array(first, k),
                                               dtype=np.float64).astype(np.int64)
        attrs["long_name"] = meta.get("name", f"original GRIB paramId: {meta.get('paramId', param)}")
        attrs["units"] = meta.get("units", "1")
        if "cfName" in meta:
            attrs["standard_name"] = meta["cfName"]
        # Scalar coordinates of the header (keywords that do not vary).
        return Variable(name, param, levtype, tuple(h[0] for h in header) + grid.dims, fields, attrs,
                        {**self._scalars(keys[members[0]], meta), **scalar})

    def _scalars(self, key: dict[str, str], meta: dict[str, Any]) -> dict[str, Any]:
        have = {h[0] for h in self.header}
        out: dict[str, Any] = {}
        if "number" not in have:
            n = key.get("number") or meta.get("number")
            if n not in (None, ""):
                out["number"] = np.int64(int(n))
        if "time" not in have and "date" not in have:
            t = _time_value(key.get("date", ""), key.get("time", ""))
            if t is not None:
                out["time"] = t
        if "step" not in have:
            s = _step_value(key.get("step", ""))
            if s is not None:
                out["step"] = s
        return out

    def _shared_scalars(self) -> dict[str, Any]:
        """The scalar coordinates of the view. Where no two variables
        disagree on one, all of them, as cfgrib merges them (``surface``
        beside ``sigmaLayer`` in NCEP's files). Where some do (soil layers
        ``stl1``-``stl4``, each at its own ``depthBelowLandLayer`` with one
        ``levtype=sfc``: cfgrib refuses such a view, ``open_datasets``
        splits it), only those every variable has with one value: any
        other would label some variables wrongly, so it stays with each
        variable that has it, as an attribute of its name. The variables'
        own ``scalar_coords`` are left whole (the Zarr view, a variable
        alone)."""
        scalars: dict[str, list[Any]] = {}
        for var in self.variables.values():
            for c, value in var.scalar_coords.items():
                scalars.setdefault(c, []).append(value)
        shared: dict[str, Any] = {}
        agree = {c: all(np.array_equal(v, values[0]) for v in values) for c, values in scalars.items()}
        # Where cfgrib opens the view (no two values of one scalar), it
        # merges every scalar; else only those all variables share.
        merge = all(agree.values())
        for c, values in scalars.items():
            if c not in self.coords and agree[c] and (merge or len(values) == len(self.variables)):
                shared[c] = values[0]
                continue
            for var in self.variables.values():
                if c in var.scalar_coords:
                    var.attrs[c] = var.scalar_coords[c]
        return shared

    def _valid_time(self) -> None:
        """``valid_time`` = ``time`` + ``step``, over whichever of them are
        dimensions (as cfgrib)."""
        one = next(iter(self.variables.values()))
        t = self.coords["time"][1] if "time" in self.coords else one.scalar_coords.get("time")
        s = self.coords["step"][1] if "step" in self.coords else one.scalar_coords.get("step")
        if t is None or s is None or np.asarray(t).dtype.kind != "M" or np.asarray(s).dtype.kind != "m":
            return
        dims = tuple(d for d in ("time", "step") if d in self.coords)
        t_arr = np.asarray(t)
        s_arr = np.asarray(s)
        if dims == ("time", "step"):
            value = t_arr[:, None] + s_arr[None, :]
        else:
            value = t_arr + s_arr
        self.coords["valid_time"] = (dims, np.asarray(value, dtype="datetime64[ns]"), dict(COORD_ATTRS["valid_time"]))

    # ---- values ----------------------------------------------------------

    def read(self, variable: str, key: tuple[Any, ...] = ()) -> np.ndarray:
        """The values of ``variable`` at ``key`` (outer indexing: per
        dimension an int, a slice or a 1-D array of ints), reading and
        decoding only the fields it touches. Missing fields are NaN."""
        var = self.variables[variable]
        grid = self.grid
        assert grid is not None
        full = tuple(key) + (slice(None),) * (len(var.dims) - len(key))
        nh = var.fields.ndim
        picks: list[np.ndarray] = []
        drop: list[int] = []
        for axis, k in enumerate(full[:nh]):
            n = var.fields.shape[axis]
            if isinstance(k, (int, np.integer)):
                picks.append(np.array([int(k) % n if n else 0]))
                drop.append(axis)
            elif isinstance(k, slice):
                picks.append(np.arange(n)[k])
            else:
                picks.append(np.asarray(k, dtype=np.intp).reshape(-1))
        chosen = var.fields[np.ix_(*picks)] if nh else var.fields
        flat = list(np.asarray(chosen).reshape(-1))
        few = self._few_points(full[nh:], grid, flat)
        if few is not None:
            return self._extract(flat, picks, drop, few)
        # decode_into writes every element (NaN for absent fields).
        out = np.empty((len(flat), grid.points), dtype=self.dtype)
        if flat:
            _fieldstore.decode_into(flat, out.ctypes.data, grid.points, self.dtype == np.float64, self.threads)
        values = out.reshape(tuple(len(p) for p in picks) + grid.shape)
        for axis, k in enumerate(full[nh:]):
            where = nh + axis
            if isinstance(k, (int, np.integer)):
                values = np.take(values, [int(k)], axis=where)
                drop.append(where)
            elif isinstance(k, slice):
                values = values[(slice(None),) * where + (k,)]
            else:
                values = np.take(values, np.asarray(k, dtype=np.intp), axis=where)
        if drop:
            values = values.reshape(tuple(s for i, s in enumerate(values.shape) if i not in drop))
        return values


    # A selection of few grid points (`.sel(..., method="nearest")`,
    # `.isel(values=...)`) reads only the bytes that hold them
    # (docs/extract.md) instead of decoding whole fields.
    def _few_points(self, key: tuple[Any, ...], grid: Grid, flat: list) -> tuple | None:
        """``(message indices, shape, dropped axes)`` of the grid points
        ``key`` selects, if they are few (at most 1/8 of the grid) and the
        fields keep ecCodes' point order; else None."""
        if not hasattr(_fieldstore, "extract_into") or not any(e is not None for e in flat):
            return None
        per_dim = []
        drop = []
        for axis, (k, n) in enumerate(zip(tuple(key) + (slice(None),) * (len(grid.shape) - len(key)), grid.shape)):
            if isinstance(k, (int, np.integer)):
                per_dim.append(np.array([int(k) % n]))
                drop.append(axis)
            elif isinstance(k, slice):
                per_dim.append(np.arange(n)[k])
            else:
                per_dim.append(np.asarray(k, dtype=np.intp).reshape(-1))
        count = int(np.prod([len(p) for p in per_dim]))
        if count * 8 > grid.points or not self._message_order(grid, flat):
            return None
        idx = np.ravel_multi_index(np.ix_(*per_dim), grid.shape).reshape(-1)
        return [int(i) for i in idx], tuple(len(p) for p in per_dim), drop

    def _message_order(self, grid: Grid, flat: list) -> bool:
        """Whether the cube's points are in ecCodes' order (not a 2-D grid
        scanned in alternating row directions, which the decoder reorders)."""
        if len(grid.dims) == 1:
            return True
        if grid.message_order is None:
            entry = next(e for e in flat if e is not None)
            grid.message_order = not _fieldstore.field_keys(entry, ["alternativeRowScanning"])[0]
        return grid.message_order

    def _extract(self, flat: list, picks: list, drop: list, few: tuple) -> np.ndarray:
        indices, shape, grid_drop = few
        out = np.empty((len(flat), len(indices)), dtype=self.dtype)
        _fieldstore.extract_into(flat, indices, out.ctypes.data, self.dtype == np.float64, self.threads)
        values = out.reshape(tuple(len(p) for p in picks) + shape)
        nh = len(picks)
        drop = list(drop) + [nh + a for a in grid_drop]
        if drop:
            values = values.reshape(tuple(s for i, s in enumerate(values.shape) if i not in drop))
        return values


def _grib_name(meta: Mapping[str, Any]) -> str:
    """A variable's name as cfgrib's: ecCodes' ``cfVarName``, else its
    ``shortName``, else ``unknown``."""
    for k in ("cfVarName", "shortName"):
        name = str(meta.get(k) or "unknown")
        if name != "unknown":
            return name
    return "unknown"


def listed(fdb: FDB, request: Mapping[str, Any]) -> list[Any]:
    """The stored fields ``request`` names (list entries)."""
    return list(fdb._store.list(_selection(dict(request)), False, 3))


def _mars_roles(key: dict[str, str]) -> dict[str, str]:
    """A key of a schema keyed by the GRIB's identity (no ``levtype``, a
    ``typeOfLevel``) in MARS's roles, for the view: ``param`` the
    parameter's GRIB code and step type, ``levtype`` the level type,
    ``levelist`` the level (its top); the other identity keywords are no
    dimensions. Any other key as it is."""
    if "levtype" in key or "typeOfLevel" not in key:
        return key
    out = {k: v for k, v in key.items() if k not in _IDENTITY_KEYWORDS}
    code = [key[k] for k in ("discipline", "parameterCategory", "parameterNumber", "table2Version",
                             "indicatorOfParameter") if k in key]
    step_type = key.get("stepType", "instant")
    out["param"] = ".".join(code) + ("" if step_type == "instant" else f".{step_type}")
    out["levtype"] = key["typeOfLevel"]
    out["levelist"] = key.get("topLevel", "")
    return out


def step_type_parts(entries: Sequence[Any]) -> list[list[Any]]:
    """``entries`` split by step type where one parameter has several
    (MARS keys them apart by ``timespan`` alone), in timespan order; else
    all of them, whole."""
    keys = [e.combined_key() for e in entries]
    if _determined(keys, "timespan"):
        return [list(entries)]
    parts: dict[str, list[Any]] = {}
    for e, key in zip(entries, keys):
        parts.setdefault(key.get("timespan", ""), []).append(e)
    return [parts[t] for t in sorted(parts)]


def _determined(keys: list[dict[str, str]], keyword: str) -> bool:
    """Whether ``keyword``'s value follows from the rest of each key: no
    two keys differ in it alone (so it need not be a dimension)."""
    seen: dict[tuple[tuple[str, str], ...], str] = {}
    for key in keys:
        rest = tuple(sorted((k, v) for k, v in key.items() if k != keyword))
        if seen.setdefault(rest, key.get(keyword, "")) != key.get(keyword, ""):
            return False
    return True


def _geometry(entry: Any, meta: Mapping[str, Any]) -> Geometry:
    """The geometry of the field ``entry`` whose keys ``meta`` holds (with
    its ``pl``, read from the field, for a reduced Gaussian grid)."""
    pl = None
    if str(meta.get("gridType")) == "reduced_gg":
        pl = np.frombuffer(_fieldstore.field_array(entry, "pl"), dtype=np.float64).astype(np.int64).tolist()
    return Geometry.of(meta, pl)


def _level_coordinate(name: str, levels: list[str]) -> tuple[str, np.ndarray]:
    """The level dimension's name and values for the stored ``levelist``
    values ``levels`` of a level type whose first field says its level is a
    ``name`` (ecCodes ``typeOfLevel``).

    The values are the ``levelist`` ones, with one exception: pressure. MARS
    spells every pressure level in hPa (``levtype=pl``), while ecCodes calls
    a level that is not a whole number of hPa ``isobaricInPa`` and gives it
    in Pa (``levelist=0.1`` is 10 Pa), as cfgrib labels it. So levels all
    below whole hPa, under that name, are given in Pa (cfgrib's labels); a
    mix of whole and fractional hPa (fields of both kinds, which cfgrib
    will not put in one dataset) is one ``isobaricInhPa`` coordinate in hPa,
    never hPa values labelled Pa.
    """
    if not all(_is_number(v) for v in levels):
        return name, np.array(levels, dtype=object)
    if name not in ("isobaricInhPa", "isobaricInPa"):
        return name, np.array([float(v) for v in levels])
    hpa = [Decimal(v) for v in levels]
    if name == "isobaricInPa" and all(p != p.to_integral_value() for p in hpa):
        return name, np.array([float(p * 100) for p in hpa])
    return "isobaricInhPa", np.array([float(p) for p in hpa])


def _untimed(entries: list[Any], keys: list[dict[str, str]]) -> None:
    """Give fields whose MARS key has a ``date`` but no ``time`` or no
    ``step`` (monthly means, ``stream=moda``) the time and step their GRIB
    says, in their ``keys``, as cfgrib labels them (``dataTime``,
    ``endStep``), instead of leaving the time axis without a time of day.

    One field per date is read (the first listed): the fields of one date
    of such a stream are one period's means, with one time and step, while
    another month may have another step (a mean of forecasts over 28 or 31
    days). The keys are only the view's labels, never a request."""
    by_date: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        # (fcmonth: labelled by _monthly.)
        if "date" in key and "fcmonth" not in key and ("time" not in key or "step" not in key):
            by_date.setdefault(key["date"], []).append(i)
    for members in by_date.values():
        time, step = _grib_time_and_step(entries[members[0]])
        for i in members:
            if time is not None:
                keys[i].setdefault("time", time)
            if step is not None:
                keys[i].setdefault("step", step)


def _monthly(entries: list[Any], keys: list[dict[str, str]], threads: int) -> set[str]:
    """Label fields whose MARS key has an ``fcmonth`` (monthly means of
    seasonal forecasts, ``stream=msmm``/``mmsm``) as cfgrib labels them: by
    their GRIB's ``dataDate``/``dataTime`` (``time``) and ``endStep``
    (``step``), not by MARS's ``date`` and ``fcmonth``, in their ``keys``
    (which lose ``fcmonth``). The keywords relabelled are returned.

    A lagged ensemble's members (UK Met Office, NCEP) start on other days
    than the nominal ``date``, so one field is read per ``date``,
    ``fcmonth``, ``number`` and every other keyword but the parameter and
    level (which share their forecast's dates), on threads."""
    groups: dict[tuple[tuple[str, str], ...], list[int]] = {}
    for i, key in enumerate(keys):
        if "fcmonth" in key:
            other = tuple(sorted((k, v) for k, v in key.items() if k not in ("param", "levelist")))
            groups.setdefault(other, []).append(i)
    if not groups:
        return set()
    members = list(groups.values())
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(members)))) as pool:
        found = list(pool.map(lambda m: _grib_date_time_and_step(entries[m[0]]), members))
    for group, (date, time, step) in zip(members, found):
        where = keys[group[0]]
        if date is None or time is None or step is None:
            raise InvalidInputError(
                f"the field {_show(where)} has an fcmonth but its GRIB gives no dataDate, dataTime "
                "or endStep in hours or minutes to label it with")
        for i in group:
            del keys[i]["fcmonth"]
            keys[i].update(date=date, time=time, step=step)
    return {"fcmonth", "date", "time", "step"}


def _grib_date_time_and_step(entry: Any) -> tuple[str | None, str | None, str | None]:
    (data_date,) = _fieldstore.field_keys(entry, ["dataDate"])
    time, step = _grib_time_and_step(entry)
    return (str(data_date) if isinstance(data_date, int) else None), time, step


def _grib_time_and_step(entry: Any) -> tuple[str | None, str | None]:
    """A field's GRIB ``dataTime`` and ``endStep`` as MARS spells them
    (``0000``; ``24``, or ``30m`` in minutes), None for what it lacks."""
    data_time, end_step, step_units = _fieldstore.field_keys(entry, ["dataTime", "endStep", "stepUnits"])
    time = f"{int(data_time):04d}" if isinstance(data_time, int) else None
    # ecCodes' stepUnits code table: 0 minute, 1 hour (what _step_value reads).
    unit = {0: "m", 1: ""}.get(step_units) if isinstance(step_units, int) else None
    step = f"{end_step}{unit}" if isinstance(end_step, int) and unit is not None else None
    return time, step


def _is_number(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False


def _level_sort(v: str) -> tuple[int, float, str]:
    return (0, float(v), "") if _is_number(v) else (1, 0.0, v)


def _show(request: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={'/'.join(map(str, v)) if isinstance(v, (list, tuple)) else v}"
                    for k, v in request.items())
