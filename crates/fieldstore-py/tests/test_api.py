"""Unit tests of the pyfdb-compatible API: config, archive, flush, retrieve,
list, axes, the data handle, and the exceptions."""

from __future__ import annotations

import io
import os
import shutil
import threading
from pathlib import Path

import pytest

import fieldstore
from fieldstore import errors

from conftest import GRIB, KEY, REPO, SCHEMA, config


def key(**changes: str) -> dict:
    k = dict(KEY)
    k.update(changes)
    return k


# ---------------------------------------------------------------- package


def test_package_exports_pyfdb_names_and_stubs() -> None:
    for name in ["FDB", "URI", "DataHandle", "ListElement", "IndexAxis", "ControlAction",
                 "ControlIdentifier", "MarsSelection", "StatusElement", "WipeElement",
                 "PurgeElement", "StatsElement", "ControlElement"]:
        assert name in fieldstore.__all__, name
        assert hasattr(fieldstore, name), name
    assert fieldstore.FieldStore is fieldstore.FDB
    assert fieldstore.__version__
    pkg = Path(fieldstore.__file__).parent
    assert (pkg / "py.typed").is_file()
    assert (pkg / "_fieldstore.pyi").is_file()


def test_error_hierarchy_has_builtin_bases() -> None:
    assert issubclass(errors.FieldStoreError, RuntimeError)
    cases = {
        errors.InvalidInputError: ValueError,
        errors.InvalidConfigError: ValueError,
        errors.NotFoundError: FileNotFoundError,
        errors.PermissionDeniedError: PermissionError,
        errors.StorageFullError: OSError,
        errors.UnavailableError: ConnectionError,
        errors.UnsupportedError: NotImplementedError,
        errors.FieldStoreIOError: OSError,
    }
    for cls, base in cases.items():
        assert issubclass(cls, errors.FieldStoreError) and issubclass(cls, base), cls
    for cls in (errors.CorruptDataError, errors.LockedError, errors.InternalError):
        assert issubclass(cls, errors.FieldStoreError)
    assert errors.InvalidInputError.kind == "invalid input"


def test_objects_cannot_be_made_by_user_code() -> None:
    for cls in (fieldstore.DataHandle, fieldstore.ListElement, fieldstore.WipeElement):
        with pytest.raises(TypeError):
            cls(None)


# ---------------------------------------------------------------- config


def test_config_forms(tmp_path: Path, root: Path) -> None:
    import json

    fieldstore.FDB(config(root)).archive(b"GRIB-dict-7777", key())
    yaml_text = (
        f"type: local\nengine: toc\nschema: {SCHEMA}\n"
        f"spaces:\n- handler: Default\n  roots:\n  - path: {root}\n"
    )
    path = tmp_path / "config.yaml"
    path.write_text(yaml_text)
    for cfg in (config(root), yaml_text, path, str(path), json.dumps(config(root))):
        fdb = fieldstore.FDB(cfg)
        fdb.archive(b"GRIB" + repr(type(cfg)).encode() + b"7777", key())
        fdb.flush()
        assert len(list(fdb.list({}))) == 1
    system, user = fieldstore.FDB(path, user_config={"useSubToc": True}).config()
    assert system["engine"] == "toc" and system["spaces"][0]["roots"][0]["path"] == str(root)
    assert user == {"useSubToc": True}


def test_relative_paths_in_a_config_file_are_relative_to_it(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    path = tmp_path / "c.yaml"
    path.write_text("type: local\nengine: toc\nspaces:\n- roots:\n  - path: ./data\n")
    fdb = fieldstore.FDB(path)
    fdb.archive(b"GRIB7777", key())
    fdb.flush()
    assert any((tmp_path / "data").iterdir())


def test_no_config_uses_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FIELDSTORE_CONFIG", raising=False)
    monkeypatch.setenv("FIELDSTORE_ROOT", str(tmp_path / "env-root"))
    with fieldstore.FDB() as fdb:
        fdb.archive(b"GRIB7777", key())
    assert (tmp_path / "env-root").is_dir()
    assert len(list(fieldstore.FDB().list({"class": "od"}))) == 1
    monkeypatch.delenv("FIELDSTORE_ROOT")
    monkeypatch.chdir(tmp_path)
    fieldstore.FDB().archive(b"GRIB7777", key())
    assert (tmp_path / "fieldstore-data").is_dir()


def test_a_missing_root_named_by_the_environment_is_not_found_and_not_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 26, item 10: reading never creates a root; a mistyped
    FIELDSTORE_ROOT is NotFound naming it; the implicit default reads as
    empty, and neither is created."""
    monkeypatch.delenv("FIELDSTORE_CONFIG", raising=False)
    typo = tmp_path / "typo"
    monkeypatch.setenv("FIELDSTORE_ROOT", str(typo))
    with pytest.raises(errors.NotFoundError, match=f"root {typo} does not exist"):
        list(fieldstore.FDB().list({"class": "od"}))
    with pytest.raises(errors.NotFoundError, match=f"root {typo} does not exist"):
        fieldstore.FDB().axes({"class": "od"})
    assert not typo.exists()
    monkeypatch.delenv("FIELDSTORE_ROOT")
    monkeypatch.chdir(tmp_path)
    with pytest.warns(fieldstore.EmptyStoreWarning, match="holds no dataset: embedded store at fieldstore-data"):
        assert list(fieldstore.FDB().list({"class": "od"})) == []
    assert not (tmp_path / "fieldstore-data").exists()


FDB5_VARIABLES = ("FDB_CONFIG", "FDB5_CONFIG", "FDB_CONFIG_FILE", "FDB5_CONFIG_FILE", "FDB_HOME", "FDB5_HOME")


def test_fdb5_variables_are_read_when_fieldstores_are_unset(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42, item 2: FDB5_CONFIG_FILE (or FDB_HOME) names the store, as
    the C API reads it; an empty store says which it is."""
    for var in ("FIELDSTORE_CONFIG", "FIELDSTORE_ROOT", *FDB5_VARIABLES):
        monkeypatch.delenv(var, raising=False)
    with fieldstore.FDB(config(root)) as fdb:
        fdb.archive(b"GRIB-1-7777", key())
    text = f"type: local\nengine: toc\nschema: {SCHEMA}\nspaces:\n- roots:\n  - path: {root}\n"
    (tmp_path / "fdb5.yaml").write_text(text)
    monkeypatch.setenv("FDB5_CONFIG_FILE", str(tmp_path / "fdb5.yaml"))
    assert len(list(fieldstore.FDB().list({"class": "od"}))) == 1
    assert "FDB5_CONFIG_FILE" in fieldstore.FDB().config()[0]["source"]
    monkeypatch.delenv("FDB5_CONFIG_FILE")
    home = tmp_path / "home"
    (home / "etc" / "fdb").mkdir(parents=True)
    (home / "etc" / "fdb" / "config.yaml").write_text(text)
    monkeypatch.setenv("FDB_HOME", str(home))
    assert len(list(fieldstore.FDB().list({"class": "od"}))) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    (home / "etc" / "fdb" / "config.yaml").write_text(text.replace(str(root), str(empty)))
    with pytest.warns(fieldstore.EmptyStoreWarning, match="the store looked in holds no dataset: .*FDB_HOME"):
        assert list(fieldstore.FDB().list({"class": "od"})) == []
    with pytest.warns(fieldstore.EmptyStoreWarning, match="holds no dataset"):
        assert fieldstore.FDB().retrieve(key()).size() == 0


def test_a_handle_inherited_across_fork_refuses_to_write_in_the_child(root: Path) -> None:
    """Issue 26, item 7: in a forked child the parent's handle refuses to
    archive, flush and discard, and dropping it there harms nothing; the
    parent's fields from before and after the fork all read back."""
    fdb = fieldstore.FDB(config(root))
    fdb.archive(b"GRIB-step-0-7777", key(step="0"))
    fdb.flush()
    fdb.archive(b"GRIB-step-1-7777", key(step="1"))  # pending at the fork
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            calls = [
                lambda: fdb.archive(b"GRIB-child-7777", key(step="50")),
                fdb.flush,
                fdb.discard,
            ]
            for n, call in enumerate(calls, start=10):
                try:
                    call()
                    code = code or n
                except errors.InvalidInputError as e:
                    if f"opened by process {parent}" not in str(e):
                        code = code or n + 10
            del calls, fdb
            import gc

            gc.collect()
        except BaseException:
            code = 99
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    fdb.archive(b"GRIB-step-2-7777", key(step="2"))
    fdb.flush()
    listed = sorted(e.combined_key()["step"] for e in fdb.list({"class": "od"}))
    assert listed == ["0", "1", "2"]
    for step in "012":
        assert fdb.retrieve(key(step=step)).readall() == f"GRIB-step-{step}-7777".encode()


def test_bad_configs_raise_by_kind(tmp_path: Path, root: Path) -> None:
    with pytest.raises(errors.InvalidConfigError, match="engine 'lmdb' is not supported"):
        fieldstore.FDB({"engine": "lmdb"})
    with pytest.raises(ValueError, match="unknown field `enigne`"):
        fieldstore.FDB("enigne: toc\n")
    with pytest.raises(errors.NotFoundError) as e:
        fieldstore.FDB(tmp_path / "missing.yaml")
    assert isinstance(e.value, FileNotFoundError) and "missing.yaml" in str(e.value)
    with pytest.raises(errors.NotFoundError, match="does not exist"):
        fieldstore.FDB(config(tmp_path / "no-such-root"))
    with pytest.raises(ValueError, match="Unknown config type"):
        fieldstore.FDB(42)  # type: ignore[arg-type]
    with pytest.raises(errors.InvalidConfigError):
        fieldstore.FDB({**config(root), "schema": str(tmp_path / "no-schema")})


# ---------------------------------------------------------------- archive


def test_archive_with_identifiers(fdb: fieldstore.FDB) -> None:
    fdb.archive(b"GRIB-a-7777", key(step="0"))
    fdb.archive(b"GRIB-b-7777", list(key(step="6").items()))
    fdb.archive(bytearray(b"GRIB-c-7777"), key(step=12))  # type: ignore[arg-type]
    fdb.archive(memoryview(b"GRIB-d-7777"), key(step="18"))  # type: ignore[arg-type]
    assert fdb.dirty()
    fdb.flush()
    assert not fdb.dirty()
    with fdb.retrieve(key(step=[18, 0, "6", 12])) as dh:
        assert dh.read() == b"GRIB-d-7777GRIB-a-7777GRIB-b-7777GRIB-c-7777"


def test_identifier_errors_match_pyfdb(fdb: fieldstore.FDB) -> None:
    with pytest.raises(ValueError, match="No list of values allowed"):
        fdb.archive(b"x", key(step="0/6"))
    with pytest.raises(ValueError, match="No list of values allowed"):
        fdb.archive(b"x", key(step=["0", "6"]))  # type: ignore[arg-type]
    with pytest.raises(KeyError, match="already exists"):
        fdb.archive(b"x", [("class", "od"), ("class", "rd")])
    with pytest.raises(ValueError):
        fdb.archive(b"x", "class=od")  # type: ignore[arg-type]


def test_keys_that_do_not_fit_the_schema_name_the_keyword(fdb: fieldstore.FDB) -> None:
    with pytest.raises(errors.InvalidInputError) as e:
        fdb.archive(b"x", {"class": "od"})
    assert isinstance(e.value, ValueError) and isinstance(e.value, RuntimeError)
    assert "missing keyword 'expver'" in str(e.value) and "rule" in str(e.value)
    with pytest.raises(errors.InvalidInputError, match="foo"):
        fdb.archive(b"x", key(foo="bar"))
    assert not fdb.dirty()


def test_flush_makes_fields_visible_to_other_handles(root: Path) -> None:
    writer = fieldstore.FDB(config(root))
    reader = fieldstore.FDB(config(root))
    writer.archive(b"GRIB-1-7777", key())
    with pytest.warns(fieldstore.EmptyStoreWarning, match="the store looked in holds no dataset"):
        assert list(reader.list({})) == []
    with pytest.warns(fieldstore.EmptyStoreWarning):
        assert reader.retrieve(key()).size() == 0
    writer.flush()
    assert reader.retrieve(key()).readall() == b"GRIB-1-7777"
    # Archiving again replaces the field; include_masked shows the old one.
    writer.archive(b"GRIB-2-7777", key())
    writer.flush()
    assert reader.retrieve(key()).readall() == b"GRIB-2-7777"
    assert len(list(reader.list({}))) == 1
    masked = list(reader.list({}, include_masked=True))
    assert [el.length() for el in masked] == [11, 11] and len({str(el.uri) for el in masked}) >= 1


def test_with_block_flushes_and_discard_drops(root: Path) -> None:
    with fieldstore.FDB(config(root)) as fdb:
        fdb.archive(b"GRIB-1-7777", key(step="1"))
    other = fieldstore.FDB(config(root))
    assert other.retrieve(key(step="1")).size() == 11
    fdb.archive(b"GRIB-2-7777", key(step="2"))
    fdb.discard()
    fdb.flush()
    with pytest.warns(fieldstore.MissingFieldsWarning):
        assert other.retrieve(key(step="2")).size() == 0


# ---------------------------------------------------------------- retrieve


@pytest.fixture
def three(fdb: fieldstore.FDB) -> fieldstore.FDB:
    for step in ("0", "6", "12"):
        fdb.archive(f"GRIB-step-{step:>3}-7777".encode(), key(step=step))
    fdb.flush()
    return fdb


def test_selections_take_strings_numbers_lists_and_ranges(three: fieldstore.FDB) -> None:
    def got(**sel: object) -> bytes:
        return three.retrieve(key(**sel)).readall()  # type: ignore[arg-type]

    assert got(step=6) == b"GRIB-step-  6-7777"
    assert got(step="12/0") == b"GRIB-step- 12-7777GRIB-step-  0-7777"
    assert got(step=["0", 12]) == b"GRIB-step-  0-7777GRIB-step- 12-7777"
    assert got(step="0/to/12/by/6") == got(step=[0, 6, 12])
    assert got(time=12, expver=1, step=0) == b"GRIB-step-  0-7777"  # canonicalised


def test_retrieve_errors(three: fieldstore.FDB) -> None:
    with pytest.raises(TypeError, match="Wildcard"):
        three.retrieve({})
    with pytest.raises(errors.InvalidInputError, match="unknown keyword 'foo'"):
        three.retrieve(key(foo="bar"))
    # A keyword left out names no field (as in pyfdb); `all` names them all.
    partial = key()
    del partial["step"]
    with pytest.warns(fieldstore.MissingFieldsWarning, match="names no complete key: it leaves out the keyword step, "):
        assert three.retrieve(partial).size() == 0
    assert three.retrieve(key(step="all")).count() == 3
    with pytest.raises(ValueError, match="not valid"):
        three.retrieve(key(step={"a": 1}))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not valid"):
        three.retrieve(key(step=None))  # type: ignore[arg-type]


def test_missing_fields_are_not_an_error(three: fieldstore.FDB) -> None:
    with pytest.warns(fieldstore.MissingFieldsWarning, match="the one field the request names is missing: "):
        dh = three.retrieve(key(step=24))
    assert dh.size() == 0 and dh.read() == b"" and dh.readall() == b""
    with pytest.warns(fieldstore.MissingFieldsWarning) as caught:
        assert three.retrieve(key(step=[24, 6, 36])).readall() == b"GRIB-step-  6-7777"
    assert len(caught) == 1
    message = str(caught[0].message)
    assert message.startswith("2 of the 3 fields the request names are missing, the first: "), message
    assert "step=24" in message and "step=36" not in message, message


def test_data_handle_reads_like_a_file(three: fieldstore.FDB) -> None:
    whole = b"GRIB-step-  0-7777GRIB-step-  6-7777GRIB-step- 12-7777"
    sel = key(step=[0, 6, 12])
    dh = three.retrieve(sel)
    assert dh.size() == len(whole) and dh.count() == 3
    assert not dh.opened and dh.read(4) == b"GRIB" and dh.opened  # read opens
    assert dh.read(20) == whole[4:24]  # across a field boundary
    assert dh.tell() == 24
    assert dh.read(1000) == whole[24:]  # no zero padding at the end
    assert dh.read(10) == b""
    dh.close()
    dh.open()  # open after close starts again
    assert dh.read() == whole
    assert dh.seek(-4, os.SEEK_END) == len(whole) - 4 and dh.read() == b"7777"
    dh.seek(18)
    assert dh.read(4) == b"GRIB"
    assert dh.readall() == whole[22:]  # the rest, then closed
    assert not dh.opened
    assert dh.readall() == whole  # reopened from the start
    with three.retrieve(sel) as h:
        assert h.opened and h.read(4) == b"GRIB"
    assert not h.opened
    assert "3 field(s)" in repr(h)


def test_readinto_fills_buffers_in_place(three: fieldstore.FDB) -> None:
    whole = three.retrieve(key(step=[0, 6, 12])).readall()
    dh = three.retrieve(key(step=[0, 6, 12]))
    buf = bytearray(20)
    parts = []
    while n := dh.readinto(buf):
        parts.append(bytes(buf[:n]))
    assert b"".join(parts) == whole and len(parts[-1]) == len(whole) % 20
    dh = three.retrieve(key(step=[0, 6, 12]))
    big = bytearray(100)
    view = memoryview(big)[10:]
    assert dh.readinto(view) == len(whole) and big[10 : 10 + len(whole)] == whole
    with pytest.raises(TypeError):
        dh.readinto(b"read-only")
    import array

    dh = three.retrieve(key(step=0))
    ints = array.array("i", [0] * 8)  # 32 bytes, typed
    assert dh.readinto(ints) == 18 and ints.tobytes()[:18] == whole[:18]


def test_copyfileobj_gives_exact_bytes(grib_fdb: fieldstore.FDB, tmp_path: Path) -> None:
    # pyfdb pads the last read() of a stream with zeros; fieldstore does not.
    original = (GRIB / "x138-300.grib").read_bytes()
    sel = {"class": "rd", "expver": "xxxx", "stream": "oper", "date": "20191110",
           "time": "0000", "domain": "g", "type": "an", "levtype": "pl", "step": 0,
           "levelist": 300, "param": 138}
    out = tmp_path / "x.grib"
    with grib_fdb.retrieve(sel) as dh, open(out, "wb") as f:
        shutil.copyfileobj(dh, f)
    assert out.read_bytes() == original
    buffered = io.BufferedReader(grib_fdb.retrieve(sel))  # type: ignore[arg-type]
    assert buffered.read() == original


def test_corrupt_data_is_detected_not_returned(three: fieldstore.FDB) -> None:
    el = next(three.list(key(step=6)))
    path = str(el.uri)
    with open(path, "r+b") as f:
        f.seek(el.offset() + 5)
        f.write(b"X")
    dh = three.retrieve(key(step=[0, 6]))
    assert dh.read(18) == b"GRIB-step-  0-7777"
    with pytest.raises(errors.CorruptDataError) as e:
        dh.read()
    assert path.split("/")[-1] in str(e.value)
    assert three.retrieve(key(step=12)).readall() == b"GRIB-step- 12-7777"


# ---------------------------------------------------------------- list


def test_list_levels_shapes(three: fieldstore.FDB) -> None:
    (l1,) = three.list({"class": "od"}, level=1)
    assert l1.keys() == [
        {"class": "od", "date": "20231201", "domain": "g", "expver": "0001",
         "stream": "oper", "time": "1200"},
        {},
        {},
    ]
    assert not l1.has_location() and l1.uri is None and l1.data_handle is None
    assert l1.offset() is None and l1.length() is None
    (l2,) = three.list({"class": "od"}, level=2)
    assert l2.keys()[1] == {"levtype": "sfc", "timespan": "", "type": "fc"}
    assert list(l2.combined_key()) == sorted(l2.combined_key())
    l3 = list(three.list({"class": "od", "step": [0, 12]}))
    assert len(l3) == 2
    el = [e for e in l3 if e.keys()[2]["step"] == "12"][0]
    # Level 3 leaves empty values out (frequency?, direction? are absent).
    assert el.keys()[2] == {"param": "167", "step": "12"}
    assert el.combined_key() == {**KEY, "step": "12", "timespan": ""}
    assert el.has_location() and el.length() == 18
    assert isinstance(el.uri, fieldstore.URI) and el.uri.scheme() == "file"
    with open(str(el.uri), "rb") as f:  # the location is readable directly
        f.seek(el.offset())
        assert f.read(el.length()) == b"GRIB-step- 12-7777"
    assert el.data_handle.readall() == b"GRIB-step- 12-7777"
    # Retrieved by its combined key as it is (`timespan: ''`, the absent
    # keyword), as earthkit-data's lazy FDB source does; FDB5 refuses it.
    with three.retrieve(el.combined_key()) as h:
        assert h.read() == b"GRIB-step- 12-7777"
    assert [e.keys()[2]["step"] for e in three.list(el.combined_key())] == ["12"]
    assert el.data_handle().readall() == b"GRIB-step- 12-7777"  # callable too
    assert el.request() == {**KEY, "step": "12"}
    assert "{step=12,param=167}" in repr(el)


def test_list_everything_and_bad_levels(three: fieldstore.FDB) -> None:
    assert len(list(three.list({}))) == 3
    assert len(list(three.list(None))) == 3
    assert list(three.list({"class": "rd"})) == []
    for level in (0, 4, -1, 300):
        with pytest.raises(ValueError, match="level must be 1"):
            list(three.list({}, level=level))
    with pytest.raises(errors.InvalidInputError, match="unknown keyword"):
        list(three.list({"foo": "bar"}))


def test_inspect_finds_fully_specified_fields(three: fieldstore.FDB) -> None:
    found = list(three.inspect(key(step=[6, 24])))
    assert [e.keys()[2]["step"] for e in found] == ["6"]
    assert found[0].data_handle.readall() == b"GRIB-step-  6-7777"


# ---------------------------------------------------------------- axes


def test_axes(three: fieldstore.FDB) -> None:
    ax = three.axes({"class": "od"})
    assert isinstance(ax, fieldstore.IndexAxis)
    assert list(ax) == sorted(ax)
    assert ax["step"] == ["0", "12", "6"]  # sorted as strings, as FDB5
    assert ax["timespan"] == [""]
    assert ax.has_key("param") and "param" in ax and "levelist" not in ax
    assert ax == {**dict(ax), "class": "od"}
    with pytest.raises(TypeError):
        ax["step"] = ["1"]  # type: ignore[index]
    assert set(three.axes({}, level=1)) == {"class", "date", "domain", "expver", "stream", "time"}
    assert "type" in three.axes({}, level=2) and "step" not in three.axes({}, level=2)
    assert three.axes({"class": "od", "step": [0, 6]})["step"] == ["0", "6"]
    assert "IndexAxis[axis={class=(od)" in repr(ax)


# ---------------------------------------------------------------- GRIB


def test_grib_archive_reads_keys_from_messages(grib_fdb: fieldstore.FDB) -> None:
    assert len(list(grib_fdb.list({}))) == 14
    (el,) = grib_fdb.list({"class": "od", "levtype": "sfc", "date": 20251125})
    assert el.keys()[2] == {"param": "167", "step": "0"}


def test_parameter_names_resolve_as_in_mars(fdb: fieldstore.FDB) -> None:
    if not fieldstore.HAS_GRIB:
        pytest.skip("this build of fieldstore has no GRIB support (no parameter table)")
    fdb.archive(b"GRIB-2t-7777", key(param="2T"))
    fdb.archive(b"GRIB-msl-7777", key(param="151.128"))
    fdb.flush()
    for spelling in ("2t", "167", "167.128", 167):
        assert fdb.retrieve(key(param=spelling)).readall() == b"GRIB-2t-7777", spelling
    assert fdb.retrieve(key(param="msl/2t")).readall() == b"GRIB-msl-7777GRIB-2t-7777"
    listed = [el.keys()[2]["param"] for el in fdb.list({"class": "od", "param": ["2t", "msl"]})]
    assert sorted(listed) == ["151", "167"]
    assert fdb.axes({"param": "msl"})["param"] == ["151"]
    with pytest.raises(errors.InvalidInputError, match="unknown parameter 'nosuchname'"):
        fdb.retrieve(key(param="nosuchname"))
    with pytest.raises(errors.InvalidInputError, match="unknown parameter 'nosuchname'"):
        list(fdb.list({"param": "nosuchname"}))
    with pytest.raises(errors.InvalidInputError, match="unknown parameter 'nosuchname'"):
        fdb.archive(b"GRIB-x-7777", key(param="nosuchname"))


def test_bad_grib_archives_nothing(fdb: fieldstore.FDB) -> None:
    if not fieldstore.HAS_GRIB:
        with pytest.raises(errors.UnsupportedError):
            fdb.archive(b"GRIB")
        return
    good = (GRIB / "levtypes.grib").read_bytes()
    with pytest.raises(errors.InvalidInputError, match="GRIB message 2 at byte offset 3120: truncated"):
        fdb.archive(good + good[:100])
    with pytest.raises(errors.InvalidInputError, match="no GRIB message"):
        fdb.archive(b"")
    with pytest.raises(ValueError):
        fdb.archive(b"not grib at all")
    assert not fdb.dirty()


# ---------------------------------------------------------------- threads


def test_threads_share_a_handle(fdb: fieldstore.FDB) -> None:
    failures: list[BaseException] = []

    def work(t: int) -> None:
        try:
            for i in range(20):
                fdb.archive(f"GRIB-{t}-{i}-7777".encode(), key(step=str(t * 100 + i)))
            fdb.flush()
            for i in range(20):
                got = fdb.retrieve(key(step=str(t * 100 + i))).readall()
                assert got == f"GRIB-{t}-{i}-7777".encode()
        except BaseException as e:  # noqa: BLE001
            failures.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert len(list(fdb.list({}))) == 80


# ---------------------------------------------------------------- data management


def test_stats_status_and_control(root: Path) -> None:
    fdb = fieldstore.FDB(config(root))
    for body in (b"GRIB-1-7777", b"GRIB-22-7777"):
        fdb.archive(body, key())
        fdb.flush()
    (stats,) = fdb.stats({"class": "od"})
    assert "Duplicated fields               : 1\n" in stats.index_statistics()
    assert "Reacheable fields               : 1\n" in stats.index_statistics()
    assert "Size of fields                  : 23 (23 bytes)" in stats.index_statistics()
    assert "Collocations                    : 1\n" in stats.db_statistics()
    (status,) = fdb.status({"class": "od"})
    assert status.controlIdentifiers() == []
    assert status.key()["class"] == ["od"] and status.key()["domain"] == ["g"]
    assert Path(str(status.location())).is_dir()

    (locked,) = fdb.control(
        {"class": "od"}, fieldstore.ControlAction.DISABLE,
        [fieldstore.ControlIdentifier.RETRIEVE | fieldstore.ControlIdentifier.LIST],
    )
    assert locked.controlIdentifiers() == [  # in flag order, as pyfdb
        fieldstore.ControlIdentifier.LIST, fieldstore.ControlIdentifier.RETRIEVE
    ]
    other = fieldstore.FDB(config(root))
    with pytest.raises(errors.LockedError, match="locked against retrieve"):
        other.retrieve(key()).read()
    assert list(other.status({}))[0] == locked
    (unlocked,) = fdb.control({"class": "od"}, fieldstore.ControlAction.ENABLE,
                              [fieldstore.ControlIdentifier.RETRIEVE, fieldstore.ControlIdentifier.LIST])
    assert unlocked.controlIdentifiers() == []
    assert fieldstore.FDB(config(root)).retrieve(key()).read() == b"GRIB-22-7777"
    with pytest.raises(errors.UnsupportedError):
        fdb.control({"class": "od"}, fieldstore.ControlAction.DISABLE,
                    [fieldstore.ControlIdentifier.UNIQUEROOT])
    assert fdb.enabled(fieldstore.ControlIdentifier.ARCHIVE)


def test_purge_removes_only_replaced_fields(root: Path) -> None:
    # Two writers (handles): the first one's data file ends up holding only
    # the replaced version.
    first = fieldstore.FDB(config(root))
    first.archive(b"GRIB-old-7777", key())
    first.flush()
    del first
    second = fieldstore.FDB(config(root))
    second.archive(b"GRIB-new-7777", key())
    second.flush()
    files = lambda: sorted(p.name for p in root.rglob("*") if p.is_file())  # noqa: E731
    before = files()
    (dry,) = second.purge({"class": "od"})
    assert "To be deleted:" in repr(dry) and files() == before
    (done,) = second.purge({"class": "od"}, doit=True)
    assert "Deleted:" in repr(done)
    assert len(files()) < len(before)
    assert second.retrieve(key()).read() == b"GRIB-new-7777"
    assert len(list(second.list({}, include_masked=True))) == 1


def test_wipe_is_a_dry_run_unless_doit(three: fieldstore.FDB, root: Path) -> None:
    elements = list(three.wipe({"class": "od", "expver": "0001", "stream": "oper",
                                "date": 20231201, "time": 1200, "domain": "g"}))
    kinds = [e.type() for e in elements]
    assert kinds[0] == fieldstore.WipeElementType.CATALOGUE_INFO
    assert fieldstore.WipeElementType.STORE in kinds
    data = [e for e in elements if e.type() == fieldstore.WipeElementType.STORE][0]
    assert all(Path(str(u)).exists() for u in data.uris())
    assert len(list(three.list({}))) == 3
    porcelain = list(three.wipe({"class": "od"}, doit=True, porcelain=True))
    assert fieldstore.WipeElementType.CATALOGUE_INFO not in [e.type() for e in porcelain]
    assert not any(Path(str(u)).exists() for u in data.uris())
    assert list(three.list({})) == []
    assert list(fieldstore.FDB(config(root)).list({})) == []


# ---- issue 28: GRIB from other centres, one key twice ---------------------

FOREIGN = REPO / "tests" / "fixtures" / "grib-foreign" / "kwbc-t.grib"


def test_archive_defaults_fill_keys_ecCodes_gives_none(fdb: fieldstore.FDB, root: Path) -> None:
    """NCEP's GRIB2 has no MARS class: refused under ECMWF's schema (as by
    FDB5), archived with ``defaults=`` (ecCodes' own keys kept) or with the
    config's ``archive-defaults``."""
    if not fieldstore.HAS_GRIB:
        pytest.skip("no GRIB support in this build")
    data = FOREIGN.read_bytes()
    with pytest.raises(fieldstore.InvalidInputError, match="missing keyword 'class'.*give the keys it lacks "
                                                           "with defaults="):
        fdb.archive(data)
    fdb.archive(data, defaults={"class": "od", "expver": 1, "stream": "oper", "type": "fc", "step": 99})
    fdb.flush()
    keys = sorted((k["class"], k["expver"], k["type"], k["step"]) for k in (e.combined_key() for e in fdb.list({"class": "od"})))
    assert keys == [("od", "0001", "fc", "0"), ("od", "0001", "fc", "6")]
    with pytest.raises(ValueError, match="No list of values allowed"):
        fdb.archive(data, defaults={"class": ["od", "rd"]})
    with pytest.raises(fieldstore.InvalidInputError, match="defaults fill GRIB messages' keys"):
        fdb.archive(data, {"class": "od"}, defaults={"class": "od"})

    other = root.parent / "other"
    other.mkdir()
    c = {**config(other), "archive-defaults": {"class": "rd", "expver": "xxxx", "stream": "oper", "type": "an"}}
    with fieldstore.FDB(c) as fdb2:
        fdb2.archive(data)
        fdb2.archive(data, defaults={"type": "fc"})
    listed = sorted(e.combined_key()["type"] for e in fieldstore.FDB(c).list({"class": "rd"}))
    assert listed == ["an", "an", "fc", "fc"]
    with pytest.raises(fieldstore.InvalidConfigError, match="archive-defaults: expected a mapping"):
        fieldstore.FDB({**config(other), "archive-defaults": "od"})


def test_two_messages_with_one_key_warn_and_the_last_wins(fdb: fieldstore.FDB) -> None:
    """FDB5's rule (the last archived wins) is kept, and said: a
    DuplicateKeyWarning names both messages (index, byte offset) and the key."""
    if not fieldstore.HAS_GRIB:
        pytest.skip("no GRIB support in this build")
    one = (GRIB / "levtypes.grib").read_bytes()
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fdb.archive(one + one)
    fdb.flush()
    said = [str(w.message) for w in caught if issubclass(w.category, fieldstore.DuplicateKeyWarning)]
    assert len(said) == 2, said
    assert said[0].startswith(f"GRIB message 2 at byte offset {len(one)} has the key "
                              "{class=od,expver=0001,stream=oper,date=20251125,time=0000,domain=g}"), said
    assert said[0].endswith("of GRIB message 0 at byte offset 0: both are archived, the last wins"), said
    assert len(list(fdb.list({"class": "od"}))) == 2
    # A second call is another input: no warning (the store keeps FDB5's rule).
    with warnings.catch_warnings():
        warnings.simplefilter("error", fieldstore.DuplicateKeyWarning)
        fdb.archive(one)


def test_bytes_that_are_not_grib_are_skipped_with_one_warning_as_ecCodes_skips_them(
        fdb: fieldstore.FDB, tmp_path: Path) -> None:
    """A record header before the first message (as Météo-France's
    ecoclimap files have, 12,000 bytes), junk between messages and padding
    after the last are skipped as ecCodes skips them: the messages archived
    are those ecCodes' own reader (``codes_grib_new_from_file``) reads, and
    one SkippedBytesWarning names the byte ranges. A message that starts
    with GRIB but is damaged is still an error."""
    if not fieldstore.HAS_GRIB:
        pytest.skip("no GRIB support in this build")
    from test_earthkit import need

    eccodes = need("eccodes")
    import warnings

    levtypes = (GRIB / "levtypes.grib").read_bytes()
    rd = (GRIB / "rd-fc.grib").read_bytes()
    data = b"record header " * 857 + b"xx" + levtypes + b"junk between" + rd + b"\0" * 4000
    assert data.index(b"GRIB") == 12_000
    path = tmp_path / "ecoclimap-like.grib"
    path.write_bytes(data)
    # What ecCodes reads from the file.
    read = []
    with open(path, "rb") as f:
        while (h := eccodes.codes_grib_new_from_file(f)) is not None:
            try:
                read.append((int(eccodes.codes_get_long(h, "offset")), eccodes.codes_get_message(h)))
            finally:
                eccodes.codes_release(h)
    assert [o for o, _ in read] == [12_000, 13_560, 3120 + 12_000 + 12]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fdb.archive(data)
    fdb.flush()
    skipped = [w.message for w in caught if issubclass(w.category, fieldstore.SkippedBytesWarning)]
    assert len(skipped) == 1, [str(w.message) for w in caught]
    end = read[-1][0] + len(read[-1][1])
    ends = [m_off + len(m) for m_off, m in read]
    assert skipped[0].ranges == [(0, 12_000), (ends[1], read[2][0]), (end, len(data))], skipped[0].ranges
    assert str(skipped[0]) == (f"skipped {12_000 + read[2][0] - ends[1] + len(data) - end} bytes that are not "
                               f"GRIB (as ecCodes does): bytes 0..12000, {ends[1]}..{read[2][0]}, "
                               f"{end}..{len(data)}")
    # Every message ecCodes read is archived, byte for byte.
    back = set()
    for entry in fdb.list({"class": "od/rd"}):
        back.add(fdb.retrieve({k: v for k, v in entry.combined_key().items() if v}).read())
    assert back == {m for _, m in read}
    # A message that starts with GRIB but does not end with 7777: an error.
    damaged = bytearray(data)
    damaged[read[1][0] + len(read[1][1]) - 1] = ord("X")
    with pytest.raises(fieldstore.InvalidInputError, match="GRIB message 1 at byte offset 13560: no '7777'"):
        fdb.archive(bytes(damaged))


def test_an_eccodes_assertion_is_an_exception_not_the_end_of_the_interpreter(fdb: fieldstore.FDB) -> None:
    """ecCodes fails an assertion on this message (and by default aborts the
    process: ``grib_ls -m`` does); here it is an InvalidInputError naming
    it, and the interpreter goes on archiving."""
    if not fieldstore.HAS_GRIB:
        pytest.skip("no GRIB support in this build")
    bad = (REPO / "tests" / "fixtures" / "grib-assert" / "msmm-bad-fcmonth.grib").read_bytes()
    for _ in range(2):
        with pytest.raises(fieldstore.InvalidInputError,
                           match="GRIB message 0 at byte offset 0: ecCodes cannot decode the message: "
                                 "ecCodes assertion failed: `gribForecastMonth == fcmonth'"):
            fdb.archive(bad)
    fdb.archive((GRIB / "rd-fc.grib").read_bytes())
    fdb.flush()
    assert len(list(fdb.list({"class": "rd"}))) == 1
