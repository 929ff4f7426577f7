package librate_test

import (
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// Limiters and policies made and dropped without Close while other goroutines do the same. Under
// `GOGC=1 go test -tags debug` every C call first runs a full collection, so a handle
// freed too early (a missing runtime.KeepAlive) would show up as a crash or a wrong
// decision here; without the tag it is a quick smoke test.
func TestGCStress(t *testing.T) {
	const goroutines, rounds = 4, 100
	admitted := librate.Decision{Allowed: true, Limit: 1, ResetAfter: time.Hour}
	denied := librate.Decision{Limit: 1, RetryAfter: time.Hour, ResetAfter: time.Hour}
	parallel(goroutines, func() {
		for range rounds {
			l, err := librate.NewGCRA(1, time.Hour, 1)
			if err != nil {
				t.Error(err)
				return
			}
			first, err1 := l.AcquireAt(1, 0)
			second, err2 := l.AcquireAt(1, 0)
			if err1 != nil || err2 != nil || first != admitted || second != denied {
				t.Errorf("got %+v %v, %+v %v; want %+v, %+v", first, err1, second, err2, admitted, denied)
				return
			}
			p, err := librate.NewPolicy(l.Config())
			if err != nil {
				t.Error(err)
				return
			}
			firstOf, err1 := p.AcquireAt(1, 0)
			secondOf, err2 := p.AcquireAt(1, 0)
			if err1 != nil || err2 != nil || firstOf.Rules[0] != admitted || secondOf.Rules[0] != denied {
				t.Errorf("policy: got %+v %v, %+v %v; want %+v, %+v", firstOf, err1, secondOf, err2, admitted, denied)
				return
			}
			// l and p are dropped here, unclosed: only the cleanups free them.
		}
	})
}

// Lease holders granted a share, deciding from it and dropped without Close, as
// TestGCStress does for limiters: a share of the whole rule of 1,000 a second (T = 1 ms)
// starts empty, so a unit is admitted a millisecond after the grant, and one more is not.
func TestLeaseHolderGCStress(t *testing.T) {
	const goroutines, rounds = 4, 100
	fields := [librate.LeaseFields]uint64{1_000_000, 1000, 2_000_000, 0, 1_000_000, 1000, 1, 0}
	parallel(goroutines, func() {
		for range rounds {
			h, err := librate.NewLeaseHolder(thousandASecond, librate.LeaseOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			r, err := h.RenewalAt(0)
			if err != nil {
				t.Error(err)
				return
			}
			state, err := h.ApplyAt(r, "granted", fields, 0)
			first, _ := h.AcquireAt(1, time.Millisecond)
			second, _ := h.AcquireAt(1, time.Millisecond)
			if err != nil || state != librate.Leased || !first.Allowed || second.Allowed {
				t.Errorf("%v, %v: %+v then %+v", state, err, first, second)
				return
			}
			// h is dropped here, unclosed: only the cleanup frees it.
		}
	})
}
