#!/usr/bin/env python3
"""Write a 1 MiB GRIB2 field like the template FDB5 was measured with
(shared/docs/reference/fdb5-measured.md): ecCodes' regular_ll_pl_grib2
sample, ECMWF local section (MARS labelling), an ensemble member
(stream=enfo, type=pf, number=1), 1024 x 512 grid points packed on 16 bits,
non-constant values so that the data section is full size.

Needs the Python `eccodes` and `numpy` packages (e.g. the FDB5 venv:
`pip install eccodes numpy`). Usage:

    python3 make_bench_template.py OUT.grib [NI NJ]
    FIELDSTORE_GRIB_BENCH_FILE=OUT.grib cargo bench -p fieldstore-grib

The file is not committed (1 MiB of noise does not compress).
"""
import sys

import eccodes
import numpy as np


def main() -> int:
    if len(sys.argv) not in (2, 4):
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    ni, nj = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) == 4 else (1024, 512)
    h = eccodes.codes_grib_new_from_samples("regular_ll_pl_grib2")
    try:
        settings = [
            ("setLocalDefinition", 1),
            ("localDefinitionNumber", 1),
            ("class", "od"),
            ("stream", "enfo"),
            ("type", "pf"),
            ("expver", "0001"),
            ("productDefinitionTemplateNumber", 1),
            ("number", 1),
            ("numberOfForecastsInEnsemble", 51),
            ("Ni", ni),
            ("Nj", nj),
            ("latitudeOfFirstGridPointInDegrees", 90.0),
            ("latitudeOfLastGridPointInDegrees", -90.0),
            ("longitudeOfFirstGridPointInDegrees", 0.0),
            ("longitudeOfLastGridPointInDegrees", 360.0 - 360.0 / ni),
            ("iDirectionIncrementInDegrees", 360.0 / ni),
            ("jDirectionIncrementInDegrees", 180.0 / (nj - 1)),
            ("bitsPerValue", 16),
        ]
        for key, value in settings:
            if isinstance(value, str):
                eccodes.codes_set_string(h, key, value)
            else:
                eccodes.codes_set(h, key, value)
        values = np.random.default_rng(1).uniform(200.0, 300.0, ni * nj)
        eccodes.codes_set_values(h, values)
        with open(out, "wb") as f:
            eccodes.codes_write(h, f)
        print(f"{out}: {eccodes.codes_get(h, 'totalLength')} bytes, {ni * nj} values")
    finally:
        eccodes.codes_release(h)
    return 0


if __name__ == "__main__":
    sys.exit(main())
