"""fieldstore's exceptions: one class per kind of error.

Every exception fieldstore raises for a failed store operation is a
:class:`FieldStoreError`, which is a :class:`RuntimeError` (pyfdb raises
``RuntimeError`` for everything, so ``except RuntimeError`` keeps working).
Each kind also derives from the builtin exception a Python programmer would
expect where one fits: bad input is a :class:`ValueError`, a missing file a
:class:`FileNotFoundError`, a refused permission a :class:`PermissionError`,
an operation this backend lacks a :class:`NotImplementedError`.

The ``kind`` class attribute is fieldstore's name for the kind (the same
words the ``fieldstore`` command prints; its exit code follows the kind).
"""

from __future__ import annotations

__all__ = [
    "FieldStoreError",
    "InvalidInputError",
    "InvalidConfigError",
    "NotFoundError",
    "PermissionDeniedError",
    "StorageFullError",
    "UnavailableError",
    "CorruptDataError",
    "LockedError",
    "TimedOutError",
    "UnsupportedError",
    "FieldStoreIOError",
    "InternalError",
    "DuplicateKeyWarning",
    "SkippedBytesWarning",
    "MissingFieldsWarning",
    "EmptyStoreWarning",
]


class FieldStoreError(RuntimeError):
    """Base class of fieldstore's errors. ``kind`` says what to do about it."""

    kind: str = "error"


class InvalidInputError(FieldStoreError, ValueError):
    """A key, request, selection or message is malformed or does not fit the
    schema. Fix the input; retrying is pointless."""

    kind = "invalid input"


class InvalidConfigError(FieldStoreError, ValueError):
    """A configuration or schema is malformed."""

    kind = "invalid configuration"


class NotFoundError(FieldStoreError, FileNotFoundError):
    """A named thing (a config file, a root, a data file) does not exist.
    Retrieving a field that does not exist is *not* an error."""

    kind = "not found"


class PermissionDeniedError(FieldStoreError, PermissionError):
    """The operation is not permitted (file permissions, read-only root)."""

    kind = "permission denied"


class StorageFullError(FieldStoreError, OSError):
    """No space left on the device, or quota exceeded."""

    kind = "storage full"


class UnavailableError(FieldStoreError, ConnectionError):
    """A transient failure (a server down, a timeout): retrying may succeed."""

    kind = "unavailable"


class CorruptDataError(FieldStoreError):
    """Stored data failed an integrity check; its bytes are never returned."""

    kind = "corrupt data"


class LockedError(FieldStoreError):
    """The dataset is locked against the operation."""

    kind = "locked"


class TimedOutError(FieldStoreError, TimeoutError):
    """What was waited for (a field ``retrieve(..., wait=S)`` needs) was not
    flushed in time."""

    kind = "timed out"


class UnsupportedError(FieldStoreError, NotImplementedError):
    """The operation is not available in this build or backend."""

    kind = "unsupported"


class FieldStoreIOError(FieldStoreError, OSError):
    """An I/O failure of no more specific kind."""

    kind = "I/O error"


class InternalError(FieldStoreError):
    """A bug in fieldstore; please report it."""

    kind = "internal error"


class DuplicateKeyWarning(UserWarning):
    """Two GRIB messages of one :meth:`FDB.archive` call have one key: both
    are archived and the last wins (FDB5's rule); the warning names both
    messages (index in the input and byte offset) and the key."""


class SkippedBytesWarning(UserWarning):
    """Bytes of the GRIB data given to :meth:`FDB.archive` that are not GRIB
    (a record header before the first message, padding after the last, junk
    between messages) were skipped, as ecCodes skips them: one warning per
    call. Its text names the byte ranges; ``ranges`` holds them as
    ``(start, end)`` pairs (end exclusive), in input order."""

    def __init__(self, message: str, ranges: list[tuple[int, int]]) -> None:
        super().__init__(message)
        self.ranges = [tuple(r) for r in ranges]


class MissingFieldsWarning(UserWarning):
    """A retrieve or extract found only part of what its request names:
    the warning says how many fields are missing and names the first; or
    the request names no complete key (it leaves out a keyword every rule
    that could hold it requires), and the warning names the keywords and
    the nearest rule."""


class EmptyStoreWarning(UserWarning):
    """An answer found nothing in a store that holds no dataset at all: the
    warning names the store looked in (a config file, FDB5's variable that
    chose it, or the default ``./fieldstore-data``), so that a store other
    than the one meant is not taken for one without the data."""
