package librate_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// A keyed lease holder without Redis (docs/leases.md, keys): the calls for requests
// decided in Redis and their answers, the rounds that lease the hot keys, decisions from
// a key's share, the hand-back, and every bad input. The script's answers are written out.
//
// Every expected value is worked out by hand from the contract: the rule is GCRA, 50 a
// second with bursts of 25 (T = 20 ms, B = 25), leased 1 s at a time (renewed every
// 250 ms); a key is leased once it asks for 8 units between two rounds, at most 2 keys;
// a leased key stays leased while it asks for at least 4 (half of 8). A share of the whole
// rule decides as a GCRA of one unit every 20 ms, and starts empty.

var fiftyASecond = librate.LeaseRule{
	Config: librate.Config{Algorithm: librate.GCRA, Limit: 50, Period: time.Second, Burst: 25},
	Lease:  time.Second,
}

func newKeyedHolder(t *testing.T) *librate.KeyedLeaseHolder {
	t.Helper()
	h, err := librate.NewKeyedLeaseHolder(fiftyASecond, 8, 2, librate.LeaseOptions{Name: "g1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// askAt checks where n units for key at now are decided, and the outcome.
func askAt(t *testing.T, h *librate.KeyedLeaseHolder, key string, n int, now time.Duration, admitted, decided bool) {
	t.Helper()
	d, here, err := h.AcquireAt(key, n, now)
	if err != nil || d.Allowed != admitted || here != decided {
		t.Fatalf("%q %d at %v: admitted %v, decided %v, %v; want %v, %v", key, n, now, d.Allowed, here, err, admitted, decided)
	}
}

func TestKeyedLeaseKeysNotLeasedAreDecidedInRedis(t *testing.T) {
	h := newKeyedHolder(t)
	askAt(t, h, "u", 3, 0, false, false)
	// The call: the units asked for, no holder's name, the time in whole microseconds.
	call, err := h.InRedisAt(4, 2500*ms+999)
	want := [7]string{"acquire", "2500000", "20000000", "25", "1000000", "", "4"}
	if err != nil || call.Args != want {
		t.Fatalf("InRedisAt: %q, %v; want %q", call.Args, err, want)
	}
	if call, err := h.InRedis(4); err != nil || call.Args[1] != "" || call.Args[0] != "acquire" {
		t.Fatalf("InRedis: %q, %v; want the server's clock", call.Args, err)
	}
	// More than the rule's burst is never sent, nor decided.
	if _, err := h.InRedis(26); !errors.Is(err, librate.ErrInsufficientCapacity) {
		t.Errorf("InRedis(26): %v", err)
	}
	if _, _, err := h.AcquireAt("u", 26, 0); !errors.Is(err, librate.ErrInsufficientCapacity) || !strings.Contains(err.Error(), "26 units") {
		t.Errorf("AcquireAt 26: %v, want ErrInsufficientCapacity naming 26 units", err)
	}

	// Admitted: 21 left, full again in 4 units' time, 80 ms.
	d, err := h.Decision(4, [librate.KeyedLeaseFields]int64{1, 25, 21, 0, 80_000})
	if want := (librate.Decision{Allowed: true, Limit: 25, Remaining: 21, ResetAfter: 80 * ms}); err != nil || d != want {
		t.Errorf("admitted: %+v, %v; want %+v", d, err, want)
	}
	// Denied: one unit's time to wait, 500 ms to full.
	d, err = h.Decision(4, [librate.KeyedLeaseFields]int64{0, 25, 0, 20_000, 500_000})
	if want := (librate.Decision{Limit: 25, RetryAfter: 20 * ms, ResetAfter: 500 * ms}); err != nil || d != want {
		t.Errorf("denied: %+v, %v; want %+v", d, err, want)
	}
	// What the script never answers: allowed neither 0 nor 1, a limit past the rule's
	// burst, an admission with a wait, a negative time.
	for _, fields := range [][librate.KeyedLeaseFields]int64{
		{2, 25, 0, 0, 0}, {1, 26, 0, 0, 0}, {1, 25, 21, 20_000, 0}, {0, 25, 0, -1, 0},
	} {
		if _, err := h.Decision(4, fields); !errors.Is(err, librate.ErrReply) || !strings.Contains(err.Error(), "reply") {
			t.Errorf("%v: %v, want ErrReply naming the reply", fields, err)
		}
	}
}

func TestKeyedLeaseARoundLeasesTheHottestKeys(t *testing.T) {
	h := newKeyedHolder(t)
	// "d" asks for 10 units, "a" for 9 (in two requests), "c" for 8, all past the line
	// of 8; "b" for 7, below it. The capacity, 2, takes the two hottest.
	for _, ask := range []struct {
		key string
		n   int
	}{{"a", 5}, {"a", 4}, {"b", 7}, {"c", 8}, {"d", 10}} {
		askAt(t, h, ask.key, ask.n, 0, false, false)
	}
	round, err := h.RenewalsAt(0)
	if err != nil {
		t.Fatal(err)
	}
	defer round.Close()
	keys := make([]string, len(round.Renewals))
	for i, r := range round.Renewals {
		keys[i] = r.Key
		// A key's first renewal asks for the whole rule, under the holder's name.
		want := [7]string{"renew", "0", "20000000", "25", "1000000", "g1", "1000000"}
		if r.Renewal.Args != want {
			t.Errorf("%q: %q, want %q", r.Key, r.Renewal.Args, want)
		}
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"a", "d"}) {
		t.Fatalf("round of %q, want a and d", keys)
	}
	if !h.IsLeased("a") || !h.IsLeased("d") || h.IsLeased("b") || h.IsLeased("c") {
		t.Fatal("a and d must be leased, b and c not")
	}
	// Leased, no share yet: still decided in Redis.
	askAt(t, h, "a", 1, 0, false, false)
	a := slices.IndexFunc(round.Renewals, func(r librate.KeyRenewal) bool { return r.Key == "a" })
	whole := [librate.LeaseFields]uint64{1_000_000, 25, 1_000_000, 1, 1_000_000, 25, 1, 0}
	if state, err := round.ApplyAt(a, "granted", whole, 0); err != nil || state != librate.Leased {
		t.Fatalf("applied: %v, %v", state, err)
	}
	if _, err := round.ApplyAt(2, "granted", whole, 0); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("call 2 of 2: %v", err)
	}
	if _, err := round.ApplyAt(1-a, "bogus", whole, 0); !errors.Is(err, librate.ErrReply) || !strings.Contains(err.Error(), `"bogus"`) {
		t.Errorf("status bogus: %v, want ErrReply naming it", err)
	}
	// The share starts empty: one unit at 20 ms, none more then.
	askAt(t, h, "a", 1, 19*ms, false, true)
	askAt(t, h, "a", 1, 20*ms, true, true)
	// The share's decision: a burst of 25, nothing left, the next unit in 20 ms, full
	// again in 25 units' time.
	share := librate.Decision{Limit: 25, RetryAfter: 20 * ms, ResetAfter: 25 * 20 * ms}
	if d, decided, err := h.AcquireAt("a", 1, 20*ms); err != nil || !decided || d != share {
		t.Errorf("the share's decision: %+v, %v, %v; want %+v", d, decided, err, share)
	}
	round.Close()
	if _, err := round.ApplyAt(a, "granted", whole, 0); !errors.Is(err, librate.ErrClosed) {
		t.Errorf("a closed round: %v", err)
	}

	// The next round, at 250 ms: "a" asked for 4 units since its renewal (one in Redis, three
	// here), half the line, and stays; "d" asked for none and stops. a's demand is
	// 4 units over 250 ms: 4 * 20 ms / 250 ms = 320,000 millionths of the rule.
	next, err := h.RenewalsAt(250 * ms)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	want := [7]string{"renew", "250000", "20000000", "25", "1000000", "g1", "320000"}
	if len(next.Renewals) != 1 || next.Renewals[0].Key != "a" || next.Renewals[0].Renewal.Args != want {
		t.Fatalf("round at 250 ms: %+v, want a's renewal %q", next.Renewals, want)
	}
	if h.IsLeased("d") {
		t.Error("d still leased")
	}

	// Closing: every share handed back, no key leased any more.
	back, err := h.ReleaseAll()
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if len(back.Renewals) != 1 || back.Renewals[0].Key != "a" || back.Renewals[0].Renewal.Args[0] != "release" {
		t.Fatalf("hand-backs: %+v, want a's", back.Renewals)
	}
	askAt(t, h, "a", 1, 300*ms, false, false)
}

func TestKeyedLeaseFixedWindowCall(t *testing.T) {
	rule := librate.LeaseRule{Config: librate.Config{Algorithm: librate.FixedWindow, Limit: 10, Period: time.Second}, Lease: 2 * time.Second}
	h, err := librate.NewKeyedLeaseHolder(rule, 0, 1, librate.LeaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// A window's call: its limit and period in microseconds.
	call, err := h.InRedisAt(10, 1500*ms)
	if want := [7]string{"acquire", "1500000", "10", "1000000", "2000000", "", "10"}; err != nil || call.Args != want {
		t.Fatalf("InRedisAt: %q, %v; want %q", call.Args, err, want)
	}
	if _, err := h.InRedis(11); !errors.Is(err, librate.ErrInsufficientCapacity) {
		t.Errorf("11 of a window of 10: %v", err)
	}
	// hot 0: every key asked for is leased at the next round, with a random name.
	askAt(t, h, "k", 0, 0, false, false)
	round, err := h.RenewalsAt(0)
	if err != nil || len(round.Renewals) != 1 || round.Renewals[0].Renewal.Args[5] == "" {
		t.Fatalf("round: %+v, %v; want k's under a random name", round, err)
	}
	round.Close()
	leaseHolder, err := librate.NewLeaseHolder(rule, librate.LeaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer leaseHolder.Close()
	if h.Script() != leaseHolder.Script() || !strings.Contains(h.Script(), "lease script for fixed windows") {
		t.Error("a keyed holder's script is its rule's lease script")
	}
}

func TestKeyedLeaseBadInput(t *testing.T) {
	for _, c := range []struct {
		capacity int
		options  librate.LeaseOptions
		want     string
	}{
		{0, librate.LeaseOptions{}, "capacity 0: must be at least 1"},
		{-1, librate.LeaseOptions{}, "capacity -1: must be at least 1"},
		{2, librate.LeaseOptions{Fallback: &fiftyASecond.Config}, "LeaseOptions.Fallback"},
		{2, librate.LeaseOptions{Name: "a\x00b"}, "name"},
	} {
		_, err := librate.NewKeyedLeaseHolder(fiftyASecond, 8, c.capacity, c.options)
		var config *librate.ConfigError
		if !errors.As(err, &config) || !errors.Is(err, librate.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("capacity %d, %+v: %v; want a *ConfigError naming %q", c.capacity, c.options, err, c.want)
		}
	}
	noLease := fiftyASecond
	noLease.Lease = 0
	if _, err := librate.NewKeyedLeaseHolder(noLease, 8, 2, librate.LeaseOptions{}); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("no lease: %v", err)
	}
	sliding := fiftyASecond
	sliding.Config.Algorithm = librate.SlidingWindow
	if _, err := librate.NewKeyedLeaseHolder(sliding, 8, 2, librate.LeaseOptions{}); !errors.Is(err, librate.ErrUnsupported) {
		t.Errorf("sliding window: %v", err)
	}

	h := newKeyedHolder(t)
	// The empty key is a key.
	askAt(t, h, "", 1, 0, false, false)
	for what, err := range map[string]error{
		"AcquireAt n":   errorOf3(h.AcquireAt("k", -1, 0)),
		"AcquireAt now": errorOf3(h.AcquireAt("k", 1, -1)),
		"Acquire":       errorOf3(h.Acquire("k", -1)),
		"InRedis":       errorOf(h.InRedis(-1)),
		"InRedisAt":     errorOf(h.InRedisAt(1, -1)),
		"Decision":      errorOf(h.Decision(-1, [librate.KeyedLeaseFields]int64{})),
		"RenewalsAt":    errorOf(h.RenewalsAt(-1)),
	} {
		if !errors.Is(err, librate.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", what, err)
		}
	}
	if round, err := h.RenewalsAt(0); err != nil || len(round.Renewals) != 0 {
		t.Errorf("a round without hot keys: %+v, %v", round, err)
	}

	h.Close()
	h.Close()
	var none *librate.KeyedLeaseHolder
	for _, closed := range []*librate.KeyedLeaseHolder{h, none} {
		for what, err := range map[string]error{
			"Acquire":    errorOf3(closed.Acquire("k", 1)),
			"AcquireAt":  errorOf3(closed.AcquireAt("k", 1, 0)),
			"InRedis":    errorOf(closed.InRedis(1)),
			"Decision":   errorOf(closed.Decision(1, [librate.KeyedLeaseFields]int64{1, 25, 24, 0, 20_000})),
			"Renewals":   errorOf(closed.Renewals()),
			"ReleaseAll": errorOf(closed.ReleaseAll()),
		} {
			if !errors.Is(err, librate.ErrClosed) {
				t.Errorf("%s on %v: %v, want ErrClosed", what, closed, err)
			}
		}
		if closed.IsLeased("k") || closed.Script() != "" {
			t.Error("a closed holder leases nothing and has no script")
		}
	}
}

// errorOf is the error of a call returning a value and an error.
func errorOf[T any](_ T, err error) error { return err }

// errorOf3 is the error of a call returning two values and an error.
func errorOf3[T, U any](_ T, _ U, err error) error { return err }
