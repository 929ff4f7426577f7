package librateredis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

// Keyed leases (docs/leases.md, keys) on a real redis-server, on a timeline of the
// test's (the manual limiters' At forms). Every expected value is worked out by hand from
// the lease scripts' contract:
//
//   - A key's hash made by a request holds the whole rule, full, in the bucket of the
//     requests decided in Redis (GCRA: one unit every T ns, a burst of B), and is quiet
//     for grants for one lease (a fixed window: to the window's end).
//   - A request in Redis takes from that bucket; its reply's times are whole
//     microseconds, rounded up.
//   - A round grants a key's holder its max-min fair share by demand: the holder's (the
//     units asked of it since its last renewal, units * T / elapsed in millionths,
//     rounded up; a first renewal asks for the whole rule) beside the requests' (the
//     units asked in Redis over the last lease, as a rate of the rule); its burst is its
//     rate's proportion of B, rounded down. The bucket is cut to what the leases leave:
//     one unit every ceil(T * 10^6 / (10^6 - held rate)) ns, a burst of B less the held
//     bursts, keeping at most the tokens it had.
//   - A share decides as a GCRA of one unit every ceil(T * 10^6 / rate) ns, its burst
//     its own, and starts empty.

// acquireCounter counts the lease script's "acquire" calls each Redis key receives: the
// requests decided in Redis (a NOSCRIPT answer, retried with EVAL, counts once).
type acquireCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *acquireCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *acquireCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (c *acquireCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		// EVALSHA sha 1 key op …, or EVAL script 1 key op ….
		args := cmd.Args()
		if len(args) > 4 && strings.HasPrefix(strings.ToLower(fmt.Sprint(args[0])), "eval") &&
			args[4] == "acquire" && !redis.HasErrorPrefix(err, "NOSCRIPT") {
			c.mu.Lock()
			c.calls[fmt.Sprint(args[3])]++
			c.mu.Unlock()
		}
		return err
	}
}

// of returns the calls at redisKey so far.
func (c *acquireCounter) of(redisKey string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[redisKey]
}

// countedClient is a client of s whose "acquire" calls are counted.
func countedClient(t *testing.T, s *server) (*redis.Client, *acquireCounter) {
	client := s.client(t)
	counter := &acquireCounter{calls: map[string]int{}}
	client.AddHook(counter)
	return client, counter
}

// keyedBy is a manual keyed limiter of rule under prefix, closed when t ends.
func keyedBy(t *testing.T, client redis.UniversalClient, prefix string, rule librate.LeaseRule,
	options librateredis.KeyedLeaseOptions) *librateredis.KeyedLeasedLimiter {
	t.Helper()
	l, err := librateredis.NewKeyedLeasedManual(client, prefix, rule, options)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// decideAt checks the decision for n units of key at now.
func decideAt(t *testing.T, l *librateredis.KeyedLeasedLimiter, key string, n int, now time.Duration, want librate.Decision) {
	t.Helper()
	if d, err := l.AcquireAt(ctx, key, n, now); err != nil || d != want {
		t.Fatalf("%q %d at %v: %+v, %v\nwant %+v", key, n, now, d, err, want)
	}
}

// roundAt runs l's round at now and checks how many keys Redis answered.
func roundAt(t *testing.T, l *librateredis.KeyedLeasedLimiter, now time.Duration, want int) {
	t.Helper()
	if renewed, err := l.RenewAt(ctx, now); err != nil || renewed != want {
		t.Fatalf("round at %v: %d renewed, %v; want %d", now, renewed, err, want)
	}
}

func TestKeyedLeaseGCRARequestsAndAHotKey(t *testing.T) {
	s := startServer(t)
	client, counter := countedClient(t, s)
	// Per key: GCRA, 5 a second with bursts of 8 (T = 200 ms, B = 8), leased 1 s.
	rule := librate.LeaseRule{Config: librate.Config{Algorithm: librate.GCRA, Limit: 5, Period: time.Second, Burst: 8}, Lease: time.Second}
	l := keyedBy(t, client, "kg:", rule, librateredis.KeyedLeaseOptions{Hot: 2, Capacity: 1, Name: "h"})
	other := keyedBy(t, s.client(t), "kg:", rule, librateredis.KeyedLeaseOptions{Hot: 1000, Capacity: 1, Name: "o"})

	// The first request makes the hash: 8 tokens. 5 taken leave 3, a debt of 1 s.
	decideAt(t, l, "a", 5, 0, librate.Decision{Allowed: true, Limit: 8, Remaining: 3, ResetAfter: time.Second})
	// 4 more would owe 1.8 s, 200 ms past the burst's 1.6 s.
	decideAt(t, l, "a", 4, 0, librate.Decision{Limit: 8, Remaining: 3, RetryAfter: 200 * ms, ResetAfter: time.Second})
	// A query at 100 ms: 900 ms owed, 3.5 tokens' room, 3 whole.
	decideAt(t, l, "a", 0, 100*ms, librate.Decision{Allowed: true, Limit: 8, Remaining: 3, ResetAfter: 900 * ms})
	// More than B is the caller's error, never sent.
	if _, err := l.AcquireAt(ctx, "a", 9, 100*ms); !isInsufficient(err) {
		t.Fatalf("9 units: %v", err)
	}
	if calls := counter.of("kg:a"); calls != 3 {
		t.Fatalf("%d calls in Redis, want 3", calls)
	}

	// "a" asked for 9 units, past Hot (2): leased at the round at 200 ms, where the rule
	// made at 0 is quiet to 1 s. Leased without a share, it is still decided in Redis:
	// 800 ms owed, 1 unit more makes 1 s.
	roundAt(t, l, 200*ms, 1)
	if !l.IsLeased("a") {
		t.Fatal("a not leased")
	}
	decideAt(t, l, "a", 1, 200*ms, librate.Decision{Allowed: true, Limit: 8, Remaining: 3, ResetAfter: time.Second})

	// At 1 s the holder asked for 1 unit in 800 ms (1 * 200 ms / 800 ms: 250,000, and at
	// least half of Hot, so "a" stays leased); the requests in Redis for 10 in the lease
	// before, twice the rule: 1,000,000. Max-min fair: the holder's 250,000 fits under
	// the even split (500,000), so it is met: a burst of floor(8 / 4) = 2.
	roundAt(t, l, time.Second, 1)
	// The requests in Redis keep 750,000: one unit every ceil(200 ms / 0.75) =
	// 266,666,667 ns, a burst of 6; their 7 tokens (200 ms owed) are cut to 6, all of it.
	// 6 units owe 1,600,000,002 ns, 1,600,001 µs rounded up; one more waits a unit.
	const us = time.Microsecond
	decideAt(t, other, "a", 6, time.Second, librate.Decision{Allowed: true, Limit: 6, ResetAfter: 1_600_001 * us})
	decideAt(t, other, "a", 1, time.Second, librate.Decision{Limit: 6, RetryAfter: 266_667 * us, ResetAfter: 1_600_001 * us})
	// 7 units are more than what the leases leave can ever hold: ask again in a lease.
	decideAt(t, other, "a", 7, time.Second, librate.Decision{Limit: 6, RetryAfter: time.Second, ResetAfter: 1_600_001 * us})

	// The holder decides "a" in process from its share, one unit every 800 ms and a
	// burst of 2, which starts empty (full again 1.6 s on): none at 1 s, one at 1.8 s;
	// its decisions are the share's; and no call reaches Redis.
	before := counter.of("kg:a")
	decideAt(t, l, "a", 1, time.Second, librate.Decision{Limit: 2, RetryAfter: 800 * ms, ResetAfter: 1600 * ms})
	decideAt(t, l, "a", 1, 1800*ms, librate.Decision{Allowed: true, Limit: 2, ResetAfter: 1600 * ms})
	decideAt(t, l, "a", 1, 1800*ms, librate.Decision{Limit: 2, RetryAfter: 800 * ms, ResetAfter: 1600 * ms})
	if calls := counter.of("kg:a"); calls != before {
		t.Fatalf("%d calls in Redis for a leased key", calls-before)
	}
	// A cold key is one call, and not leased.
	decideAt(t, l, "cold", 1, 1800*ms, librate.Decision{Allowed: true, Limit: 8, Remaining: 7, ResetAfter: 200 * ms})
	if counter.of("kg:cold") != 1 || l.IsLeased("cold") {
		t.Fatal("a cold key must be decided in Redis, once")
	}
}

func TestKeyedLeaseFixedWindowRequestsBesideACount(t *testing.T) {
	s := startServer(t)
	client, counter := countedClient(t, s)
	// Per key: 6 a window of 1 s, leased 2 s.
	rule := librate.LeaseRule{Config: librate.Config{Algorithm: librate.FixedWindow, Limit: 6, Period: time.Second}, Lease: 2 * time.Second}
	l := keyedBy(t, client, "kw:", rule, librateredis.KeyedLeaseOptions{Hot: 10, Capacity: 1, Name: "h"})
	other := keyedBy(t, s.client(t), "kw:", rule, librateredis.KeyedLeaseOptions{Hot: 1000, Capacity: 1, Name: "o"})

	// Window 0 is [0, 1 s): 4 of 6, then 3 more would pass 6, then 2 fill it.
	decideAt(t, l, "w", 4, 250*ms, librate.Decision{Allowed: true, Limit: 6, Remaining: 2, ResetAfter: 750 * ms})
	decideAt(t, l, "w", 3, 500*ms, librate.Decision{Limit: 6, Remaining: 2, RetryAfter: 500 * ms, ResetAfter: 500 * ms})
	decideAt(t, l, "w", 2, 500*ms, librate.Decision{Allowed: true, Limit: 6, ResetAfter: 500 * ms})
	// Window 1 starts afresh.
	decideAt(t, l, "w", 1, time.Second, librate.Decision{Allowed: true, Limit: 6, Remaining: 5, ResetAfter: time.Second})
	if _, err := l.AcquireAt(ctx, "w", 7, time.Second); !isInsufficient(err) {
		t.Fatalf("7 units: %v", err)
	}

	// "w" asked for 10 units: leased at 1.2 s, past the quiet (the end of window 0).
	// The requests in Redis asked for 9 in the window before, more than L: a demand of
	// the whole window, as the holder's first. Each gets half, 3 units, beside the 1
	// taken: 4 of window 1 used.
	roundAt(t, l, 1200*ms, 1)
	// From its count, in process: 3 units, then none. The count is held to the window's
	// end less the margin, a thousandth of the 800 ms held: 799.2 ms on.
	before := counter.of("kw:w")
	held := 799_200 * time.Microsecond
	decideAt(t, l, "w", 3, 1200*ms, librate.Decision{Allowed: true, Limit: 3, ResetAfter: held})
	decideAt(t, l, "w", 1, 1200*ms, librate.Decision{Limit: 3, RetryAfter: held, ResetAfter: held})
	if counter.of("kw:w") != before {
		t.Fatal("a leased key's count decided in Redis")
	}
	// In Redis, the 2 units the window has left, then none until its end.
	decideAt(t, other, "w", 2, 1300*ms, librate.Decision{Allowed: true, Limit: 6, ResetAfter: 700 * ms})
	decideAt(t, other, "w", 1, 1300*ms, librate.Decision{Limit: 6, RetryAfter: 700 * ms, ResetAfter: 700 * ms})
}

func isInsufficient(err error) bool { return errors.Is(err, librate.ErrInsufficientCapacity) }
