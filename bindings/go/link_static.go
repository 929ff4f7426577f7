//go:build !librate_dynamic

package librate

// The default: link librate.a into the Go binary, so the program has no runtime
// dependency on librate.so. The extra libraries are what rustc reports for the static
// library (`cargo rustc --release --lib -- --print native-static-libs`, minus libc, which
// cgo links anyway); libgcc_s provides the unwinder Rust's catch_unwind needs.

// The header and the library are the checkout's: include/ and cargo's target/release (a
// released module carries its own, in place of these link files: scripts/dist.sh). A
// checkout without a cargo build fails here, in one line, rather than in the linker.

// #cgo CFLAGS: -I${SRCDIR}/../../include -I${SRCDIR}/../../target/release
// #cgo LDFLAGS: ${SRCDIR}/../../target/release/librate.a -lgcc_s -lutil -lrt -lpthread -lm -ldl
// #if !__has_include(<librate.a>)
// #error "librate is not built: run `cargo build --release` in the repository's root"
// #endif
import "C"
