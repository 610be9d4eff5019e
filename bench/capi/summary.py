"""Summarise bench/capi/run.sh's JSON lines: per field size and phase, the
median fields/s of FDB5's library, fieldstore's library and fieldstore's Rust
handle, the fieldstore/FDB5 ratio, and the C API's cost over the Rust handle
(median wall and CPU time, C over Rust, minus one).

    python3 bench/capi/summary.py results.jsonl [PLOT.png]
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

# With a second argument: a PNG of the same medians (log scale), one panel
# per field size, each system in its own colour (needs matplotlib).
if len(sys.argv) > 2:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    impls = [
        ("fdb5", "FDB5 (libfdb5)", "#d62728"),
        ("fieldstore-c", "fieldstore (C API)", "#1f77b4"),
        ("fieldstore-rust", "fieldstore (Rust)", "#2ca02c"),
    ]
    sizes = sorted({r["size"] for r in rows})
    fig, axes = plt.subplots(1, len(sizes), figsize=(6.5 * len(sizes), 4.2), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        shown = [p for p in phases if all((size, p, i) in runs for i, _, _ in impls)]
        width = 0.8 / len(impls)
        for k, (impl, name, colour) in enumerate(impls):
            values = [statistics.median(r["fields_per_s"] for r in runs[(size, p, impl)]) for p in shown]
            bars = ax.bar([x + (k - 1) * width for x in range(len(shown))], values, width, label=name, color=colour)
            if impl == "fieldstore-c":
                fdb5 = [statistics.median(r["fields_per_s"] for r in runs[(size, p, "fdb5")]) for p in shown]
                for bar, v, f in zip(bars, values, fdb5):
                    ax.annotate(f"{v / f:.1f}×", (bar.get_x() + bar.get_width() / 2, v), ha="center",
                                va="bottom", fontsize=8)
        n = runs[(size, shown[0], "fdb5")][0]["fields"]
        label = f"{size // 1024} KiB" if size < 1 << 20 else f"{size >> 20} MiB"
        ax.set_title(f"{label} fields, N = {n:,} (median of {len(runs[(size, shown[0], 'fdb5')])} runs)")
        ax.set_xticks(range(len(shown)), shown)
        ax.set_yscale("log")
        ax.set_ylabel("fields/s (log)")
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[0][0].legend(loc="upper left", fontsize=8)
    fig.suptitle("fdb_c.h: FDB5's library vs fieldstore's, same C program (labels: C API / FDB5)")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    print(f"plot: {sys.argv[2]}")
