//go:build !librate_system

package librate

// The released module links its own librate.a for the platform (lib/GOOS_GOARCH),
// compiled against its own copy of the header (include/): `go get` and `go build` need a
// C compiler and nothing else. With `-tags librate_system`, the module links an installed
// librate instead, found by pkg-config. scripts/dist.sh puts this file, the header and
// the libraries in place of the repository's link files. The extra libraries are what
// rustc reports for the static library; libgcc_s provides the unwinder Rust's
// catch_unwind needs.

// #cgo CFLAGS: -I${SRCDIR}/include
// #cgo linux,amd64 LDFLAGS: ${SRCDIR}/lib/linux_amd64/librate.a -lgcc_s -lutil -lrt -lpthread -lm -ldl
// #cgo linux,arm64 LDFLAGS: ${SRCDIR}/lib/linux_arm64/librate.a -lgcc_s -lutil -lrt -lpthread -lm -ldl
// #if !defined(__linux__) || !(defined(__x86_64__) || defined(__aarch64__))
// #error "librate ships libraries for linux/amd64 and linux/arm64: elsewhere, install librate and build with -tags librate_system"
// #endif
import "C"
