"""What every FDB5 side script does before libfdb5 is loaded: FDB_HOME in
the test's work directory, and no system-wide FDB configuration (config,
schema or root variables) leaking in."""
import os
from pathlib import Path

# The variables through which libfdb5 would find a configuration, a schema
# or a root other than the test's.
LEAKS = ("FDB_CONFIG", "FDB5_CONFIG", "FDB_CONFIG_FILE", "FDB5_CONFIG_FILE", "FDB5_SCHEMA_FILE",
         "FDB_ROOT", "FDB5_ROOT", "FDB_ROOT_DIRECTORY")


def isolate(workdir: str) -> Path:
    """Create and set `workdir`/fdbhome as FDB_HOME, unset the others; the
    work directory."""
    work = Path(workdir)
    home = work / "fdbhome"
    home.mkdir(parents=True, exist_ok=True)
    os.environ["FDB_HOME"] = str(home)
    for var in LEAKS:
        os.environ.pop(var, None)
    return work


def one_root_config(schema: str, root: Path) -> dict:
    """FDB5's config of a local TOC store on the one root `root` (made),
    with the schema file `schema`."""
    root.mkdir(parents=True, exist_ok=True)
    return {
        "type": "local",
        "engine": "toc",
        "schema": str(Path(schema).resolve()),
        "spaces": [{"handler": "Default", "roots": [{"path": str(root)}]}],
    }
