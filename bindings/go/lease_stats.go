package librate

/*
#include "rate.h"
*/
import "C"

import (
	"runtime"
	"time"
)

// LeaseStats are a holder's statistics, for dashboards (docs/metrics.md, lease holders):
// kept by the handle that renews (a host holder's other processes renew nothing). Its
// decisions' counts are Counts.
type LeaseStats struct {
	// Renewals is the answers of the lease script this handle applied: grants, quiet
	// answers and refusals alike.
	Renewals uint64
	// Fallback is how long, since this handle's first renewal, decisions came from the
	// fallback (no lease held and no answer from Redis): the alert when it rises.
	Fallback time.Duration
	// HeldRate is the share of the last grant in millionths of the rule's rate (0
	// before the first), HeldBurst in units at once.
	HeldRate, HeldBurst uint64
	// State is where decisions come from at the time asked.
	State HolderState
}

// Stats returns h's statistics now.
func (h *LeaseHolder) Stats() (LeaseStats, error) {
	var out C.rate_lease_stats
	status := C.rate_lease_read_stats(h.handle(), &out)
	runtime.KeepAlive(h)
	return leaseStatsOf(status, &out)
}

// StatsAt is Stats at now on the caller's timeline, the fallback counted up to it; a
// negative now is its origin.
func (h *LeaseHolder) StatsAt(now time.Duration) (LeaseStats, error) {
	var out C.rate_lease_stats
	status := C.rate_lease_read_stats_at(h.handle(), C.uint64_t(max(now, 0)), &out)
	runtime.KeepAlive(h)
	return leaseStatsOf(status, &out)
}

// leaseStatsOf turns a C status and the statistics it wrote into the Go result.
func leaseStatsOf(status C.int32_t, out *C.rate_lease_stats) (LeaseStats, error) {
	if err := okOrError(status); err != nil {
		return LeaseStats{}, err
	}
	return LeaseStats{
		Renewals:  uint64(out.renewals),
		Fallback:  durationOf(out.fallback_ns),
		HeldRate:  uint64(out.held_rate),
		HeldBurst: uint64(out.held_burst),
		State:     HolderState(out.state),
	}, nil
}
