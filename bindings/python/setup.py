"""Build hook: puts the native library inside the package, so `import librate` needs no
environment variable.

Where the library comes from, first match:
- LIBRATE_LIBRARY, the path of a built librate.so: bundled as it is, nothing is compiled
  (scripts/dist.sh builds the release wheels so, one per platform);
- the Rust sources: in a librate checkout (this file two levels below the workspace's
  Cargo.toml) or an sdist (which carries them in rust/), it runs
  `cargo build --release -p librate-ffi --lib` there (a no-op when the build is current)
  and bundles target/release/librate.so; without cargo on PATH, an existing build is used,
  and without one it says to install Rust or run `cargo build --release`.

The wheel is tagged py3-none-<platform>: it holds a native library, but loads it with
ctypes, so it works with any CPython 3 of that platform. LIBRATE_PLATFORM overrides the
platform (scripts/dist.sh gives the manylinux tags its libraries meet).
"""

from __future__ import annotations

import os
import runpy
import shutil
import subprocess
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# The Rust workspace: the checkout's, or the sdist's copy of what the library needs.
REPO = HERE / "rust" if (HERE / "rust" / "Cargo.toml").is_file() else HERE.parent.parent
# The package cannot be imported here (that loads the library), so read the one file.
LIBRARY_NAME = runpy.run_path(str(HERE / "librate" / "_libname.py"))["LIBRARY_NAME"]


def _target_dir() -> Path:
    configured = os.environ.get("CARGO_TARGET_DIR")
    return REPO / configured if configured else REPO / "target"  # absolute stays absolute


def native_library() -> Path:
    """The library to bundle, building it first from the Rust sources when there are any."""
    prebuilt = os.environ.get("LIBRATE_LIBRARY")
    if prebuilt:
        if not Path(prebuilt).is_file():
            raise RuntimeError(f"LIBRATE_LIBRARY={prebuilt} is not a file")
        return Path(prebuilt)
    if (REPO / "Cargo.toml").is_file():
        cargo = shutil.which("cargo")
        built = _target_dir() / "release" / LIBRARY_NAME
        if cargo:
            subprocess.run([cargo, "build", "--release", "-p", "librate-ffi", "--lib"], cwd=REPO, check=True)
        if built.is_file():
            return built
        raise RuntimeError(
            f"{built} does not exist and cargo is not on PATH: run `cargo build --release` "
            f"in {REPO} first, or install Rust (https://rustup.rs)"
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
        return "py3", "none", os.environ.get("LIBRATE_PLATFORM", platform)


class NativeDistribution(Distribution):
    """A distribution that holds a native library: its files install into platlib, the
    place tools such as auditwheel look for one (without an extension module setuptools
    would call the package pure)."""

    def has_ext_modules(self) -> bool:
        return True


setup(
    distclass=NativeDistribution,
    cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": PlatformWheel},
)
