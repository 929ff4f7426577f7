package librate_test

import (
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// Counts are off until EnableCounts, then count each request once; a query is not
// counted. Values by hand from docs/decision.md, as in the Python tests.
func TestLimiterCounts(t *testing.T) {
	l, err := librate.New(twoAMinute)
	if err != nil {
		t.Fatal(err)
	}
	l.AcquireAt(1, 0)
	if _, err := l.Counts(); !errors.Is(err, librate.ErrUnsupported) {
		t.Fatalf("counting off: %v, want ErrUnsupported", err)
	}
	if err := l.EnableCounts(); err != nil {
		t.Fatal(err)
	}
	// 1 of 2 left: admitted, then denied twice; the query is not counted.
	for range 3 {
		l.AcquireAt(1, 0)
	}
	l.AcquireAt(0, 0)
	if got, err := l.Counts(); err != nil || !reflect.DeepEqual(got, librate.Counts{Admitted: 1, Denied: 2}) {
		t.Errorf("Counts() = %+v, %v; want 1 admitted, 2 denied", got, err)
	}
	l.Close()
	if _, err := l.Counts(); !errors.Is(err, librate.ErrClosed) {
		t.Errorf("closed: %v, want ErrClosed", err)
	}
	if err := l.EnableCounts(); !errors.Is(err, librate.ErrClosed) {
		t.Errorf("closed EnableCounts: %v, want ErrClosed", err)
	}
}

// A table of capacity 1 holds 2 keys: a, a (denied), b, then c refused for a full table.
func TestKeyedCounts(t *testing.T) {
	k, err := librate.NewKeyed(librate.Config{Algorithm: librate.FixedWindow, Limit: 1, Period: time.Minute}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	k.EnableCounts()
	for _, key := range []string{"a", "a", "b", "c"} {
		k.AcquireAt(key, 1, 0)
	}
	if got, err := k.Counts(); err != nil || !reflect.DeepEqual(got, librate.Counts{Admitted: 2, Denied: 1, TableFull: 1}) {
		t.Errorf("Counts() = %+v, %v", got, err)
	}
}

// 2 a second and 3 a minute: at 0 two admitted and the third denied by rule 0; at 1 s
// the minute's third admitted; at 2 s rule 1 denies.
func TestPolicyCounts(t *testing.T) {
	p := mustPolicy(t, librate.Config{Algorithm: librate.GCRA, Limit: 2, Period: time.Second},
		librate.Config{Algorithm: librate.FixedWindow, Limit: 3, Period: time.Minute})
	p.EnableCounts()
	for _, at := range []time.Duration{0, 0, 0, time.Second, 2 * time.Second} {
		p.AcquireAt(1, at)
	}
	want := librate.Counts{Admitted: 3, Denied: 2, Rules: []librate.RuleCounts{{Denied: 1}, {Denied: 1}}}
	if got, err := p.Counts(); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Counts() = %+v, %v; want %+v", got, err, want)
	}
}

// A keyed policy: a admitted, a denied by its own rule, b admitted, c refused (2 slots).
func TestKeyedPolicyCounts(t *testing.T) {
	p, err := librate.NewKeyedPolicy(1,
		librate.KeyedRule{Config: librate.Config{Algorithm: librate.FixedWindow, Limit: 1, Period: time.Minute}, Scope: librate.PerKey},
		librate.KeyedRule{Config: librate.Config{Algorithm: librate.FixedWindow, Limit: 3, Period: time.Minute}, Scope: librate.Global})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.EnableCounts()
	for _, key := range []string{"a", "a", "b", "c"} {
		p.AcquireAt(key, 1, 0)
	}
	want := librate.Counts{Admitted: 2, Denied: 1, TableFull: 1, Rules: []librate.RuleCounts{{Denied: 1}, {}}}
	if got, err := p.Counts(); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Counts() = %+v, %v; want %+v", got, err, want)
	}
}

// 8 goroutines × 1,000 requests of 100 a minute at one instant: exactly 100 admitted.
func TestCountsUnderGoroutines(t *testing.T) {
	l, err := librate.New(librate.Config{Algorithm: librate.FixedWindow, Limit: 100, Period: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.EnableCounts()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				l.AcquireAt(1, 0)
			}
		}()
	}
	wg.Wait()
	if got, _ := l.Counts(); !reflect.DeepEqual(got, librate.Counts{Admitted: 100, Denied: 7900}) {
		t.Errorf("Counts() = %+v", got)
	}
}

// A lease holder counts its decisions from the share and by its fallback alike: the
// fallback's one a second admits then denies; the share (one unit every 2 ms, from
// 10.002 s) denies then admits.
func TestLeaseHolderCounts(t *testing.T) {
	local := librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Second, Burst: 1}
	h := newHolder(t, "host-c", &local)
	if _, err := h.Counts(); !errors.Is(err, librate.ErrUnsupported) {
		t.Fatalf("counting off: %v, want ErrUnsupported", err)
	}
	h.EnableCounts()
	r := renewalAt(t, h, 10*time.Second)
	for _, at := range []time.Duration{10 * time.Second, 10 * time.Second} {
		h.AcquireAt(1, at)
	}
	answer(t, h, r, "granted", 500_000, 500, 10*time.Second, librate.Leased)
	for _, at := range []time.Duration{10 * time.Second, 10*time.Second + 2*time.Millisecond} {
		h.AcquireAt(1, at)
	}
	if got, err := h.Counts(); err != nil || !reflect.DeepEqual(got, librate.Counts{Admitted: 2, Denied: 2}) {
		t.Errorf("Counts() = %+v, %v; want 2 admitted, 2 denied", got, err)
	}
}

// One renewal answered at 10 s: half the rate, bursts of 500, held to 11.998 s (the lease
// of 2 s less the 2 ms margin). No answer since: at 13 s decisions have come from the
// fallback for 13 s - 11.998 s = 1.002 s.
func TestLeaseHolderStats(t *testing.T) {
	h := newHolder(t, "host-d", nil)
	answer(t, h, renewalAt(t, h, 10*time.Second), "granted", 500_000, 500, 10*time.Second, librate.Leased)
	for _, c := range []struct {
		at   time.Duration
		want librate.LeaseStats
	}{
		{11 * time.Second, librate.LeaseStats{Renewals: 1, HeldRate: 500_000, HeldBurst: 500, State: librate.Leased}},
		{13 * time.Second, librate.LeaseStats{Renewals: 1, Fallback: 1002 * time.Millisecond, HeldRate: 500_000,
			HeldBurst: 500, State: librate.InFallback}},
	} {
		if got, err := h.StatsAt(c.at); err != nil || got != c.want {
			t.Errorf("StatsAt(%v) = %+v, %v; want %+v", c.at, got, err, c.want)
		}
	}
}

// The policy's counts carry its shadow rule's would-be denials (as the Redis policy's
// in TestPolicyCountsItsShadowRule there): the minute rule in shadow would deny the
// request at 2 s, its fourth of 3.
func TestPolicyCountsItsShadowRule(t *testing.T) {
	p := mustPolicy(t, librate.Config{Algorithm: librate.GCRA, Limit: 2, Period: time.Second},
		librate.Config{Algorithm: librate.FixedWindow, Limit: 3, Period: time.Minute})
	if err := p.SetShadow(1); err != nil {
		t.Fatal(err)
	}
	p.EnableCounts()
	for _, at := range []time.Duration{0, 0, 0, time.Second, 2 * time.Second} {
		p.AcquireAt(1, at)
	}
	want := librate.Counts{Admitted: 4, Denied: 1, Rules: []librate.RuleCounts{{Denied: 1}, {ShadowDenied: 1}}}
	if got, err := p.Counts(); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Counts() = %+v, %v; want %+v", got, err, want)
	}
}
