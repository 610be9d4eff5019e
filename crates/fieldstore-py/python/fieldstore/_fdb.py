"""The pyfdb-compatible API of fieldstore (pyfdb 5.25's names and shapes)."""

from __future__ import annotations

import ctypes
import json
import os
import warnings
from collections.abc import Collection, Iterator, Mapping
from enum import IntEnum, IntFlag, auto
from pathlib import Path
from typing import Any, Dict, Generator, List, Optional, Tuple, Union
from urllib import parse

from . import _fieldstore
from .errors import (
    DuplicateKeyWarning,
    EmptyStoreWarning,
    InvalidInputError,
    MissingFieldsWarning,
    SkippedBytesWarning,
    UnsupportedError,
)

__all__ = [
    "FDB",
    "FieldStore",
    "DataHandle",
    "ListElement",
    "WatchElement",
    "IndexAxis",
    "URI",
    "ControlAction",
    "ControlIdentifier",
    "MarsSelection",
    "MarsIdentifier",
    "StatusElement",
    "WipeElement",
    "WipeElementType",
    "PurgeElement",
    "StatsElement",
    "ControlElement",
]

Value = Union[str, int, float]

MarsSelection = Mapping[str, Union[Value, Collection[Value]]]
"""A MARS selection: keyword → a value, a ``/``-separated string
(``"0/to/12/by/6"``, ``"130/167"``), or a collection of values."""

MarsIdentifier = Union[List[Tuple[str, str]], Dict[str, str]]
"""The key of one field: keyword → one value."""

ConfigLike = Union[str, Dict[str, Any], "os.PathLike[str]", None]


def _selection(selection: MarsSelection | None) -> list[tuple[str, list[str]]]:
    """A selection as ``(keyword, [value, ...])`` pairs (pyfdb's mapping)."""
    if selection is None:
        return []
    if not isinstance(selection, Mapping):
        raise ValueError(
            f"a MARS selection must be a mapping of keyword to values, not {type(selection).__name__}"
        )
    out = []
    for key, values in selection.items():
        if isinstance(values, str):
            out.append((str(key), [values]))
        elif isinstance(values, (int, float)) and not isinstance(values, bool):
            out.append((str(key), [str(values)]))
        elif isinstance(values, Collection) and not isinstance(values, (Mapping, bytes)):
            items = []
            for v in values:
                if isinstance(v, str):
                    items.append(v)
                elif isinstance(v, (int, float)) and not isinstance(v, bool):
                    items.append(str(v))
                else:
                    raise ValueError(
                        f"the value {v!r} of keyword '{key}' is not valid: a MARS selection's "
                        "values are strings, numbers or collections of those"
                    )
            out.append((str(key), items))
        else:
            raise ValueError(
                f"the value {values!r} of keyword '{key}' is not valid: a MARS selection's "
                "values are strings, numbers or collections of those"
            )
    return out


def _identifier(identifier: MarsIdentifier) -> list[tuple[str, str]]:
    """An identifier as ``(keyword, value)`` pairs (pyfdb's checks)."""
    if isinstance(identifier, Mapping):
        pairs = list(identifier.items())
    elif isinstance(identifier, (list, tuple)):
        pairs = list(identifier)
    else:
        raise ValueError(
            "an identifier is a dict of keyword to value or a list of (keyword, value) pairs, "
            f"not {type(identifier).__name__}"
        )
    seen: dict[str, str] = {}
    for pair in pairs:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise ValueError(f"an identifier's items are (keyword, value) pairs, not {pair!r}")
        k, v = pair
        if k in seen:
            raise KeyError(f"Identifier: Key {k} already exists in Identifier: {seen}")
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            v = str(v)
        if not isinstance(v, str) or "/" in v:
            raise ValueError(
                "No list of values allowed. An Identifier has to be a mapping from a single key "
                f"to a single value (keyword '{k}': {v!r})."
            )
        seen[str(k)] = v
    return list(seen.items())


def _warn(notice: tuple[str, str] | None) -> None:
    """Warn of what a retrieve or extract did not find: a
    :class:`EmptyStoreWarning` (the store holds no dataset: which store) or
    a :class:`MissingFieldsWarning`, at the caller of the FDB method."""
    if notice:
        kind, text = notice
        category = EmptyStoreWarning if kind == "empty store" else MissingFieldsWarning
        warnings.warn(text, category, stacklevel=3)


def _open_store(config: ConfigLike) -> Any:
    if config is None:
        return _fieldstore.Store()
    if isinstance(config, os.PathLike):
        return _fieldstore.Store(path=os.fspath(config))
    if isinstance(config, Mapping):
        return _fieldstore.Store(yaml=json.dumps(dict(config)), base=os.getcwd())
    if isinstance(config, str):
        # pyfdb reads a str as YAML text; a one-line str naming a file is
        # taken as that file's path, which YAML text cannot be.
        if "\n" not in config and config.strip() and os.path.isfile(config):
            return _fieldstore.Store(path=config)
        return _fieldstore.Store(yaml=config, base=os.getcwd())
    raise ValueError("Config: Unknown config type, must be str, dict or Path.")


class FDB:
    """A handle on a field store, with the API of pyfdb's ``FDB``.

    ``config`` is a dict in FDB5's shape, YAML text, a path (``pathlib.Path``,
    or a one-line ``str`` naming a file) or ``None``: the environment's
    default, as the ``fieldstore`` command (``$FIELDSTORE_CONFIG``, else an
    embedded store under ``$FIELDSTORE_ROOT`` or ``./fieldstore-data``).
    ``user_config`` is accepted for pyfdb's sake; fieldstore has no user
    options yet, so it is only returned by :meth:`config`.

    Leaving a ``with`` block flushes, as pyfdb does (even on an exception:
    call :meth:`discard` first to drop what was archived). The handle may be
    shared between threads; :meth:`flush` then flushes what every thread
    archived through it. It belongs to the process that made it: in a child
    forked from that process (``os.fork``, ``multiprocessing``),
    :meth:`archive`, :meth:`flush` and :meth:`discard` raise
    ``InvalidInputError``; open a new ``FDB`` in the child.
    """

    def __init__(self, config: ConfigLike = None, user_config: ConfigLike = None) -> None:
        if user_config is not None and not isinstance(user_config, (str, Mapping, os.PathLike)):
            raise ValueError("Config: Unknown config type, must be str, dict or Path.")
        self._user_config = user_config
        self._store = _open_store(config)

    def __enter__(self) -> FDB:
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, exc_traceback: Any) -> None:
        self.flush()

    def archive(self, data: bytes, identifier: MarsIdentifier | None = None,
                defaults: MarsIdentifier | None = None) -> None:
        """Archive ``data``.

        With an ``identifier`` (the field's key: a dict, or a list of
        ``(keyword, value)`` pairs), ``data`` is stored as one field under it,
        whatever its bytes. Without, ``data`` is GRIB: every message (any
        number, editions 1 and 2) is archived under the MARS key ecCodes reads
        from it; if any message is bad, nothing is archived.

        ``defaults`` (fieldstore only; an identifier's shape): keywords and
        values a GRIB message's key gets where ecCodes gives the keyword
        none, as GRIB from other centres has no MARS ``class``
        (``defaults={"class": "od", "expver": "0001", "stream": "oper",
        "type": "fc"}``); before the config's ``archive-defaults``. Two
        messages of ``data`` with one key are both archived and the last
        wins, as in FDB5, with a :class:`DuplicateKeyWarning` naming both.
        Bytes of ``data`` that are not GRIB (a record header before the first
        message, padding after the last, junk between messages) are skipped
        as ecCodes skips them, with one :class:`SkippedBytesWarning` naming
        their byte ranges (its ``ranges``); a message that starts with
        ``GRIB`` but is damaged is an error.

        The fields become visible to readers at :meth:`flush`.
        """
        if not isinstance(data, bytes):
            data = bytes(memoryview(data))
        if identifier is None:
            pairs = _identifier(defaults) if defaults is not None else []
            try:
                _, duplicates, skipped = self._store.archive_grib(data, pairs)
            except InvalidInputError as e:
                if "missing keyword 'class'" not in str(e):
                    raise
                raise InvalidInputError(
                    f"{e}; ecCodes gives this message no MARS class (GRIB from another centre?): give "
                    "the keys it lacks with defaults={'class': 'od', 'expver': '0001', 'stream': 'oper', "
                    "'type': 'fc'} or archive-defaults in the config") from e
            if skipped is not None:
                text, ranges = skipped
                warnings.warn(SkippedBytesWarning(text, ranges), stacklevel=2)
            for text in duplicates:
                warnings.warn(text, DuplicateKeyWarning, stacklevel=2)
        elif defaults is not None:
            raise InvalidInputError(
                "archive(data, identifier, defaults): defaults fill GRIB messages' keys; "
                "with an identifier, give the whole key there")
        else:
            self._store.archive(data, _identifier(identifier))

    def extract(
        self,
        mars_selection: Any,
        *,
        ranges: Optional[List[Tuple[int, int]]] = None,
        indices: Optional[List[int]] = None,
        mask: Any = None,
        points: Optional[List[Tuple[float, float]]] = None,
    ) -> Any:
        """Values at points of the GRIB fields ``mars_selection`` names,
        reading only the bytes that hold them (docs/extract.md).

        Give exactly one of ``ranges=[(start, end), ...]`` (end excluded),
        ``indices=[...]``, ``mask=[bool per grid point]`` or
        ``points=[(lat, lon), ...]`` (the nearest grid point of each).
        Returns one ``ExtractedField(key, indices, values, method)`` per
        field, in the request's order; ``values`` are float64 NumPy arrays,
        NaN where a field has no value.

        For familiarity, the call pygribjump takes also works:
        ``extract([(request, [(start, end), ...]), ...])`` returns, per
        field, a ``GribJumpResult`` whose ``values`` and ``masks`` hold one
        array per range.
        """
        from . import _extract

        if isinstance(mars_selection, list):
            if any(v is not None for v in (ranges, indices, mask, points)):
                raise ValueError("the pygribjump-shaped call takes [(request, ranges), ...] alone")
            out = []
            for item in mars_selection:
                if not (isinstance(item, tuple) and len(item) >= 2):
                    raise ValueError(
                        "extract([(request, [(start, end), ...]), ...]): each item is a "
                        f"(request, ranges) tuple, not {item!r}"
                    )
                request, item_ranges = item[0], item[1]
                got = self.extract(request, ranges=item_ranges)
                out.extend(_extract.gribjump_results(got, item_ranges))
            return out
        kind, data, pts = _extract.selection_args(ranges, indices, mask, points)
        raw, _cost, notice = self._store.extract(_selection(mars_selection), kind, data, pts)
        _warn(notice)
        return _extract.fields(raw)

    def flush(self) -> None:
        """Make everything archived through this handle durable and visible
        to every reader, atomically per dataset."""
        self._store.flush()

    def discard(self) -> None:
        """Drop everything archived and not yet flushed (fieldstore only)."""
        self._store.discard()

    def dirty(self) -> bool:
        """Whether something archived is not flushed yet."""
        return bool(self._store.dirty())

    def retrieve(self, mars_selection: MarsSelection, wait: float | None = None) -> DataHandle:
        """The fields ``mars_selection`` names, as one stream of bytes in
        request order (``step=[12, 0]`` gives step 12 first). Fields that do
        not exist are absent, which is not an error: a
        :class:`MissingFieldsWarning` says how many and names the first. Every
        keyword a rule needs must have values (``list`` takes partial
        selections); a selection that leaves one out finds nothing, and the
        warning names the keywords the nearest rule requires.

        With ``wait`` (seconds, fieldstore only): first wait until every
        field the selection names has been flushed; :class:`TimedOutError`
        (a :class:`TimeoutError`) names the missing ones if ``wait``
        passes."""
        if len(mars_selection) == 0:
            raise TypeError("FDB.retrieve: Wildcard selection aren't support for retrieving.")
        reader, notice = self._store.retrieve(
            _selection(mars_selection), None if wait is None else float(wait)
        )
        _warn(notice)
        return DataHandle(reader, _internal=True)

    def watch(
        self,
        mars_selection: MarsSelection | None = None,
        since: str = "start",
        count: int | None = None,
        timeout: float | None = None,
        polling: bool = False,
    ) -> Generator[WatchElement, None, None]:
        """Each field ``mars_selection`` (partial; ``None`` for everything)
        names, as soon as a flush makes it visible: the fields already there
        first (``since="now"``: only what is flushed from now on), then new
        ones as they come; a key archived again comes again, with
        ``replaced`` true (fieldstore only; FDB5 has no way to wait).

        Ends after ``count`` fields, after ``timeout`` seconds, or when the
        generator is closed; a watched dataset that is wiped raises
        :class:`NotFoundError`. ``polling`` polls instead of using
        notifications (NFS, Lustre). Waiting releases the GIL."""
        if since not in ("start", "now"):
            raise ValueError(f"since must be 'start' or 'now', not {since!r}")
        # Started now, not at the first ``next``: ``since="now"`` means now.
        watcher = self._store.watch(
            _selection(mars_selection),
            since == "now",
            None if count is None else int(count),
            None if timeout is None else float(timeout),
            bool(polling),
        )
        return _watch_elements(watcher)

    def list(
        self,
        mars_selection: MarsSelection | None,
        include_masked: bool = False,
        level: int = 3,
    ) -> Generator[ListElement, None, None]:
        """What ``mars_selection`` (partial; empty or ``None`` for everything)
        names: datasets (``level=1``), collocations (``2``) or fields (``3``).
        ``include_masked`` also yields fields archived again under the same
        key (newest first)."""
        entries = self._store.list(_selection(mars_selection), bool(include_masked), int(level))
        if len(entries) == 0:
            self._warn_if_empty_store()
        for entry in entries:
            yield ListElement(entry, _internal=True)

    def _warn_if_empty_store(self) -> None:
        """After an answer that found nothing: an :class:`EmptyStoreWarning`
        naming the store looked in, if it holds no dataset at all (a default
        store chosen because no configuration was found is not taken for one
        without the data)."""
        notice = self._store.empty_store_notice()
        if notice:
            warnings.warn(notice, EmptyStoreWarning, stacklevel=3)

    def inspect(self, mars_selection: MarsSelection) -> Generator[ListElement, None, None]:
        """The stored fields a fully specified ``mars_selection`` names,
        found by point lookups, in request order."""
        for entry in self._store.inspect(_selection(mars_selection)):
            yield ListElement(entry, _internal=True)

    def axes(self, mars_selection: MarsSelection | None, level: int = 3) -> IndexAxis:
        """The values present per keyword (levels 1 to ``level``) among what
        ``mars_selection`` names; keywords and values sorted as strings, an
        absent optional keyword as ``""``."""
        axes = dict(self._store.axes(_selection(mars_selection), int(level)))
        if not any(v for values in axes.values() for v in values):
            self._warn_if_empty_store()
        return IndexAxis(axes)

    def config(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The system configuration in force (FDB5's shape, plus ``source``:
        where it came from) and the user configuration given."""
        user = self._user_config
        if user is None:
            user_dict: dict[str, Any] = {}
        elif isinstance(user, Mapping):
            user_dict = dict(user)
        else:
            user_dict = {"source": os.fspath(user)}
        return dict(self._store.config()), user_dict

    def enabled(self, control_identifier: ControlIdentifier) -> bool:
        """Whether the configuration enables an action: always (fieldstore's
        configurations cannot disable actions; datasets can be locked with
        :meth:`control`)."""
        return True

    def status(self, mars_selection: MarsSelection) -> Iterator[StatusElement]:
        """Where each dataset the selection names lives, and the actions it
        is locked against (``controlIdentifiers()``)."""
        report = json.loads(self._store.status(_selection(mars_selection)))
        return iter([StatusElement(d, _internal=True) for d in report])

    def wipe(
        self,
        mars_selection: MarsSelection,
        doit: bool = False,
        porcelain: bool = False,
        unsafe_wipe_all: bool = False,
    ) -> Iterator[WipeElement]:
        """Delete the datasets (or, with collocation keywords, the
        collocations) the selection names, with their files; a dry run
        reporting what would go unless ``doit``. The wipe happens when this
        is called, not when the result is iterated. ``porcelain``: only the
        files or objects deleted. Files fieldstore did not create stop a
        whole-dataset wipe unless ``unsafe_wipe_all``."""
        report = json.loads(
            self._store.wipe(_selection(mars_selection), bool(doit), bool(unsafe_wipe_all))
        )
        return iter(_wipe_elements(report, bool(porcelain)))

    def purge(
        self, mars_selection: MarsSelection, doit: bool = False, porcelain: bool = False
    ) -> Iterator[PurgeElement]:
        """Delete the bytes of fields replaced by a later archive of the same
        key, where no newest field shares their file; a dry run unless
        ``doit``. Happens when called. One report per dataset."""
        report = json.loads(self._store.purge(_selection(mars_selection), bool(doit)))
        return iter([_purge_element(d, report["done"], bool(porcelain)) for d in report["datasets"]])

    def stats(self, mars_selection: MarsSelection) -> Iterator[StatsElement]:
        """Counts per dataset: fields, bytes, replaced fields, what a purge
        would free."""
        report = json.loads(self._store.stats(_selection(mars_selection)))
        return iter([StatsElement(d, _internal=True) for d in report])

    def control(
        self,
        mars_selection: MarsSelection,
        control_action: ControlAction,
        control_identifiers: Collection[ControlIdentifier],
    ) -> Iterator[ControlElement]:
        """Disable (lock) or enable (unlock) actions on the datasets the
        selection names, for every process, at once (not when the result is
        iterated). Returns each dataset's state afterwards."""
        operations = []
        for ident in control_identifiers:
            ident = ControlIdentifier(ident)
            if ident & ControlIdentifier.UNIQUEROOT:
                raise UnsupportedError("FDB.control: UNIQUEROOT is not a control of fieldstore")
            for flag in (ControlIdentifier.ARCHIVE, ControlIdentifier.RETRIEVE,
                         ControlIdentifier.LIST, ControlIdentifier.WIPE):
                if ident & flag and flag.name is not None:
                    operations.append(flag.name.lower())
        action = ControlAction(control_action)
        sel = _selection(mars_selection)
        if action == ControlAction.NONE or not operations:
            report = json.loads(self._store.status(sel))
        else:
            report = json.loads(
                self._store.control(sel, action == ControlAction.DISABLE, operations)
            )
        return iter([ControlElement(d, _internal=True) for d in report])

    def __repr__(self) -> str:
        return f"FieldStore({self._store.source()})"


FieldStore = FDB


class DataHandle:
    """The bytes of retrieved fields: a read-only, seekable binary stream.

    As pyfdb's: ``open``/``read``/``readinto``/``readall``/``size``/``close``
    and ``with`` (opens, then closes). Unlike pyfdb's, ``read`` opens the
    handle if needed (so ``shutil.copyfileobj(fdb.retrieve(...), out)``
    works as with the old pyfdb), returns exactly the bytes left at the end
    (no zero padding), and ``seek``/``tell`` work. Each field is verified
    against its checksum before any of its bytes is returned.
    """

    def __init__(self, reader: Any, *, _internal: bool = False) -> None:
        if not _internal:
            raise TypeError("Creating a DataHandle from user code is not supported.")
        self._reader = reader
        self.opened = False

    def __enter__(self) -> DataHandle:
        self.open()
        return self

    def __exit__(self, exc_type: Any, exc_value: Any, exc_traceback: Any) -> None:
        self.close()

    def __call__(self) -> DataHandle:
        # pyfdb's ListElement.data_handle is a property; calling it
        # (`element.data_handle()`) gives the same handle.
        return self

    def open(self) -> None:
        """Open for reading, from the start (no-op if open)."""
        if not self.opened:
            self._reader.seek(0)
            self.opened = True

    def close(self) -> None:
        """Close, releasing the buffered field; :meth:`open` starts again."""
        if self.opened:
            self._reader.close()
            self.opened = False

    def size(self) -> int:
        """Total bytes of the retrieved fields."""
        return int(self._reader.size())

    def count(self) -> int:
        """Number of fields retrieved (fieldstore only)."""
        return int(self._reader.count())

    def read(self, len: int = -1) -> bytes:  # noqa: A002 (pyfdb's name)
        """Up to ``len`` bytes (all that is left if ``len`` is -1); ``b""``
        at the end."""
        self.open()
        if len is None:
            len = -1
        return self._reader.read(int(len))

    def readinto(self, buffer: Any) -> int:
        """Read into a writable buffer (``bytearray``, ``memoryview``, NumPy
        array, …) without an intermediate copy; the number of bytes read, 0
        at the end."""
        self.open()
        view = memoryview(buffer)
        if view.readonly:
            raise TypeError("readinto() needs a writable buffer")
        if not view.c_contiguous:
            raise ValueError("readinto() needs a contiguous buffer")
        view = view.cast("B")
        n = view.nbytes
        if n == 0:
            return 0
        # Export the buffer for the length of the call: it can be neither
        # freed nor resized while the native reader writes into it.
        target = (ctypes.c_char * n).from_buffer(view)
        try:
            return int(self._reader._readinto_address(ctypes.addressof(target), n))
        finally:
            del target
            view.release()

    def readall(self, buffer_size: int = 1024) -> bytes:
        """Everything left, in one ``bytes`` (opens and closes the handle, as
        pyfdb's; ``buffer_size`` is accepted and unused: the bytes are read
        straight into the result)."""
        self.open()
        try:
            return self._reader.read(-1)
        finally:
            self.close()

    def readable(self) -> bool:
        return True

    @property
    def closed(self) -> bool:
        """Always false: a handle can always be read (reading reopens it),
        so ``io.BufferedReader(handle)`` works."""
        return False

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def tell(self) -> int:
        return int(self._reader.tell())

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        """Move within the stream (``whence`` as for files); the new position."""
        self.open()
        if whence == os.SEEK_SET:
            pos = offset
        elif whence == os.SEEK_CUR:
            pos = self.tell() + offset
        elif whence == os.SEEK_END:
            pos = self.size() + offset
        else:
            raise ValueError(f"invalid whence ({whence}, should be 0, 1 or 2)")
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._reader.seek(pos)
        return pos

    def __repr__(self) -> str:
        state = "Opened" if self.opened else "Closed"
        return f"[{state}] DataHandle: {self._reader!r}"


class URI:
    """Where a field's bytes are (pyfdb's ``URI``). ``str()`` of a ``file``
    URI is the file's path, as FDB5 prints it."""

    def __init__(self, uri: str | Path, scheme: str = "", allow_fragments: bool = True) -> None:
        text = uri.as_posix() if isinstance(uri, Path) else str(uri)
        if text.startswith("file://"):
            # Paths of the POSIX backend may hold ':' and must not be parsed
            # for a query or a fragment.
            self._uri = parse.SplitResult("file", "", text[len("file://") :], "", "")
        else:
            self._uri = parse.urlsplit(text, scheme=scheme, allow_fragments=allow_fragments)

    def __eq__(self, value: object, /) -> bool:
        return isinstance(value, URI) and self._uri == value._uri

    def __ne__(self, value: object, /) -> bool:
        return not self.__eq__(value)

    def __hash__(self) -> int:
        return hash(self._uri)

    def netloc(self) -> str:
        return self._uri.netloc

    def scheme(self) -> str:
        return self._uri.scheme

    def username(self) -> str | None:
        return self._uri.username

    def password(self) -> str | None:
        return self._uri.password

    def hostname(self) -> str | None:
        return self._uri.hostname

    def port(self) -> int | None:
        return self._uri.port

    def path(self) -> str:
        return self._uri.path

    def query(self) -> str:
        return self._uri.query

    def fragment(self) -> str:
        return self._uri.fragment

    def geturl(self) -> str:
        """The whole URI, scheme included (``file:///…``)."""
        if self._uri.scheme == "file":
            return "file://" + self._uri.path
        return parse.urlunsplit(self._uri)

    def __str__(self) -> str:
        if self._uri.scheme == "file":
            return self._uri.path
        return parse.urlunsplit(self._uri)

    def __repr__(self) -> str:
        return self.__str__()


class ListElement:
    """One result of :meth:`FDB.list` (pyfdb's ``ListElement``)."""

    def __init__(self, entry: Any, *, _internal: bool = False) -> None:
        if not _internal:
            raise TypeError("Creating a ListElement from user code is not supported.")
        self._element = entry

    def has_location(self) -> bool:
        """Whether this is a field (``level=3``), with a location."""
        return bool(self._element.has_location())

    def offset(self) -> int | None:
        """The field's first byte in :attr:`uri` (fields only)."""
        return self._element.offset()

    def length(self) -> int | None:
        """The field's size in bytes (fields only)."""
        return self._element.length()

    def combined_key(self) -> dict[str, str]:
        """The keys of the listed levels in one dict, keywords sorted; an
        absent optional keyword has the value ``""``."""
        return self._element.combined_key()

    def keys(self) -> list[dict[str, str]]:
        """The key per level: ``[dataset, collocation, element]``, keywords
        sorted; levels below the listed one are ``{}``."""
        return self._element.keys()

    def request(self) -> dict[str, str]:
        """The key as a selection for :meth:`FDB.retrieve` (no empty values,
        schema order; fieldstore only)."""
        return dict(self._element.request())

    @property
    def data_handle(self) -> DataHandle | None:
        """A handle on the field's bytes (fields only)."""
        reader = self._element.reader()
        return None if reader is None else DataHandle(reader, _internal=True)

    @property
    def uri(self) -> URI | None:
        """Where the field's bytes are (fields only)."""
        uri = self._element.uri()
        return None if uri is None else URI(uri)

    def __repr__(self) -> str:
        return str(self._element.__repr__())

    def __str__(self) -> str:
        return self.__repr__()


class IndexAxis(Mapping):  # type: ignore[type-arg]
    """What :meth:`FDB.axes` returns: a read-only mapping of keyword to the
    sorted list of its values (pyfdb's ``IndexAxis``)."""

    def __init__(self, axes: Mapping[str, Collection[str]]) -> None:
        self._axes: dict[str, list[str]] = {k: list(v) for k, v in sorted(axes.items())}

    def __getitem__(self, key: str) -> list[str]:
        return self._axes[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._axes)

    def __len__(self) -> int:
        return len(self._axes)

    def __contains__(self, key: object) -> bool:
        return key in self._axes

    def has_key(self, k: str) -> bool:
        return k in self._axes

    def __setitem__(self, key: str, value: Any) -> None:
        raise TypeError("This mapping is read-only")

    def __delitem__(self, key: str) -> None:
        raise TypeError("This mapping is read-only")

    def clear(self) -> None:
        raise TypeError("This mapping is read-only")

    def __eq__(self, value: object) -> bool:
        if not isinstance(value, Mapping):
            return False
        other: dict[str, Any] = {}
        for k, v in value.items():
            if isinstance(v, str):
                other[k] = [v]
            elif not isinstance(v, Collection):
                other[k] = [str(v)]
            else:
                other[k] = list(v)
        return self._axes == other

    def __ne__(self, value: object) -> bool:
        return not self.__eq__(value)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ",".join(f"{k}=({','.join(v)})" for k, v in self._axes.items())
        return f"IndexAxis[axis={{{inner}}}]"


class ControlIdentifier(IntFlag):
    """Actions that can be controlled (pyfdb's; fieldstore has no controls
    yet)."""

    NONE = 0
    LIST = auto()
    RETRIEVE = auto()
    ARCHIVE = auto()
    WIPE = auto()
    UNIQUEROOT = auto()

    def __repr__(self) -> str:
        names = "|".join(
            f.name for f in ControlIdentifier if f.value and self.value & f.value and f.name
        )
        return names or "NONE"

    def __str__(self) -> str:
        return self.__repr__()


class ControlAction(IntEnum):
    """Enable or disable an action (pyfdb's)."""

    NONE = 0
    DISABLE = auto()
    ENABLE = auto()

    def __repr__(self) -> str:
        return self.name or ""

    def __str__(self) -> str:
        return self.__repr__()


def _braced(key: Mapping[str, str]) -> str:
    return "{" + ",".join(f"{k}={v}" for k, v in key.items() if v != "") + "}"


def _bytes(n: int) -> str:
    """A size as FDB5's tools print it: ``5,904 (5.76562 Kbytes)``."""
    value = float(n)
    for unit in ("bytes", "Kbytes", "Mbytes", "Gbytes", "Tbytes"):
        if value < 1024 or unit == "Tbytes":
            return f"{n:,} ({value:g} {unit})"
        value /= 1024
    return f"{n:,}"


def _line(name: str, value: object) -> str:
    return f"{name:<32}: {value}\n"


class WipeElementType(IntEnum):
    """What a :class:`WipeElement` lists (pyfdb's names)."""

    ERROR = 0
    CATALOGUE_INFO = auto()
    CATALOGUE = auto()
    CATALOGUE_INDEX = auto()
    CATALOGUE_SAFE = auto()
    CATALOGUE_CONTROL = auto()
    STORE = auto()
    STORE_AUX = auto()
    STORE_SAFE = auto()
    UNKNOWN = auto()


class WipeElement:
    """One part of a wipe's report: what it is, a message, and URIs."""

    def __init__(
        self, kind: WipeElementType, msg: str, uris: list[str], *, _internal: bool = False
    ) -> None:
        if not _internal:
            raise TypeError("Creating a WipeElement from user code is not supported.")
        self._type = kind
        self._msg = msg
        self._uris = uris

    def type(self) -> WipeElementType:
        return self._type

    def msg(self) -> str:
        return self._msg

    def uris(self) -> list[URI]:
        return [URI(u) for u in self._uris]

    def __repr__(self) -> str:
        return "\n".join([self._msg, *(f"    {u}" for u in self._uris)])


_WIPE_GROUPS = [
    (("catalogue", "leftover"), WipeElementType.CATALOGUE, "Catalogue URIs to delete:"),
    (("index",), WipeElementType.CATALOGUE_INDEX, "Index URIs to delete:"),
    (("control",), WipeElementType.CATALOGUE_CONTROL, "Control URIs to delete:"),
    (("data",), WipeElementType.STORE, "Data URIs to delete:"),
    (("unknown",), WipeElementType.UNKNOWN, "Unknown URIs to delete:"),
]


def _wipe_elements(report: dict, porcelain: bool) -> list[WipeElement]:
    out = []
    for d in report["datasets"]:
        if not porcelain:
            what = "" if d["collocations"] is None else (
                ", collocations: " + " ".join(_braced(c) for c in d["collocations"])
            )
            state = ", finishing an interrupted wipe" if d["interrupted"] else ""
            out.append(WipeElement(
                WipeElementType.CATALOGUE_INFO,
                f"[Dataset: {_braced(d['dataset'])}, place: {d['place']}{what}{state}, "
                f"fields: {d['fields']}, bytes: {d['bytes']}]",
                [], _internal=True,
            ))
        for kinds, kind, msg in _WIPE_GROUPS:
            uris = [i["name"] for i in d["items"] if i["kind"] in kinds]
            if uris:
                out.append(WipeElement(kind, msg, uris, _internal=True))
        if not porcelain:
            kept = [f"{k['name']} ({k['reason']})" for k in d["kept"]]
            if kept:
                out.append(WipeElement(WipeElementType.STORE_SAFE, "URIs kept:", kept, _internal=True))
            unknown = [i["name"] for i in d["unknown"]]
            if unknown:
                out.append(WipeElement(
                    WipeElementType.UNKNOWN,
                    "Unknown URIs (not created by fieldstore; deleted only with unsafe_wipe_all):",
                    unknown, _internal=True,
                ))
    return out


class PurgeElement:
    """A purge's report for one dataset (pyfdb's is text too)."""

    def __init__(self, text: str, *, _internal: bool = False) -> None:
        if not _internal:
            raise TypeError("Creating a PurgeElement from user code is not supported.")
        self._text = text

    def __repr__(self) -> str:
        return self._text


def _purge_element(d: dict, done: bool, porcelain: bool) -> PurgeElement:
    deleted = [i["name"] for i in d["items"]]
    if porcelain:
        return PurgeElement("\n".join(deleted), _internal=True)
    lines = [f"Purge report: {_braced(d['dataset'])} ({d['place']})\n",
             _line("Duplicated fields", d["duplicates"]),
             _line("Size of duplicates", _bytes(d["duplicate_bytes"])),
             ("Deleted:\n" if done else "To be deleted:\n")]
    lines += [f"    {n}\n" for n in deleted] or ["    - NONE -\n"]
    if d["kept"]:
        lines.append("Kept:\n")
        lines += [f"    {k['name']} ({k['reason']})\n" for k in d["kept"]]
    return PurgeElement("".join(lines), _internal=True)


class StatsElement:
    """Counts of one dataset (pyfdb's ``StatsElement``)."""

    def __init__(self, stats: dict, *, _internal: bool = False) -> None:
        if not _internal:
            raise TypeError("Creating a StatsElement from user code is not supported.")
        self._stats = stats

    def index_statistics(self) -> str:
        s = self._stats
        text = _line("Fields", f"{s['fields'] + s['duplicates']:,}") + _line(
            "Size of fields", _bytes(s["bytes"] + s["duplicate_bytes"])
        )
        if s["duplicates"]:  # as FDB5: only when there are some
            text += _line("Duplicated fields", f"{s['duplicates']:,}")
            text += _line("Size of duplicates", _bytes(s["duplicate_bytes"]))
        return (
            text
            + _line("Reacheable fields", f"{s['fields']:,}")
            + _line("Reachable size", _bytes(s["bytes"]))
        )

    def db_statistics(self) -> str:
        s = self._stats
        return (
            _line("Databases", 1)
            + _line("Dataset", _braced(s["dataset"]))
            + _line("Collocations", f"{s['collocations']:,}")
            + _line("Data files or objects", f"{s['units']:,}")
            + _line("Reclaimable size", _bytes(s["reclaimable_bytes"]))
        )

    def __repr__(self) -> str:
        return (
            "Index Statistics: \n" + self.index_statistics()
            + "\nDB Statistics: \n" + self.db_statistics()
        )


class StatusElement:
    """A dataset, where it lives, and the actions it is locked against
    (pyfdb's ``StatusElement``)."""

    def __init__(self, status: dict, *, _internal: bool = False) -> None:
        if not _internal:
            raise TypeError(f"Creating a {type(self).__name__} from user code is not supported.")
        self._status = status

    def location(self) -> URI:
        return URI(self._status["place"])

    def controlIdentifiers(self) -> list[ControlIdentifier]:  # noqa: N802 (pyfdb's name)
        return sorted(ControlIdentifier[op.upper()] for op in self._status["locks"])

    def key(self) -> dict[str, list[str]]:
        return {k: [v] for k, v in sorted(self._status["dataset"].items())}

    def __eq__(self, other: object, /) -> bool:
        if isinstance(other, StatusElement):
            return (
                self.location() == other.location()
                and self.controlIdentifiers() == other.controlIdentifiers()
                and self.key() == other.key()
            )
        return False

    def __ne__(self, other: object, /) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        idents = "[" + ", ".join(i.name or "" for i in self.controlIdentifiers()) + "]"
        return (
            f"{type(self).__name__}(control_identifiers={idents}, key={self.key()}, "
            f"location={self.location()})"
        )


class ControlElement(StatusElement):
    """A dataset's state after :meth:`FDB.control` (pyfdb's ``ControlElement``)."""


def _watch_elements(watcher: Any) -> Generator[WatchElement, None, None]:
    try:
        for entry, replaced in watcher:
            yield WatchElement(entry, replaced, _internal=True)
    finally:
        watcher.close()


class WatchElement(ListElement):
    """One field :meth:`FDB.watch` reports: a :class:`ListElement`, and
    whether its key was reported before (archived again)."""

    def __init__(self, entry: Any, replaced: bool, *, _internal: bool = False) -> None:
        super().__init__(entry, _internal=_internal)
        self.replaced = bool(replaced)
