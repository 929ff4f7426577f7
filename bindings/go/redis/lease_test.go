package librateredis_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

// Leases (docs/leases.md) on a real redis-server. The rule is GCRA, 1,000 a second
// (T = 1 ms, B = 1,000, so the whole rule is a rate of S = 1,000,000 millionths), leased
// 2 s at a time unless said otherwise (renewed every 500 ms, a margin of 2 ms). Every
// expected value is worked out by hand from the contract: a rule new to Redis grants
// nothing for one lease from its epoch; the script divides the rule among the holders
// that asked within a lease by their demands (those that fit are met and the rest split
// evenly), never handing out what an unexpired lease may hold; a demand is the units
// asked for since the last renewal, over the time since, in millionths of the rule's
// rate, rounded up; a fresh lease starts empty.

// wholeRate is the whole rule's rate, in millionths of it.
const wholeRate = 1_000_000

var thousandASecond = librate.Config{Algorithm: librate.GCRA, Limit: 1000, Period: time.Second}

// leasedBy is a manual holder of the rule (leases of lease) at key, named name, closed
// when t ends.
func leasedBy(t *testing.T, client redis.UniversalClient, key, name string, lease time.Duration) *librateredis.LeasedLimiter {
	t.Helper()
	rule := librate.LeaseRule{Config: thousandASecond, Lease: lease}
	l, err := librateredis.NewLeasedManual(client, key, rule, librate.LeaseOptions{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// renewAt renews l at now and checks the state, and the grant it leaves (nil: none
// checked).
func renewAt(t *testing.T, l *librateredis.LeasedLimiter, now time.Duration, want librate.HolderState, grant *librate.Grant) {
	t.Helper()
	state, err := l.RenewAt(ctx, now)
	if err != nil || state != want {
		t.Fatalf("%s at %v: %v, %v; want %v", l.Key(), now, state, err, want)
	}
	if grant == nil {
		return
	}
	if got, err := l.Holder().LastGrant(); err != nil || got != *grant {
		t.Fatalf("at %v: grant %+v, %v\nwant %+v", now, got, err, *grant)
	}
}

// acquireAt checks the decision for n units at now.
func acquireAt(t *testing.T, l *librateredis.LeasedLimiter, n int, now time.Duration, want librate.Decision) {
	t.Helper()
	if d, err := l.AcquireAt(n, now); err != nil || d != want {
		t.Fatalf("%d at %v: %+v, %v\nwant %+v", n, now, d, err, want)
	}
}

func TestLeaseNewRuleIsQuietForOneLease(t *testing.T) {
	l := leasedBy(t, startServer(t).client(t), "lease:{quiet}", "h1", 2*time.Second)
	// Made at 10 s: quiet until 12 s, the holder denied to 11.998 s (the margin).
	renewAt(t, l, 10*time.Second, librate.Unshared, &librate.Grant{})
	acquireAt(t, l, 1, 10*time.Second, librate.Decision{RetryAfter: 500 * ms})
	if l.Holder().StateAt(11*time.Second+998*ms-1) != librate.Unshared || l.Holder().StateAt(11*time.Second+998*ms) != librate.InFallback {
		t.Fatal("the quiet answer must deny until 11.998 s, and no longer")
	}
	// Quiet for 1 µs more: denied for that microsecond less its thousandth.
	renewAt(t, l, 12*time.Second-time.Microsecond, librate.Unshared, &librate.Grant{})
	if l.Holder().StateAt(12*time.Second-time.Microsecond+999) != librate.InFallback {
		t.Fatal("the quiet answer must deny for 999 ns, and no longer")
	}
	// From 12 s, alone: the whole rule, from the epoch 10 s (in µs).
	renewAt(t, l, 12*time.Second, librate.Leased, &librate.Grant{Rate: wholeRate, Burst: 1000, Lease: 2 * time.Second,
		Epoch: 10_000_000, HeldRate: wholeRate, HeldBurst: 1000, Holders: 1})
	// It starts empty: one unit a T later.
	acquireAt(t, l, 1, 12*time.Second, librate.Decision{Limit: 1000, RetryAfter: ms, ResetAfter: time.Second})
	acquireAt(t, l, 1, 12*time.Second+ms, librate.Decision{Allowed: true, Limit: 1000, ResetAfter: time.Second})
}

func TestLeaseHoldersSplitByDemand(t *testing.T) {
	client := startServer(t).client(t)
	h1 := leasedBy(t, client, "lease:{split}", "h1", 2*time.Second)
	h2 := leasedBy(t, client, "lease:{split}", "h2", 2*time.Second)
	renewAt(t, h1, 0, librate.Unshared, nil)
	renewAt(t, h2, 0, librate.Unshared, nil)
	// Asked for, denied, counted: h1 400 units in 2 s (a demand of 200,000), h2 1,200
	// (600,000).
	h1.AcquireAt(400, time.Second)
	h2.AcquireAt(600, time.Second)
	h2.AcquireAt(600, time.Second)
	// At 2 s h1 alone: its demand and the rest, the whole rule; h2 then gets nothing,
	// since h1's lease holds everything to 4 s.
	renewAt(t, h1, 2*time.Second, librate.Leased, &librate.Grant{Rate: wholeRate, Burst: 1000, Lease: 2 * time.Second,
		HeldRate: wholeRate, HeldBurst: 1000, Holders: 1})
	renewAt(t, h2, 2*time.Second, librate.Unshared, &librate.Grant{Lease: 2 * time.Second,
		HeldRate: wholeRate, HeldBurst: 1000, Holders: 2})
	// h1 asks for 100 units in 500 ms (200,000), h2 for 1,200 in 2 s (600,000).
	if !h1.AllowN(librate.TimeAt(2*time.Second+400*ms), 100) {
		t.Fatal("h1's share of the whole rule, empty at 2 s, holds 400 units at 2.4 s")
	}
	h2.AcquireAt(600, 3*time.Second)
	h2.AcquireAt(600, 3*time.Second)
	// At 2.5 s: 20% + 60% leave 20%, split evenly: h1 30%, a burst of 300 (its lease of
	// the whole rule still held to 4 s).
	renewAt(t, h1, 2*time.Second+500*ms, librate.Leased, &librate.Grant{Rate: 300_000, Burst: 300, Lease: 2 * time.Second,
		HeldRate: wholeRate, HeldBurst: 1000, Holders: 2})
	// At 4 s that lease has ended: h2 gets its 60% and 10%, a burst of 700.
	renewAt(t, h2, 4*time.Second, librate.Leased, &librate.Grant{Rate: 700_000, Burst: 700, Lease: 2 * time.Second,
		HeldRate: wholeRate, HeldBurst: 1000, Holders: 2})
	// h1 asks for 300 units in 1.5 s: 200,000 again, 30% again.
	h1.AcquireAt(300, 3*time.Second)
	renewAt(t, h1, 4*time.Second, librate.Leased, &librate.Grant{Rate: 300_000, Burst: 300, Lease: 2 * time.Second,
		HeldRate: wholeRate, HeldBurst: 1000, Holders: 2})
	// h2's share, fresh at 4 s, admits a unit every ceil(1 ms x 10^6 / 700,000) =
	// 1,428,572 ns: its first then, not a nanosecond before.
	if h2.AllowN(librate.TimeAt(4*time.Second+1_428_571), 1) || !h2.AllowN(librate.TimeAt(4*time.Second+1_428_572), 1) {
		t.Fatal("h2's share must admit its first unit 1,428,572 ns after 4 s")
	}
}

// A client that gives up on a call after timeout and never retries.
func impatientClient(t *testing.T, s *server) *redis.Client {
	client := redis.NewClient(&redis.Options{Addr: s.addr, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 100 * ms})
	t.Cleanup(func() { client.Close() })
	return client
}

// waitFor polls cond until it holds, failing t after within.
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(5 * ms) {
		if time.Since(start) > within {
			t.Fatalf("%s: not within %v", what, within)
		}
	}
}

// Renewed by the goroutine, leases of 400 ms (renewed every 100 ms): while the server is
// stopped the holders decide from their leases, then by their fallbacks, and say so; the
// failures are counted, never decisions; once it answers again they hold leases again.
func TestLeaseFallbackWhenTheServerStops(t *testing.T) {
	s := startServer(t)
	client := impatientClient(t, s)
	rule := librate.LeaseRule{Config: thousandASecond, Lease: 400 * ms}
	hourly := librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Hour, Burst: 1}
	deny, err := librateredis.NewLeased(ctx, client, "lease:{deny}", rule, librate.LeaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer deny.Close()
	local, err := librateredis.NewLeased(ctx, client, "lease:{local}", rule, librate.LeaseOptions{Fallback: &hourly})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	// Quiet for the first 400 ms, then the whole rule each (a rule a key).
	for _, l := range []*librateredis.LeasedLimiter{deny, local} {
		waitFor(t, l.Key()+" leased", 5*time.Second, func() bool { return l.Holder().State() == librate.Leased })
		if g, _ := l.Holder().LastGrant(); g.Rate != wholeRate || l.Err() != nil {
			t.Fatalf("%s: %+v, %v; want the whole rule", l.Key(), g, l.Err())
		}
	}

	s.signal(t, syscall.SIGSTOP)
	defer s.signal(t, syscall.SIGCONT)
	// A lease runs 400 ms less 0.4 ms from its renewal, at most 100 ms ago.
	if deny.InFallback() || local.InFallback() {
		t.Fatal("in fallback as soon as the server stopped: the leases still run")
	}
	for _, l := range []*librateredis.LeasedLimiter{deny, local} {
		waitFor(t, l.Key()+" in fallback", 5*time.Second, l.InFallback)
		var failure *librateredis.Error
		if !errors.As(l.Err(), &failure) || failure.Key != l.Key() || l.Failures() == 0 {
			t.Errorf("%s: %v after %d failures; want an *Error of its key", l.Key(), l.Err(), l.Failures())
		}
	}
	// Denied: the last share's burst, and a retry after a renewal interval.
	if d, err := deny.Acquire(1); err != nil || d != (librate.Decision{Limit: 1000, RetryAfter: 100 * ms}) {
		t.Errorf("deny: %+v, %v", d, err)
	}
	// The local rule of 1 an hour, full.
	if d, err := local.Acquire(1); err != nil || d != (librate.Decision{Allowed: true, Limit: 1, ResetAfter: time.Hour}) {
		t.Errorf("local: %+v, %v", d, err)
	}
	if local.Allow() || deny.Allow() {
		t.Error("admitted past the fallback")
	}

	s.signal(t, syscall.SIGCONT)
	for _, l := range []*librateredis.LeasedLimiter{deny, local} {
		waitFor(t, l.Key()+" leased again", 5*time.Second, func() bool { return l.Holder().State() == librate.Leased })
	}
	waitFor(t, "no failure since", 5*time.Second, func() bool { return deny.Err() == nil && local.Err() == nil })
}

// Close, or the end of NewLeased's context, hands the share back: the other holder gets
// the whole rule at its next renewal, long before the lease (10 s) of the one that left
// would have ended.
func TestLeaseCloseHandsTheShareBack(t *testing.T) {
	for _, leave := range []string{"Close", "the context's end"} {
		t.Run(leave, func(t *testing.T) { handsTheShareBack(t, leave == "Close") })
	}
}

func handsTheShareBack(t *testing.T, byClose bool) {
	client := startServer(t).client(t)
	const key = "lease:{close}"
	rule := librate.LeaseRule{Config: thousandASecond, Lease: 10 * time.Second, RenewEvery: 50 * ms}
	// A rule Redis made at 1 s on a timeline of the caller's, long before the server's
	// clock: not quiet any more by it, and its epoch is 1,000,000 µs.
	seed := leasedBy(t, client, key, "seed", 10*time.Second)
	renewAt(t, seed, time.Second, librate.Unshared, nil)

	aCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	a, err := librateredis.NewLeased(aCtx, client, key, rule, librate.LeaseOptions{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	waitFor(t, "a leased", 5*time.Second, func() bool { return a.Holder().State() == librate.Leased })
	b, err := librateredis.NewLeased(ctx, client, key, rule, librate.LeaseOptions{Name: "b"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// a holds the whole rule: nothing for b.
	waitFor(t, "b answered", 5*time.Second, func() bool { g, _ := b.Holder().LastGrant(); return g.Holders == 2 })
	if g, _ := b.Holder().LastGrant(); g.Rate != 0 || b.Holder().State() != librate.Unshared {
		t.Fatalf("b: %+v, %v; want no share", g, b.Holder().State())
	}

	if byClose {
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Acquire(1); !errors.Is(err, librate.ErrClosed) {
			t.Errorf("a closed: %v, want ErrClosed", err)
		}
	} else {
		cancel()
		// a stops deciding from its share as it hands it back: the fallback, deny.
		waitFor(t, "a in fallback", time.Second, a.InFallback)
		if a.Allow() {
			t.Error("a admitted after its context ended")
		}
	}
	waitFor(t, "b given the whole rule", 2*time.Second, func() bool { g, _ := b.Holder().LastGrant(); return g.Rate != 0 })
	want := librate.Grant{Rate: wholeRate, Burst: 1000, Lease: 10 * time.Second, Epoch: 1_000_000,
		HeldRate: wholeRate, HeldBurst: 1000, Holders: 1}
	if g, _ := b.Holder().LastGrant(); g != want || b.Holder().State() != librate.Leased {
		t.Fatalf("b: %+v, %v\nwant %+v", g, b.Holder().State(), want)
	}
	if err := a.Close(); err != nil {
		t.Errorf("a closed again: %v", err)
	}
}

// What is at the rule's key is not the script's: an error, counted, and nothing applied.
func TestLeaseGarbageAtTheKey(t *testing.T) {
	client := startServer(t).client(t)
	const key = "lease:{garbage}"
	l := leasedBy(t, client, key, "h1", 2*time.Second)
	renewAt(t, l, 0, librate.Unshared, nil)
	whole := librate.Grant{Rate: wholeRate, Burst: 1000, Lease: 2 * time.Second, HeldRate: wholeRate, HeldBurst: 1000, Holders: 1}
	renewAt(t, l, 2*time.Second, librate.Leased, &whole)

	if err := client.HSet(ctx, key, "h:x", "short").Err(); err != nil {
		t.Fatal(err)
	}
	if err := client.Set(ctx, "lease:{garbage}:string", "a string", 0).Err(); err != nil {
		t.Fatal(err)
	}
	wrongType := leasedBy(t, client, "lease:{garbage}:string", "h1", 2*time.Second)
	for i, c := range []struct {
		l    *librateredis.LeasedLimiter
		want string
	}{
		{l, "holds no lease state at h:x"},
		{wrongType, "WRONGTYPE"},
	} {
		state, err := c.l.RenewAt(ctx, 2*time.Second+500*ms)
		var failure *librateredis.Error
		var redisErr redis.Error
		if !errors.As(err, &failure) || failure.Key != c.l.Key() || !errors.As(err, &redisErr) ||
			!strings.Contains(err.Error(), c.want) || c.l.Err() != err || c.l.Failures() != 1 {
			t.Errorf("%d: %v (%d failures, last %v); want an *Error of %q holding %q", i, err, c.l.Failures(), c.l.Err(), c.l.Key(), c.want)
		}
		// Nothing applied: l decides from its lease of 2 s to its end, 3.998 s.
		if c.l == l && (state != librate.Leased || l.Holder().StateAt(3*time.Second+998*ms) != librate.InFallback) {
			t.Errorf("state %v after the error", state)
		}
	}
	if g, err := l.Holder().LastGrant(); err != nil || g != whole {
		t.Errorf("grant %+v, %v after the error; want %+v", g, err, whole)
	}
	// The garbage gone, Redis has lost the rule: quiet again from 4 s, when l's lease
	// has ended, and no failure.
	if err := client.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	renewAt(t, l, 4*time.Second, librate.Unshared, nil)
	if l.Err() != nil || l.Failures() != 1 {
		t.Errorf("%v, %d failures; want none since", l.Err(), l.Failures())
	}
}

func TestLeaseRefusals(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + closedPort(t), MaxRetries: -1})
	defer client.Close()
	rule := librate.LeaseRule{Config: thousandASecond, Lease: 2 * time.Second}
	if _, err := librateredis.NewLeased(ctx, nil, "k", rule, librate.LeaseOptions{}); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("nil client: %v", err)
	}
	if _, err := librateredis.NewLeased(nilContext(), client, "k", rule, librate.LeaseOptions{}); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("nil context: %v", err)
	}
	renewing, err := librateredis.NewLeased(ctx, client, "k", rule, librate.LeaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer renewing.Close()
	if _, err := renewing.RenewAt(ctx, time.Second); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("RenewAt beside the goroutine: %v", err)
	}
	manual, err := librateredis.NewLeasedManual(client, "k", rule, librate.LeaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer manual.Close()
	if _, err := manual.RenewAt(ctx, -1); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("RenewAt(-1): %v", err)
	}
	rule.Lease = 0
	if _, err := librateredis.NewLeased(ctx, client, "k", rule, librate.LeaseOptions{}); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("no lease: %v", err)
	}
}

func nilContext() context.Context { return nil }

// A rule's key on each master, through the Cluster client, after SCRIPT FLUSH on every
// master: each first renewal loads the script again and finds the rule new (quiet), the
// next, a lease later, grants the whole rule; and the rule's hash lives on the master of
// its slot, and there only.
func leasesOnEveryMaster(t *testing.T, c *cluster, client *redis.ClusterClient) {
	var keys []string
	for k, found := 0, make([]bool, len(c.nodes)); len(keys) < len(c.nodes); k++ {
		key := "lease:{rule-" + strconv.Itoa(k) + "}"
		if m := c.master(t, key); !found[m] {
			found[m] = true
			keys = append(keys, key)
		}
	}
	for i, admin := range c.admin {
		if err := admin.ScriptFlush(ctx).Err(); err != nil {
			t.Fatalf("master %d: SCRIPT FLUSH: %v", i, err)
		}
	}
	for _, key := range keys {
		l := leasedBy(t, client, key, "h1", 2*time.Second)
		renewAt(t, l, 0, librate.Unshared, &librate.Grant{})
		renewAt(t, l, 2*time.Second, librate.Leased, &librate.Grant{Rate: wholeRate, Burst: 1000, Lease: 2 * time.Second,
			HeldRate: wholeRate, HeldBurst: 1000, Holders: 1})
		for i, admin := range c.admin {
			n, err := admin.Exists(ctx, key).Result()
			if mine := i == c.master(t, key); mine && (err != nil || n != 1) || !mine && err == nil {
				t.Errorf("%q on master %d (its slot's: %v): %d, %v", key, i, mine, n, err)
			}
		}
	}
}
