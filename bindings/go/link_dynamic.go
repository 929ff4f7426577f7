//go:build librate_dynamic

package librate

// With `-tags librate_dynamic`: link against librate.so in the repository's
// target/release, found at run time through the rpath below (or LD_LIBRARY_PATH when the
// binary is moved elsewhere).

// #cgo LDFLAGS: -L${SRCDIR}/../../target/release -lrate -Wl,-rpath,${SRCDIR}/../../target/release
import "C"
