package librate_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// A lease holder without Redis (docs/leases.md): the renewal's arguments, the script's
// answers written out by hand, decisions from a share, the states, the fallback, the
// hand-back, and every bad input.
//
// Every expected value is worked out by hand from the contract: the rule is GCRA, 1,000 a
// second (T = 1 ms, B = 1,000), leased 2 s at a time (renewed every 500 ms, a margin of
// 2 ms). A share of `rate` millionths decides as a GCRA of one unit every
// ceil(T * 10^6 / rate) ns, bursts of its `burst`; a fresh lease starts empty; a lease
// that follows one still held keeps the tokens, capped at the new burst.

const second = time.Second

var thousandASecond = librate.LeaseRule{
	Config: librate.Config{Algorithm: librate.GCRA, Limit: 1000, Period: time.Second},
	Lease:  2 * time.Second,
}

func newHolder(t *testing.T, name string, fallback *librate.Config) *librate.LeaseHolder {
	t.Helper()
	h, err := librate.NewLeaseHolder(thousandASecond, librate.LeaseOptions{Name: name, Fallback: fallback})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func renewalAt(t *testing.T, h *librate.LeaseHolder, now time.Duration) librate.Renewal {
	t.Helper()
	r, err := h.RenewalAt(now)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// answer applies the script's answer status with a share of rate and burst, leased 2 s,
// epoch 7, one holder, at now, and checks the state it gives.
func answer(t *testing.T, h *librate.LeaseHolder, r librate.Renewal, status string, rate, burst uint64,
	now time.Duration, want librate.HolderState) {
	t.Helper()
	state, err := h.ApplyAt(r, status, [librate.LeaseFields]uint64{rate, burst, 2_000_000, 7, rate, burst, 1, 0}, now)
	if err != nil || state != want {
		t.Fatalf("%s %d/%d at %v: %v, %v; want %v", status, rate, burst, now, state, err, want)
	}
}

// decide checks the decision for n units at now.
func decide(t *testing.T, h *librate.LeaseHolder, n int, now time.Duration, want librate.Decision) {
	t.Helper()
	if d, err := h.AcquireAt(n, now); err != nil || d != want {
		t.Fatalf("%d at %v: %+v, %v\nwant %+v", n, now, d, err, want)
	}
}

func checkState(t *testing.T, h *librate.LeaseHolder, now time.Duration, want librate.HolderState) {
	t.Helper()
	if got := h.StateAt(now); got != want {
		t.Fatalf("state at %v: %v, want %v", now, got, want)
	}
}

func TestLeaseRenewalNamesTheRuleAndTheDemand(t *testing.T) {
	h := newHolder(t, "host-a", nil)
	r := renewalAt(t, h, 10*second)
	want := [7]string{"renew", "10000000", "1000000", "1000", "2000000", "host-a", "1000000"}
	// The first asks for the whole rule: a fair share of it.
	if r.SentAt != 10*second || r.Args != want {
		t.Fatalf("%+v, want at 10s %q", r, want)
	}
	// Three units in the next 500 ms: 3 * T / 500 ms = 6,000 millionths.
	h.AllowN(librate.TimeAt(10*second), 1)
	decide(t, h, 2, 10*second, librate.Decision{RetryAfter: 500 * ms})
	if r = renewalAt(t, h, 10*second+500*ms); r.Args[6] != "6000" {
		t.Fatalf("demand %q, want 6000", r.Args[6])
	}
	// Floored to the microsecond the script counts.
	if r = renewalAt(t, h, 11*second+1999); r.SentAt != 11*second+1*time.Microsecond || r.Args[1] != "11000001" {
		t.Fatalf("%+v: want sent at 11.000001s", r)
	}
	// By the server's clock: no time is sent.
	if r, err := h.Renewal(); err != nil || r.Args[1] != "" || r.Args[0] != "renew" {
		t.Fatalf("%+v, %v: want a renewal without a time", r, err)
	}
}

func TestLeaseShareDecidesAndCarriesOver(t *testing.T) {
	h := newHolder(t, "host-a", nil)
	r := renewalAt(t, h, 10*second)
	// No answer yet: the fallback, a denial until the next renewal.
	checkState(t, h, 10*second, librate.InFallback)
	decide(t, h, 1, 10*second, librate.Decision{RetryAfter: 500 * ms})
	// Half the rate, bursts of 500: one unit every 2 ms, tau = 1 s, held to 11.998 s.
	answer(t, h, r, "granted", 500_000, 500, 10*second, librate.Leased)
	decide(t, h, 1, 10*second, librate.Decision{Limit: 500, RetryAfter: 2 * ms, ResetAfter: second})
	decide(t, h, 1, 10*second+2*ms, librate.Decision{Allowed: true, Limit: 500, ResetAfter: second})
	checkState(t, h, 11*second+998*ms-1, librate.Leased)
	checkState(t, h, 11*second+998*ms, librate.InFallback)
	// At 10.5 s the share holds (1 s - (11.002 s - 10.5 s)) / 2 ms = 249 tokens; renewed
	// to the whole rule (T = 1 ms, tau = 1 s) they are kept: 249 more, then none.
	r = renewalAt(t, h, 10*second+500*ms)
	answer(t, h, r, "granted", 1_000_000, 1000, 10*second+500*ms, librate.Leased)
	decide(t, h, 249, 10*second+500*ms, librate.Decision{Allowed: true, Limit: 1000, ResetAfter: second})
	decide(t, h, 1, 10*second+500*ms, librate.Decision{Limit: 1000, RetryAfter: ms, ResetAfter: second})
	want := librate.Grant{Rate: 1_000_000, Burst: 1000, Lease: 2 * second, Epoch: 7,
		HeldRate: 1_000_000, HeldBurst: 1000, Holders: 1}
	if g, err := h.LastGrant(); err != nil || g != want {
		t.Fatalf("last grant %+v, %v\nwant %+v", g, err, want)
	}
}

func TestLeaseNoShareQuietAndTheHandBack(t *testing.T) {
	h := newHolder(t, "host-a", nil)
	answer(t, h, renewalAt(t, h, 10*second), "granted", 1_000_000, 1000, 10*second, librate.Leased)
	// Nothing granted: denied (not the fallback) for the lease, tokens gone.
	answer(t, h, renewalAt(t, h, 11*second), "granted", 0, 0, 11*second, librate.Unshared)
	decide(t, h, 1, 11*second, librate.Decision{RetryAfter: 500 * ms})
	decide(t, h, 0, 11*second, librate.Decision{Allowed: true})
	// Quiet: nothing new, denied until 13.498 s (11.5 s + 2 s - 2 ms), then the fallback.
	answer(t, h, renewalAt(t, h, 11*second+500*ms), "quiet", 0, 0, 11*second+500*ms, librate.Unshared)
	checkState(t, h, 13*second+498*ms-1, librate.Unshared)
	checkState(t, h, 13*second+498*ms, librate.InFallback)
	// After the gap the next lease starts empty: one unit after T.
	answer(t, h, renewalAt(t, h, 14*second), "granted", 1_000_000, 1000, 14*second, librate.Leased)
	if h.AllowN(librate.TimeAt(14*second), 1) || !h.AllowN(librate.TimeAt(14*second+ms), 1) {
		t.Fatal("a fresh lease must admit its first unit after T, not before")
	}
	r, err := h.Release()
	if err != nil || r.Args[0] != "release" || r.Args[5] != "host-a" {
		t.Fatalf("%+v, %v: want host-a's release", r, err)
	}
	checkState(t, h, 14*second+ms, librate.InFallback)
	decide(t, h, 1, 15*second, librate.Decision{Limit: 1000, RetryAfter: 500 * ms})
}

func TestLeaseLocalFallback(t *testing.T) {
	local := librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: second, Burst: 1}
	h := newHolder(t, "host-b", &local)
	decide(t, h, 1, 0, librate.Decision{Allowed: true, Limit: 1, ResetAfter: second})
	decide(t, h, 1, 0, librate.Decision{Limit: 1, RetryAfter: second, ResetAfter: second})
	checkState(t, h, 0, librate.InFallback)
}

func TestLeaseAnswersTheScriptNeverGives(t *testing.T) {
	h := newHolder(t, "host-a", nil)
	r := renewalAt(t, h, 0)
	for _, c := range []struct {
		status string
		fields [librate.LeaseFields]uint64
		want   string
	}{
		{"nope", [librate.LeaseFields]uint64{1_000_000, 1000, 2_000_000, 7, 1_000_000, 1000, 1, 0},
			`librate: the lease script's reply "nope" [1000000 1000 2000000 7 1000000 1000 1 0]: ` +
				"Redis answered something librate's script never answers; nothing was applied (status -9)"},
		{"", [librate.LeaseFields]uint64{}, ""},
		// A rate past the rule's, a burst past the rule's, a rate without a burst, a
		// lease past the rule's.
		{"granted", [librate.LeaseFields]uint64{1_000_001, 1000, 2_000_000, 7, 1_000_000, 1000, 1, 0}, ""},
		{"granted", [librate.LeaseFields]uint64{1_000_000, 1001, 2_000_000, 7, 1_000_000, 1000, 1, 0}, ""},
		{"granted", [librate.LeaseFields]uint64{5, 0, 2_000_000, 7, 5, 0, 1, 0}, ""},
		{"granted", [librate.LeaseFields]uint64{1_000_000, 1000, 2_000_001, 7, 1_000_000, 1000, 1, 0}, ""},
	} {
		state, err := h.ApplyAt(r, c.status, c.fields, 0)
		var e librate.Error
		if !errors.Is(err, librate.ErrReply) || !errors.As(err, &e) || e.Code != -9 || state != librate.InFallback {
			t.Errorf("%q %v: %v, %v; want ErrReply", c.status, c.fields, state, err)
		}
		if c.want != "" && err.Error() != c.want {
			t.Errorf("%q\nwant %q", err, c.want)
		}
	}
	// Nothing was applied.
	checkState(t, h, 0, librate.InFallback)
	if g, err := h.LastGrant(); err != nil || g != (librate.Grant{}) {
		t.Errorf("last grant %+v, %v: want none", g, err)
	}
}

func TestLeaseBadInput(t *testing.T) {
	rule := thousandASecond
	for _, c := range []struct {
		rule    librate.LeaseRule
		options librate.LeaseOptions
		reason  string
	}{
		{librate.LeaseRule{Config: librate.Config{Algorithm: librate.FixedWindow, Limit: 1000, Period: second + 1}, Lease: 2 * second},
			librate.LeaseOptions{}, "limit 1000 with period_ns 1000000001: a leased window's period is a whole number of microseconds"},
		{librate.LeaseRule{Config: librate.Config{Limit: 0, Period: second}, Lease: 2 * second},
			librate.LeaseOptions{}, "limit 0: must be at least 1"},
		{librate.LeaseRule{Config: rule.Config, Lease: 999 * time.Microsecond}, librate.LeaseOptions{}, "lease_ns 999000 renewed every 249750 ns"},
		{librate.LeaseRule{Config: rule.Config, Lease: -second}, librate.LeaseOptions{}, "lease -1s renewed every 0s"},
		// The margin is 2 ms: renewing every 1.998 s leaves no time to renew.
		{librate.LeaseRule{Config: rule.Config, Lease: 2 * second, RenewEvery: 2*second - 2*ms}, librate.LeaseOptions{},
			"lease_ns 2000000000 renewed every 1998000000 ns: a lease lasts from 1 ms"},
		{rule, librate.LeaseOptions{Name: "a\x00b"}, `name "a\0b": a holder's name is 1 to 64 bytes of UTF-8 without NUL`},
		{rule, librate.LeaseOptions{Name: strings.Repeat("x", 65)}, "name \"" + strings.Repeat("x", 65) + "\": a holder's name is 1 to 64 bytes"},
		{rule, librate.LeaseOptions{Fallback: &librate.Config{Limit: 0, Period: second}}, "fallback: limit 0: must be at least 1"},
		{rule, librate.LeaseOptions{Fallback: &librate.Config{Limit: 1, Period: -second}}, "fallback: period -1s: must be at least 1ns"},
	} {
		h, err := librate.NewLeaseHolder(c.rule, c.options)
		var configError *librate.ConfigError
		if h != nil || !errors.As(err, &configError) || !errors.Is(err, librate.ErrInvalidConfig) ||
			!strings.HasPrefix(configError.Reason, c.reason) {
			t.Errorf("%+v %+v: %v\nwant a *ConfigError starting %q", c.rule, c.options, err, c.reason)
		}
	}
	// The sliding window and log: leases divide no count or rate of theirs.
	for _, algorithm := range []librate.Algorithm{librate.SlidingWindow, librate.SlidingLog} {
		sliding := librate.LeaseRule{Config: librate.Config{Algorithm: algorithm, Limit: 1000, Period: second}, Lease: 2 * second}
		if h, err := librate.NewLeaseHolder(sliding, librate.LeaseOptions{}); h != nil || !errors.Is(err, librate.ErrUnsupported) {
			t.Errorf("%v: %v, %v; want ErrUnsupported", algorithm, h, err)
		}
	}
	// One nanosecond below the margin is valid, and a name of 64 bytes.
	rule.RenewEvery = 2*second - 2*ms - 1
	h, err := librate.NewLeaseHolder(rule, librate.LeaseOptions{Name: strings.Repeat("x", 64)})
	if err != nil || h.Rule() != rule {
		t.Fatalf("%v, %v", h.Rule(), err)
	}
	if _, err := h.AcquireAt(1001, 0); !errors.Is(err, librate.ErrInsufficientCapacity) {
		t.Errorf("1001 units: %v, want ErrInsufficientCapacity", err)
	}
	if _, err := h.AcquireAt(-1, 0); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("-1 units: %v, want ErrInvalidArgument", err)
	}
	if _, err := h.RenewalAt(-1); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("renewal at -1: %v, want ErrInvalidArgument", err)
	}
	// The renewal interval by default: a quarter of the lease.
	if h := newHolder(t, "", nil); h.Rule().RenewEvery != 500*ms {
		t.Errorf("renewed every %v, want 500ms", h.Rule().RenewEvery)
	}
	if script := h.Script(); !strings.Contains(script, "\n-- librate's lease script for GCRA") {
		t.Errorf("script %.40q", script)
	}

	h.Close()
	h.Close()
	var closed *librate.LeaseHolder
	for _, holder := range []*librate.LeaseHolder{h, closed} {
		_, acquireErr := holder.Acquire(1)
		_, renewErr := holder.Renewal()
		_, releaseErr := holder.Release()
		_, applyErr := holder.Apply(librate.Renewal{}, "quiet", [librate.LeaseFields]uint64{})
		_, grantErr := holder.LastGrant()
		for _, err := range []error{acquireErr, renewErr, releaseErr, applyErr, grantErr} {
			if !errors.Is(err, librate.ErrClosed) {
				t.Errorf("closed: %v, want ErrClosed", err)
			}
		}
		if holder.Allow() || holder.State() != librate.InFallback {
			t.Errorf("closed: admitted, or in state %v", holder.State())
		}
	}
}

// A fixed window of 100 a second, leased 2 s at a time: a count of the window, held from
// when it arrived to the window's end less a thousandth of the time held (the values of
// tests/c/test_lease.c).
func TestLeaseWindowCount(t *testing.T) {
	rule := librate.LeaseRule{Config: librate.Config{Algorithm: librate.FixedWindow, Limit: 100, Period: second}, Lease: 2 * second}
	h, err := librate.NewLeaseHolder(rule, librate.LeaseOptions{Name: "w"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if !strings.Contains(h.Script(), "\n-- librate's lease script for fixed windows") {
		t.Fatalf("script %.80q", h.Script())
	}
	apply := func(now time.Duration, fields [librate.LeaseFields]uint64) {
		t.Helper()
		r := renewalAt(t, h, now)
		if r.Args[2] != "100" || r.Args[3] != "1000000" {
			t.Fatalf("%q: want the limit 100 and the period 1000000 µs", r.Args)
		}
		if state, err := h.ApplyAt(r, "granted", fields, now); err != nil || state != librate.Leased {
			t.Fatalf("at %v: %v, %v", now, state, err)
		}
	}
	// 30 of window 10, to 11 s: held to 10.25 s + 750 ms - 750 µs = 10.99925 s.
	apply(10*second+250*ms, [librate.LeaseFields]uint64{0, 30, 750_000, 7, 0, 30, 1, 10})
	decide(t, h, 30, 10*second+250*ms, librate.Decision{Allowed: true, Limit: 30, ResetAfter: 749_250 * time.Microsecond})
	decide(t, h, 1, 10*second+500*ms, librate.Decision{Limit: 30, RetryAfter: 499_250 * time.Microsecond,
		ResetAfter: 499_250 * time.Microsecond})
	// More of the same window: 50 in all, to the sooner end.
	apply(10*second+500*ms, [librate.LeaseFields]uint64{0, 50, 500_000, 7, 0, 50, 1, 10})
	decide(t, h, 20, 10*second+500*ms, librate.Decision{Allowed: true, Limit: 50, ResetAfter: 499_250 * time.Microsecond})
	checkState(t, h, 10*second+999_250*time.Microsecond-1, librate.Leased)
	checkState(t, h, 10*second+999_250*time.Microsecond, librate.InFallback)
	// Window 11: a count of its own, from when it arrived, to 12 s less 1 ms.
	apply(11*second, [librate.LeaseFields]uint64{0, 40, 1_000_000, 7, 0, 40, 1, 11})
	decide(t, h, 1, 11*second, librate.Decision{Allowed: true, Limit: 40, Remaining: 39, ResetAfter: 999 * ms})
	if g, err := h.LastGrant(); err != nil || g.Window != 11 || g.Burst != 40 {
		t.Fatalf("last grant %+v, %v: want window 11, a count of 40", g, err)
	}
	// The hand-back returns the 39 left, and the holder stops deciding first.
	r, err := h.Release()
	if err != nil || r.Args[0] != "release" || r.Args[6] != "39" {
		t.Fatalf("%+v, %v: want a release of 39 unused", r, err)
	}
	decide(t, h, 1, 11*second+100*ms, librate.Decision{Limit: 40, RetryAfter: 500 * ms})
}
