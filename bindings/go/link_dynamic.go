//go:build librate_dynamic

package librate

// With `-tags librate_dynamic`: link against librate.so in the repository's
// target/release, found at run time through the rpath below (or LD_LIBRARY_PATH when the
// binary is moved elsewhere).

// The header is the checkout's include/. A checkout without a cargo build fails here, in
// one line, rather than in the linker.

// #cgo CFLAGS: -I${SRCDIR}/../../include -I${SRCDIR}/../../target/release
// #cgo LDFLAGS: -L${SRCDIR}/../../target/release -lrate -Wl,-rpath,${SRCDIR}/../../target/release
// #if !__has_include(<librate.so>)
// #error "librate is not built: run `cargo build --release` in the repository's root"
// #endif
import "C"
