#!/usr/bin/env python3
"""Draws docs/bench.svg, the plot of docs/performance.md: librate against its peers in
each language, from the benchmarks' own output. Standard library only; writes plain SVG.

Inputs, under docs/bench/ (each file's `# command:` line says how to make it again, and
scripts/bench_data.py reads them):

  rust.txt    cargo bench --bench gcra, criterion's bencher format
  go.txt      go test -bench '^BenchmarkAllow$' in bindings/go/peers
  python.txt  bindings/python/bench.py

Usage: scripts/plot-bench.py [--data docs/bench] [--out docs/bench.svg]
(scripts/perf-page.py draws it too, with the page.) Each plotted value is the median of
the runs found in its file. A value the output lacks stops the script with the name it
looked for, so a renamed benchmark cannot go unnoticed.
"""

from __future__ import annotations

import argparse
from html import escape
from pathlib import Path

import bench_data

# (panel title, file, [(case, [(bar label, benchmark name in the file)])])
PANELS = [
    (
        "Rust: librate vs governor 0.10 (criterion, ns per check, clock included)",
        "rust.txt",
        [
            (
                "allowing, busy bucket",
                [
                    ("librate try_acquire", "acquire_allow/gcra_busy/try_acquire"),
                    ("governor check", "acquire_allow/gcra_busy/governor_check"),
                ],
            ),
            (
                "allowing, idle bucket",
                [
                    ("librate try_acquire", "acquire_allow/gcra_idle/try_acquire"),
                    ("governor check", "acquire_allow/gcra_idle/governor_check"),
                ],
            ),
            (
                "denying",
                [
                    ("librate try_acquire", "acquire_deny/gcra_drained/try_acquire"),
                    ("governor check", "acquire_deny/gcra_drained/governor_check"),
                ],
            ),
        ],
    ),
    (
        "Go: librate vs golang.org/x/time/rate (go test -bench, ns per Allow)",
        "go.txt",
        [
            (
                f"{state}",
                [
                    ("librate Allow", f"BenchmarkAllow/{state}/librate"),
                    ("x/time/rate Allow", f"BenchmarkAllow/{state}/xrate"),
                ],
            )
            for state in ("busy", "idle", "deny")
        ],
    ),
    (
        "Python: librate vs limits and pyrate-limiter (bench.py, ns per check)",
        "python.txt",
        [
            (
                keys,
                [
                    ("librate try_acquire", f"librate try_acquire, gcra | {keys}"),
                    ("limits fixed window", f"limits fixed window | {keys}"),
                    ("pyrate-limiter", f"pyrate-limiter in-memory | {keys}"),
                ],
            )
            for keys in ("1 key", "1,000 keys")
        ],
    ),
]

# One color per bar position: librate first, then its peers.
COLORS = ["#1f6feb", "#8c959f", "#b7bdc4"]


# Each file's parser (scripts/bench_data.py keeps one parser per output format).
PARSERS = {
    "rust.txt": lambda file: bench_data.criterion_bencher(file.body()),
    "go.txt": lambda file: bench_data.go_test(file.body()),
    # bench.py's Markdown table: `| limiter | keys | ns per check | ...`.
    "python.txt": lambda file: bench_data.table_runs(file, ["limiter", "keys"], "ns per check"),
}


def values(data: Path) -> list[tuple[str, list[tuple[str, list[tuple[str, float]]]]]]:
    """Every panel with its cases and bars, each bar's value the median of its runs."""
    panels = []
    for title, file, cases in PANELS:
        path = data / file
        runs = PARSERS[file](bench_data.read(path))
        filled = []
        for case, bars in cases:
            row = [(label, bench_data.median(runs, name, path)) for label, name in bars]
            filled.append((case, row))
        panels.append((title, filled))
    return panels


def number(ns: float) -> str:
    return f"{ns:,.0f}" if ns >= 100 else f"{ns:.1f}"


def svg(panels: list[tuple[str, list[tuple[str, list[tuple[str, float]]]]]]) -> str:
    # Room on the left for the case, on the right for the longest bar's label.
    width, label_width, bar_height, gap = 800, 170, 16, 4
    plot_width = width - label_width - 190
    out = []
    y = 36
    out.append(
        f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15" '
        'font-weight="bold">ns per rate-limit check, lower is better: one run on one '
        "machine; compare bars within a panel</text>"
    )
    for title, cases in panels:
        y += 22
        out.append(f'<text x="10" y="{y}" font-size="13" font-weight="bold">{escape(title)}</text>')
        y += 10
        most = max(ns for _, bars in cases for _, ns in bars)
        for case, bars in cases:
            top = y
            for index, (label, ns) in enumerate(bars):
                length = max(1.0, plot_width * ns / most)
                out.append(
                    f'<rect x="{label_width}" y="{y}" width="{length:.1f}" height="{bar_height}" '
                    f'fill="{COLORS[index]}"><title>{escape(label)}: {number(ns)} ns</title></rect>'
                )
                out.append(
                    f'<text x="{label_width + length + 4:.1f}" y="{y + bar_height - 4}" '
                    f'font-size="11">{escape(label)} {number(ns)}</text>'
                )
                y += bar_height + gap
            middle = (top + y - gap) / 2 + 4
            out.append(
                f'<text x="{label_width - 8}" y="{middle:.1f}" text-anchor="end" '
                f'font-size="12">{escape(case)}</text>'
            )
            y += 8
    height = y + 10
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif">\n'
        f'<rect width="{width}" height="{height}" fill="white"/>\n' + "\n".join(out) + "\n</svg>\n"
    )


def draw(data: Path) -> str:
    """The plot of the data files in `data`, as SVG."""
    return svg(values(data))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=bench_data.DATA)
    parser.add_argument("--out", type=Path, default=bench_data.ROOT / "docs" / "bench.svg")
    args = parser.parse_args()
    args.out.write_text(draw(args.data))
    print(f"plot-bench: wrote {args.out}")


if __name__ == "__main__":
    main()
