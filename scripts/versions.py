#!/usr/bin/env python3
"""Prints librate's version after checking that every package says the same: the crates
(librate, librate-ffi, whose version `rate_version()` returns), the Python package
(pyproject.toml and ``librate.__version__``) and the newest version heading of
CHANGELOG.md. The Go module's tag and the C tarballs take it from here.

Usage: scripts/versions.py [--release]
  --release  also refuse a CHANGELOG that still has an "Unreleased" section
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def toml_version(path: str, table: str) -> str:
    with open(ROOT / path, "rb") as file:
        return str(tomllib.load(file)[table]["version"])


def main() -> int:
    release = sys.argv[1:] == ["--release"]
    if sys.argv[1:] not in ([], ["--release"]):
        print(__doc__, file=sys.stderr)
        return 2
    init = (ROOT / "bindings/python/librate/__init__.py").read_text()
    dunder = re.search(r'^__version__ = "([^"]+)"$', init, re.M)
    changelog = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## (\S+)", changelog, re.M)
    newest = next((h for h in headings if h != "Unreleased"), None)
    found = {
        "Cargo.toml (librate)": toml_version("Cargo.toml", "package"),
        "ffi/Cargo.toml (librate-ffi, rate_version())": toml_version("ffi/Cargo.toml", "package"),
        "bindings/python/pyproject.toml": toml_version("bindings/python/pyproject.toml", "project"),
        "bindings/python/librate/__init__.py (__version__)": dunder[1] if dunder else "none",
        "CHANGELOG.md (newest version heading)": newest or "none",
    }
    version = found["Cargo.toml (librate)"]
    disagree = {where: seen for where, seen in found.items() if seen != version}
    if disagree:
        print(f"versions.py: the versions disagree (Cargo.toml says {version}):", file=sys.stderr)
        for where, seen in disagree.items():
            print(f"  {where}: {seen}", file=sys.stderr)
        return 1
    if release and "Unreleased" in headings:
        print(
            f"versions.py: CHANGELOG.md still has an Unreleased section: name it {version}",
            file=sys.stderr,
        )
        return 1
    print(version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
