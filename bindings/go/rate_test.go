package librate_test

import (
	"context"
	"errors"
	"fmt"
	xorshiftpkg "github.com/librate/librate/bindings/go/internal/xorshift"
	"math"
	"os"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

const ms = time.Millisecond

// mustNew builds a limiter, closed when the test ends, or fails the test.
func mustNew(t testing.TB, config librate.Config) *librate.Limiter {
	t.Helper()
	l, err := librate.New(config)
	if err != nil {
		t.Fatalf("New(%+v): %v", config, err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// mustGCRA is mustNew for a GCRA limiter.
func mustGCRA(t testing.TB, limit uint64, period time.Duration, burst uint64) *librate.Limiter {
	t.Helper()
	return mustNew(t, librate.Config{Algorithm: librate.GCRA, Limit: limit, Period: period, Burst: burst})
}

// step is one call at a frozen time and the decision it must produce.
type step struct {
	name string
	at   time.Duration
	want librate.Decision
}

func checkSteps(t *testing.T, acquire func(at time.Duration) (librate.Decision, error), steps []step) {
	t.Helper()
	for _, s := range steps {
		got, err := acquire(s.at)
		if err != nil {
			t.Fatalf("%s at %v: %v", s.name, s.at, err)
		}
		if got != s.want {
			t.Errorf("%s at %v:\n got %+v\nwant %+v", s.name, s.at, got, s.want)
		}
	}
}

// Seed scenario (docs/decision.md): L=1 per 2 s, burst 1. T = 2 s and τ = B·T = 2 s. At
// 0 the TAT becomes 2 s. At 999 ms the request needs TAT + T − now ≤ τ, that is now ≥
// 2 s: retry after 1001 ms, and the bucket is full once now reaches the TAT (reset after
// 1001 ms). At 2001 ms it is admitted and the TAT becomes 4001 ms.
func TestSeedOnePerTwoSeconds(t *testing.T) {
	bob := mustGCRA(t, 1, 2*time.Second, 1)
	checkSteps(t, func(at time.Duration) (librate.Decision, error) { return bob.AcquireAt(1, at) }, []step{
		{"admitted", 0, librate.Decision{Allowed: true, Limit: 1, ResetAfter: 2 * time.Second}},
		{"denied", 999 * ms, librate.Decision{Limit: 1, RetryAfter: 1001 * ms, ResetAfter: 1001 * ms}},
		{"denied", 1000 * ms, librate.Decision{Limit: 1, RetryAfter: 1000 * ms, ResetAfter: 1000 * ms}},
		{"admitted", 2001 * ms, librate.Decision{Allowed: true, Limit: 1, ResetAfter: 2 * time.Second}},
	})
}

// Seed scenario: one per second with capacity 2. T = 1 s, τ = 2 s: A and B fit in the
// tolerance at 0 (TAT 1 s, then 2 s), C would need TAT 3 s − 0 ≤ 2 s (retry after 1 s),
// and D a second later is admitted (TAT 3 s).
func TestSeedOnePerSecondCapacityTwo(t *testing.T) {
	l := mustGCRA(t, 1, time.Second, 2)
	s := time.Second
	checkSteps(t, func(at time.Duration) (librate.Decision, error) { return l.AcquireAt(1, at) }, []step{
		{"A", 0, librate.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: s}},
		{"B", 0, librate.Decision{Allowed: true, Limit: 2, ResetAfter: 2 * s}},
		{"C", 0, librate.Decision{Limit: 2, RetryAfter: s, ResetAfter: 2 * s}},
		{"D", s, librate.Decision{Allowed: true, Limit: 2, ResetAfter: 2 * s}},
	})
}

// A query (n == 0) reports and changes nothing; a fresh limiter is full even at time 0.
func TestQueryChangesNothing(t *testing.T) {
	l := mustGCRA(t, 4, time.Second, 0)
	full := librate.Decision{Allowed: true, Limit: 4, Remaining: 4}
	for range 3 {
		if got, err := l.AcquireAt(0, 0); err != nil || got != full {
			t.Fatalf("query on a fresh limiter: %+v, %v; want %+v", got, err, full)
		}
	}
	// T = 250 ms: one unit at 0 leaves 3 and a reset after 250 ms, queried at 100 ms.
	if _, err := l.AcquireAt(1, 0); err != nil {
		t.Fatal(err)
	}
	want := librate.Decision{Allowed: true, Limit: 4, Remaining: 3, ResetAfter: 150 * ms}
	if got, err := l.AcquireAt(0, 100*ms); err != nil || got != want {
		t.Fatalf("query after one unit: %+v, %v; want %+v", got, err, want)
	}
}

// A shaper from librate's own docs: 10 per second, burst 1, so a unit every 100 ms.
// Reserving three at once waits 0, 100 and 200 ms; the fourth would wait 300 ms, more
// than the 250 ms allowed, and is denied with a retry after 50 ms.
func TestReserveShapes(t *testing.T) {
	l := mustGCRA(t, 10, time.Second, 1)
	checkSteps(t, func(at time.Duration) (librate.Decision, error) { return l.ReserveAt(1, at, 250*ms) }, []step{
		{"first", 0, librate.Decision{Allowed: true, Limit: 1, ResetAfter: 100 * ms}},
		{"second", 0, librate.Decision{Allowed: true, Limit: 1, ResetAfter: 200 * ms, Wait: 100 * ms}},
		{"third", 0, librate.Decision{Allowed: true, Limit: 1, ResetAfter: 300 * ms, Wait: 200 * ms}},
		{"fourth", 0, librate.Decision{Limit: 1, RetryAfter: 50 * ms, ResetAfter: 300 * ms}},
	})
}

// gcraModel is a sequential reference for GCRA written from docs/decision.md alone:
// admission is the formula, and every other field is found by brute force.
type gcraModel struct {
	interval, burst, tat uint64
}

func (m *gcraModel) admits(now, n, maxWait uint64) (newTAT uint64, ok bool) {
	start := max(m.tat, now)
	return start + n*m.interval, start+n*m.interval-now <= m.burst*m.interval+maxWait
}

func (m *gcraModel) remaining(now uint64) uint64 {
	n := uint64(0)
	for n < m.burst {
		if _, ok := m.admits(now, n+1, 0); !ok {
			break
		}
		n++
	}
	return n
}

// firstAfter is the smallest d ≥ 0 with ok(now + d), searched one nanosecond at a time.
func firstAfter(now uint64, ok func(at uint64) bool) time.Duration {
	d := uint64(0)
	for !ok(now + d) {
		d++
	}
	return time.Duration(d)
}

func (m *gcraModel) decide(now, n, maxWait uint64) librate.Decision {
	d := librate.Decision{Limit: m.burst}
	switch newTAT, ok := m.admits(now, n, maxWait); {
	case n == 0:
		// A query (docs/decision.md): admitted and changes nothing, even when reserves have
		// queued the bucket past its tolerance; it waits for nothing.
		d.Allowed = true
	case ok:
		d.Allowed = true
		if wait := newTAT - now; wait > m.burst*m.interval {
			d.Wait = time.Duration(wait - m.burst*m.interval)
		}
		m.tat = newTAT
	default:
		d.RetryAfter = firstAfter(now, func(at uint64) bool { _, ok := m.admits(at, n, maxWait); return ok })
	}
	d.Remaining = m.remaining(now)
	d.ResetAfter = firstAfter(now, func(at uint64) bool { return m.remaining(at) == m.burst })
	return d
}

// xorshift is the tests' reproducible pseudo-random stream.
type xorshift = xorshiftpkg.Stream

// modelRun drives a pseudo-random run against a reference model. Each op makes one
// call at time now (advanced by up to maxStep each op) and returns librate's result,
// the model's decision and a description; the run stops at the first difference and
// must see at least minEach admissions and denials, so both paths are tested. With
// -short (as in the -tags debug run, where every call collects garbage) it does a tenth.
func modelRun(t *testing.T, seed xorshift, ops int, maxStep uint64, minEach int,
	op func(rng *xorshift, now uint64) (got, want librate.Decision, what string, err error)) {
	t.Helper()
	ops, minEach = shortened(ops), shortened(minEach)
	rng, now := seed, uint64(0)
	admitted, denied := 0, 0
	for i := range ops {
		now += rng.Next(maxStep)
		got, want, what, err := op(&rng, now)
		if err != nil {
			t.Fatalf("op %d (%s, now=%d): %v", i, what, now, err)
		}
		if got != want {
			t.Fatalf("op %d (%s, now=%d):\n got %+v\nwant %+v", i, what, now, got, want)
		}
		if got.Allowed {
			admitted++
		} else {
			denied++
		}
	}
	if admitted < minEach || denied < minEach {
		t.Fatalf("run too one-sided to test both paths: %d admitted, %d denied", admitted, denied)
	}
}

// Every field of every decision matches the reference model over a pseudo-random run
// of acquires, reserves and queries at non-decreasing times. L=4 per 1000 ns, burst 3:
// T = 250 ns, small enough for the model's brute force.
func TestGCRAMatchesReferenceModel(t *testing.T) {
	l := mustGCRA(t, 4, 1000, 3)
	model := gcraModel{interval: 250, burst: 3}
	modelRun(t, 0x9e3779b97f4a7c15, 3000, 200, 500, func(rng *xorshift, now uint64) (librate.Decision, librate.Decision, string, error) {
		n := rng.Next(4) // 0..3: queries included
		if rng.Next(3) == 0 {
			maxWait := rng.Next(600)
			got, err := l.ReserveAt(int(n), time.Duration(now), time.Duration(maxWait))
			return got, model.decide(now, n, maxWait), fmt.Sprintf("ReserveAt n=%d maxWait=%d", n, maxWait), err
		}
		got, err := l.AcquireAt(int(n), time.Duration(now))
		return got, model.decide(now, n, 0), fmt.Sprintf("AcquireAt n=%d", n), err
	})
}

// A time earlier than one already seen admits no more than the latest time would.
func TestEarlierTimeAdmitsNoMore(t *testing.T) {
	l := mustGCRA(t, 1, time.Second, 1)
	if d, _ := l.AcquireAt(1, 10*time.Second); !d.Allowed {
		t.Fatal("first request denied")
	}
	for _, at := range []time.Duration{0, 5 * time.Second, 10 * time.Second} {
		if d, err := l.AcquireAt(1, at); err != nil || d.Allowed {
			t.Fatalf("at %v after 10 s: %+v, %v; want a denial", at, d, err)
		}
	}
}

// shortened is n, or n/10 under -short.
func shortened(n int) int {
	if testing.Short() {
		return n / 10
	}
	return n
}

// parallel runs body on n goroutines at once and waits for them all.
func parallel(n int, body func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body()
		}()
	}
	wg.Wait()
}

// countAdmitted makes attempts calls of try on each of 8 goroutines (a tenth with
// -short) and counts the admissions.
func countAdmitted(attempts int, try func() bool) int64 {
	attempts = shortened(attempts)
	var admitted atomic.Int64
	parallel(8, func() {
		for range attempts {
			if try() {
				admitted.Add(1)
			}
		}
	})
	return admitted.Load()
}

// Eight goroutines hammer one limiter at one frozen instant: exactly the burst is
// admitted, whatever the interleaving. Run under -race.
func TestConcurrentFrozenTimeAdmitsExactlyTheLimit(t *testing.T) {
	const limit = 100
	l := mustGCRA(t, limit, time.Hour, 0)
	got := countAdmitted(2000, func() bool {
		d, err := l.AcquireAt(1, 5*time.Hour)
		if err != nil {
			t.Error(err)
		}
		return d.Allowed
	})
	if got != limit {
		t.Fatalf("admitted %d at a frozen time, want exactly %d", got, limit)
	}
}

// The same through Allow, on librate's clock: with 100 per 100 years (a unit a year)
// no unit can be earned during the test, so exactly the burst of 100 passes.
func TestConcurrentAllowAdmitsExactlyTheBurst(t *testing.T) {
	const limit = 100
	l := mustGCRA(t, limit, 100*365*24*time.Hour, 0)
	if got := countAdmitted(2000, l.Allow); got != limit {
		t.Fatalf("Allow admitted %d, want exactly %d", got, limit)
	}
}

func TestAllowAndAllowN(t *testing.T) {
	l := mustGCRA(t, 3, 100*365*24*time.Hour, 0) // nothing refills during the test
	if !l.AllowN(time.Now(), 0) || !l.AllowN(time.Now(), 2) || !l.Allow() {
		t.Fatal("the burst of 3 was not admitted")
	}
	if l.Allow() || l.AllowN(time.Now(), 1) {
		t.Fatal("admitted past the burst")
	}
	if !l.AllowN(time.Now(), 0) {
		t.Fatal("a query is always admitted")
	}
	if l.AllowN(time.Now(), -1) || l.AllowN(time.Now(), 4) {
		t.Fatal("AllowN(-1) and AllowN(above the limit) must be false")
	}
}

func TestErrors(t *testing.T) {
	year := 365 * 24 * time.Hour
	configs := []struct {
		name   string
		config librate.Config
		want   error
	}{
		{"zero config", librate.Config{}, librate.ErrInvalidConfig},
		{"negative period", librate.Config{Limit: 1, Period: -time.Second}, librate.ErrInvalidConfig},
		{"zero limit", librate.Config{Period: time.Second}, librate.ErrInvalidConfig},
		{"unknown algorithm", librate.Config{Algorithm: 99, Limit: 1, Period: time.Second}, librate.ErrInvalidConfig},
		{"more than one unit per ns", librate.Config{Limit: 10, Period: 9}, librate.ErrInvalidConfig},
		// T = 2⁶³−2 ns and B = 3: B·T does not fit 64 bits.
		{"tolerance overflows", librate.Config{Limit: 1, Period: librate.Never - 1, Burst: 3}, librate.ErrInvalidConfig},
	}
	for _, c := range configs {
		if l, err := librate.New(c.config); !errors.Is(err, c.want) || l != nil {
			t.Errorf("New(%s): %v, %v; want nil, %v", c.name, l, err, c.want)
		}
	}

	l := mustGCRA(t, 2, year, 0)
	ctx := context.Background()
	calls := []struct {
		name string
		call func() error
		want error
	}{
		{"Acquire(3)", func() error { _, err := l.Acquire(3); return err }, librate.ErrInsufficientCapacity},
		{"AcquireAt(3)", func() error { _, err := l.AcquireAt(3, 0); return err }, librate.ErrInsufficientCapacity},
		{"Reserve(3)", func() error { _, err := l.ReserveWithin(3, time.Hour); return err }, librate.ErrInsufficientCapacity},
		{"ReserveAt(3)", func() error { _, err := l.ReserveAt(3, 0, time.Hour); return err }, librate.ErrInsufficientCapacity},
		{"Wait(3)", func() error { return l.WaitN(ctx, 3) }, librate.ErrInsufficientCapacity},
		{"Acquire(-1)", func() error { _, err := l.Acquire(-1); return err }, librate.ErrInvalidArgument},
		{"AcquireAt(-1, 0)", func() error { _, err := l.AcquireAt(-1, 0); return err }, librate.ErrInvalidArgument},
		{"AcquireAt(1, -1)", func() error { _, err := l.AcquireAt(1, -1); return err }, librate.ErrInvalidArgument},
		{"Reserve(-1)", func() error { _, err := l.ReserveWithin(-1, 0); return err }, librate.ErrInvalidArgument},
		{"Reserve(1, -1)", func() error { _, err := l.ReserveWithin(1, -1); return err }, librate.ErrInvalidArgument},
		{"ReserveAt(1, -1, 0)", func() error { _, err := l.ReserveAt(1, -1, 0); return err }, librate.ErrInvalidArgument},
		{"ReserveAt(1, 0, -1)", func() error { _, err := l.ReserveAt(1, 0, -1); return err }, librate.ErrInvalidArgument},
		{"Wait(-1)", func() error { return l.WaitN(ctx, -1) }, librate.ErrInvalidArgument},
		{"Wait(nil ctx)", func() error { return l.WaitN(nilContext(), 1) }, librate.ErrInvalidArgument},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v; want %v", c.name, err, c.want)
		}
	}
	// None of the failed calls took anything.
	if d, err := l.AcquireAt(0, 0); err != nil || d.Remaining != 2 {
		t.Fatalf("after errors: %+v, %v; want the full burst of 2", d, err)
	}
}

// nilContext is a nil context.Context, which Wait must survive (callers are not
// supposed to pass one, but no input may crash the program).
func nilContext() context.Context { return nil }

// Every method of a closed or nil Limiter returns ErrClosed (Allow false); Close is
// idempotent.
func TestClosedAndNilLimiter(t *testing.T) {
	closed := mustGCRA(t, 1, time.Second, 0)
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	if err := closed.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	var nilLimiter *librate.Limiter
	for name, l := range map[string]*librate.Limiter{"closed": closed, "nil": nilLimiter} {
		calls := map[string]func() error{
			"Acquire":   func() error { _, err := l.Acquire(1); return err },
			"AcquireAt": func() error { _, err := l.AcquireAt(1, 0); return err },
			"Reserve":   func() error { _, err := l.ReserveWithin(1, 0); return err },
			"ReserveAt": func() error { _, err := l.ReserveAt(1, 0, 0); return err },
			"Wait":      func() error { return l.WaitN(context.Background(), 1) },
		}
		for call, f := range calls {
			if err := f(); !errors.Is(err, librate.ErrClosed) {
				t.Errorf("%s limiter, %s: %v; want ErrClosed", name, call, err)
			}
		}
		if l.Allow() || l.AllowN(time.Now(), 0) {
			t.Errorf("%s limiter: Allow returned true", name)
		}
		if err := l.Close(); err != nil {
			t.Errorf("%s limiter, Close: %v", name, err)
		}
	}
}

// The extremes of every duration are accepted and come back exact, or saturated at
// Never. M = 2⁶³−1 ns is the longest Duration. (No TAT here comes near 2⁶⁴, where
// librate may deny as past the end of time.)
func TestHugeDurations(t *testing.T) {
	const M = librate.Never
	type call func() (librate.Decision, error)
	check := func(what string, c call, want librate.Decision) {
		t.Helper()
		if got, err := c(); err != nil || got != want {
			t.Fatalf("%s: %+v, %v; want %+v", what, got, err, want)
		}
	}
	// The latest now: a fresh limiter is full, as at any time.
	l := mustGCRA(t, 1, time.Second, 1)
	check("AcquireAt(1, M)", func() (librate.Decision, error) { return l.AcquireAt(1, M) },
		librate.Decision{Allowed: true, Limit: 1, ResetAfter: time.Second})

	// The longest period that ends (M is Forever): 1 per M − 1, burst 1, so T = τ =
	// M − 1. The first unit's TAT plus τ, and the second unit's TAT, would be 2⁶⁴ − 4,
	// past the largest storable TAT: the bucket is never full again, and the second unit
	// never admitted (Never).
	long := mustGCRA(t, 1, M-1, 1)
	check("first unit", func() (librate.Decision, error) { return long.AcquireAt(1, 0) },
		librate.Decision{Allowed: true, Limit: 1, ResetAfter: M})
	check("second unit", func() (librate.Decision, error) { return long.AcquireAt(1, 0) },
		librate.Decision{Limit: 1, RetryAfter: M, ResetAfter: M})

	// 2 per M − 1, burst 1: T = τ = 2⁶²−1. Three reserves at 0 that accept waiting M:
	// the third waits 2T = M − 1 (exact) and the bucket is full again only at 3T > M
	// (saturated).
	shaper := mustGCRA(t, 2, M-1, 1)
	reserve := func() (librate.Decision, error) { return shaper.ReserveAt(1, 0, M) }
	T := (M - 1) / 2
	check("first reserve", reserve, librate.Decision{Allowed: true, Limit: 1, ResetAfter: T})
	check("second reserve", reserve, librate.Decision{Allowed: true, Limit: 1, ResetAfter: 2 * T, Wait: T})
	check("third reserve", reserve, librate.Decision{Allowed: true, Limit: 1, ResetAfter: librate.Never, Wait: 2 * T})
}

func TestWaitReturnsAtOnceWhenAdmitted(t *testing.T) {
	l := mustGCRA(t, 1, time.Hour, 1)
	if err := l.WaitN(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	if d, _ := l.AcquireAt(0, 0); d.Remaining != 0 {
		t.Fatalf("Wait did not take the unit: %+v", d)
	}
}

// A unit every millisecond: the second Wait sleeps out its reservation, then succeeds.
func TestWaitSleepsOutTheReservation(t *testing.T) {
	l := mustGCRA(t, 1000, time.Second, 1)
	for i := range 3 {
		if err := l.WaitN(context.Background(), 1); err != nil {
			t.Fatalf("Wait %d: %v", i, err)
		}
	}
}

// With a unit an hour and a deadline in 30 minutes, Wait knows at once that it cannot
// succeed: it returns an error wrapping DeadlineExceeded before the deadline, and takes
// nothing.
func TestWaitReturnsEarlyPastTheDeadline(t *testing.T) {
	l := mustGCRA(t, 1, time.Hour, 1)
	if !l.Allow() {
		t.Fatal("first unit denied")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	err := l.WaitN(ctx, 1)
	if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("Wait: %v (ctx.Err %v); want an early DeadlineExceeded", err, ctx.Err())
	}
	if d, _ := l.Acquire(0); d.ResetAfter > time.Hour {
		t.Fatalf("the failed Wait reserved a unit: %+v", d)
	}
}

func TestWaitHonoursCancellation(t *testing.T) {
	l := mustGCRA(t, 1, time.Hour, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.WaitN(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a cancelled context: %v", err)
	}
	if d, _ := l.Acquire(0); d.Remaining != 1 {
		t.Fatalf("Wait on a cancelled context took a unit: %+v", d)
	}
	// Cancelled while sleeping out a reservation (or before it starts): Canceled either way.
	if !l.Allow() {
		t.Fatal("unit denied")
	}
	ctx, cancel = context.WithCancel(context.Background())
	go cancel()
	if err := l.WaitN(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait cancelled while waiting: %v", err)
	}
}

// Version is the crate version in Cargo.toml.
func TestVersion(t *testing.T) {
	manifest, err := os.ReadFile("../../Cargo.toml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^version = "([^"]+)"`).FindSubmatch(manifest)
	if m == nil {
		t.Fatal("no version in Cargo.toml")
	}
	if got := librate.Version(); got != string(m[1]) {
		t.Fatalf("Version() = %q, Cargo.toml says %q", got, m[1])
	}
}

func TestNowIsMonotonic(t *testing.T) {
	prev := librate.Now()
	for range 1000 {
		now := librate.Now()
		if now < prev {
			t.Fatalf("Now went back from %v to %v", prev, now)
		}
		prev = now
	}
	if prev <= 0 || prev == math.MaxInt64 {
		t.Fatalf("Now() = %v", prev)
	}
}

func TestConfigAndAlgorithmString(t *testing.T) {
	config := librate.Config{Algorithm: librate.GCRA, Limit: 5, Period: time.Minute, Burst: 7}
	l, err := librate.New(config)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Config() != config {
		t.Fatalf("Config() = %+v, want %+v", l.Config(), config)
	}
	names := map[librate.Algorithm]string{
		librate.GCRA: "GCRA", librate.FixedWindow: "FixedWindow", librate.SlidingWindow: "SlidingWindow",
		librate.SlidingLog: "SlidingLog", 7: "Algorithm(7)",
	}
	for a, want := range names {
		if a.String() != want {
			t.Errorf("%d.String() = %q, want %q", uint32(a), a.String(), want)
		}
	}
}
