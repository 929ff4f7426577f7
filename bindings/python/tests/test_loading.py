"""Where the native library comes from: LIBRATE_PATH overrides, the installed package
carries its own copy, and a failure names every path tried."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import librate
from librate import _ffi

SOURCE_PACKAGE = Path(__file__).resolve().parents[1] / "librate"


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` in a fresh interpreter from a neutral directory."""
    environment = {k: v for k, v in os.environ.items() if k != "LIBRATE_PATH"} | env
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=environment,
        cwd=Path(__file__).resolve().parent,  # not bindings/python: import the installed copy
        timeout=60,
    )


def test_librate_path_to_a_file() -> None:
    loaded = run_python(
        "import librate; print(librate.library_path())", LIBRATE_PATH=str(_ffi.lib.path)
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == str(_ffi.lib.path)


def test_librate_path_to_a_directory() -> None:
    directory = _ffi.lib.path.parent
    loaded = run_python(
        "import librate; print(librate.library_path())", LIBRATE_PATH=str(directory)
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == str(directory / _ffi.LIBRARY_NAME)


def test_bad_librate_path_names_it() -> None:
    # An override that does not load is an error, not a silent fallback to another copy.
    failed = run_python("import librate", LIBRATE_PATH="/nonexistent/librate.so")
    assert failed.returncode != 0
    assert "LibraryError: could not load librate; tried:" in failed.stderr
    assert "/nonexistent/librate.so ($LIBRATE_PATH)" in failed.stderr


def test_candidates_without_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LIBRATE_PATH", raising=False)
    origins = [origin for origin, _ in _ffi.candidates()]
    paths = [path for _, path in _ffi.candidates()]
    assert origins[0] == "inside the package"
    assert paths[0] == Path(_ffi.__file__).resolve().parent / _ffi.LIBRARY_NAME


def test_installed_package_carries_its_library() -> None:
    package = Path(librate.__file__).resolve().parent
    if package == SOURCE_PACKAGE:
        pytest.skip("running from the source tree, not an installed package")
    assert (package / _ffi.LIBRARY_NAME).is_file()
    if "LIBRATE_PATH" not in os.environ:
        assert _ffi.lib.path == package / _ffi.LIBRARY_NAME
