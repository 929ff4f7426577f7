//go:build !librate_dynamic

package librate

// The default: link librate.a into the Go binary, so the program has no runtime
// dependency on librate.so. The extra libraries are what rustc reports for the static
// library (`cargo rustc --release --lib -- --print native-static-libs`, minus libc, which
// cgo links anyway); libgcc_s provides the unwinder Rust's catch_unwind needs.

// #cgo LDFLAGS: ${SRCDIR}/../../target/release/librate.a -lgcc_s -lutil -lrt -lpthread -lm -ldl
import "C"
