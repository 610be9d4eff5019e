"""fieldstore: a metadata-indexed, transactional store for weather fields,
with the Python API of ECMWF's pyfdb.

>>> import fieldstore
>>> fdb = fieldstore.FDB({"type": "local", "engine": "toc",
...                       "spaces": [{"roots": [{"path": "/data/fs"}]}]})
>>> fdb.archive(open("t2m.grib", "rb").read())      # GRIB: keys from the messages
>>> fdb.flush()
>>> for el in fdb.list({"class": "od", "param": 167}):
...     print(el.keys(), el.uri, el.offset(), el.length())
>>> with fdb.retrieve({...}) as dh:
...     data = dh.read()

Code written for pyfdb runs with ``import fieldstore as pyfdb``; see the
package's README for where the two differ.
"""

from . import _fdb, errors
from ._fdb import (
    FDB,
    URI,
    ControlAction,
    ControlElement,
    ControlIdentifier,
    DataHandle,
    FieldStore,
    IndexAxis,
    ListElement,
    MarsIdentifier,
    MarsSelection,
    PurgeElement,
    StatsElement,
    StatusElement,
    WipeElement,
    WipeElementType,
)
from ._fieldstore import GRIB as _GRIB
from ._fieldstore import __version__
from .errors import (
    CorruptDataError,
    DuplicateKeyWarning,
    EmptyStoreWarning,
    FieldStoreError,
    FieldStoreIOError,
    InternalError,
    InvalidConfigError,
    InvalidInputError,
    LockedError,
    MissingFieldsWarning,
    NotFoundError,
    PermissionDeniedError,
    SkippedBytesWarning,
    StorageFullError,
    TimedOutError,
    UnavailableError,
    UnsupportedError,
)

HAS_GRIB: bool = bool(_GRIB)
"""Whether this build can archive GRIB without an identifier."""


def open_dataset(request, **kwargs):  # type: ignore[no-untyped-def]
    """A lazy :class:`xarray.Dataset` over the fields ``request`` names (see
    ``fieldstore.xarray_backend.open_dataset``; needs xarray)."""
    from .xarray_backend import open_dataset as _open

    return _open(request, **kwargs)


def open_datasets(request, **kwargs):  # type: ignore[no-untyped-def]
    """Lazy :class:`xarray.Dataset` s over the fields ``request`` names, split
    as cfgrib's ``open_datasets`` splits a file (see
    ``fieldstore.xarray_backend.open_datasets``; needs xarray)."""
    from .xarray_backend import open_datasets as _open

    return _open(request, **kwargs)


# The pyfdb names, then this package's own, then its error classes.
__all__ = [*_fdb.__all__, "HAS_GRIB", "open_dataset", "open_datasets", "errors", *errors.__all__, "__version__"]
