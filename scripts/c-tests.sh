#!/usr/bin/env bash
# Runs the C programs (tests/c/test_*.c, examples/c/*.c) against the release librate.so
#   (a) under valgrind memcheck: zero errors and no definite, indirect or possible leaks;
#   (b) rebuilt with -fsanitize=address,undefined, after proving the sanitizers are linked
#       and actually catch a planted bug.
# `cargo test` already compiles and runs the same programs plainly (ffi/tests/c_api.rs).
#
# Usage: scripts/c-tests.sh          (needs cc, valgrind, and gcc's libasan/libubsan)
# Env:   CC (default cc), CARGO_TARGET_DIR (default target)
# Exits non-zero on any failure. Ends with a line "c-tests: N passed, N failed", a run of
# a program under valgrind or the sanitizers being one test (scripts/test.sh counts them).
set -euo pipefail

cd "$(dirname "$0")/.."
read -ra cc <<<"${CC:-cc}"   # may be several words, e.g. "ccache gcc"
target_dir=${CARGO_TARGET_DIR:-target}
work="$target_dir/c-tests"

step() { printf '\n== %s\n' "$*"; }
passed=0
fail() {
    printf 'c-tests: FAILED: %s\n' "$*" >&2
    echo "c-tests: $passed passed, 1 failed"
    exit 1
}

command -v valgrind >/dev/null || fail "valgrind is not installed (apt-get install valgrind)"

step "cargo build --release"
cargo build --release
lib="$target_dir/release/librate.so"
[[ -f $lib ]] || fail "$lib was not built"
version=$(cargo pkgid -p librate-ffi)
version=${version##*[#@]}   # path+file:///…#librate@0.1.0 or file:///…#0.1.0

# The linker records librate.so's soname (librate.so.0, set by ffi/build.rs) in each program;
# cargo does not create a file by that name, so link through a directory that has both.
rm -rf "$work"
mkdir -p "$work/lib" "$work/plain" "$work/asan"
ln -s "$(realpath "$lib")" "$work/lib/librate.so"
ln -s "$(realpath "$lib")" "$work/lib/librate.so.0"
libdir=$(realpath "$work/lib")

sources=(tests/c/test_*.c examples/c/*.c)
common_flags=(-std=c99 -Wall -Wextra -Wpedantic -Werror -pthread -g
              -Iinclude "-DRATE_EXPECTED_VERSION=\"$version\"")
link_flags=(-L"$libdir" -lrate -Wl,-rpath,"$libdir")
sanitize_flags=(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)

# build <out-dir> <extra flags…>: compiles every source into <out-dir>/<name>.
build() {
    local out=$1 source
    shift
    for source in "${sources[@]}"; do
        "${cc[@]}" "${common_flags[@]}" "$@" "$source" -o "$out/$(basename "$source" .c)" \
            "${link_flags[@]}" || fail "$source does not compile ($*)"
    done
}

# --- (a) valgrind ------------------------------------------------------------------------
valgrind_cmd=(valgrind --quiet --error-exitcode=1 --leak-check=full
              --show-leak-kinds=definite,indirect,possible
              --errors-for-leak-kinds=definite,indirect,possible)

step "valgrind: the leak check catches a planted leak"
cat > "$work/leak_canary.c" <<'EOF'
#include <stdlib.h>
int main(void) { volatile char *p = malloc(64); p[0] = 1; p = NULL; return 0; }
EOF
"${cc[@]}" -g -O0 "$work/leak_canary.c" -o "$work/leak_canary"
if "${valgrind_cmd[@]}" "$work/leak_canary" >"$work/leak_canary.log" 2>&1; then
    cat "$work/leak_canary.log"
    fail "valgrind did not report a planted leak: the flags do not catch leaks"
fi
grep -q "definitely lost" "$work/leak_canary.log" || fail "valgrind failed the canary for another reason"

step "valgrind memcheck"
build "$work/plain"
for source in "${sources[@]}"; do
    program="$work/plain/$(basename "$source" .c)"
    echo "-- $program"
    "${valgrind_cmd[@]}" "$program" || fail "valgrind: $program (errors or leaks above)"
    passed=$((passed + 1))
done

# --- (b) AddressSanitizer + UndefinedBehaviorSanitizer ----------------------------------
# Only the C side is instrumented; librate.so is plain Rust. gcc links libasan and libubsan
# dynamically, and an ASan program must have libasan first in its library list, which the
# compiler driver arranges; nothing is preloaded.
step "sanitizers: linked, and they catch a planted bug"
cat > "$work/asan_canary.c" <<'EOF'
#include <stdlib.h>
int main(int argc, char **argv) { char *p = malloc(8); volatile char c = p[8 + argc - 1]; (void)argv; (void)c; free(p); return 0; }
EOF
cat > "$work/ubsan_canary.c" <<'EOF'
#include <limits.h>
#include <stdio.h>
int main(int argc, char **argv) { volatile int x = INT_MAX - 1 + argc; (void)argv; printf("%d\n", x + 1); return 0; }
EOF
# canary:what the sanitizer must say about it (leak_canary is the valgrind one, for LSan).
for check in "asan_canary:heap-buffer-overflow" "ubsan_canary:signed integer overflow" \
             "leak_canary:LeakSanitizer: detected memory leaks"; do
    canary=${check%%:*}
    "${cc[@]}" -g "${sanitize_flags[@]}" "$work/$canary.c" -o "$work/$canary.sanitized"
    if ASAN_OPTIONS=detect_leaks=1 "$work/$canary.sanitized" >"$work/$canary.sanitized.log" 2>&1; then
        cat "$work/$canary.sanitized.log"
        fail "$canary ran clean: the sanitizer does not work here"
    fi
    grep -q "${check#*:}" "$work/$canary.sanitized.log" ||
        fail "$canary failed without the sanitizer saying '${check#*:}'"
done

build "$work/asan" "${sanitize_flags[@]}"
for source in "${sources[@]}"; do
    program="$work/asan/$(basename "$source" .c)"
    needed=$(readelf -d "$program" | grep NEEDED || true)
    for runtime in libasan libubsan librate.so.0; do
        grep -q "$runtime" <<<"$needed" || fail "$program is not linked to $runtime:
$needed"
    done
    # Captured first: `ldd | grep -q` under pipefail fails whenever grep exits before ldd
    # has written everything (ldd then dies of SIGPIPE), which made this check flaky.
    loaded=$(ldd "$program")
    grep -q "$libdir/librate.so.0" <<<"$loaded" || fail "$program does not load $libdir/librate.so.0:
$loaded"
done

step "ASan + UBSan"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for source in "${sources[@]}"; do
    program="$work/asan/$(basename "$source" .c)"
    echo "-- $program"
    "$program" || fail "sanitizers: $program"
    passed=$((passed + 1))
done

step "c-tests: all ${#sources[@]} programs clean under valgrind and ASan+UBSan"
echo "c-tests: $passed passed, 0 failed"
