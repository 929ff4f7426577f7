//go:build debug

package librate

import (
	"runtime"
	"sync/atomic"
)

// freedHandles counts handles released by the garbage-collection backstop, so the
// debug-tag tests can check that an unclosed Limiter is freed.
var freedHandles atomic.Int64

// maybeGC runs a full collection before every C call under `-tags debug`, and yields so
// the cleanups it queues can run, so a missing runtime.KeepAlive shows up as a freed
// handle in use (a crash or a wrong decision).
func maybeGC() {
	runtime.GC()
	runtime.Gosched()
}

// noteFreed records one handle freed by the backstop.
func noteFreed() { freedHandles.Add(1) }
