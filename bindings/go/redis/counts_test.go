package librateredis_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

// The Redis clients count in the binding, as in process: off until EnableCounts, then
// each decision once, on every path (Acquire, Allow, AcquireMany); a query is not.
func TestLimiterCounts(t *testing.T) {
	client := startServer(t).client(t)
	l := newLimiter(t, client, librate.Config{Algorithm: librate.FixedWindow, Limit: 2, Period: time.Minute}, "counts:")
	l.AcquireAt(ctx, "k", 1, 0)
	if _, err := l.Counts(); !errors.Is(err, librate.ErrUnsupported) {
		t.Fatalf("counting off: %v, want ErrUnsupported", err)
	}
	l.EnableCounts()
	// k has 1 of 2 left: admitted, then denied; in a batch k denied and j admitted; a
	// query; Allow of a fresh key on the server's clock, admitted.
	l.AcquireAt(ctx, "k", 1, 0)
	l.AcquireAt(ctx, "k", 1, 0)
	if _, err := l.AcquireManyAt(ctx, []string{"k", "j"}, 1, 0); err != nil {
		t.Fatal(err)
	}
	l.AcquireAt(ctx, "k", 0, 0)
	if ok, err := l.Allow(ctx, "fresh"); !ok || err != nil {
		t.Fatalf("Allow: %v, %v", ok, err)
	}
	if got, err := l.Counts(); err != nil || !reflect.DeepEqual(got, librate.Counts{Admitted: 3, Denied: 2}) {
		t.Errorf("Counts() = %+v, %v; want 3 admitted, 2 denied", got, err)
	}
}

// 2 a second and 3 a minute, as librate.Policy counts them (TestPolicyCounts there).
func TestPolicyCounts(t *testing.T) {
	p := newPolicy(t, startServer(t).client(t), []librate.Config{
		{Algorithm: librate.GCRA, Limit: 2, Period: time.Second},
		{Algorithm: librate.FixedWindow, Limit: 3, Period: time.Minute},
	}, "counts:")
	p.EnableCounts()
	for _, at := range []time.Duration{0, 0, 0, time.Second, 2 * time.Second} {
		p.AcquireAt(ctx, "k", 1, at)
	}
	want := librate.Counts{Admitted: 3, Denied: 2, Rules: []librate.RuleCounts{{Denied: 1}, {Denied: 1}}}
	if got, err := p.Counts(); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Counts() = %+v, %v; want %+v", got, err, want)
	}
}

// Both are librate.Counted, for a collector of every limiter's counts.
var _ = []librate.Counted{(*librateredis.Limiter)(nil), (*librateredis.Policy)(nil)}

// The minute rule in shadow: it takes a unit of each request the per-second rule admits,
// is only asked of the one it denies (at 0, the third), and would deny the fifth (at
// 2 s, its fourth of 3): counted beside that request's admission, as in process.
func TestPolicyCountsItsShadowRule(t *testing.T) {
	p := newPolicy(t, startServer(t).client(t), []librate.Config{
		{Algorithm: librate.GCRA, Limit: 2, Period: time.Second},
		{Algorithm: librate.FixedWindow, Limit: 3, Period: time.Minute},
	}, "counts:shadow:")
	if err := p.SetShadow(1); err != nil {
		t.Fatal(err)
	}
	p.EnableCounts()
	for _, at := range []time.Duration{0, 0, 0, time.Second, 2 * time.Second} {
		p.AcquireAt(ctx, "k", 1, at)
	}
	want := librate.Counts{Admitted: 4, Denied: 1, Rules: []librate.RuleCounts{{Denied: 1}, {ShadowDenied: 1}}}
	if got, err := p.Counts(); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Counts() = %+v, %v; want %+v", got, err, want)
	}
}
