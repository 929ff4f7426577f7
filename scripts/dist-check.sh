#!/usr/bin/env bash
# Installs what scripts/dist.sh built in OUT as a user would, with no cargo on PATH, and
# runs a small program on each that checks real decisions (docs/decision.md's seed
# scenario: L=1, P=2 s, B=1 admits at 0 ms, denies at 999 ms with a retry in 1.001 s, and
# admits again at 2001 ms):
#   - the x86_64 wheel into a fresh venv;
#   - the x86_64 C tarball into a prefix, a program built with pkg-config alone, shared
#     and static;
#   - the aarch64 tarball's library under qemu-user: the same program, and the C test
#     suite (tests/c), built by zig for aarch64 (skipped, and said, without qemu-aarch64
#     and an aarch64 C library: Debian's qemu-user and libc6-arm64-cross);
#   - the Go module through the file proxy into a fresh module (with a C compiler alone),
#     built as it is, vendored, and against the installed C tarball (-tags librate_system);
#   - the sdist, built from its own contents into a fresh venv, with cargo this time.
#
# Usage: scripts/dist-check.sh OUT
# Needs: python3 with venv, cc, pkg-config, go; DIST_VENV as for dist.sh (its zig).
set -euo pipefail
shopt -s inherit_errexit

out=$(realpath "${1:?usage: scripts/dist-check.sh OUT}")
cd "$(dirname "$0")/.."
root=$PWD
version=$(python3 scripts/versions.py)
tools=${DIST_VENV:-$root/target/dist/venv}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { printf 'dist-check.sh: %s\n' "$*" >&2; exit 1; }
step() { printf '\n== %s\n' "$*" >&2; }
checks=0
passed() { checks=$((checks + 1)); printf 'ok: %s\n' "$*" >&2; }

# PATH without any directory that holds cargo or rustc: what a user without Rust has.
no_rust_path=$(tr ':' '\n' <<<"$PATH" | while read -r dir; do
    [[ -x $dir/cargo || -x $dir/rustc ]] || printf '%s:' "$dir"
done)
no_rust_path=${no_rust_path%:}

# The seed scenario through Python, run by the interpreter $1.
python_seed() {
    env PATH="$no_rust_path" "$1" - <<'EOF'
from librate import Limiter, library_version

bob = Limiter(limit=1, period=2)
assert bob.acquire(1, now_ns=0).allowed
late = bob.acquire(1, now_ns=999_000_000)
assert not late.allowed and late.retry_after_ns == 1_001_000_000, late
assert bob.acquire(1, now_ns=2_001_000_000).allowed
print("librate", library_version())
EOF
}

# --- the wheel --------------------------------------------------------------------------
step "x86_64 wheel into a fresh venv, no cargo on PATH"
wheel=$out/python/librate-$version-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl
[[ -f $wheel ]] || fail "no $wheel (run scripts/dist.sh $out)"
python3 -m venv "$work/wheel-venv"
env PATH="$no_rust_path" "$work/wheel-venv/bin/python" -m pip install --quiet \
    --disable-pip-version-check --no-index "$wheel"
[[ $(python_seed "$work/wheel-venv/bin/python") == "librate $version" ]] || fail "the wheel's seed scenario"
passed "wheel: librate $version decides the seed scenario"

# --- the C tarball on x86_64 ------------------------------------------------------------
step "x86_64 C tarball into a prefix, programs built with pkg-config alone"
tar -C "$work" -xzf "$out/c/librate-$version-x86_64-unknown-linux-gnu.tar.gz"
prefix=$work/prefix-x86_64
mv "$work/librate-$version-x86_64-unknown-linux-gnu" "$prefix"
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
# shellcheck disable=SC2046 # pkg-config's flags are words
env PATH="$no_rust_path" cc -std=c99 tests/install/app.c -o "$work/app-shared" \
    $(pkg-config --cflags --libs librate) -Wl,-rpath,"$(pkg-config --variable=libdir librate)"
[[ $("$work/app-shared") == "librate $version" ]] || fail "the shared program's seed scenario"
passed "C tarball: a shared program decides the seed scenario"
# shellcheck disable=SC2046
env PATH="$no_rust_path" cc -std=c99 tests/install/app.c -o "$work/app-static" \
    $(pkg-config --cflags librate) -Wl,-Bstatic $(pkg-config --static --libs librate)
readelf -d "$work/app-static" | grep -q 'librate\.so' && fail "the static program needs librate.so"
[[ $("$work/app-static") == "librate $version" ]] || fail "the static program's seed scenario"
passed "C tarball: a static program decides the seed scenario"
unset PKG_CONFIG_PATH   # $prefix stays installed, for the Go module's system build below

# --- the Go module ----------------------------------------------------------------------
step "Go module through the file proxy into a fresh module, no cargo on PATH"
module=$(sed -n 's/^module //p' bindings/go/go.mod)
app=$work/goapp
mkdir -p "$app"
cat >"$app/main.go" <<EOF
// The seed scenario through the released Go module.
package main

import (
	"fmt"
	"os"
	"time"

	librate "$module"
)

func main() {
	bob, err := librate.NewGCRA(1, 2*time.Second, 1)
	if err != nil {
		panic(err)
	}
	defer bob.Close()
	first, _ := bob.AcquireAt(1, 0)
	late, _ := bob.AcquireAt(1, 999*time.Millisecond)
	again, _ := bob.AcquireAt(1, 2001*time.Millisecond)
	if !first.Allowed || late.Allowed || late.RetryAfter != 1001*time.Millisecond || !again.Allowed {
		fmt.Println("the seed scenario does not hold:", first, late, again)
		os.Exit(1)
	}
	fmt.Println("librate", librate.Version())
}
EOF
# GOFLAGS=-modcacherw: the test's module cache can be removed with the rest of $work.
go_env=(env PATH="$no_rust_path" GOPROXY="file://$out/go" GONOSUMDB="$module" GOFLAGS=-modcacherw
        GOPATH="$work/gopath" GOCACHE="$work/gocache")
(cd "$app" && "${go_env[@]}" go mod init example.com/app >/dev/null 2>&1 &&
    "${go_env[@]}" go get "$module@v$version" >&2 && "${go_env[@]}" go build -o app . >&2)
[[ $("$app/app") == "librate $version" ]] || fail "the Go module's seed scenario"
passed "Go module: fetched through the proxy, built with a C compiler alone"
(cd "$app" && "${go_env[@]}" go mod vendor >&2 && "${go_env[@]}" go build -mod=vendor -o app-vendored . >&2)
[[ $("$app/app-vendored") == "librate $version" ]] || fail "the vendored Go module's seed scenario"
passed "Go module: vendored, built from vendor/"
(cd "$app" && PKG_CONFIG_PATH=$prefix/lib/pkgconfig "${go_env[@]}" go build -mod=mod \
    -tags librate_system -o app-system . >&2)
[[ $(LD_LIBRARY_PATH=$prefix/lib "$app/app-system") == "librate $version" ]] ||
    fail "the Go module against the installed library"
readelf -d "$app/app-system" | grep -q 'librate\.so\.0' || fail "-tags librate_system did not link librate.so"
passed "Go module: -tags librate_system links the installed library"

# --- aarch64 under qemu -----------------------------------------------------------------
step "aarch64 library under qemu-user"
sysroot=/usr/aarch64-linux-gnu
arm_tarball=$out/c/librate-$version-aarch64-unknown-linux-gnu.tar.gz
if [[ ! -f $arm_tarball ]]; then
    echo "skipped: no $arm_tarball (DIST_TARGETS left aarch64 out)" >&2
elif ! command -v qemu-aarch64 >/dev/null || [[ ! -e $sysroot/lib/ld-linux-aarch64.so.1 ]]; then
    echo "skipped: no qemu-aarch64 or no aarch64 C library in $sysroot" \
        "(apt-get install qemu-user libc6-arm64-cross)" >&2
else
    tar -C "$work" -xzf "$arm_tarball"
    arm=$work/librate-$version-aarch64-unknown-linux-gnu
    zig=("$tools/bin/python" -m ziglang cc -target aarch64-linux-gnu.2.17)
    arm_flags=(-std=c99 -pthread -I"$arm/include" -L"$arm/lib" -lrate
               "-DRATE_EXPECTED_VERSION=\"$version\"")
    # test_shared's race of four processes of four threads on one table loses updates
    # under qemu-user whatever the library's CPU: the x86_64 library's own test program
    # fails it under qemu-x86_64 too, and passes it natively, which points at qemu-user's
    # emulation of atomics across processes that share a mapping. That case needs aarch64
    # hardware (docs/install.md).
    run_arm() {
        qemu-aarch64 -L "$sysroot" -E LD_LIBRARY_PATH="$arm/lib" \
            -E RATE_TEST_SKIP=test_processes_and_threads_share_one_limit "$@"
    }
    "${zig[@]}" tests/install/app.c "${arm_flags[@]}" -o "$work/app-arm"
    [[ $(run_arm "$work/app-arm") == "librate $version" ]] || fail "aarch64: the seed scenario"
    passed "aarch64: a program decides the seed scenario"
    for test in tests/c/test_*.c; do
        name=$(basename "$test" .c)
        "${zig[@]}" "$test" "${arm_flags[@]}" -o "$work/$name-arm"
        (cd "$work" && run_arm "./$name-arm") >"$work/$name.log" 2>&1 ||
            { cat "$work/$name.log" >&2; fail "aarch64: $name"; }
        passed "aarch64: $name"
    done
fi

# --- the sdist --------------------------------------------------------------------------
step "sdist built from its own contents (cargo on PATH) into a fresh venv"
python3 -m venv "$work/sdist-venv"
(cd "$work" && "$work/sdist-venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "$out/python/librate-$version.tar.gz")
[[ $(python_seed "$work/sdist-venv/bin/python") == "librate $version" ]] || fail "the sdist's seed scenario"
passed "sdist: built from its Rust sources, decides the seed scenario"

echo "dist-check: $checks passed, 0 failed"
