#!/usr/bin/env python3
"""The table of bench/gribjump/run.sh from its WORK directory
(results.jsonl, polytope-oracle.json, polytope-ours.json), as Markdown.

Usage: summary.py WORK
"""
import json
import math
import sys
from pathlib import Path


def main() -> int:
    work = Path(sys.argv[1])
    rows = [json.loads(line) for line in (work / "results.jsonl").read_text().splitlines() if line.startswith("{")]
    by = {(r.get("side"), r["what"]): r for r in rows}
    a = by[(None, "archive")]
    print(f"archive: FDB5 {a['fdb5_s']} s + gribjump-scan {a['gribjump_scan_s']} s; fieldstore {a['fieldstore_s']} s "
          "(jump info on first extraction)\n")
    print("| pygribjump (same client) | GribJump 0.13 fields/s | fieldstore fields/s | fieldstore ÷ GribJump | same values |")
    print("|---|---|---|---|---|")
    for what in ("series_1_point", "series_1_point_single", "series_100_point_region", "series_10000_range"):
        o, f = by[("oracle", what)], by[("ours", what)]
        same = math.isclose(o["checksum"], f["checksum"], rel_tol=0, abs_tol=0) and o["fields"] == f["fields"]
        print(f"| {what} ({o['fields']} fields) | {o['fields_per_s']:,.0f} | {f['fields_per_s']:,.0f} | "
              f"{f['fields_per_s'] / o['fields_per_s']:.1f}× | {'yes' if same else 'NO'} |")
    o, f = by[("oracle", "one_point_one_field")], by[("ours", "one_point_one_field")]
    print(f"| one point of one field, p50 (p90) | {o['p50_ms']} ms ({o['p90_ms']}) | {f['p50_ms']} ms ({f['p90_ms']}) | "
          f"{o['p50_ms'] / f['p50_ms']:.1f}× | |")
    po = json.loads((work / "polytope-oracle.json").read_text())
    pf = json.loads((work / "polytope-ours.json").read_text())
    print("\n| Polytope (polytope-mars 0.3.14) | GribJump: wall / in library | fieldstore: wall / in library | "
          "wall ÷ | in library ÷ | same CoverageJSON |")
    print("|---|---|---|---|---|---|")
    for name, o in po.items():
        f = pf[name]
        if "wall_s" not in o or "wall_s" not in f:
            print(f"| {name} | {o.get('error', '')[:60]} | {f.get('error', '')[:60]} | | | |")
            continue
        same = o.get("covjson") == f.get("covjson")
        print(f"| {name} | {o['wall_s'] * 1e3:,.1f} / {o['library_s'] * 1e3:,.1f} ms | "
              f"{f['wall_s'] * 1e3:,.1f} / {f['library_s'] * 1e3:,.1f} ms | {o['wall_s'] / f['wall_s']:.2f}× | "
              f"{o['library_s'] / f['library_s']:.1f}× | {'yes' if same else 'NO'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
