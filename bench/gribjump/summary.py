#!/usr/bin/env python3
"""The tables of bench/gribjump/run.sh from its WORK directory
(results.jsonl: the archive times and interleaved.py's rows;
polytope-oracle.json, polytope-ours.json: the CoverageJSON compared), as
Markdown.

Usage: summary.py WORK
"""
import json
import sys
from pathlib import Path

RAW = {
    "series_1_point": "one point, a request a field (Polytope's way)",
    "series_1_point_single": "one point, one request",
    "series_100_point_region": "100-point region (10 ranges of 10)",
    "series_10000_range": "10,000-index range",
    "one_point_one_field": "one point of one field (median of 25)",
}


def q(v):
    """median [p25–p75]"""
    return f"{v[1]:,.1f} [{v[0]:,.1f}–{v[2]:,.1f}]"


def r(v):
    return f"{v[1]:.2f}× [{v[0]:.2f}–{v[2]:.2f}]"


def main() -> int:
    work = Path(sys.argv[1])
    rows = [json.loads(line) for line in (work / "results.jsonl").read_text().splitlines() if line.startswith("{")]
    a = next(x for x in rows if x["what"] == "archive")
    print(f"archive: FDB5 {a['fdb5_s']} s + gribjump-scan {a['gribjump_scan_s']} s; fieldstore {a['fieldstore_s']} s "
          "(jump info on first extraction)\n")
    po = json.loads((work / "polytope-oracle.json").read_text())
    pf = json.loads((work / "polytope-ours.json").read_text())
    measured = [x for x in rows if "reps" in x]
    for heap in ("as loaded", "same"):
        part = [x for x in measured if x.get("heap", "as loaded") == heap]
        if part:
            table(part, heap, po, pf)
    return 0


def table(measured, heap, po, pf):
    print(f"{measured[0]['reps']} repetitions, interleaved; median [25th–75th percentile]; ms; "
          + ("each process's malloc state as its library leaves it" if heap == "as loaded" else
             "both processes in the same malloc state (FIELDSTORE_BENCH_HEAP_BUMP)") + "\n")
    print("| case | wall: GribJump | fieldstore | ÷ | in library: GribJump → fieldstore | ÷ | CPU ÷ | "
          "fieldstore slower (wall, CPU) | client's own time | ÷ ceiling | same answers |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for x in measured:
        name = RAW.get(x["what"], f"Polytope: {x['what']}")
        same = x["same_values"]
        if x["what"] in po:
            same = same and po[x["what"]].get("covjson") == pf[x["what"]].get("covjson") and "covjson" in po[x["what"]]
        print(f"| {name} | {q(x['gribjump_wall_ms'])} | {q(x['fieldstore_wall_ms'])} | {r(x['ratio_wall'])} | "
              f"{x['gribjump_library_ms'][1]:,.1f} → {x['fieldstore_library_ms'][1]:,.1f} | {r(x['ratio_library'])} | "
              f"{r(x['ratio_cpu'])} | {x['fieldstore_slower_wall_reps']}, {x['fieldstore_more_cpu_reps']} of {x['reps']} | "
              f"{x['fieldstore_client_ms'][1]:,.1f} | {x['ratio_wall_ceiling']:.1f}× | {'yes' if same else 'NO'} |")
    print()


if __name__ == "__main__":
    sys.exit(main())
