package librateredis_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
)

// The benchmarks pit librateredis against github.com/go-redis/redis_rate/v10 (GCRA in
// one Lua script over go-redis v9) on one redis-server the benchmark starts on
// 127.0.0.1, in the same run, through go-redis clients alike but for their prefixes.
//
// Every key is live and every call admitted, the path that writes: one unit a second
// per key with a burst of 10⁶, so each admission pushes the key's TAT a second ahead
// and it never expires during a run (10⁶ admissions a key would be needed for a
// denial). Calls go round benchKeys keys in turn; a goroutine's calls each take the next
// key (or the next batchSize keys), so concurrent calls decide different keys.
//
// Each call is timed on its own: besides ns/op (wall time over calls), each benchmark
// reports decisions/s, the median and 99th percentile of a call's latency (p50-ns,
// p99-ns: for a batch, the whole batch's), server-ns/call, the server's own time per
// command (INFO commandstats: EVALSHA and EVAL for the scripts, each one key's
// decision; PING for the floor), and client-cpu-ns/decision, the CPU time, user and
// system, of this process (the client: go-redis, the library, the benchmark's own
// timing) over the decisions.
var (
	benchConfig    = librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Second, Burst: 1_000_000}
	benchRateLimit = redis_rate.Limit{Rate: 1, Period: time.Second, Burst: 1_000_000}
)

const (
	benchKeys = 1000
	batchSize = 100
)

// A benchShape is how the calls are made: conns connections in the client's pool
// (PoolSize), as many goroutines calling, each call deciding batch keys.
type benchShape struct {
	name         string
	conns, batch int
}

var benchShapes = []benchShape{
	{"conn1/single", 1, 1},
	{"conn1/batch100", 1, batchSize},
	{"pool8/single", 8, 1},
	{"pool8/batch100", 8, batchSize},
}

// A benchContender decides one unit of each key a call gives it, through client, and
// says how many were admitted.
type benchContender struct {
	name string
	// batches is whether the contender takes part in the batch shapes; commands are
	// the server commands whose time it pays (lower case, as commandstats names them).
	batches  bool
	commands []string
	new      func(tb testing.TB, client *redis.Client) func(keys []string) (int, error)
}

var benchContenders = []benchContender{
	{
		// Allow for one key; AcquireMany, one pipeline, for a batch.
		name: "librate", batches: true, commands: []string{"evalsha", "eval"},
		new: func(tb testing.TB, client *redis.Client) func(keys []string) (int, error) {
			l := newLimiter(tb, client, benchConfig, "bench:")
			return func(keys []string) (int, error) {
				if len(keys) == 1 {
					allowed, err := l.Allow(ctx, keys[0])
					return btoi(allowed), err
				}
				results, err := l.AcquireMany(ctx, keys, 1)
				admitted := 0
				for _, r := range results {
					admitted += btoi(r.Decision.Allowed)
				}
				return admitted, err
			}
		},
	},
	{
		// AllowN(1) for each key in turn: redis_rate has no batch form, and AllowN cannot
		// join a go-redis pipeline (it reads the reply before the pipeline runs).
		name: "redis_rate", batches: true, commands: []string{"evalsha", "eval"},
		new: func(_ testing.TB, client *redis.Client) func(keys []string) (int, error) {
			l := redis_rate.NewLimiter(client)
			return func(keys []string) (int, error) {
				admitted := 0
				for _, key := range keys {
					res, err := l.AllowN(ctx, key, benchRateLimit, 1)
					if err != nil {
						return admitted, err
					}
					admitted += res.Allowed
				}
				return admitted, nil
			}
		},
	},
	{
		// The floor under any single call: a PING round trip, no decision.
		name: "ping", commands: []string{"ping"},
		new: func(_ testing.TB, client *redis.Client) func(keys []string) (int, error) {
			return func(keys []string) (int, error) { return len(keys), client.Ping(ctx).Err() }
		},
	},
}

// A benchCase is a contender ready to run in a shape: its client, its decide, and the
// keys of each call in turn, every key already decided once (the script loaded, the
// keys live). Its owner closes its client.
type benchCase struct {
	shape     benchShape
	contender benchContender
	client    *redis.Client
	decide    func(keys []string) (int, error)
	callKeys  [][]string
	// failure is why the last run failed, if it did.
	failure error
}

func newBenchCase(tb testing.TB, addr string, shape benchShape, contender benchContender) *benchCase {
	tb.Helper()
	client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: shape.conns, ContextTimeoutEnabled: true})
	c := &benchCase{shape: shape, contender: contender, client: client, decide: contender.new(tb, client)}
	for i := 0; i < benchKeys; i += shape.batch {
		keys := make([]string, shape.batch)
		for j := range keys {
			keys[j] = "user-" + strconv.Itoa(i+j)
		}
		c.callKeys = append(c.callKeys, keys)
	}
	for _, keys := range c.callKeys {
		if admitted, err := c.decide(keys); err != nil || admitted != len(keys) {
			client.Close()
			tb.Fatalf("%s, warming up: %d of %d admitted, %v", contender.name, admitted, len(keys), err)
		}
	}
	return c
}

// run makes b.N calls from shape.conns goroutines, timing each, and reports the
// metrics.
func (c *benchCase) run(b *testing.B) {
	if err := c.client.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	var mu sync.Mutex // guards failures and failure
	failures, failure := 0, error(nil)
	latencies := make([][]time.Duration, c.shape.conns)
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu := processCPU(b)
	started := time.Now()
	for g := range latencies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := make([]time.Duration, 0, b.N/len(latencies)+1)
			for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
				keys := c.callKeys[i%int64(len(c.callKeys))]
				called := time.Now()
				admitted, err := c.decide(keys)
				own = append(own, time.Since(called))
				if err != nil || admitted != len(keys) {
					mu.Lock()
					if failures++; failure == nil {
						failure = fmt.Errorf("%d of %d admitted, %v", admitted, len(keys), err)
					}
					mu.Unlock()
				}
			}
			latencies[g] = own
		}()
	}
	wg.Wait()
	elapsed := time.Since(started)
	cpu = processCPU(b) - cpu
	b.StopTimer()
	if failures > 0 {
		c.failure = fmt.Errorf("%d of %d calls failed or were denied; the first: %v", failures, b.N, failure)
		b.Fatal(c.failure)
	}
	all := slices.Concat(latencies...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N*c.shape.batch)/elapsed.Seconds(), "decisions/s")
	b.ReportMetric(float64(percentile(all, 50)), "p50-ns")
	b.ReportMetric(float64(percentile(all, 99)), "p99-ns")
	b.ReportMetric(c.serverNsPerCall(b), "server-ns/call")
	b.ReportMetric(float64(cpu)/float64(b.N*c.shape.batch), "client-cpu-ns/decision")
}

// processCPU is the CPU time this process has used so far, user and system.
func processCPU(tb testing.TB) time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// percentile is the p-th percentile of sorted, by nearest rank.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[max(0, (len(sorted)*p+99)/100-1)]
}

// serverNsPerCall is the server's time per call of the contender's commands since the
// last CONFIG RESETSTAT, from INFO commandstats
// (cmdstat_evalsha:calls=…,usec=…,usec_per_call=…,…).
func (c *benchCase) serverNsPerCall(tb testing.TB) float64 {
	info, err := c.client.Info(ctx, "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	var calls, usec float64
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !slices.Contains(c.contender.commands, strings.TrimPrefix(name, "cmdstat_")) {
			continue
		}
		for _, field := range strings.Split(stats, ",") {
			key, value, _ := strings.Cut(field, "=")
			v, _ := strconv.ParseFloat(value, 64)
			switch key {
			case "calls":
				calls += v
			case "usec":
				usec += v
			}
		}
	}
	if calls == 0 {
		return 0
	}
	return usec * 1000 / calls
}

// BenchmarkRedis: each shape, each contender, on one server. A case is set up when
// -bench selects it, on its first run.
func BenchmarkRedis(b *testing.B) {
	addr := startServer(b).addr
	for _, shape := range benchShapes {
		for _, contender := range benchContenders {
			if shape.batch > 1 && !contender.batches {
				continue
			}
			var c *benchCase
			b.Run(shape.name+"/"+contender.name, func(b *testing.B) {
				if c == nil {
					c = newBenchCase(b, addr, shape, contender)
				}
				c.run(b)
			})
			if c != nil {
				c.client.Close()
			}
		}
	}
}
