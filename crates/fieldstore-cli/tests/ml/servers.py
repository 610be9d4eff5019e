"""Shared by the ML clients' tests (scripts/test-ml-clients.sh): 48 GRIB
fields written with ecCodes, FDB5's own server (``fdb-server``, a catalogue
and a store, from the fdb5lib wheel) and ``fieldstore serve``, each given
the same fields by the same client (FDB5's ``fdb-write``), and the
``type: remote`` client config of each.

Environment: ``FIELDSTORE_BIN`` (the fieldstore binary), ``FDB5_BIN`` (the
fdb5lib wheel's ``bin``), ``FDB5_LIBS`` (its libraries' directories),
``FIELDSTORE_SCHEMA`` (ECMWF's schema)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# class=od,expver=0001,stream=oper,type=fc on a 2.5° grid, 00 UTC on two
# days, steps 0/6/12/18: t and z at 500 and 850 hPa (32), 2t and msl (16).
DATES = (20240101, 20240102)
STEPS = (0, 6, 12, 18)
PL = {"param": [130, 129], "levelist": [500, 850]}
SFC = {"param": [167, 151]}
LEAKS = ("FDB_CONFIG", "FDB5_CONFIG", "FDB_CONFIG_FILE", "FDB5_CONFIG_FILE", "FDB5_SCHEMA_FILE",
         "FDB_ROOT", "FDB5_ROOT", "FDB_ROOT_DIRECTORY")


def write_fields(path: Path) -> int:
    """The 48 fields, values varying by field; how many."""
    import eccodes

    n = 0
    with open(path, "wb") as out:
        for date in DATES:
            for step in STEPS:
                specs = [("regular_ll_pl_grib1", p, lev) for p in PL["param"] for lev in PL["levelist"]]
                specs += [("regular_ll_sfc_grib1", p, None) for p in SFC["param"]]
                for sample, param, level in specs:
                    h = eccodes.codes_grib_new_from_samples(sample)
                    for k, v in [("bitsPerValue", 16), ("Ni", 144), ("Nj", 73),
                                 ("iDirectionIncrementInDegrees", 2.5), ("jDirectionIncrementInDegrees", 2.5),
                                 ("latitudeOfFirstGridPointInDegrees", 90.0),
                                 ("latitudeOfLastGridPointInDegrees", -90.0),
                                 ("longitudeOfFirstGridPointInDegrees", 0.0),
                                 ("longitudeOfLastGridPointInDegrees", 357.5), ("dataDate", date),
                                 ("dataTime", 0), ("type", "fc"), ("stepRange", str(step)), ("paramId", param)]:
                        eccodes.codes_set(h, k, v)
                    if level is not None:
                        eccodes.codes_set(h, "level", level)
                    x = np.arange(144 * 73, dtype=float)
                    eccodes.codes_set_values(h, 250 + 20 * np.sin(x * 0.001 * (n + 1)) + param % 7)
                    out.write(eccodes.codes_get_message(h))
                    eccodes.codes_release(h)
                    n += 1
    return n


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int) -> None:
    until = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > until:
                raise RuntimeError(f"nothing listens on port {port}")
            time.sleep(0.05)


def fdb5_env(config: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LEAKS}
    env.update(LD_LIBRARY_PATH=os.environ["FDB5_LIBS"], FDB5_CONFIG_FILE=str(config), FDB_HOME=str(home))
    return env


def client_config(path: Path, port: int) -> Path:
    path.write_text(f"type: remote\nengine: remote\nstore: remote\nhost: localhost\nport: {port}\n")
    return path


@dataclass
class Side:
    """A server with the fields in it: its name and client config."""

    name: str
    config: Path


class Servers:
    """FDB5's servers and fieldstore's, each holding the 48 fields."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.children: list[subprocess.Popen] = []
        self.home = work / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.grib = work / "fields.grib"
        self.count = write_fields(self.grib)
        schema = os.environ["FIELDSTORE_SCHEMA"]
        # FDB5: a catalogue server and a store server.
        cport, sport = free_port(), free_port()
        for name, text, port in [
            ("fdb5-cat", f"type: catalogue\nengine: toc\nstore: file\nschema: {schema}\nserverPort: {cport}\n"
                         f"stores: [{{default: \"localhost:{sport}\"}}]\n", cport),
            ("fdb5-store", f"type: store\nengine: toc\nstore: file\nschema: {schema}\nserverPort: {sport}\n", sport),
        ]:
            root = work / f"{name}-root"
            root.mkdir()
            config = work / f"{name}.yaml"
            config.write_text(text + f"spaces: [{{handler: Default, roots: [{{path: {root}}}]}}]\n")
            self.start([str(Path(os.environ["FDB5_BIN"]) / "fdb-server")], fdb5_env(config, self.home))
            wait_for(port)
        self.fdb5 = Side("fdb5", client_config(work / "fdb5-client.yaml", cport))
        # fieldstore serve.
        root = work / "fs-root"
        root.mkdir()
        config = work / "serve.yaml"
        config.write_text(f"type: catalogue\nengine: toc\nstore: file\nschema: {schema}\nserverPort: 0\n"
                          f"spaces: [{{handler: Default, roots: [{{path: {root}}}]}}]\n")
        child = self.start([os.environ["FIELDSTORE_BIN"], "--config", str(config), "serve"], dict(os.environ),
                           stderr=subprocess.PIPE)
        line = child.stderr.readline().decode()
        if "listening on 127.0.0.1:" not in line:
            raise RuntimeError(f"fieldstore serve did not start: {line}")
        port = int(line.split("listening on 127.0.0.1:")[1].split()[0])
        self.fieldstore = Side("fieldstore", client_config(work / "fs-client.yaml", port))
        for side in self.sides:
            subprocess.run([str(Path(os.environ["FDB5_BIN"]) / "fdb-write"), str(self.grib)],
                           env=fdb5_env(side.config, self.home), check=True, capture_output=True)

    @property
    def sides(self) -> list[Side]:
        return [self.fdb5, self.fieldstore]

    def start(self, argv: list[str], env: dict[str, str], **kw) -> subprocess.Popen:
        child = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, **{"stderr": subprocess.DEVNULL, **kw})
        self.children.append(child)
        return child

    def stop(self) -> None:
        for c in self.children:
            c.kill()
            c.wait()
