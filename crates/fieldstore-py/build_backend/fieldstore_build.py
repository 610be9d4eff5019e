"""PEP 517 backend of the `fieldstore` Python package: maturin, after
choosing the ecCodes to link and the cargo target directory.

pip runs it with this directory as the working directory. Nothing here needs
an environment variable set by the user; each one below is only set when
unset, so that a developer can still choose.

- ``ECCODES_DIR``: the ecCodes the GRIB support links against
  (``crates/fieldstore-grib/build.rs`` reads it). The PyPI wheel
  ``eccodeslib`` (a build requirement, and a run-time dependency, where it
  exists: CPython 3.11-3.13 on Linux x86-64) is the ecCodes ECMWF's own
  pyfdb/FDB5 wheels use, so both give a GRIB message the same key. The
  extension finds it at run time next to the package in ``site-packages``
  (see ``build.rs``).
- Without ``eccodeslib``, the system's ecCodes is used if ``pkg-config``
  knows it (Debian: ``libeccodes-dev``) or the workspace's
  ``scripts/setup.sh`` set one up; otherwise the package is built without
  GRIB support (``fieldstore.HAS_GRIB`` is false; archiving needs an
  identifier) and a warning says so.
- ``CARGO_TARGET_DIR``: ``target/python`` in the workspace, so that the
  release build of the extension (linked against this ecCodes) neither
  rebuilds nor is rebuilt by the workspace's own builds; in a checkout the
  user cannot write (a read-only one), ``fieldstore/python-target`` under
  the user's cache directory instead: installing writes nothing into the
  checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import maturin as _maturin


def _workspace() -> Path | None:
    for d in [Path.cwd(), *Path.cwd().parents]:
        manifest = d / "Cargo.toml"
        if manifest.is_file() and "[workspace]" in manifest.read_text(errors="replace"):
            return d
    return None


def _system_eccodes(workspace: Path | None) -> bool:
    if workspace is not None and (workspace / "target" / "eccodes" / "lib-dirs").is_file():
        return True
    if shutil.which("pkg-config"):
        r = subprocess.run(["pkg-config", "--exists", "eccodes"], check=False)
        if r.returncode == 0:
            return True
    return any(
        Path(d, "libeccodes.so").exists()
        for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib")
    )


def target_dir(workspace: Path) -> Path:
    """Where the extension is built: the workspace's ``target/python``
    when the user may write there, else under the user's cache."""
    wanted = workspace / "target" / "python"
    existing = next(p for p in (wanted, wanted.parent, workspace) if p.exists())
    if os.access(existing, os.W_OK):
        return wanted
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "fieldstore" / "python-target"


def _prepare() -> None:
    workspace = _workspace()
    if workspace is not None and "CARGO_TARGET_DIR" not in os.environ:
        os.environ["CARGO_TARGET_DIR"] = str(target_dir(workspace))
    if "ECCODES_DIR" in os.environ:
        return
    try:
        import eccodeslib  # type: ignore[import-not-found]
    except ImportError:
        eccodeslib = None
    if eccodeslib is not None:
        os.environ["ECCODES_DIR"] = str(Path(eccodeslib.__file__).resolve().parent)
        return
    if _system_eccodes(workspace):
        return
    sys.stderr.write(
        "fieldstore: WARNING: no ecCodes found (neither the PyPI wheel eccodeslib nor a system "
        "library): building without GRIB support; FDB.archive() will need an identifier. "
        "Install libeccodes-dev (Debian) or use CPython 3.11-3.13 for GRIB.\n"
    )
    args = os.environ.get("MATURIN_PEP517_ARGS", "")
    os.environ["MATURIN_PEP517_ARGS"] = f"{args} --no-default-features".strip()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):  # type: ignore[no-untyped-def]
    _prepare()
    return _maturin.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):  # type: ignore[no-untyped-def]
    _prepare()
    return _maturin.build_editable(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory, config_settings=None):  # type: ignore[no-untyped-def]
    return _maturin.build_sdist(sdist_directory, config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):  # type: ignore[no-untyped-def]
    _prepare()
    return _maturin.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel
get_requires_for_build_wheel = _maturin.get_requires_for_build_wheel
get_requires_for_build_editable = _maturin.get_requires_for_build_editable
get_requires_for_build_sdist = _maturin.get_requires_for_build_sdist
