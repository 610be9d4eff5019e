#!/usr/bin/env python3
"""Write the GRIB fields the extraction tests compare against ecCodes
(tests/fixtures/grib/extract/): simple and CCSDS packing, GRIB1 and GRIB2,
with and without a bitmap, with a decimal scale factor, a constant field
(0 bits per value), and fields large enough for several CCSDS reference
sample intervals. Values are deterministic (no random seed to keep).

Needs the Python `eccodes` and `numpy` packages (the FDB5 venv
`target/fdb5/venv` has both). Usage:

    target/fdb5/venv/bin/python crates/fieldstore-grib/scripts/make_extract_fixtures.py tests/fixtures/grib/extract
"""
import os
import sys

import eccodes
import numpy as np


def field(edition, packing, ni, nj, bits=16, bitmap=False, decimal=None, constant=False):
    sample = "regular_ll_sfc_grib1" if edition == 1 else "regular_ll_sfc_grib2"
    h = eccodes.codes_grib_new_from_samples(sample)
    try:
        eccodes.codes_set(h, "Ni", ni)
        eccodes.codes_set(h, "Nj", nj)
        eccodes.codes_set(h, "latitudeOfFirstGridPointInDegrees", 60.0)
        eccodes.codes_set(h, "longitudeOfFirstGridPointInDegrees", -10.0)
        eccodes.codes_set(h, "latitudeOfLastGridPointInDegrees", 60.0 - (nj - 1) * 0.25)
        eccodes.codes_set(h, "longitudeOfLastGridPointInDegrees", -10.0 + (ni - 1) * 0.25)
        eccodes.codes_set(h, "iDirectionIncrementInDegrees", 0.25)
        eccodes.codes_set(h, "jDirectionIncrementInDegrees", 0.25)
        n = ni * nj
        i = np.arange(n, dtype=np.float64)
        if constant:
            values = np.full(n, 273.15)
        else:
            values = 250.0 + 30.0 * np.sin(i / 97.0) + 5.0 * np.cos(i / 13.0) + (i % 7) * 0.01
        if bitmap:
            eccodes.codes_set(h, "bitmapPresent", 1)
            eccodes.codes_set(h, "missingValue", 9999.0)
            values[(np.arange(n) % 11 == 3) | ((np.arange(n) // 50) % 9 == 4)] = 9999.0
        eccodes.codes_set(h, "packingType", packing)
        eccodes.codes_set(h, "bitsPerValue", bits)
        if decimal is not None:
            eccodes.codes_set(h, "decimalScaleFactor", decimal)
        eccodes.codes_set_values(h, values)
        return eccodes.codes_get_message(h)
    finally:
        eccodes.codes_release(h)


FIXTURES = {
    "simple-g1.grib": dict(edition=1, packing="grid_simple", ni=40, nj=25, bits=16),
    "simple-g1-bitmap.grib": dict(edition=1, packing="grid_simple", ni=40, nj=25, bits=13, bitmap=True),
    "simple-g1-constant.grib": dict(edition=1, packing="grid_simple", ni=40, nj=25, constant=True),
    "simple-g2.grib": dict(edition=2, packing="grid_simple", ni=40, nj=25, bits=16),
    "simple-g2-bitmap.grib": dict(edition=2, packing="grid_simple", ni=40, nj=25, bits=11, bitmap=True),
    "simple-g2-decimal.grib": dict(edition=2, packing="grid_simple", ni=40, nj=25, bits=24, decimal=2),
    "simple-g2-constant.grib": dict(edition=2, packing="grid_simple", ni=40, nj=25, constant=True),
    "ccsds-g2.grib": dict(edition=2, packing="grid_ccsds", ni=160, nj=100, bits=16),
    "ccsds-g2-bitmap.grib": dict(edition=2, packing="grid_ccsds", ni=160, nj=100, bits=12, bitmap=True),
    "ccsds-g2-decimal.grib": dict(edition=2, packing="grid_ccsds", ni=160, nj=100, bits=24, decimal=1),
    "ccsds-g2-constant.grib": dict(edition=2, packing="grid_ccsds", ni=40, nj=25, constant=True),
    "complex-g2.grib": dict(edition=2, packing="grid_complex", ni=40, nj=25, bits=16),
}


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, spec in FIXTURES.items():
        msg = field(**spec)
        with open(os.path.join(out, name), "wb") as f:
            f.write(msg)
        h = eccodes.codes_new_from_message(msg)
        print(name, len(msg), "bytes", eccodes.codes_get(h, "packingType"),
              "bpv", eccodes.codes_get(h, "bitsPerValue"),
              "D", eccodes.codes_get(h, "decimalScaleFactor"),
              "bitmap", eccodes.codes_get(h, "bitmapPresent"))
        eccodes.codes_release(h)
    return 0


if __name__ == "__main__":
    sys.exit(main())
