#!/usr/bin/env bash
# Installs librate for C and C++ programs:
#   PREFIX/include/rate.h, rate.hpp       the C header and the header-only C++17 wrapper
#   PREFIX/lib/librate.so.VERSION         the shared library (VERSION from Cargo.toml)
#   PREFIX/lib/librate.so.MAJOR           -> librate.so.VERSION (the soname, what programs load)
#   PREFIX/lib/librate.so                 -> librate.so.MAJOR   (what -lrate finds at link time)
#   PREFIX/lib/librate.a                  the static library, without debug info
#   PREFIX/lib/pkgconfig/librate.pc       for `pkg-config --cflags --libs librate`
#   PREFIX/lib/pkgconfig/rate.pc          -> librate.pc, the name of earlier releases
#
# Usage: scripts/install.sh [--relocatable] [PREFIX]   (PREFIX defaults to /usr/local)
#        --relocatable  librate.pc finds the prefix from its own place (${pcfiledir}/../..),
#                       so the tree works wherever it is unpacked (the C tarballs')
# Env:   DESTDIR   staging root: files go to $DESTDIR$PREFIX, librate.pc still says PREFIX
#        CARGO     the cargo to build with (default cargo); CARGO_TARGET_DIR as for cargo
#        LIBRATE_TARGET  a Rust target, optionally with the oldest glibc to support
#                  (aarch64-unknown-linux-gnu.2.17): built with cargo-zigbuild (zig as the
#                  linker), which must be on PATH
#        STRIP     the strip for the target's objects (default strip)
#
# It runs `cargo build --release` first, which does nothing when the release library is up
# to date, so an already built library is installed as it is.
set -euo pipefail

relocatable=false
if [[ ${1:-} == --relocatable ]]; then
    relocatable=true
    shift
fi
prefix=${1:-/usr/local}
[[ $prefix == /* ]] || { echo "install.sh: PREFIX must be an absolute path, not '$prefix'" >&2; exit 2; }
prefix=${prefix%/}
root=${DESTDIR:-}
[[ -z $root || $root == /* ]] || root="$PWD/$root"   # relative to where it was run from
cd "$(dirname "$0")/.."
cargo=${CARGO:-cargo}
fail() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }

if [[ -n ${LIBRATE_TARGET:-} ]]; then
    command -v cargo-zigbuild >/dev/null || fail "LIBRATE_TARGET needs cargo-zigbuild on PATH (pip install cargo-zigbuild ziglang)"
    build=(cargo-zigbuild zigbuild --target "$LIBRATE_TARGET")
    rustc=(cargo-zigbuild rustc --target "$LIBRATE_TARGET")
    release_dir=${CARGO_TARGET_DIR:-target}/${LIBRATE_TARGET%%.*}/release   # no glibc suffix
else
    build=("$cargo" build)
    rustc=("$cargo" rustc)
    release_dir=${CARGO_TARGET_DIR:-target}/release
fi

"${build[@]}" --release -p librate-ffi --lib

# The system libraries Rust's standard library needs when librate.a is linked into a C
# program, as rustc itself reports them (cargo replays the note when nothing changed).
native_libs=$("${rustc[@]}" --release -p librate-ffi --lib --crate-type staticlib --color never \
                  -- --print native-static-libs 2>&1) || { printf '%s\n' "$native_libs" >&2; fail "cargo rustc failed"; }
native_libs=$(sed -n 's/^note: native-static-libs: //p' <<<"$native_libs" | tail -n 1)
[[ -n $native_libs ]] || fail "rustc did not print its native-static-libs"

version=$("$cargo" pkgid -p librate-ffi)
version=${version##*[#@]}   # path+file:///…#librate@0.1.0 or file:///…#0.1.0
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || fail "cannot read the version from '$("$cargo" pkgid -p librate-ffi)'"
major=${version%%.*}

shared="$release_dir/librate.so"
static="$release_dir/librate.a"
[[ -f $shared && -f $static ]] || fail "cargo built no $shared and $static"
# ffi/build.rs sets the soname; install.sh names the links after it, and refuses a library whose
# soname does not carry Cargo.toml's major version.
soname=$(readelf -d "$shared" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ $soname == "librate.so.$major" ]] || fail "$shared has soname '$soname', expected librate.so.$major"

includedir="$root$prefix/include"
libdir="$root$prefix/lib"
install -d "$includedir" "$libdir/pkgconfig"
install -m 644 include/rate.h include/rate.hpp "$includedir/"
install -m 755 "$shared" "$libdir/librate.so.$version"
install -m 644 "$static" "$libdir/librate.a"
# librate.so is built without debug info (Cargo.toml's release profile). librate.a bundles
# the Rust standard library's objects, which carry theirs; the installed copy drops it.
# For symbols, build `cargo build --profile release-debug` and use target/release-debug/.
strip=${STRIP:-strip}
if command -v "$strip" >/dev/null; then
    "$strip" --strip-debug "$libdir/librate.a"
fi
ln -sfn "librate.so.$version" "$libdir/$soname"
ln -sfn "$soname" "$libdir/librate.so"

# Libs.private is what `pkg-config --static` adds. It starts with -Wl,-Bdynamic so that
#   cc app.c $(pkg-config --cflags librate) -Wl,-Bstatic $(pkg-config --static --libs librate)
# takes librate.a (ld prefers librate.so otherwise) and still links the system libraries,
# which have no static form (libgcc_s), as shared ones.
if $relocatable; then
    pc_prefix='${pcfiledir}/../..'
else
    pc_prefix=$prefix
fi
cat > "$libdir/pkgconfig/librate.pc" <<EOF
prefix=$pc_prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: librate
Description: Lock-free rate limiters (GCRA, fixed and sliding windows, keyed) with a C ABI
Version: $version
Libs: -L\${libdir} -lrate
Libs.private: -Wl,-Bdynamic $native_libs
Cflags: -I\${includedir}
EOF
ln -sfn librate.pc "$libdir/pkgconfig/rate.pc"

echo "installed librate $version under $root$prefix (soname $soname)"
if [[ -z $root ]]; then
    echo "programs load $soname from $prefix/lib: run ldconfig if that directory is in" \
         "/etc/ld.so.conf, else link with -Wl,-rpath,$prefix/lib or set LD_LIBRARY_PATH"
fi
