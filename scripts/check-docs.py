#!/usr/bin/env python3
"""Checks the user-facing docs stand alone: every relative link in a Markdown file names a
file (and, with #anchor, a heading) inside the repository, and no doc speaks of internal
notes (the private design file, issue numbers, "targets") or tells the story of a dated
run (a date, a machine's load, a session: measurements belong in docs/bench/ and the
generated docs/performance.md). A code block right after a line `<!-- check: PATH -->`
must be true to PATH, a program the tests run: each of its lines is a line of PATH
(leading and trailing white space aside). The README stays short (at most 250 lines), and
docs/README.md, the guide's index, links every page of docs/.

Usage: scripts/check-docs.py        (from anywhere; exits 1 and lists every problem)
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")
CHECK = re.compile(r"<!-- check: (\S+) -->\n```\w*\n(.*?)\n```", re.DOTALL)
# Words that belong to the project's own notes, not to a user's docs.
INTERNAL = re.compile(r"DESIGN(\.md)?\b|\bissue \d+|\btargets?\b(?![/-])|\.\./shared")
# The story of one run: a date, a machine's load, a quiet or busy run, a session. The
# changelog is dated by nature; the performance page is generated from dated data.
NARRATIVE = re.compile(
    r"\b20\d\d-\d\d-\d\d\b|\bload (average )?(of )?~?\d|\b(quiet|busy|loaded) (run|machine|VM)"
    r"|\b(this|last|earlier|previous) session\b|\bon the \w+ VM\b",
    re.IGNORECASE,
)
DATED = {"CHANGELOG.md", "docs/performance.md"}
README_LINES = 250


def markdown_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for the headings of a Markdown file."""
    found = set()
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            title = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
            found.add(title)
    return found


def snippet_problems(path: Path, text: str) -> list[str]:
    """Lines of `<!-- check: PATH -->` code blocks that PATH does not have."""
    found = []
    for match in CHECK.finditer(text):
        program = ROOT / match.group(1)
        where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, match.start()) + 1}"
        if not program.is_file():
            found.append(f"{where}: {match.group(1)} does not exist")
            continue
        lines = {line.strip() for line in program.read_text().splitlines()}
        for line in match.group(2).splitlines():
            # Go's `import x "path"` stands in the program's import block as `x "path"`.
            bare = line.strip().removeprefix("import ")
            if line.strip() and line.strip() not in lines and bare not in lines:
                found.append(f"{where}: not in {match.group(1)}: {line.strip()}")
    return found


def problems(path: Path) -> list[str]:
    text = path.read_text()
    found = snippet_problems(path, text)
    code = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            code = not code
        where = f"{path.relative_to(ROOT)}:{number}"
        if not code and (match := INTERNAL.search(line)):
            found.append(f"{where}: internal note {match.group(0)!r}")
        dated = str(path.relative_to(ROOT)) in DATED
        if not code and not dated and (match := NARRATIVE.search(line)):
            found.append(f"{where}: a dated run's story {match.group(0)!r} (docs/bench/ holds runs)")
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue  # a web address: allowed, and not checked here
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.is_relative_to(ROOT):
                found.append(f"{where}: {target} leaves the repository")
            elif not linked.exists():
                found.append(f"{where}: {target} does not exist")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                found.append(f"{where}: {target}: no heading #{anchor}")
    return found


def guide_problems() -> list[str]:
    """The README's length, and pages of docs/ that the guide's index does not link."""
    found = []
    lines = (ROOT / "README.md").read_text().count("\n")
    if lines > README_LINES:
        found.append(f"README.md: {lines} lines, more than {README_LINES}: move a topic to docs/")
    index = ROOT / "docs" / "README.md"
    if not index.is_file():
        return found + ["docs/README.md: the guide's index is missing"]
    linked = {(index.parent / target.partition("#")[0]).resolve() for target in LINK.findall(index.read_text())}
    for page in sorted((ROOT / "docs").glob("*.md")):
        if page != index and page.resolve() not in linked:
            found.append(f"docs/README.md: does not link {page.relative_to(ROOT)}")
    return found


def main() -> int:
    found = [problem for path in markdown_files() for problem in problems(path)]
    found += guide_problems()
    for problem in found:
        print(problem)
    if found:
        print(f"check-docs: {len(found)} problem(s)")
        return 1
    print(f"check-docs: {len(markdown_files())} Markdown files: links inside, snippets true")
    return 0


if __name__ == "__main__":
    sys.exit(main())
