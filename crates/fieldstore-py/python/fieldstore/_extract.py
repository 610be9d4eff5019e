"""Values at points of GRIB fields without reading whole fields
(``FDB.extract``; docs/extract.md): the selection forms, the results as
NumPy arrays with their field keys, and a call shaped like pygribjump's
``extract([(request, ranges)])``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

__all__ = ["ExtractedField", "GribJumpResult"]


def _numpy() -> Any:
    try:
        import numpy
    except ImportError as e:  # pragma: no cover (numpy is in every test venv)
        raise ImportError("FDB.extract returns NumPy arrays: pip install numpy") from e
    return numpy


@dataclass(frozen=True)
class ExtractedField:
    """One field's extracted values.

    ``key``: the field's key (keyword → value); ``indices``: the grid
    indices the values are at (for points, the nearest grid points);
    ``values``: float64, NaN where the field has no value (bitmap);
    ``method``: ``"jump info"``, ``"jump info computed"`` (a field's
    first extraction: its jump info is then kept with its entry) or
    ``"decoded whole: <why>"`` (a packing without jump info).
    For ``points=``: ``grid_latitudes``, ``grid_longitudes`` (degrees) and
    ``distances_km`` say, per point asked, where the grid point answering
    it is and how far (great circle, as ecCodes' nearest-point lookup);
    ``None`` for the other selections.
    """

    key: dict
    indices: Any
    values: Any
    method: str
    grid_latitudes: Any = None
    grid_longitudes: Any = None
    distances_km: Any = None


@dataclass(frozen=True)
class GribJumpResult:
    """One field's answer to the pygribjump-shaped call: ``values`` and
    ``masks`` hold one array per range, as pygribjump's
    ``ExtractionResult`` (a mask is True where the field has a value)."""

    key: dict
    values: List[Any]
    masks: List[Any]


def selection_args(
    ranges: Optional[Sequence[Tuple[int, int]]],
    indices: Optional[Sequence[int]],
    mask: Optional[Sequence[bool]],
    points: Optional[Sequence[Tuple[float, float]]],
) -> Tuple[str, list, list]:
    """The native call's ``(kind, data, points)`` for exactly one of the
    selection forms."""
    given = [n for n, v in (("ranges", ranges), ("indices", indices), ("mask", mask),
                            ("points", points)) if v is not None]
    if len(given) != 1:
        raise ValueError(
            "give exactly one of ranges=[(start, end), ...], indices=[...], mask=[...] "
            f"or points=[(lat, lon), ...] (got {', '.join(given) or 'none'})"
        )
    if ranges is not None:
        flat = []
        for r in ranges:
            start, end = r
            flat += [int(start), int(end)]
        return "ranges", flat, []
    if indices is not None:
        return "indices", [int(i) for i in _numpy().asarray(indices).ravel()], []
    if mask is not None:
        return "mask", [int(bool(b)) for b in _numpy().asarray(mask).ravel()], []
    return "points", [], [(float(lat), float(lon)) for lat, lon in points]


def fields(raw: list) -> List[ExtractedField]:
    """The native answer as ``ExtractedField``s."""
    np = _numpy()

    def column(nearest: list, i: int) -> Any:
        return np.asarray([p[i] for p in nearest], dtype=np.float64) if nearest else None

    return [
        ExtractedField(
            key=dict(key),
            indices=np.asarray(indices, dtype=np.uint64),
            values=np.frombuffer(values, dtype=np.float64).copy(),
            method=method,
            grid_latitudes=column(nearest, 0),
            grid_longitudes=column(nearest, 1),
            distances_km=column(nearest, 2),
        )
        for key, indices, values, method, nearest in raw
    ]


def gribjump_results(got: List[ExtractedField], ranges: Sequence[Tuple[int, int]]) -> List[GribJumpResult]:
    """Split each field's values into one array per range."""
    np = _numpy()
    out = []
    for f in got:
        values, masks, at = [], [], 0
        for start, end in ranges:
            v = f.values[at:at + int(end) - int(start)]
            at += int(end) - int(start)
            values.append(v)
            masks.append(~np.isnan(v))
        out.append(GribJumpResult(key=f.key, values=values, masks=masks))
    return out
