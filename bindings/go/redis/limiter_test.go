package librateredis_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
	"github.com/librate/librate/bindings/go/internal/hook"
	"github.com/librate/librate/bindings/go/internal/peervectors"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

const (
	ms     = time.Millisecond
	second = uint64(time.Second)
	// maxState is the largest state a limiter stores: 2^64 − 257.
	maxState = math.MaxUint64 - 256
)

var ctx = context.Background()

// algorithms is every algorithm librate has; the tests skip, with a log line, those
// without a Redis script yet, and so cover each one as its script lands.
var algorithms = []librate.Algorithm{librate.GCRA, librate.FixedWindow, librate.SlidingWindow, librate.SlidingLog}

// limiterAt is the in-process Limiter's AcquireAt (reserve false) or ReserveAt on the
// whole uint64 timeline.
var limiterAt = hook.LimiterAt.(func(*librate.Limiter, int, uint64, uint64, bool) (librate.Decision, error))

// newLimiter is a Limiter of config under prefix, or nil, after a log line, for an
// algorithm without a Redis script yet.
func newLimiter(t testing.TB, client redis.UniversalClient, config librate.Config, prefix string) *librateredis.Limiter {
	t.Helper()
	l, err := librateredis.New(client, config, prefix)
	if errors.Is(err, librate.ErrUnsupported) {
		t.Logf("%v: no Redis script yet, skipped", config.Algorithm)
		return nil
	}
	if err != nil {
		t.Fatalf("New(%+v): %v", config, err)
	}
	return l
}

// The seed scenario of docs/decision.md through Redis with explicit times: L = 1, P = 2 s, B = 1.
// Bob is admitted at 0 ms, denied at 999 ms (retry after 1001 ms) and 1000 ms (1000 ms),
// admitted at 2001 ms; Alice is independent.
func TestSeedScenario(t *testing.T) {
	client := startServer(t).client(t)
	l := newLimiter(t, client, librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: 2 * time.Second, Burst: 1}, "seed:")
	at := func(key string, at time.Duration) librate.Decision {
		t.Helper()
		d, err := l.AcquireAt(ctx, key, 1, at)
		if err != nil {
			t.Fatalf("%s at %v: %v", key, at, err)
		}
		return d
	}
	steps := []struct {
		key  string
		at   time.Duration
		want librate.Decision
	}{
		{"bob", 0, librate.Decision{Allowed: true, Limit: 1, ResetAfter: 2 * time.Second}},
		{"bob", 999 * ms, librate.Decision{Limit: 1, RetryAfter: 1001 * ms, ResetAfter: 1001 * ms}},
		{"bob", 1000 * ms, librate.Decision{Limit: 1, RetryAfter: 1000 * ms, ResetAfter: 1000 * ms}},
		{"alice", 1000 * ms, librate.Decision{Allowed: true, Limit: 1, ResetAfter: 2 * time.Second}},
		{"bob", 2001 * ms, librate.Decision{Allowed: true, Limit: 1, ResetAfter: 2 * time.Second}},
	}
	for _, s := range steps {
		if got := at(s.key, s.at); got != s.want {
			t.Errorf("%s at %v: %+v, want %+v", s.key, s.at, got, s.want)
		}
	}
}

// Random configurations of every algorithm, costs (0 and above the limit included),
// acquires and reserves, and times that jump both ways (near 0, near the end of the
// timeline, anywhere): every decision through Redis is the in-process limiter's for the
// same times, field for field, and so is every refusal.
func TestDecidesAsTheInProcessLimiter(t *testing.T) {
	client := startServer(t).client(t)
	for _, algorithm := range algorithms {
		t.Run(algorithm.String(), func(t *testing.T) { decidesAsInProcess(t, client, algorithm) })
	}
}

func decidesAsInProcess(t *testing.T, client redis.UniversalClient, algorithm librate.Algorithm) {
	rng := rand.New(rand.NewPCG(53, uint64(algorithm)))
	below := func(n uint64) uint64 { return rng.Uint64N(n) }
	cases := 200
	if testing.Short() {
		cases = 8 // each case kind (by c % 4) twice
	}
	for c := range cases {
		limit := 1 + below(20)
		period := limit + below(10*second-limit)
		config := librate.Config{Algorithm: algorithm, Limit: limit, Period: time.Duration(period)}
		if algorithm == librate.GCRA && rng.IntN(2) == 0 {
			config.Burst = 1 + below(40)
		}
		remote := newLimiter(t, client, config, fmt.Sprintf("model:%v:%d:", algorithm, c))
		if remote == nil {
			return
		}
		local, err := librate.New(config)
		if err != nil {
			t.Fatal(err)
		}
		most := config.Limit
		if config.Burst > 0 {
			most = config.Burst
		}
		var base uint64
		switch c % 4 {
		case 1:
			base = below(1 << 40)
		case 2:
			base = maxState - below(20*second)
		case 3:
			base = rng.Uint64()
		}
		now := base
		for step := range 100 {
			switch rng.IntN(8) {
			case 0:
				now -= min(now, below(2*period))
			case 1:
				now = base + min(math.MaxUint64-base, below(4*period))
			case 2:
				now = math.MaxUint64 - below(3)
			default:
				now += min(math.MaxUint64-now, below(period))
			}
			n := int(below(most + 2))
			reserve := rng.IntN(2) == 0
			var maxWait time.Duration
			switch rng.IntN(4) {
			case 0:
			case 1:
				maxWait = librate.Never - time.Duration(below(2))
			default:
				maxWait = time.Duration(below(3 * period))
			}
			want, wantErr := limiterAt(local, n, now, uint64(maxWait), reserve)
			var got librate.Decision
			var gotErr error
			if reserve {
				got, gotErr = librateredis.ReserveAtNs(remote, ctx, "k", n, now, maxWait)
			} else {
				got, gotErr = librateredis.AcquireAtNs(remote, ctx, "k", n, now)
			}
			// Redis expires a key by its own clock, while these times jump anywhere: a
			// key live at them would expire if the test stalled past its TTL (a loaded
			// machine), so each step leaves it without one. (Expiry has its own test.)
			if err := client.Persist(ctx, remote.Key("k")).Err(); err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("%+v case %d step %d: n=%d at %d reserve=%v maxWait=%d", config, c, step, n, now, reserve, maxWait)
			if got != want || (gotErr == nil) != (wantErr == nil) || (wantErr != nil && !errors.Is(gotErr, wantErr)) {
				t.Fatalf("%s:\n got %+v, %v\nwant %+v, %v", what, got, gotErr, want, wantErr)
			}
		}
		local.Close()
	}
}

// The Go peers' published vectors (the ones the in-process tests replay) hold through
// Redis step by step.
func TestPeerVectors(t *testing.T) {
	client := startServer(t).client(t)
	for i, vector := range peervectors.All {
		t.Run(vector.Name, func(t *testing.T) {
			l := newLimiter(t, client, vector.Config, fmt.Sprintf("peer:%d:", i))
			vector.Replay(t, func(n int, at time.Duration) (librate.Decision, error) {
				return l.AcquireAt(ctx, "k", n, at)
			})
		})
	}
}

// Without a time the server's clock decides: a burst of 3 admits 3 at once and denies
// the 4th, due within a third of a second. The key expires when the bucket is full
// again, and a query writes nothing.
func TestTheServersClockDecidesAndKeysExpire(t *testing.T) {
	client := startServer(t).client(t)
	l := newLimiter(t, client, librate.Config{Algorithm: librate.GCRA, Limit: 3, Period: time.Second}, "clock:")
	for i := range 3 {
		if allowed, err := l.Allow(ctx, "k"); err != nil || !allowed {
			t.Fatalf("unit %d: %v, %v", i+1, allowed, err)
		}
	}
	denied, err := l.Acquire(ctx, "k", 1)
	if err != nil || denied.Allowed || denied.RetryAfter <= 0 || denied.RetryAfter > time.Second/3 {
		t.Fatalf("the 4th: %+v, %v; want denied, due within 1/3 s", denied, err)
	}
	if allowed, err := l.Allow(ctx, "k"); err != nil || allowed {
		t.Fatalf("the 5th, by Allow: %v, %v; want denied", allowed, err)
	}
	if ttl := client.PTTL(ctx, l.Key("k")).Val(); ttl <= 0 || ttl > time.Second {
		t.Errorf("TTL %v, want within (0, 1 s]", ttl)
	}
	// At an explicit time the key lives until its TAT: one T of 1/3 s, in whole ms.
	if _, err := l.AcquireAt(ctx, "at", 1, 1000*time.Second); err != nil {
		t.Fatal(err)
	}
	if ttl := client.PTTL(ctx, l.Key("at")).Val(); ttl <= 300*ms || ttl > 334*ms {
		t.Errorf("TTL %v, want within (300 ms, 334 ms]", ttl)
	}
	if _, err := l.AcquireAt(ctx, "query", 0, time.Second); err != nil {
		t.Fatal(err)
	}
	if n := client.Exists(ctx, l.Key("query")).Val(); n != 0 {
		t.Errorf("a query created its key")
	}
}

// After SCRIPT FLUSH (as after a restart) the script is loaded again unasked, by a
// single call and by a batch.
func TestAFlushedScriptIsLoadedAgain(t *testing.T) {
	client := startServer(t).client(t)
	l := newLimiter(t, client, librate.Config{Algorithm: librate.GCRA, Limit: 2, Period: time.Second}, "flush:")
	flush := func() {
		t.Helper()
		if err := client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := l.AcquireAt(ctx, "k", 1, 0); err != nil || !d.Allowed || d.Remaining != 1 {
		t.Fatalf("first: %+v, %v", d, err)
	}
	flush()
	if d, err := l.AcquireAt(ctx, "k", 1, 0); err != nil || !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after the flush: %+v, %v", d, err)
	}
	flush()
	results, err := l.AcquireManyAt(ctx, []string{"k", "other", "other"}, 1, 0)
	want := []librateredis.Result{
		{Decision: librate.Decision{Limit: 2, RetryAfter: 500 * ms, ResetAfter: time.Second}},
		{Decision: librate.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 500 * ms}},
		{Decision: librate.Decision{Allowed: true, Limit: 2, ResetAfter: time.Second}},
	}
	if err != nil || fmt.Sprint(results) != fmt.Sprint(want) {
		t.Fatalf("a batch after the flush: %+v, %v\nwant %+v", results, err, want)
	}
}
