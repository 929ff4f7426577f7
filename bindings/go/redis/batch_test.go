package librateredis_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

// A batch decides each key as single calls in the same order do, a key given twice
// twice: random batches (the empty key and repeats included) at times that jump both
// ways, against single calls on keys of their own, for every algorithm with a script.
func TestBatchesDecideAsSingleCalls(t *testing.T) {
	client := startServer(t).client(t)
	for _, algorithm := range algorithms {
		t.Run(algorithm.String(), func(t *testing.T) {
			// An hour's period: no key expires by the server's clock during the test.
			config := librate.Config{Algorithm: algorithm, Limit: 5, Period: time.Hour}
			batched := newLimiter(t, client, config, "batch:"+algorithm.String()+":")
			if batched == nil {
				return
			}
			single := newLimiter(t, client, config, "single:"+algorithm.String()+":")
			rng := rand.New(rand.NewPCG(17, uint64(algorithm)))
			names := []string{"", "a", "b", "c"}
			now := 10 * time.Hour
			var decided [2]int // denials, admissions
			for round := range 200 {
				now = now - 20*time.Minute + time.Duration(rng.Int64N(int64(50*time.Minute)))
				keys := make([]string, rng.IntN(6))
				for i := range keys {
					keys[i] = names[rng.IntN(len(names))]
				}
				n := rng.IntN(3)
				results, err := batched.AcquireManyAt(ctx, keys, n, now)
				if err != nil || len(results) != len(keys) {
					t.Fatalf("round %d: %d results, %v", round, len(results), err)
				}
				for i, key := range keys {
					want, err := single.AcquireAt(ctx, key, n, now)
					if err != nil || results[i] != (librateredis.Result{Decision: want}) {
						t.Fatalf("round %d, key %d %q: %+v\nwant %+v, %v", round, i, key, results[i], want, err)
					}
					if n > 0 {
						decided[btoi(want.Allowed)]++
					}
				}
			}
			t.Logf("%d denials, %d admissions", decided[0], decided[1])
			if decided[0] < 50 || decided[1] < 50 {
				t.Errorf("%d denials and %d admissions: too few of one to compare", decided[0], decided[1])
			}
		})
	}
}

// A batch on the server's clock; the refusals of a whole batch; and one key of a batch
// failing while the others are decided.
func TestBatchEdges(t *testing.T) {
	client := startServer(t).client(t)
	l := newLimiter(t, client, gcra2, "edges:")
	results, err := l.AcquireMany(ctx, []string{"a", "a", "a"}, 1)
	if err != nil || len(results) != 3 || !results[0].Decision.Allowed || !results[1].Decision.Allowed ||
		results[2].Decision.Allowed || results[2].Decision.RetryAfter <= 0 || results[2].Decision.RetryAfter > 500*ms {
		t.Errorf("three units of a burst of 2 by the server's clock: %+v, %v", results, err)
	}
	if results, err := l.AcquireManyAt(ctx, nil, 1, 0); err != nil || len(results) != 0 {
		t.Errorf("no keys: %+v, %v", results, err)
	}
	if results, err := l.AcquireManyAt(ctx, []string{"a"}, 3, 0); !errors.Is(err, librate.ErrInsufficientCapacity) || results != nil {
		t.Errorf("n above the burst: %+v, %v", results, err)
	}
	client.RPush(ctx, l.Key("list"), "x")
	results, err = l.AcquireManyAt(ctx, []string{"b", "list", "c"}, 1, 0)
	admitted := librate.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 500 * ms}
	var failure *librateredis.Error
	if len(results) != 3 || results[0] != (librateredis.Result{Decision: admitted}) ||
		results[2] != (librateredis.Result{Decision: admitted}) || !errors.As(results[1].Err, &failure) ||
		failure.Key != l.Key("list") || results[1].Decision != (librate.Decision{}) || err != results[1].Err {
		t.Errorf("a list among the keys: %s, %v", fmt.Sprint(results), err)
	}
	// One script call for the whole batch (the script is loaded by now).
	client.ConfigResetStat(ctx)
	if _, err := l.AcquireManyAt(ctx, []string{"d", "e", "list", "f", "g"}, 1, 0); err == nil {
		t.Errorf("a list among the keys: no error")
	}
	if stats := client.Info(ctx, "commandstats").Val(); !strings.Contains(stats, "cmdstat_evalsha:calls=1,") {
		t.Errorf("a batch of 5 keys is not one script call: %s", stats)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
