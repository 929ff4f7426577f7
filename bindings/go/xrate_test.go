package librate_test

import (
	"context"
	"errors"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// The calls in x/time/rate's shape, checked against x/time/rate's own vectors
// (golang.org/x/time/rate rate_test.go) where librate's GCRA shares their semantics
// (docs/decision.md): NewLimiter(10, b) is 10 per second with a burst of b, one unit
// every d = 100ms, and t0 … t9 are d apart.
const d = 100 * time.Millisecond

// instants returns t0 … t9, d apart, with Go's monotonic reading.
func instants() (t [10]time.Time) {
	t[0] = time.Now()
	for i := 1; i < len(t); i++ {
		t[i] = t[0].Add(time.Duration(i) * d)
	}
	return t
}

// perSecond is x/time/rate's NewLimiter(10, burst) in librate's terms.
func perSecond(t *testing.T, burst uint64) *librate.Limiter {
	return mustGCRA(t, 10, time.Second, burst)
}

type allowStep struct {
	at int // index into instants
	n  int
	ok bool
}

func runAllow(t *testing.T, ts [10]time.Time, allowN func(time.Time, int) bool, steps []allowStep) {
	t.Helper()
	for i, step := range steps {
		if got := allowN(ts[step.at], step.n); got != step.ok {
			t.Errorf("step %d: AllowN(t%d, %d) = %v, want %v", i, step.at, step.n, got, step.ok)
		}
	}
}

// x/time/rate TestLimiterBurst1.
func TestXRateLimiterBurst1(t *testing.T) {
	runAllow(t, instants(), perSecond(t, 1).AllowN, []allowStep{
		{0, 1, true}, {0, 1, false}, {0, 1, false},
		{1, 1, true}, {1, 1, false}, {1, 1, false},
		{2, 2, false}, // burst size is 1, so n=2 always fails
		{2, 1, true}, {2, 1, false},
	})
}

// x/time/rate TestLimiterBurst3.
func TestXRateLimiterBurst3(t *testing.T) {
	runAllow(t, instants(), perSecond(t, 3).AllowN, []allowStep{
		{0, 2, true}, {0, 2, false}, {0, 1, true}, {0, 1, false},
		{1, 4, false},
		{2, 1, true}, {3, 1, true}, {4, 1, true}, {4, 1, true}, {4, 1, false}, {4, 1, false},
		{9, 3, true}, {9, 0, true},
	})
}

// The same vector through a Keyed: each key is its own limiter.
func TestXRateKeyedAllowN(t *testing.T) {
	k := mustKeyed(t, librate.Config{Limit: 10, Period: time.Second, Burst: 1}, 4)
	for _, key := range []string{"alice", "bob"} {
		runAllow(t, instants(), func(at time.Time, n int) bool { return k.AllowN(key, at, n) }, []allowStep{
			{0, 1, true}, {0, 1, false}, {1, 1, true}, {1, 1, false}, {2, 2, false}, {2, 1, true},
		})
	}
}

type reserveStep struct {
	at, n int
	ok    bool
	act   int // the instant the holder may act, when ok
}

func runReserve(t *testing.T, ts [10]time.Time, reserveN func(time.Time, int) *librate.Reservation, steps []reserveStep) {
	t.Helper()
	for i, step := range steps {
		r := reserveN(ts[step.at], step.n)
		if r.OK() != step.ok {
			t.Errorf("step %d: ReserveN(t%d, %d).OK() = %v, want %v (%v)", i, step.at, step.n, r.OK(), step.ok, r.Err())
			continue
		}
		want := librate.Never
		if step.ok {
			want = time.Duration(step.act-step.at) * d
		}
		if got := r.DelayFrom(ts[step.at]); got != want {
			t.Errorf("step %d: ReserveN(t%d, %d).DelayFrom(t%d) = %v, want %v", i, step.at, step.n, step.at, got, want)
		}
	}
}

// x/time/rate TestSimpleReserve.
func TestXRateSimpleReserve(t *testing.T) {
	runReserve(t, instants(), perSecond(t, 2).ReserveN, []reserveStep{
		{0, 2, true, 0},
		{0, 2, true, 2},
		{3, 2, true, 4},
	})
}

// x/time/rate TestMix: reserves and allows on one limiter.
func TestXRateMix(t *testing.T) {
	l, ts := perSecond(t, 2), instants()
	runReserve(t, ts, l.ReserveN, []reserveStep{{0, 3, false, 0}}) // n above the burst
	runReserve(t, ts, l.ReserveN, []reserveStep{{0, 2, true, 0}})
	runAllow(t, ts, l.AllowN, []allowStep{{1, 2, false}}) // not enough units
	runReserve(t, ts, l.ReserveN, []reserveStep{{1, 2, true, 2}})
	runAllow(t, ts, l.AllowN, []allowStep{{1, 1, false}}) // in debt: none
	runAllow(t, ts, l.AllowN, []allowStep{{3, 1, true}})
}

// The reserve vector through a Keyed, with a []byte key too.
func TestXRateKeyedReserveN(t *testing.T) {
	k := mustKeyed(t, librate.Config{Limit: 10, Period: time.Second, Burst: 2}, 4)
	steps := []reserveStep{{0, 2, true, 0}, {0, 2, true, 2}, {3, 2, true, 4}, {3, 3, false, 0}}
	runReserve(t, instants(), func(at time.Time, n int) *librate.Reservation { return k.ReserveN("a", at, n) }, steps)
	runReserve(t, instants(), func(at time.Time, n int) *librate.Reservation { return k.ReserveNBytes([]byte("b"), at, n) }, steps)
}

// A Reservation that is not OK says why; its delay is Never.
func TestReservationNotOK(t *testing.T) {
	window := mustNew(t, librate.Config{Algorithm: librate.FixedWindow, Limit: 2, Period: time.Second})
	closed := perSecond(t, 2)
	closed.Close()
	var none *librate.Reservation
	forever := mustNew(t, librate.Config{Limit: 1, Period: librate.Forever})
	if first := forever.Reserve(); !first.OK() {
		t.Fatalf("Forever: the first unit: %v", first.Err())
	}
	for _, c := range []struct {
		name string
		r    *librate.Reservation
		want error
	}{
		{"n above the burst", perSecond(t, 2).ReserveN(time.Now(), 3), librate.ErrInsufficientCapacity},
		{"negative n", perSecond(t, 2).ReserveN(time.Now(), -1), librate.ErrInvalidArgument},
		{"window algorithm", window.Reserve(), librate.ErrUnsupported},
		{"closed", closed.Reserve(), librate.ErrClosed},
		{"nil", none, librate.ErrClosed},
		{"a wait past the end of time", forever.Reserve(), nil},
	} {
		if c.r.OK() || !errors.Is(c.r.Err(), c.want) {
			t.Errorf("%s: OK %v, Err %v; want not OK, %v", c.name, c.r.OK(), c.r.Err(), c.want)
		}
		if c.r.Delay() != librate.Never || c.r.DelayFrom(time.Now()) != librate.Never {
			t.Errorf("%s: Delay %v, DelayFrom %v; want Never", c.name, c.r.Delay(), c.r.DelayFrom(time.Now()))
		}
	}
}

// Reserve on librate's clock: one unit an hour, burst 1. The second reserve waits an
// hour from the first, as Delay (librate's clock) and DelayFrom (Go's) both say.
func TestReserveNow(t *testing.T) {
	l := mustGCRA(t, 1, time.Hour, 1)
	first := l.Reserve()
	if !first.OK() || first.Delay() != 0 || first.Decision().Wait != 0 {
		t.Fatalf("first: OK %v, Delay %v, Decision %+v; want OK, 0", first.OK(), first.Delay(), first.Decision())
	}
	second := l.Reserve()
	// The hour counts from the first reserve; the second came a moment later.
	if wait := second.Decision().Wait; !second.OK() || wait > time.Hour || wait < time.Hour-time.Second {
		t.Fatalf("second: OK %v, Decision %+v; want OK, Wait just under 1h", second.OK(), second.Decision())
	}
	for name, delay := range map[string]time.Duration{"Delay": second.Delay(), "DelayFrom": second.DelayFrom(time.Now())} {
		if delay > time.Hour || delay < time.Hour-time.Second {
			t.Errorf("%s = %v; want just under 1h", name, delay)
		}
	}
	if got := second.DelayFrom(time.Now().Add(2 * time.Hour)); got != 0 {
		t.Errorf("DelayFrom(an hour after acting) = %v, want 0", got)
	}
}

// Cancelling gives the units back by librate's refund, as far as no later reserve
// depends on them. One unit an hour, burst 1 (docs/decision.md, Reserve): T = τ = 1h, a
// reserve at t waits max(TAT, t) + 1h − t − 1h.
func TestCancelGivesTheUnitsBack(t *testing.T) {
	for _, c := range hourly(t) {
		at := time.Now()
		delay := func(r *librate.Reservation) time.Duration { return r.DelayFrom(at) }
		// TAT at → at+1h, wait 0; given back: at again, so the next waits 0 too.
		first := c.reserve(at)
		if !first.OK() || delay(first) != 0 {
			t.Fatalf("%s: first reserve OK %v, delay %v; want OK, 0", c.name, first.OK(), delay(first))
		}
		first.CancelAt(at)
		again := c.reserve(at)
		if delay(again) != 0 {
			t.Fatalf("%s: after a cancel the reserve waits %v, want 0", c.name, delay(again))
		}
		// `first` was given back once: cancelling it again must not take `again`'s unit
		// (the state holds the same value it left).
		first.Cancel()
		// Queued behind `again` (TAT at+2h): `again`'s unit stays taken.
		later := c.reserve(at)
		if delay(later) != time.Hour {
			t.Fatalf("%s: a reserve behind it waits %v, want 1h", c.name, delay(later))
		}
		again.CancelAt(at)
		if d := delay(c.reserve(at)); d != 2*time.Hour {
			t.Fatalf("%s: after cancelling a unit a later one depends on, a reserve waits %v, want 2h", c.name, d)
		}
	}
}

// As x/time/rate's, CancelAt past the time to act gives nothing back, and a
// Reservation that is not OK has nothing to give.
func TestCancelAfterTheTimeToActKeepsTheUnits(t *testing.T) {
	l := mustGCRA(t, 1, time.Hour, 1)
	at := time.Now()
	l.ReserveN(at, 1).CancelAt(at.Add(time.Minute))
	if d := l.ReserveN(at, 1).DelayFrom(at); d != time.Hour {
		t.Fatalf("after a cancel past the time to act a reserve waits %v, want 1h", d)
	}
	// n above the burst: not OK, nothing to give back, nothing changed (TAT at+2h).
	refused := l.ReserveN(at, 2)
	refused.CancelAt(at)
	if refused.OK() || l.ReserveN(at, 1).DelayFrom(at) != 2*time.Hour {
		t.Fatal("a reservation that is not OK must change nothing when cancelled")
	}
}

// WaitN gives its units back when the context ends before the wait does.
func TestWaitNGivesBackWhenTheContextEnds(t *testing.T) {
	for _, c := range hourly(t) {
		// The burst is taken; WaitN reserves the next unit, an hour out, and its
		// context ends while it sleeps.
		c.reserve(time.Now())
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(20*time.Millisecond, cancel)
		if err := c.waitN(ctx, 1); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: WaitN returned %v, want context.Canceled", c.name, err)
		}
		// Given back: the next reserve waits what is left of the first hour (the unit
		// WaitN held would add a second hour).
		if d := c.reserve(time.Now()).Delay(); d > time.Hour || d < 59*time.Minute {
			t.Fatalf("%s: after WaitN gave up, a reserve waits %v, want just under 1h", c.name, d)
		}
	}
}

// reserver is a fresh GCRA limiter of one unit an hour, burst 1, or a key of such a
// table: ReserveN of one unit, and WaitN.
type reserver struct {
	name    string
	reserve func(at time.Time) *librate.Reservation
	waitN   func(ctx context.Context, n int) error
}

func hourly(t *testing.T) []reserver {
	config := librate.Config{Limit: 1, Period: time.Hour, Burst: 1}
	l := mustNew(t, config)
	k := mustKeyed(t, config, 4)
	return []reserver{
		{"Limiter", func(at time.Time) *librate.Reservation { return l.ReserveN(at, 1) }, l.WaitN},
		{
			"Keyed",
			func(at time.Time) *librate.Reservation { return k.ReserveN("k", at, 1) },
			func(ctx context.Context, n int) error { return k.WaitN(ctx, "k", n) },
		},
	}
}

// A time without a monotonic reading (time.Unix, Round(0)) maps through its wall-clock
// distance from now: an hour ahead on the wall clock is an hour ahead for the limiter.
func TestAllowNWallClockTime(t *testing.T) {
	l := mustGCRA(t, 1, time.Hour, 1)
	now := time.Now().Round(0)
	if !l.AllowN(now, 1) || l.AllowN(now, 1) {
		t.Fatal("want the burst of 1 admitted once at a wall-clock now")
	}
	if l.AllowN(time.Unix(0, now.UnixNano()).Add(59*time.Minute), 1) {
		t.Fatal("admitted 59 minutes later on the wall clock; one unit an hour")
	}
	if !l.AllowN(time.Unix(0, now.UnixNano()).Add(61*time.Minute), 1) {
		t.Fatal("denied 61 minutes later on the wall clock")
	}
	// The zero Time lies before librate's origin: it maps to 0, where a fresh limiter
	// is full.
	if !mustGCRA(t, 1, time.Hour, 1).AllowN(time.Time{}, 1) {
		t.Fatal("the zero Time: a fresh limiter must admit")
	}
}

// Policies follow the same pattern: AllowN at a time.Time, Wait and WaitN.
func TestXRatePolicies(t *testing.T) {
	p := mustPolicy(t, librate.Config{Limit: 10, Period: time.Second, Burst: 2}, librate.Config{Limit: 3, Period: time.Hour})
	runAllow(t, instants(), p.AllowN, []allowStep{{0, 2, true}, {0, 1, false}, {1, 1, true}, {2, 1, false}, {3, 1, false}})
	kp := mustKeyedPolicy(t, 4, librate.PerKeyRule(librate.Config{Limit: 10, Period: time.Second, Burst: 1}))
	runAllow(t, instants(), func(at time.Time, n int) bool { return kp.AllowN("k", at, n) }, []allowStep{{0, 1, true}, {0, 1, false}, {1, 1, true}})

	if err := mustPolicy(t, librate.Config{Limit: 1, Period: 5 * time.Millisecond}).Wait(context.Background()); err != nil {
		t.Errorf("Policy.Wait: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	hourly := mustKeyedPolicy(t, 4, librate.PerKeyRule(librate.Config{Limit: 1, Period: time.Hour}))
	if err := hourly.Wait(ctx, "k"); err != nil {
		t.Errorf("KeyedPolicy.Wait: %v", err)
	}
	if err := hourly.WaitN(ctx, "k", 1); !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Errorf("KeyedPolicy.WaitN an hour away, 1s deadline: %v; want DeadlineExceeded at once", err)
	}
}

// x/time/rate TestWaitSimple, on librate's clock: a done context, an n above the burst,
// acting now, and acting 2d later.
func TestXRateWaitSimple(t *testing.T) {
	l := perSecond(t, 3)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Wait(done); !errors.Is(err, context.Canceled) {
		t.Errorf("already cancelled: %v", err)
	}
	if err := l.WaitN(context.Background(), 4); !errors.Is(err, librate.ErrInsufficientCapacity) {
		t.Errorf("above the burst: %v", err)
	}
	start := time.Now()
	if err := l.WaitN(context.Background(), 2); err != nil || time.Since(start) >= d {
		t.Errorf("act now: %v after %v", err, time.Since(start))
	}
	// One unit left, three wanted: two more come 2d after the first two were taken.
	if err := l.WaitN(context.Background(), 3); err != nil || time.Since(start) < 2*d-time.Millisecond {
		t.Errorf("act later: %v after %v, want at least %v", err, time.Since(start), 2*d)
	}
}

// TimeAt and OffsetOf map between librate's timeline and time.Time exactly, both ways,
// for a time with a monotonic reading; librate's clock and Go's agree to within a read.
func TestTimeAtAndOffsetOf(t *testing.T) {
	for _, offset := range []time.Duration{0, 1, time.Hour, 1000 * time.Hour} {
		if got := librate.OffsetOf(librate.TimeAt(offset)); got != offset {
			t.Errorf("OffsetOf(TimeAt(%v)) = %v", offset, got)
		}
	}
	if got := librate.OffsetOf(time.Time{}); got != 0 {
		t.Errorf("OffsetOf(the zero Time) = %v, want 0", got)
	}
	before := librate.Now()
	mapped := librate.OffsetOf(time.Now())
	after := librate.Now()
	if mapped < before-time.Millisecond || mapped > after {
		t.Errorf("OffsetOf(time.Now()) = %v, not within [%v - 1ms, %v]", mapped, before, after)
	}
}
