package librate

import (
	"math"
	"time"
)

// The methods in x/time/rate's shape (AllowN, ReserveN, Reservation.DelayFrom) take a
// time.Time; librate decides on its own timeline, nanoseconds of CLOCK_MONOTONIC (see
// docs/clock.md). anchor pairs the two: librate's clock, and Go's read by time.Now (whose
// monotonic reading is CLOCK_MONOTONIC on Linux) right after it, so the pair's offset
// holds for the whole life of the process.
var anchor = readAnchor()

// timelinePair is a reading of librate's clock, ns, and a time.Time read at most the
// pair's gap after it.
type timelinePair struct {
	at time.Time
	ns time.Duration
}

// anchorTries is how many pairs readAnchor reads to keep the tightest: the first read of
// librate's clock in a process calibrates it, and any read may be preempted.
const anchorTries = 8

// readAnchor keeps, of anchorTries pairs, the one read closest together. Pairing
// librate's reading with the Go reading after it maps a time to at most librate's
// reading at that instant, behind by at most the gap, never past it: a time.Now() passed
// to AllowN is never later, on librate's timeline, than a call on librate's clock that
// follows it.
func readAnchor() timelinePair {
	var best timelinePair
	bestGap := Never
	for range anchorTries {
		before := time.Now()
		ns := Now()
		after := time.Now()
		if gap := after.Sub(before); gap < bestGap {
			best, bestGap = timelinePair{at: after, ns: ns}, gap
		}
	}
	return best
}

// onTimeline maps t onto librate's timeline, in nanoseconds: through its monotonic
// reading when it has one (time.Now's, and times derived from it by Add), otherwise
// (time.Unix, time.Date, a time that crossed a wire or went through Round(0)) through
// its wall-clock distance from a fresh pair of readings. A time before librate's origin
// maps to 0.
func onTimeline(t time.Time) uint64 {
	pair := anchor
	if !hasMonotonic(t) {
		// The wall clock may have been stepped since the anchor was read: measure the
		// distance from a pair read now instead.
		ns := Now()
		pair = timelinePair{at: time.Now(), ns: ns}
	}
	// t.Sub saturates at ±292 years; the sum saturates the same way.
	offset := t.Sub(pair.at)
	switch {
	case offset <= -pair.ns:
		return 0
	case offset > 0 && offset > math.MaxInt64-pair.ns:
		return math.MaxInt64
	}
	return uint64(pair.ns + offset)
}

// hasMonotonic reports whether t carries a monotonic clock reading: Round(0) strips one,
// and changes nothing in a time without.
func hasMonotonic(t time.Time) bool {
	return t != t.Round(0)
}

// untilOnTimeline is the duration from the time t maps to until ns on librate's
// timeline: 0 if ns is not after it, saturated at Never.
func untilOnTimeline(ns uint64, t time.Time) time.Duration {
	from := onTimeline(t)
	if ns <= from {
		return 0
	}
	return time.Duration(min(ns-from, uint64(Never)))
}

// TimeAt is the time.Time at offset on librate's timeline (the offset Now returns, and
// the "At" methods take): a time with Go's monotonic reading, which AllowN, ReserveN
// and MiddlewareOptions.Now map back to offset exactly. It lets a test or a simulation
// that counts time from 0 drive the calls that take a time.Time.
func TimeAt(offset time.Duration) time.Time {
	return anchor.at.Add(offset - anchor.ns)
}

// OffsetOf is the offset on librate's timeline that t maps to, as AllowN maps it: what
// an "At" method takes for the same instant. A time before librate's origin is 0.
func OffsetOf(t time.Time) time.Duration {
	return time.Duration(onTimeline(t))
}
