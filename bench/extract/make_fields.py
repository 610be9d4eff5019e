#!/usr/bin/env python3
"""Write N CCSDS-packed GRIB2 fields on a regular 0.25° grid (1440 x 721 =
1,038,240 points) with ecCodes, one file: the fields of the extraction
benchmark (bench/extract/run.sh). Steps 0..N-1 of one forecast; the values
are a smooth pattern plus deterministic noise, different per step, packed on
16 bits (ECMWF's CCSDS defaults: block size 32, RSI 128).

Usage: make_fields.py OUT.grib N [NI NJ]
"""
import sys

import eccodes
import numpy as np


def main() -> int:
    if len(sys.argv) not in (3, 5):
        print(__doc__, file=sys.stderr)
        return 2
    out, n = sys.argv[1], int(sys.argv[2])
    ni, nj = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) == 5 else (1440, 721)
    h = eccodes.codes_grib_new_from_samples("regular_ll_sfc_grib2")
    for k, v in [
        ("setLocalDefinition", 1), ("localDefinitionNumber", 1), ("class", "od"),
        ("stream", "oper"), ("type", "fc"), ("expver", "0001"),
        ("date", 20240101), ("time", 0), ("paramId", 167),
        ("Ni", ni), ("Nj", nj),
        ("latitudeOfFirstGridPointInDegrees", 90.0), ("longitudeOfFirstGridPointInDegrees", 0.0),
        ("latitudeOfLastGridPointInDegrees", 90.0 - (nj - 1) * 180.0 / (nj - 1)),
        ("longitudeOfLastGridPointInDegrees", (ni - 1) * 360.0 / ni),
        ("iDirectionIncrementInDegrees", 360.0 / ni), ("jDirectionIncrementInDegrees", 180.0 / (nj - 1)),
        ("packingType", "grid_ccsds"), ("bitsPerValue", 16),
    ]:
        eccodes.codes_set(h, k, v)
    lat = np.repeat(np.linspace(90, -90, nj), ni)
    lon = np.tile(np.arange(ni) * 360.0 / ni, nj)
    base = 288.0 - 40.0 * np.abs(np.sin(np.radians(lat))) + 5.0 * np.cos(np.radians(3 * lon))
    rng = np.random.default_rng(1)
    noise = rng.normal(0.0, 0.5, base.size)
    with open(out, "wb") as f:
        for step in range(n):
            eccodes.codes_set(h, "step", step)
            eccodes.codes_set_values(h, base + 3.0 * np.sin(step / 7.0 + np.radians(lon)) + np.roll(noise, step * 997))
            f.write(eccodes.codes_get_message(h))
    eccodes.codes_release(h)
    return 0


if __name__ == "__main__":
    sys.exit(main())
