"""The benchmark outputs kept in docs/bench/, read: each file's metadata lines and one
parser per output format. Shared by scripts/plot-bench.py and scripts/perf-page.py;
standard library only.

A data file is a benchmark's output exactly as its command printed it, below a few lines
of metadata, each `# key: value`:

    # machine: AMD EPYC, 2 vCPUs (VM)
    # date: 2026-11-24
    # command: (cd bindings/go/peers && go test -run '^$' -bench '^BenchmarkAllow$' -count 5 ./...)
    # provenance: free text on where the output came from (read by people only)

No output format has a line beginning with `# `, so the parsers below ignore them. A value
a caller asks for and a file lacks stops the calling script with what it looked for.
"""

from __future__ import annotations

import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "bench"

META = re.compile(r"^# ([a-z]+): (.*)$", re.M)
#: The metadata every data file gives, in this order.
META_KEYS = ("machine", "date", "command")


def stop(message: str) -> NoReturn:
    """Ends the running script with `message`, prefixed by the script's name."""
    sys.exit(f"{Path(sys.argv[0]).stem}: {message}")


def shown(path: Path) -> str:
    """A data file's path as a message shows it: from the repository's root if inside it."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


@dataclass
class BenchFile:
    path: Path
    text: str

    def meta(self, key: str) -> str:
        """The value of the file's `# key: value` line."""
        for found, value in META.findall(self.text):
            if found == key:
                return value.strip()
        stop(
            f"{shown(self.path)} has no '# {key}:' line; a data file begins with "
            + ", ".join(f"'# {k}:'" for k in META_KEYS)
            + " lines (scripts/perf-page.py --record writes them)"
        )

    def body(self) -> str:
        """The benchmark's output: the text without the metadata lines."""
        return META.sub("", self.text).lstrip("\n")


def read(path: Path) -> BenchFile:
    if not path.is_file():
        stop(f"{shown(path)} does not exist")
    return BenchFile(path, path.read_text())


def need(runs: dict[str, list[float]], name: str, path: Path) -> list[float]:
    """The runs of `name`, which must be in the file."""
    if name not in runs:
        stop(f"{shown(path)} has no result for {name!r}")
    return runs[name]


def median(runs: dict[str, list[float]], name: str, path: Path) -> float:
    return statistics.median(need(runs, name, path))


def number(cell: str) -> float:
    """A number as the outputs print it: `1,234.5`."""
    return float(cell.replace(",", ""))


# --- criterion (cargo bench ... --output-format bencher) ---------------------------------


def criterion_bencher(text: str) -> dict[str, list[float]]:
    """criterion's --output-format bencher: `test NAME ... bench: N ns/iter (+/- D)`."""
    found: dict[str, list[float]] = {}
    for name, ns in re.findall(r"^test (\S+) \.\.\. bench:\s+([\d,.]+) ns/iter", text, re.M):
        found.setdefault(name, []).append(number(ns))
    return found


# --- go test -bench ------------------------------------------------------------------------


def go_test(text: str) -> dict[str, list[float]]:
    """go test -bench: `BenchmarkX/a/b-2   N   12.3 ns/op`; the -GOMAXPROCS suffix goes."""
    found: dict[str, list[float]] = {}
    for name, ns in re.findall(r"^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op", text, re.M):
        found.setdefault(name, []).append(float(ns))
    return found


# --- Markdown tables (bench.py, bench_shared.py, bench_redis.py, shared_table.py, -------
# --- TestRedisBenchTable) ------------------------------------------------------------------


@dataclass
class Table:
    header: list[str]
    rows: list[dict[str, str]]


def markdown_tables(text: str) -> list[Table]:
    """Every table: a header line, a `|---|` line, then rows, each a line of `|` cells."""
    tables = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        if not lines[index].startswith("|") or index + 1 >= len(lines):
            index += 1
            continue
        if not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", lines[index + 1].strip()):
            index += 1
            continue
        header = cells(lines[index])
        rows = []
        index += 2
        while index < len(lines) and lines[index].startswith("|"):
            rows.append(dict(zip(header, cells(lines[index]))))
            index += 1
        tables.append(Table(header, rows))
    return tables


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def tables_with(file: BenchFile, columns: list[str]) -> list[Table]:
    """The file's tables that have all of `columns` (several when it holds several runs)."""
    found = [t for t in markdown_tables(file.body()) if all(c in t.header for c in columns)]
    if not found:
        stop(f"{shown(file.path)} has no table with the columns {columns!r}")
    return found


def table_runs(file: BenchFile, keys: list[str], value: str) -> dict[str, list[float]]:
    """The number in column `value` of every row of every table with the columns `keys`
    and `value`, named by its key cells joined with ` | `: one entry a run the file holds."""
    found: dict[str, list[float]] = {}
    for table in tables_with(file, keys + [value]):
        for row in table.rows:
            found.setdefault(" | ".join(row[key] for key in keys), []).append(
                number(row[value])
            )
    return found
