#!/usr/bin/env python3
"""Write the GRIB fields of the Polytope comparison with ecCodes (the Python
binding of the ecCodes wheel): one file, and the grid hash
(`md5GridSection`) of each grid as JSON on standard output.

- expver 0001, a regular 5° lat-lon grid (72 x 36: Polytope's `regular`
  mapper of resolution 18, latitudes 90 to -85), GRIB2 simple packing:
  surface 2t (167) and tp (228, with a bitmap: missing values), levtype pl
  t (130) on 1000/850/500 hPa with CCSDS packing; dates 20240101 and
  20240102, steps 0 to 12 by 3.
- expver 0002, an octahedral reduced Gaussian grid O32 (5,248 points),
  CCSDS packing (2t with a bitmap), the same dates and steps; pl t on
  1000/850/500 with simple packing.

Values are smooth functions of position, step, level and date, so that
every field differs.

Usage: make_fields.py OUT.grib
"""
import json
import sys

import eccodes
import numpy as np

DATES = [20240101, 20240102]
STEPS = [0, 3, 6, 9, 12]
LEVELS = [1000, 850, 500]


def octahedral_pl(n):
    north = [20 + 4 * i for i in range(n)]
    return north + north[::-1]


def regular(h):
    for k, v in [("Ni", 72), ("Nj", 36), ("latitudeOfFirstGridPointInDegrees", 90.0),
                 ("longitudeOfFirstGridPointInDegrees", 0.0),
                 ("latitudeOfLastGridPointInDegrees", -85.0),
                 ("longitudeOfLastGridPointInDegrees", 355.0),
                 ("iDirectionIncrementInDegrees", 5.0), ("jDirectionIncrementInDegrees", 5.0)]:
        eccodes.codes_set(h, k, v)


def new(sample, grid, expver, levtype, packing):
    h = eccodes.codes_grib_new_from_samples(sample)
    for k, v in [("setLocalDefinition", 1), ("localDefinitionNumber", 1), ("class", "od"),
                 ("stream", "oper"), ("type", "fc"), ("expver", expver)]:
        eccodes.codes_set(h, k, v)
    if grid == "regular":
        regular(h)
    if levtype == "pl":
        eccodes.codes_set(h, "typeOfFirstFixedSurface", 100)
        eccodes.codes_set(h, "scaleFactorOfFirstFixedSurface", 0)
        eccodes.codes_set(h, "typeOfSecondFixedSurface", 255)
    eccodes.codes_set(h, "packingType", packing)
    eccodes.codes_set(h, "bitsPerValue", 16)
    return h


def main() -> int:
    out = sys.argv[1]
    hashes = {}
    with open(out, "wb") as f:
        for expver, grid, sample, sfc_packing, pl_packing in [
            ("0001", "regular", "regular_ll_sfc_grib2", "grid_simple", "grid_ccsds"),
            ("0002", "octahedral", "reduced_gg_pl_32_grib2", "grid_ccsds", "grid_simple"),
        ]:
            for levtype, packing, params, levels in [
                ("sfc", sfc_packing, [167, 228], [None]),
                ("pl", pl_packing, [130], LEVELS),
            ]:
                h = new(sample, grid, expver, levtype, packing)
                if grid == "octahedral":
                    eccodes.codes_set_array(h, "pl", octahedral_pl(32))
                    points = sum(octahedral_pl(32))
                else:
                    points = 72 * 36
                eccodes.codes_set_values(h, np.zeros(points))
                lats = eccodes.codes_get_array(h, "latitudes")
                lons = eccodes.codes_get_array(h, "longitudes")
                hashes[grid] = eccodes.codes_get(h, "md5GridSection")
                for date in DATES:
                    for step in STEPS:
                        for param in params:
                            for level in levels:
                                eccodes.codes_set(h, "date", date)
                                eccodes.codes_set(h, "time", 0)
                                eccodes.codes_set(h, "step", step)
                                eccodes.codes_set(h, "paramId", param)
                                if level is not None:
                                    eccodes.codes_set(h, "scaledValueOfFirstFixedSurface", level * 100)
                                v = (250.0 + 30.0 * np.cos(np.radians(lats)) + 5.0 * np.sin(np.radians(2 * lons))
                                     + 0.7 * step + (date - DATES[0]) * 1.5 + param * 0.01
                                     + (0 if level is None else level / 100.0))
                                if param == 228 or (grid == "octahedral" and param == 167):
                                    # a bitmap: the points south of 60 S and a band of longitudes
                                    eccodes.codes_set(h, "bitmapPresent", 1)
                                    missing = (lats < -60) | ((lons > 100) & (lons < 130))
                                    v = np.where(missing, 9999.0, v)
                                    eccodes.codes_set(h, "missingValue", 9999.0)
                                eccodes.codes_set_values(h, v)
                                f.write(eccodes.codes_get_message(h))
                eccodes.codes_release(h)
    json.dump(hashes, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
