//go:build !debug

package librate

// maybeGC does nothing outside `-tags debug` (see gc_debug.go).
func maybeGC() {}

// noteFreed does nothing outside `-tags debug` (see gc_debug.go).
func noteFreed() {}
