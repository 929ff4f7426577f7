"""Build hook: puts the native library inside the package, so `import librate` needs no
environment variable.

In a librate checkout (this file two levels below Cargo.toml) it runs
`cargo build --release -p librate-ffi --lib` in the repo root (a no-op when the build is current) and
copies target/release/librate.so into the built package. If cargo is not on PATH, an
existing target/release build is used instead. Outside a checkout (an sdist) the library
must already sit in librate/.

The wheel is tagged py3-none-<platform>: it holds a native library, but loads it with
ctypes, so it works with any CPython 3 of that platform.
"""

from __future__ import annotations

import os
import runpy
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
# The package cannot be imported here (that loads the library), so read the one file.
LIBRARY_NAME = runpy.run_path(str(HERE / "librate" / "_libname.py"))["LIBRARY_NAME"]


def _target_dir() -> Path:
    configured = os.environ.get("CARGO_TARGET_DIR")
    return REPO / configured if configured else REPO / "target"  # absolute stays absolute


def native_library() -> Path:
    """The library to bundle, building it first when this is a checkout."""
    if (REPO / "Cargo.toml").is_file():
        cargo = shutil.which("cargo")
        built = _target_dir() / "release" / LIBRARY_NAME
        if cargo:
            subprocess.run([cargo, "build", "--release", "-p", "librate-ffi", "--lib"], cwd=REPO, check=True)
        if built.is_file():
            return built
        raise RuntimeError(
            f"{built} does not exist and cargo is not on PATH: install Rust "
            "(https://rustup.rs) or run `cargo build --release` first"
        )
    shipped = HERE / "librate" / LIBRARY_NAME
    if shipped.is_file():
        return shipped
    raise RuntimeError(
        f"not in a librate checkout and no {shipped}: build from the repository "
        "(pip install ./bindings/python)"
    )


class BuildPyWithLibrary(build_py):
    """build_py that also copies the native library into the built package."""

    def run(self) -> None:
        super().run()
        if self.dry_run:
            return
        destination = Path(self.build_lib) / "librate" / LIBRARY_NAME
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(native_library(), destination)


class PlatformWheel(bdist_wheel):
    """A wheel for this platform (it holds a native library) and any Python 3."""

    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self) -> tuple[str, str, str]:
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": PlatformWheel})
