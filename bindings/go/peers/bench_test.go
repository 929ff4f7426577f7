package peers_test

import (
	"github.com/librate/librate/bindings/go/internal/xorshift"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	librate "github.com/librate/librate/bindings/go"
	"github.com/librate/librate/bindings/go/peers/internal/floor"
)

// The benchmarks pit librate against golang.org/x/time/rate in the same run, each
// limiter in one of three states that make every call in a run come out the same:
//
//   - busy: a unit per microsecond, burst 10⁹. Every call is admitted and pushes the
//     limiter further ahead of the clock, as under load near the limit. librate
//     decides on the coarse clock here.
//   - idle: a unit per nanosecond, burst 10⁹. Every call is admitted with the bucket
//     full; librate must read the precise clock.
//   - deny: one per hour, burst 1, after the first call: every call is denied (the
//     path that matters when a client floods).
var benchStates = []struct {
	name    string
	config  librate.Config
	xrate   func() *rate.Limiter
	allowed bool
}{
	{"busy", librate.Config{Limit: 1e6, Period: time.Second, Burst: 1e9},
		func() *rate.Limiter { return rate.NewLimiter(1e6, 1e9) }, true},
	{"idle", librate.Config{Limit: 1e9, Period: time.Second, Burst: 1e9},
		func() *rate.Limiter { return rate.NewLimiter(1e9, 1e9) }, true},
	{"deny", librate.Config{Limit: 1, Period: time.Hour, Burst: 1},
		func() *rate.Limiter { return rate.NewLimiter(rate.Every(time.Hour), 1) }, false},
}

// allowContenders are the limiters compared in one state, as their Allow, with the
// first call (which a deny state admits) made.
func allowContenders(b *testing.B, config librate.Config, xrate func() *rate.Limiter) []struct {
	name  string
	allow func() bool
} {
	librateAllow, xrateAllow := mustNew(b, config).Allow, xrate().Allow
	librateAllow()
	xrateAllow()
	return []struct {
		name  string
		allow func() bool
	}{{"librate", librateAllow}, {"xrate", xrateAllow}}
}

// BenchmarkAllow: one goroutine calling Allow.
func BenchmarkAllow(b *testing.B) {
	for _, state := range benchStates {
		for _, c := range allowContenders(b, state.config, state.xrate) {
			b.Run(state.name+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					if c.allow() != state.allowed {
						b.Fatalf("allowed = %v in state %s", !state.allowed, state.name)
					}
				}
			})
		}
	}
}

// BenchmarkAllowN: one goroutine calling AllowN(time.Now(), 1), x/time/rate's shape,
// which both read Go's clock for: librate maps the time onto its own timeline and
// decides on the precise path.
func BenchmarkAllowN(b *testing.B) {
	for _, state := range benchStates {
		librateLimiter, xrateLimiter := mustNew(b, state.config), state.xrate()
		for _, c := range []struct {
			name   string
			allowN func(time.Time, int) bool
		}{{"librate", librateLimiter.AllowN}, {"xrate", xrateLimiter.AllowN}} {
			c.allowN(time.Now(), 1) // the first call, which a deny state admits
			b.Run(state.name+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					if c.allowN(time.Now(), 1) != state.allowed {
						b.Fatalf("allowed = %v in state %s", !state.allowed, state.name)
					}
				}
			})
		}
	}
}

// BenchmarkAllowParallel: GOMAXPROCS goroutines calling Allow on one limiter.
func BenchmarkAllowParallel(b *testing.B) {
	for _, state := range benchStates {
		for _, c := range allowContenders(b, state.config, state.xrate) {
			b.Run(state.name+"/"+c.name, func(b *testing.B) {
				var wrong atomic.Int64
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if c.allow() != state.allowed {
							wrong.Add(1)
						}
					}
				})
				if wrong.Load() > 0 {
					b.Fatalf("%d calls came out allowed = %v in state %s", wrong.Load(), !state.allowed, state.name)
				}
			})
		}
	}
}

// BenchmarkAcquire: one goroutine asking for the full decision (always the precise
// clock, and a struct filled across the boundary) of a busy limiter, against
// x/time/rate's Reserve, which also returns one.
func BenchmarkAcquire(b *testing.B) {
	busy := benchStates[0]
	l := mustNew(b, busy.config)
	b.Run("librate", func(b *testing.B) {
		for b.Loop() {
			if d, err := l.Acquire(1); err != nil || !d.Allowed {
				b.Fatal(d, err)
			}
		}
	})
	x := busy.xrate()
	b.Run("xrate", func(b *testing.B) {
		for b.Loop() {
			if r := x.Reserve(); !r.OK() || r.Delay() != 0 {
				b.Fatal("denied")
			}
		}
	})
}

// The keyed benchmarks keep every key busy: a unit a second per key with a burst of
// 10⁹, so every call is admitted and every key stays live (its TAT ahead of the
// clock): a table full of live keys, its worst case.
var keyedBenchConfig = librate.Config{Limit: 1, Period: time.Second, Burst: 1e9}

func newKeyedXRate() *rate.Limiter { return rate.NewLimiter(1, 1e9) }

// A keyed contender builds a limiter for the given number of keys and returns its
// Allow for one key. Keys are []byte, built afresh for each call as a server builds
// them from a request, so the benchmark measures the limiter rather than cache misses
// on a table of prepared keys.
type keyedContender struct {
	name string
	new  func(b *testing.B, keys int) func(key []byte) bool
}

// keyedContenders: librate's Keyed, and x/time/rate as its documentation suggests for
// per-key limits, a map of limiters behind a mutex.
var keyedContenders = []keyedContender{{
	name: "librate",
	new: func(b *testing.B, keys int) func(key []byte) bool {
		k, err := librate.NewKeyed(keyedBenchConfig, keys)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { k.Close() })
		return k.AllowBytes
	},
}, {
	name: "xrate",
	new: func(_ *testing.B, keys int) func(key []byte) bool {
		var mu sync.Mutex
		limiters := make(map[string]*rate.Limiter, keys)
		return func(key []byte) bool {
			mu.Lock()
			l, ok := limiters[string(key)] // no allocation for a lookup
			if !ok {
				l = newKeyedXRate()
				limiters[string(key)] = l
			}
			mu.Unlock()
			return l.Allow()
		}
	},
}}

// benchKey writes "user-<i>" into buf.
func benchKey(buf []byte, i uint64) []byte {
	return strconv.AppendUint(append(buf[:0], "user-"...), i, 10)
}

// BenchmarkKeyed: Allow on pseudo-random keys among 1,000 or 1,000,000, on one
// goroutine and on GOMAXPROCS goroutines. Every key is inserted before timing starts.
func BenchmarkKeyed(b *testing.B) {
	for _, keys := range []uint64{1_000, 1_000_000} {
		for _, c := range keyedContenders {
			allow := c.new(b, int(keys))
			var buf [32]byte
			for i := range keys {
				allow(benchKey(buf[:], i))
			}
			name := strconv.FormatUint(keys, 10) + "/" + c.name
			b.Run(name, func(b *testing.B) {
				x := xorshift.Stream(0x9e3779b97f4a7c15)
				var buf [32]byte
				for b.Loop() {
					if !allow(benchKey(buf[:], x.Next(keys))) {
						b.Fatal("denied on the admitting path")
					}
				}
			})
			b.Run(name+"/parallel", func(b *testing.B) {
				var seed atomic.Uint64
				b.RunParallel(func(pb *testing.PB) {
					x := xorshift.Stream(0x9e3779b97f4a7c15 + seed.Add(0x632be59bd9b4e019))
					var buf [32]byte
					for pb.Next() {
						if !allow(benchKey(buf[:], x.Next(keys))) {
							b.Error("denied on the admitting path")
							return
						}
					}
				})
			})
		}
	}
}

// BenchmarkCgoFloor: the cost of one cgo crossing with no work behind it (Allow on a
// nil Limiter: librate checks the NULL handle and returns), the floor under every
// librate call from Go.
func BenchmarkCgoFloor(b *testing.B) {
	var closed *librate.Limiter
	for b.Loop() {
		if closed.Allow() {
			b.Fatal("a nil limiter admitted")
		}
	}
}

// BenchmarkContendedFloor: GOMAXPROCS goroutines each reading the clock and swapping one
// shared word through cgo, as an idle limiter's admission does, with nothing else: the
// floor under BenchmarkAllowParallel/idle, which no exact limiter of one word beats.
func BenchmarkContendedFloor(b *testing.B) {
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			floor.Swap()
		}
	})
}

// BenchmarkKeyedMany: batches of 100 pseudo-random keys among 1,000 or 1,000,000, timed
// per key (ns/op is per key): librate's AllowMany, one cgo crossing per batch, against
// x/time/rate's mutex-guarded map deciding the same keys one by one. Every key is
// inserted before timing starts, and every decision admits.
func BenchmarkKeyedMany(b *testing.B) {
	const batch = 100
	for _, keys := range []int{1_000, 1_000_000} {
		names := make([]string, keys)
		for i := range names {
			names[i] = "user-" + strconv.Itoa(i)
		}
		x := rand.New(rand.NewPCG(0x9e3779b97f4a7c15, 0))
		order := make([]string, 1<<16)
		orderBytes := make([][]byte, len(order))
		for i := range order {
			order[i] = names[x.IntN(keys)]
			orderBytes[i] = []byte(order[i])
		}
		table, err := librate.NewKeyed(keyedBenchConfig, keys)
		if err != nil {
			b.Fatal(err)
		}
		defer table.Close()
		if _, err := table.AllowMany(nil, names, 1); err != nil {
			b.Fatal(err)
		}
		xrate := keyedContenders[1].new(b, keys)
		for _, name := range orderBytes {
			xrate(name)
		}
		run := func(name string, decide func(start int) bool) {
			b.Run(strconv.Itoa(keys)+"/"+name, func(b *testing.B) {
				start := 0
				for i := 0; i < b.N; i += batch {
					if start+batch > len(order) {
						start = 0
					}
					if !decide(start) {
						b.Fatal("denied on the admitting path")
					}
					start += batch
				}
			})
		}
		var out []bool
		run("librate", func(start int) bool {
			out, _ = table.AllowMany(out[:0], order[start:start+batch], 1)
			return !slices.Contains(out, false) && len(out) == batch
		})
		run("xrate", func(start int) bool {
			admitted := true
			for _, key := range orderBytes[start : start+batch] {
				admitted = xrate(key) && admitted
			}
			return admitted
		})
	}
}

// mustNew creates a Limiter of config, closed when b ends, or fails b.
func mustNew(b testing.TB, config librate.Config) *librate.Limiter {
	b.Helper()
	l, err := librate.New(config)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}
