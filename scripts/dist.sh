#!/usr/bin/env bash
# Builds every release artifact from this checkout into OUT, for Linux on x86_64 and
# aarch64 with glibc 2.17 as the floor (zig as the linker, through cargo-zigbuild; no
# container), stripped:
#   OUT/c/librate-VERSION-TARGET.tar.gz   lib/ (librate.so.VERSION and its links, librate.a,
#                                         pkgconfig/librate.pc, relocatable) and include/
#   OUT/python/librate-VERSION-py3-none-manylinux_2_17_ARCH.manylinux2014_ARCH.whl
#   OUT/python/librate-VERSION.tar.gz     the sdist: builds wherever cargo is, from the Rust
#                                         sources it carries
#   OUT/go/                               a Go module proxy tree (GOPROXY=file://OUT/go) of
#                                         the module, with the header and librate.a for
#                                         linux/amd64 and linux/arm64 inside
#   OUT/sizes.txt                         each artifact's size in bytes
# and checks them: one version everywhere, each wheel's manylinux tag (auditwheel), each
# library's glibc symbol versions and soname.
#
# Usage: scripts/dist.sh [--release] OUT
#        --release   also refuse a CHANGELOG that still has an "Unreleased" section
# Env:   DIST_TARGETS  the Rust targets (default: x86_64-unknown-linux-gnu
#                      aarch64-unknown-linux-gnu); each needs `rustup target add`
#        DIST_VENV     the venv for the build tools (default target/dist/venv): ziglang,
#                      cargo-zigbuild, auditwheel and build, from PyPI
# Needs: cargo, python3 with venv, readelf; for aarch64, aarch64-linux-gnu-strip (Debian's
#        binutils-aarch64-linux-gnu). scripts/dist-check.sh installs what this builds as a
#        user would, and runs it.
set -euo pipefail
shopt -s inherit_errexit

release=false
if [[ ${1:-} == --release ]]; then
    release=true
    shift
fi
out=${1:?usage: scripts/dist.sh [--release] OUT}
mkdir -p "$out"
out=$(realpath "$out")
cd "$(dirname "$0")/.."
root=$PWD
read -ra targets <<<"${DIST_TARGETS:-x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu}"
glibc=2.17
export CARGO_TARGET_DIR=$root/target/dist
venv=${DIST_VENV:-$CARGO_TARGET_DIR/venv}

fail() { printf 'dist.sh: %s\n' "$*" >&2; exit 1; }
step() { printf '\n== %s\n' "$*" >&2; }

# --- one version ------------------------------------------------------------------------
step "versions"
release_flag=()
$release && release_flag=(--release)
version=$(python3 scripts/versions.py "${release_flag[@]}")
echo "librate $version" >&2

# --- the tools --------------------------------------------------------------------------
step "build tools in $venv"
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    ziglang cargo-zigbuild auditwheel build
export PATH="$venv/bin:$PATH"

rm -rf "$out/c" "$out/python" "$out/go"
mkdir -p "$out/c" "$out/python" "$out/go"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sizes=()   # "WHAT ARTIFACT BYTES", as each is made
size_of() { sizes+=("$1 $2 $(stat -c %s "$3")"); }

# strip_for TARGET: the strip that reads the target's objects.
strip_for() {
    case $1 in
        x86_64-*) echo strip ;;
        aarch64-*) echo aarch64-linux-gnu-strip ;;
        *) fail "no strip known for $1" ;;
    esac
}

for target in "${targets[@]}"; do
    arch=${target%%-*}
    strip=$(strip_for "$target")
    command -v "$strip" >/dev/null || fail "$strip is not installed (for $target's librate.a)"

    # --- C: the install tree, relocatable, as a tarball ---------------------------------
    step "$target: library and C tarball"
    name=librate-$version-$target
    LIBRATE_TARGET=$target.$glibc STRIP=$strip \
        scripts/install.sh --relocatable "$work/c/$name" >&2
    shared=$work/c/$name/lib/librate.so.$version
    newest=$(objdump -T "$shared" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1)
    [[ $(printf '%s\n' "$newest" "$glibc" | sort -V | tail -n 1) == "$glibc" ]] ||
        fail "$shared needs glibc $newest, above the floor $glibc"
    tar -C "$work/c" --owner=0 --group=0 --numeric-owner -czf "$out/c/$name.tar.gz" "$name"
    size_of "$target" librate.so "$shared"
    size_of "$target" librate.a "$work/c/$name/lib/librate.a"
    size_of "$target" tarball "$out/c/$name.tar.gz"

    # --- Python: the wheel of that library ----------------------------------------------
    step "$target: wheel"
    platform=manylinux_2_17_$arch.manylinux2014_$arch
    LIBRATE_LIBRARY=$shared LIBRATE_PLATFORM=$platform \
        python -m pip wheel --quiet --no-deps --wheel-dir "$out/python" bindings/python >&2
    wheel=$out/python/librate-$version-py3-none-$platform.whl
    [[ -f $wheel ]] || fail "pip built no $wheel"
    auditwheel show "$wheel" >"$work/auditwheel.txt" 2>&1 || { cat "$work/auditwheel.txt" >&2; fail "auditwheel cannot read $wheel"; }
    grep -q "manylinux_2_17_$arch" "$work/auditwheel.txt" ||
        { cat "$work/auditwheel.txt" >&2; fail "$wheel is not manylinux_2_17_$arch"; }
    size_of "$target" wheel "$wheel"
done

# --- Python: the sdist, with the Rust sources it builds from ----------------------------
step "sdist"
sdist_src=$work/sdist/librate
mkdir -p "$sdist_src/rust"
git ls-files -z bindings/python | xargs -0 -I{} cp --parents {} "$work/sdist"
cp -a "$work/sdist/bindings/python/." "$sdist_src/"
git ls-files -z Cargo.toml Cargo.lock src ffi include 'examples/*.rs' README.crates.md LICENSE-MIT LICENSE-APACHE CHANGELOG.md ':!ffi/tests' |
    xargs -0 -I{} cp --parents {} "$sdist_src/rust"
# The workspace of the library and its C ABI alone (with the examples its manifest names):
# the benchmarks and test packages stay in the repository.
python3 - "$sdist_src/rust/Cargo.toml" <<'EOF'
import re
import sys

path = sys.argv[1]
text = open(path).read()
text, members = re.subn(r"(?m)^members = \[.*\]$", 'members = [".", "ffi"]', text)
text, defaults = re.subn(r"(?m)^default-members = \[.*\]$", 'default-members = [".", "ffi"]', text)
if members != 1 or defaults != 1:
    sys.exit(f"{path}: expected one members and one default-members line")
open(path, "w").write(text)
EOF
cp LICENSE-MIT LICENSE-APACHE "$sdist_src/"
python -m build --sdist --outdir "$out/python" "$sdist_src" >&2
[[ -f $out/python/librate-$version.tar.gz ]] || fail "build made no librate-$version.tar.gz"
size_of any sdist "$out/python/librate-$version.tar.gz"

# --- Go: the module, with the header and the libraries inside ---------------------------
step "Go module proxy tree"
module=$(sed -n 's/^module //p' bindings/go/go.mod)
go_version=v$version
go_src=$work/go/module
mkdir -p "$go_src/include"
# The module's own files: not the nested modules' (redis, prometheus, peers), not the
# repository's link files, which reach into the checkout; scripts/dist-go/ has the
# released module's.
(cd bindings/go && git ls-files -z -- . ':!redis' ':!prometheus' ':!peers' ':!link_static.go' ':!link_dynamic.go' |
    xargs -0 cp --parents -t "$go_src")
cp scripts/dist-go/*.go "$go_src/"
cp include/rate.h "$go_src/include/"
printf '// Package include holds librate'"'"'s C header for the module'"'"'s cgo build. It has no Go API.\npackage include\n' \
    >"$go_src/include/include.go"
vendored=("$module/include")
for target in "${targets[@]}"; do
    case ${target%%-*} in
        x86_64) platform=linux_amd64 ;;
        aarch64) platform=linux_arm64 ;;
    esac
    mkdir -p "$go_src/lib/$platform"
    cp "$work/c/librate-$version-$target/lib/librate.a" "$go_src/lib/$platform/"
    printf '// Package %s holds librate.a for %s, which the module links. It has no Go API.\npackage %s\n' \
        "$platform" "$platform" "$platform" >"$go_src/lib/$platform/lib.go"
    vendored+=("$module/lib/$platform")
done
{
    printf '//go:build librate_vendor_files\n\npackage librate\n\n'
    printf '// Never built: it names the directories that hold the header and the libraries, so\n'
    printf '// that `go mod vendor`, which copies every package some build could import, copies\n'
    printf '// them too.\nimport (\n'
    printf '\t_ "%s"\n' "${vendored[@]}"
    printf ')\n'
} >"$go_src/vendor_files.go"
proxy=$out/go/$module/@v
mkdir -p "$proxy"
cp bindings/go/go.mod "$proxy/$go_version.mod"
printf '{"Version":"%s","Time":"%s"}\n' "$go_version" "$(git log -1 --format=%cI | sed 's/+00:00$/Z/')" \
    >"$proxy/$go_version.info"
printf '%s\n' "$go_version" >"$proxy/list"
python3 - "$go_src" "$module@$go_version" "$proxy/$go_version.zip" <<'EOF'
import os
import sys
import zipfile

source, prefix, zip_path = sys.argv[1:]
with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as archive:
    for directory, _, files in sorted(os.walk(source)):
        for name in sorted(files):
            path = os.path.join(directory, name)
            archive.write(path, f"{prefix}/{os.path.relpath(path, source)}")
EOF
size_of any go-module-zip "$proxy/$go_version.zip"

# --- sizes ------------------------------------------------------------------------------
step "sizes"
{
    printf '# librate %s, built by scripts/dist.sh (Cargo profile release: opt-level 3,\n' "$version"
    printf '# strip = "debuginfo"; librate.a further stripped of debug sections)\n'
    printf '%s\n' "${sizes[@]}"
} >"$out/sizes.txt"
cat "$out/sizes.txt" >&2
echo "dist.sh: librate $version into $out" >&2
