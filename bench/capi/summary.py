"""Summarise bench/capi/run.sh's JSON lines: per field size and phase, the
median fields/s of FDB5's library, fieldstore's library and fieldstore's Rust
handle, the fieldstore/FDB5 ratio, and the C API's cost over the Rust handle
(median wall and CPU time, C over Rust, minus one).

    python3 bench/capi/summary.py results.jsonl
"""

import json
import statistics
import sys
from collections import defaultdict

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
runs = defaultdict(list)
for r in rows:
    runs[(r["size"], r["phase"], r["impl"])].append(r)

phases = ["archive+flush", "list", "list+keys", "list (warm)", "retrieve"]
print(
    "| field | phase | N | FDB5 fields/s | fieldstore (C API) fields/s | fieldstore (Rust) fields/s "
    "| fieldstore / FDB5 | C API vs Rust, wall | C API vs Rust, CPU | runs |"
)
print("|---|---|---|---|---|---|---|---|---|---|")
for size in sorted({r["size"] for r in rows}):
    for phase in phases:
        med = {}
        for impl in ("fdb5", "fieldstore-c", "fieldstore-rust"):
            rs = runs.get((size, phase, impl), [])
            if rs:
                med[impl] = {
                    "fps": statistics.median(r["fields_per_s"] for r in rs),
                    "wall": statistics.median(r["seconds"] for r in rs),
                    "cpu": statistics.median(r["cpu_seconds"] for r in rs),
                    "n": len(rs),
                    "fields": rs[0]["fields"],
                    "lo": min(r["fields_per_s"] for r in rs),
                    "hi": max(r["fields_per_s"] for r in rs),
                }
        if len(med) < 3:
            continue
        f, c, r = med["fdb5"], med["fieldstore-c"], med["fieldstore-rust"]
        label = f"{size // 1024} KiB" if size < 1 << 20 else f"{size >> 20} MiB"
        print(
            f"| {label} | {phase} | {c['fields']} | {f['fps']:,.0f} ({f['lo']:,.0f}–{f['hi']:,.0f}) "
            f"| {c['fps']:,.0f} ({c['lo']:,.0f}–{c['hi']:,.0f}) | {r['fps']:,.0f} ({r['lo']:,.0f}–{r['hi']:,.0f}) "
            f"| **{c['fps'] / f['fps']:.1f}×** | {100 * (c['wall'] / r['wall'] - 1):+.1f} % "
            f"| {100 * (c['cpu'] / r['cpu'] - 1):+.1f} % | {c['n']} |"
        )
