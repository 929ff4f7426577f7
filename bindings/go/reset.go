package librate

/*
#include "rate.h"

// As in rate.go: librate keeps no pointer past a call and never calls back into Go.
#cgo noescape rate_limiter_reset
#cgo nocallback rate_limiter_reset
#cgo noescape rate_keyed_reset
#cgo nocallback rate_keyed_reset
#cgo noescape rate_keyed_read_stats
#cgo nocallback rate_keyed_read_stats
#cgo noescape rate_keyed_read_stats_at
#cgo nocallback rate_keyed_read_stats_at
*/
import "C"

import (
	"runtime"
	"time"
)

// Reset makes the limiter new again (a customer's limit lifted): from the latest time
// it has seen on, it decides as a new limiter of its configuration would (GCRA and the
// fixed window at any time). Each acquire racing it, in any goroutine (or, for a limiter
// from Open, any process), is decided wholly before it or wholly after it. The error is
// ErrClosed for a nil or closed Limiter.
func (l *Limiter) Reset() error {
	status := C.rate_limiter_reset(l.handle())
	runtime.KeepAlive(l)
	return okOrError(status)
}

// Reset resets key: its next request is decided as a new key's, at any time. A key not
// in the table stays out of it. The key's former state keeps a slot, under no key, until
// it is fresh (at most a period, or GCRA's burst, after its last admission), so
// resetting many busy keys at once can fill a table for that long. Each acquire of the
// key racing the reset is decided wholly before or after it. The error is ErrClosed for a
// nil or closed Keyed, or ErrTableFull only for a table from OpenKeyed whose slot a
// stopped process keeps claimed (nothing is reset).
func (k *Keyed) Reset(key string) error { return k.reset(stringKey(key)) }

// ResetBytes is Reset with a []byte key.
func (k *Keyed) ResetBytes(key []byte) error { return k.reset(bytesKey(key)) }

func (k *Keyed) reset(key cKey) error {
	status := C.rate_keyed_reset(k.handle(), key.ptr, key.len)
	runtime.KeepAlive(k)
	return okOrError(status)
}

// KeyedStats is what a Keyed reports for dashboards.
type KeyedStats struct {
	// Capacity is the capacity the table was created with: this many live keys always
	// fit.
	Capacity uint64
	// MaxKeys is the most keys the table holds at once: its slots, twice Capacity.
	MaxKeys uint64
	// LiveKeys counts the keys whose state was not a new key's at the time asked.
	LiveKeys uint64
	// TableFull counts the requests for new keys refused with ErrTableFull since the
	// table was created; for a table from OpenKeyed, since its file was, by every
	// process.
	TableFull uint64
}

// Stats reports the table's statistics, with its live keys counted now. It reads every
// slot: call it for a dashboard, not on a hot path. The error is ErrClosed for a nil or
// closed Keyed.
func (k *Keyed) Stats() (KeyedStats, error) {
	var out C.rate_keyed_stats
	status := C.rate_keyed_read_stats(k.handle(), &out)
	runtime.KeepAlive(k)
	return statsOf(status, &out)
}

// StatsAt is Stats with the live keys counted at time now on the caller's timeline.
func (k *Keyed) StatsAt(now time.Duration) (KeyedStats, error) {
	if now < 0 {
		return KeyedStats{}, negative("now", int64(now))
	}
	var out C.rate_keyed_stats
	status := C.rate_keyed_read_stats_at(k.handle(), C.uint64_t(now), &out)
	runtime.KeepAlive(k)
	return statsOf(status, &out)
}

// statsOf turns a C status and the statistics it wrote into the Go result.
func statsOf(status C.int32_t, out *C.rate_keyed_stats) (KeyedStats, error) {
	if err := okOrError(status); err != nil {
		return KeyedStats{}, err
	}
	return KeyedStats{
		Capacity:  uint64(out.capacity),
		MaxKeys:   uint64(out.max_keys),
		LiveKeys:  uint64(out.live_keys),
		TableFull: uint64(out.table_full),
	}, nil
}

// okOrError is nil for RATE_OK, else the status's error.
func okOrError(status C.int32_t) error {
	if status != C.RATE_OK {
		return statusError(status)
	}
	return nil
}
