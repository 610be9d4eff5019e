#!/usr/bin/env python3
"""Fold `perf script` call stacks and draw them as a flame graph (SVG), or print the top frames.

    perf script -i perf.data | bench/flamegraph.py --comm fieldstore-hamm --svg out.svg --title "..."
    perf script -i perf.data | bench/flamegraph.py --top 20

Self-contained (standard library only). Frames are function names as perf prints them; the
width of a box is its share of the samples, children are stacked on top of their caller.
"""
import argparse
import html
import re
import sys
from collections import defaultdict

SKIP = re.compile(r"^(\[unknown\]|0x[0-9a-f]+)$")


def clean(sym):
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
    sym = re.sub(r"::h[0-9a-f]{16}$", "", sym)          # Rust legacy-mangling hashes
    sym = sym.replace(" (inlined)", "")
    return sym


def read_stacks(lines, comm=None):
    """Yield (stack root-first, weight) from `perf script` output."""
    header, frames = None, []
    for line in list(lines) + [""]:
        line = line.rstrip("\n")
        if not line.strip():
            if header is not None and frames:
                if comm is None or header.split()[0].startswith(comm):
                    yield list(reversed(frames)), 1
            header, frames = None, []
            continue
        if header is None:
            header = line.strip()
            continue
        parts = line.strip().split(None, 1)
        if len(parts) == 2:
            sym = clean(parts[1].rsplit(" (", 1)[0])
            if not SKIP.match(sym):
                frames.append(sym)


def fold(stacks):
    folded = defaultdict(int)
    for stack, w in stacks:
        folded[tuple(stack)] += w
    return folded


def build_tree(folded):
    root = {"name": "all", "value": 0, "children": {}}
    for stack, w in folded.items():
        root["value"] += w
        node = root
        for f in stack:
            node = node["children"].setdefault(f, {"name": f, "value": 0, "children": {}})
            node["value"] += w
    return root


def colour(name):
    h = sum(ord(c) for c in name) % 60
    if name.startswith(("[k]", "__x64", "entry_", "do_", "ext4", "vfs_", "ksys_", "copy_", "_copy")):
        return f"rgb({200 + h // 2},{120 + h},{40})"
    return f"rgb({230},{90 + 2 * h},{50 + h})"


def svg(root, title, width=1200, row=16):
    total = root["value"] or 1
    boxes = []

    def walk(node, x, depth):
        w = node["value"] / total * width
        if w < 0.3:
            return
        boxes.append((x, depth, w, node))
        cx = x
        for child in sorted(node["children"].values(), key=lambda c: c["name"]):
            walk(child, cx, depth + 1)
            cx += child["value"] / total * width

    walk(root, 0.0, 0)
    depth = max(d for _, d, _, _ in boxes) + 1
    height = depth * row + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="monospace" font-size="11">',
           f'<rect width="100%" height="100%" fill="#fdfdf6"/>',
           f'<text x="4" y="16" font-size="14">{html.escape(title)} ({total} samples)</text>']
    for x, d, w, node in boxes:
        y = height - (d + 1) * row
        pct = node["value"] / total * 100
        label = node["name"]
        chars = int(w / 6.5)
        text = html.escape(label if len(label) <= chars else label[: max(0, chars - 2)] + "..")
        out.append(f'<g><title>{html.escape(label)} ({node["value"]} samples, {pct:.1f}%)</title>'
                   f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{row - 1}" fill="{colour(label)}" '
                   f'rx="2"/>' + (f'<text x="{x + 3:.2f}" y="{y + row - 4}">{text}</text>' if chars >= 3 else "")
                   + "</g>")
    out.append("</svg>")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--comm", help="only samples of this command (prefix; perf truncates to 15 chars)")
    ap.add_argument("--svg", help="write a flame graph here")
    ap.add_argument("--title", default="flame graph")
    ap.add_argument("--top", type=int, default=0, help="print the N heaviest leaf functions (self time)")
    a = ap.parse_args()
    folded = fold(read_stacks(sys.stdin, a.comm))
    if a.svg:
        with open(a.svg, "w") as f:
            f.write(svg(build_tree(folded), a.title))
    if a.top:
        self_time = defaultdict(int)
        total = sum(folded.values()) or 1
        for stack, w in folded.items():
            self_time[stack[-1] if stack else "?"] += w
        for name, w in sorted(self_time.items(), key=lambda kv: -kv[1])[: a.top]:
            print(f"{w / total * 100:6.2f}%  {name}")


if __name__ == "__main__":
    main()
