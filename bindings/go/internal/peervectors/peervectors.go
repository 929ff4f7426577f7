// Package peervectors holds the published test vectors of librate's Go peers, replayed
// step by step through any limiter that decides at explicit times, so the in-process
// Limiter's tests and the Redis tier's run the same steps.
//
// Where a peer's conventions differ from librate's, librate's win: a peer's -1 "no
// retry" is RetryAfter 0 for an admission, and a cost above the burst is
// librate.ErrInsufficientCapacity, which a peer reports as a denial.
package peervectors

import (
	"errors"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

const ms = time.Millisecond

// AcquireAt takes n units at `at` from one limiter of a Vector's Config, fresh before
// the first step, as librate.Limiter.AcquireAt does.
type AcquireAt func(n int, at time.Duration) (librate.Decision, error)

// Vector is one peer's published sequence.
type Vector struct {
	// Name is the peer's test the steps come from.
	Name string
	// Config is the limit the peer's test sets up, in librate's terms.
	Config librate.Config
	// Replay runs the steps through acquireAt, reporting each wrong one on t.
	Replay func(t testing.TB, acquireAt AcquireAt)
}

// All is every vector.
var All = []Vector{
	{"throttled TestRateLimit", librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Second, Burst: 5}, throttled},
	{"x-time-rate TestLimiterBurst3", librate.Config{Algorithm: librate.GCRA, Limit: 10, Period: time.Second, Burst: 3}, xTimeBurst3},
}

// throttled is throttled/throttled rate_test.go TestRateLimit: PerSec(1) with MaxBurst
// 4, which is a burst of 5 (throttled's burst counts the request in hand).
func throttled(t testing.TB, acquireAt AcquireAt) {
	t.Helper()
	if _, err := acquireAt(6, 0); !errors.Is(err, librate.ErrInsufficientCapacity) {
		t.Fatalf("6 units, burst 5: %v; want ErrInsufficientCapacity", err)
	}
	type vector struct {
		at           time.Duration
		n            int
		allowed      bool
		remaining    uint64
		reset, retry time.Duration
	}
	for i, v := range []vector{
		{0, 1, true, 4, 1000 * ms, 0},
		{0, 1, true, 3, 2000 * ms, 0},
		{0, 1, true, 2, 3000 * ms, 0},
		{0, 1, true, 1, 4000 * ms, 0},
		{0, 1, true, 0, 5000 * ms, 0},
		{0, 1, false, 0, 5000 * ms, 1000 * ms},
		{3000 * ms, 1, true, 2, 3000 * ms, 0},
		{3100 * ms, 1, true, 1, 3900 * ms, 0},
		{4000 * ms, 1, true, 1, 4000 * ms, 0},
		{8000 * ms, 1, true, 4, 1000 * ms, 0},
		{9500 * ms, 1, true, 4, 1000 * ms, 0},
		{9500 * ms, 0, true, 4, 1000 * ms, 0},
		{9500 * ms, 2, true, 2, 3000 * ms, 0},
		{9500 * ms, 5, false, 2, 3000 * ms, 3000 * ms},
	} {
		got, err := acquireAt(v.n, v.at)
		want := librate.Decision{Allowed: v.allowed, Limit: 5, Remaining: v.remaining,
			RetryAfter: v.retry, ResetAfter: v.reset}
		if err != nil || got != want {
			t.Errorf("case %d (%d at %v): got %+v, %v\nwant %+v", i+1, v.n, v.at, got, err, want)
		}
	}
}

// xTimeBurst3 is golang.org/x/time/rate rate_test.go TestLimiterBurst3: NewLimiter(10,
// 3), times at 100 ms steps. {t1, 4, false} is a cost above the burst: Allow-style
// calls answer false for it, AcquireAt the error.
func xTimeBurst3(t testing.TB, acquireAt AcquireAt) {
	t.Helper()
	tick := func(i time.Duration) time.Duration { return i * 100 * ms }
	type vector struct {
		at      time.Duration
		n       int
		allowed bool
	}
	for i, v := range []vector{
		{tick(0), 2, true}, {tick(0), 2, false}, {tick(0), 1, true}, {tick(0), 1, false},
		{tick(2), 1, true}, {tick(3), 1, true}, {tick(4), 1, true}, {tick(4), 1, true},
		{tick(4), 1, false}, {tick(4), 1, false}, {tick(9), 3, true}, {tick(9), 0, true},
	} {
		if i == 4 {
			if _, err := acquireAt(4, tick(1)); !errors.Is(err, librate.ErrInsufficientCapacity) {
				t.Errorf("{t1, 4}: %v; want ErrInsufficientCapacity", err)
			}
		}
		d, err := acquireAt(v.n, v.at)
		if err != nil || d.Allowed != v.allowed {
			t.Errorf("step %d (%d at %v): allowed %v, %v; want %v", i, v.n, v.at, d.Allowed, err, v.allowed)
		}
	}
}
