//go:build librate_system

package librate

// With `-tags librate_system`: link the librate installed on the system (a release
// tarball or scripts/install.sh), found by pkg-config as librate.

// #cgo pkg-config: librate
import "C"
