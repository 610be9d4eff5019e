#!/usr/bin/env python3
"""The extraction benchmark's table (bench/extract/run.sh): GribJump's and
fieldstore's JSON lines side by side, with the ratios issue 29 asks for.

Usage: summary.py GRIBJUMP.jsonl FIELDSTORE.jsonl
"""
import json
import sys


def load(path):
    return {r["what"]: r for r in (json.loads(l) for l in open(path) if l.startswith("{"))}


def main() -> int:
    gj, fs = load(sys.argv[1]), load(sys.argv[2])
    print("| extraction | GribJump 0.13 fields/s | fieldstore fields/s | fieldstore / GribJump | bytes read / fields' bytes |")
    print("|---|---|---|---|---|")
    for what in ["series_1_point", "series_100_point_region", "series_10000_range"]:
        g, f = gj.get(what), fs[what]
        ratio = f"{f['fields_per_s'] / g['fields_per_s']:.1f}×" if g else "—"
        same = "" if not g or g["value0"] == f["value0"] else " (values differ!)"
        print(f"| {what} ({f['fields']} fields) | {g['fields_per_s'] if g else '—'} | {f['fields_per_s']} | {ratio}{same} "
              f"| {100 * f['bytes_read'] / f['field_bytes']:.3f} % |")
    w = fs["series_1_point_whole_field_decode"]
    print(f"\nOne point over {w['fields']} fields by decoding whole fields (retrieve + ecCodes, as the array view): "
          f"{w['fields_per_s']} fields/s; extraction is {fs['series_1_point']['fields_per_s'] / w['fields_per_s']:.0f}× faster.")
    o, go = fs["one_point_one_field"], gj.get("one_point_one_field", {})
    print(f"One point of one field: fieldstore p50 {o['p50_ms']} ms, p90 {o['p90_ms']} ms, p99 {o['p99_ms']} ms; "
          f"GribJump p50 {go.get('p50_ms', '—')} ms, p90 {go.get('p90_ms', '—')} ms.")
    if "eager_p50_ms" in o:
        print(f"Interleaved, jump info kept on first extraction (annotations) / built at archive: one point of one field "
              f"p50 {o['p50_ms']} / {o['eager_p50_ms']} ms, p90 {o['p90_ms']} / {o['eager_p90_ms']} ms; one-point series "
              f"{o['series_fields_per_s']} / {o['eager_series_fields_per_s']} fields/s.")
    a, ga = fs["archive"], gj.get("gribjump_archive", {})
    print(f"Archive of {a['fields']} fields: fieldstore {a['seconds_without']} s by default (no jump info at archive), "
          f"{a['seconds_with_jump_info']} s with jump info built at archive "
          f"({100 * (a['seconds_with_jump_info'] / a['seconds_without'] - 1):.0f} % more); "
          f"index {a['index_bytes_without']} bytes by default, {a['index_bytes_with']} with it "
          f"({100 * (a['index_bytes_with'] / a['index_bytes_without'] - 1):.0f} % more). "
          f"FDB5 archive {ga.get('fdb5_archive_seconds', '—')} s, gribjump-scan {ga.get('scan_seconds', '—')} s.")
    if "first_extraction" in fs:
        f1 = fs["first_extraction"]
        print(f"First extraction (one point, every field; jump info built and kept): {f1['seconds']} s "
              f"({f1['fields'] / f1['seconds']:.0f} fields/s, {100 * f1['bytes_read'] / f1['field_bytes']:.1f} % of the fields' bytes read); "
              f"the next one {f1['second_seconds']} s; index after it {f1['index_bytes_after']} bytes "
              f"({100 * (f1['index_bytes_after'] / a['index_bytes_without'] - 1):.0f} % more than at archive).")
    if "small_beside_large" in fs:
        s = fs["small_beside_large"]
        print(f"5-field extraction: p50 {s['small_alone_p50_ms']} ms alone, p50 {s['small_beside_p50_ms']} ms / "
              f"p90 {s['small_beside_p90_ms']} ms / max {s['small_beside_max_ms']} ms ({s['small_runs_beside']} runs) while a "
              f"{s['large_fields']}-field extraction ran beside it ({s['large_seconds']} s).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
