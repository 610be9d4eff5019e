"""Every Python block of the READMEs and ``docs/`` runs (issue 28): the
blocks of one page run in order in one interpreter (a block may use what
the one before made, as a reader would), in a fresh directory, against a
temporary store. The shell blocks run in the CLI's tests
(``crates/fieldstore-cli/tests/docs.rs``), which share the rules below.

What the blocks find, written here with ecCodes (16-bit regular lat/lon,
ECMWF's schema):

- ``forecast.grib``: ``class=od,expver=0001,stream=oper,type=fc``, 2023-12-01
  12 UTC, steps 0/6/12: 2t (167) at the surface and t (130) at 1000/850/500
  hPa, 2° over Europe's corner of ecCodes' sample;
- ``analysis.grib``: ``type=an``, 2024-01-01 and 02 at 0/6/12/18 UTC, t and u
  at 1000/925/850/700/500/300 hPa, on a global 1.5° grid (121 x 240);
- a store holding both: the default store (``FIELDSTORE_ROOT``) and the one
  ``/etc/fieldstore.yaml`` names; ``/data/fs`` is an empty root. The two
  paths are placeholders replaced by the test's own.

A block that is not meant to run says so on the line before its fence:
``<!-- docs-test: no-run: why -->`` (a page: ``<!-- docs-test: no-run-page:
why -->`` before its first block); its Python must still compile. The set is
kept small: installing, building the C library, the whole test suite and
benchmarks.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, SCHEMA
from test_earthkit import need

PLACEHOLDERS = {"/data/fs": "fs", "/etc/fieldstore.yaml": "fieldstore.yaml"}
MARKER = re.compile(r"<!--\s*docs-test:\s*(no-run|no-run-page):\s*(\S.*?)\s*-->")
FENCE = re.compile(r"^```(\S*)")
LANGUAGES = {"python": "python", "py": "python", "sh": "sh", "bash": "sh", "shell": "sh", "console": "sh"}


@dataclass
class Block:
    page: Path
    line: int          # 1-based line of the opening fence
    language: str      # "python" or "sh"
    code: str
    no_run: str | None  # why not, if marked

    def __str__(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def pages() -> list[Path]:
    found = [REPO / "README.md", *sorted(REPO.glob("crates/*/README.md")), *sorted((REPO / "docs").rglob("*.md"))]
    return [p for p in found if p.is_file()]


def blocks(page: Path) -> list[Block]:
    """The Python and shell blocks of ``page`` (other languages and blocks
    without an info string, which show output, are not code to run)."""
    out: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    page_reason: str | None = None
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            mark = MARKER.search(lines[i])
            if mark and mark.group(1) == "no-run-page":
                page_reason = mark.group(2)
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        language = LANGUAGES.get(m.group(1).lower())
        if language is not None:
            before = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
            mark = MARKER.search(before)
            reason = mark.group(2) if mark and mark.group(1) == "no-run" else page_reason
            out.append(Block(page, start + 1, language, "\n".join(lines[start + 1:j]) + "\n", reason))
        i = j + 1
    return out


ALL = [b for p in pages() for b in blocks(p)]
PYTHON_PAGES = sorted({b.page for b in ALL if b.language == "python" and b.no_run is None})


def test_the_blocks_are_found_and_few_are_marked_not_to_run() -> None:
    """The parser finds the blocks the pages hold (a page whose fences it
    missed would pass by running nothing), and what is not run is few and
    says why."""
    assert len([b for b in ALL if b.language == "python"]) >= 6
    assert len([b for b in ALL if b.language == "sh"]) >= 5
    names = {str(p.relative_to(REPO)) for p in PYTHON_PAGES}
    assert {"README.md", "crates/fieldstore-py/README.md", "docs/arrays.md"} <= names, names
    skipped = [b for b in ALL if b.no_run is not None]

    def recipes(b) -> bool:
        # The page of benchmark recipes and the dated records of earlier
        # runs (docs/experiments/): release builds, minutes to hours each.
        return b.page.name == "benchmarks.md" or b.page.parent.name == "experiments"

    others = [b for b in skipped if not recipes(b)]
    # Single blocks elsewhere.
    assert len({b.page for b in others}) <= 3, sorted(map(str, others))
    assert len(others) <= 5, sorted(map(str, others))
    for b in skipped:
        assert len(b.no_run or "") >= 10, f"{b}: say why it does not run"


def test_python_blocks_not_run_still_compile() -> None:
    for b in ALL:
        if b.language == "python":
            compile(b.code, str(b), "exec")


# ---- the data the blocks find -------------------------------------------

def write_grib(path: Path, specs: list[tuple[str, list[tuple[str, object]], int]]) -> None:
    eccodes = need("eccodes")
    with open(path, "wb") as out:
        for i, (sample, keys, points) in enumerate(specs):
            h = eccodes.codes_grib_new_from_samples(sample)
            try:
                for k, v in keys:
                    eccodes.codes_set(h, k, v)
                eccodes.codes_set_values(h, 280.0 + 10.0 * np.sin(np.arange(points) * 0.01 + i))
                out.write(eccodes.codes_get_message(h))
            finally:
                eccodes.codes_release(h)


def forecast(path: Path) -> None:
    base = [("bitsPerValue", 16), ("dataDate", 20231201), ("dataTime", 1200), ("type", "fc")]
    specs = []
    for step in (0, 6, 12):
        specs.append(("regular_ll_sfc_grib1", [*base, ("stepRange", str(step))], 496))
        for level in (1000, 850, 500):
            specs.append(("regular_ll_pl_grib1", [*base, ("stepRange", str(step)), ("paramId", 130),
                                                  ("level", level)], 496))
    write_grib(path, specs)


def analysis(path: Path) -> None:
    grid = [("Ni", 240), ("Nj", 121), ("iDirectionIncrementInDegrees", 1.5),
            ("jDirectionIncrementInDegrees", 1.5), ("latitudeOfFirstGridPointInDegrees", 90.0),
            ("latitudeOfLastGridPointInDegrees", -90.0), ("longitudeOfFirstGridPointInDegrees", 0.0),
            ("longitudeOfLastGridPointInDegrees", 358.5)]
    specs = []
    for date in (20240101, 20240102):
        for time in (0, 600, 1200, 1800):
            for param in (130, 131):
                for level in (1000, 925, 850, 700, 500, 300):
                    specs.append(("regular_ll_pl_grib1", [
                        ("bitsPerValue", 16), *grid, ("dataDate", date), ("dataTime", time), ("type", "an"),
                        ("stepRange", "0"), ("paramId", param), ("level", level)], 121 * 240))
    write_grib(path, specs)


@pytest.fixture(scope="module")
def grib_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("docs-grib")
    forecast(d / "forecast.grib")
    analysis(d / "analysis.grib")
    return d


# ---- running a page's blocks --------------------------------------------

DRIVER = r"""
import json, sys, traceback
blocks = json.load(open(sys.argv[1]))
scope = {"__name__": "__main__"}
for where, code in blocks:
    try:
        exec(compile(code, where, "exec"), scope)
    except BaseException:
        print(f"BLOCK FAILED: {where}", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
print("ran", len(blocks), "blocks")
"""


def prepared(tmp_path: Path, grib_dir: Path) -> tuple[Path, dict[str, str]]:
    """A working directory with the GRIB files, the store holding both,
    its config file and an empty root; the environment naming the store."""
    import fieldstore

    work = tmp_path / "work"
    work.mkdir()
    for name in ("forecast.grib", "analysis.grib"):
        (work / name).write_bytes((grib_dir / name).read_bytes())
    store = tmp_path / "store"
    store.mkdir()
    (tmp_path / "fs").mkdir()
    (tmp_path / "fieldstore.yaml").write_text(
        f"type: local\nengine: toc\nschema: {SCHEMA}\nspaces:\n- handler: Default\n  roots:\n  - path: {store}\n")
    fdb = fieldstore.FDB(tmp_path / "fieldstore.yaml")
    for name in ("forecast.grib", "analysis.grib"):
        fdb.archive((work / name).read_bytes())
    fdb.flush()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIELDSTORE_")}
    env["FIELDSTORE_CONFIG"] = str(tmp_path / "fieldstore.yaml")
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    return work, env


def placeholders(code: str, tmp_path: Path) -> str:
    for placeholder, name in PLACEHOLDERS.items():
        code = code.replace(placeholder, str(tmp_path / name))
    return code


@pytest.mark.parametrize("page", PYTHON_PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_the_python_blocks_of_a_page_run(page: Path, tmp_path: Path, grib_dir: Path) -> None:
    need("xarray")
    need("earthkit.data")
    need("zarr")
    run = [b for b in blocks(page) if b.language == "python" and b.no_run is None]
    assert run
    work, env = prepared(tmp_path, grib_dir)
    spec = tmp_path / "blocks.json"
    spec.write_text(json.dumps([(str(b), placeholders(b.code, tmp_path)) for b in run]))
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    done = subprocess.run([sys.executable, str(driver), str(spec)], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"{page}:\n{done.stderr[-4000:]}"
    assert f"ran {len(run)} blocks" in done.stdout
