package librate_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	librate "librate/bindings/go"
)

// The benchmarks pit librate against golang.org/x/time/rate in the same run, on a rate
// high enough that every call is admitted (the path that writes): 10⁹ per second with
// a burst of 10⁹, for both.
var benchConfig = librate.Config{Algorithm: librate.GCRA, Limit: 1e9, Period: time.Second, Burst: 1e9}

func newXRate() *rate.Limiter { return rate.NewLimiter(rate.Limit(1e9), 1e9) }

// allowContenders are the direct limiters compared, as their Allow.
func allowContenders(b *testing.B) []struct {
	name  string
	allow func() bool
} {
	l := mustGCRA(b, benchConfig.Limit, benchConfig.Period, benchConfig.Burst)
	return []struct {
		name  string
		allow func() bool
	}{{"librate", l.Allow}, {"xrate", newXRate().Allow}}
}

// BenchmarkAllow: one goroutine calling Allow.
func BenchmarkAllow(b *testing.B) {
	for _, c := range allowContenders(b) {
		b.Run(c.name, func(b *testing.B) {
			denied := 0
			for b.Loop() {
				if !c.allow() {
					denied++
				}
			}
			if denied > 0 {
				b.Fatalf("%d denials on the admitting path", denied)
			}
		})
	}
}

// BenchmarkAllowParallel: GOMAXPROCS goroutines calling Allow on one limiter.
func BenchmarkAllowParallel(b *testing.B) {
	for _, c := range allowContenders(b) {
		b.Run(c.name, func(b *testing.B) {
			var denied atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if !c.allow() {
						denied.Add(1)
					}
				}
			})
			if denied.Load() > 0 {
				b.Fatalf("%d denials on the admitting path", denied.Load())
			}
		})
	}
}

// BenchmarkAcquire: one goroutine asking for the full decision (the precise clock and
// one more struct crossing the boundary), against x/time/rate's Reserve, which also
// returns a decision.
func BenchmarkAcquire(b *testing.B) {
	l := mustGCRA(b, benchConfig.Limit, benchConfig.Period, benchConfig.Burst)
	b.Run("librate", func(b *testing.B) {
		for b.Loop() {
			if d, err := l.Acquire(1); err != nil || !d.Allowed {
				b.Fatal(d, err)
			}
		}
	})
	x := newXRate()
	b.Run("xrate", func(b *testing.B) {
		for b.Loop() {
			if r := x.Reserve(); !r.OK() || r.Delay() != 0 {
				b.Fatal("denied")
			}
		}
	})
}

// A keyed contender builds a limiter for the given number of keys and returns its
// Allow for one key.
type keyedContender struct {
	name string
	new  func(b *testing.B, keys int) func(key string) bool
}

// keyedContenders: x/time/rate as its documentation suggests for per-key limits, a
// map of limiters behind a mutex; keyed_test.go adds librate's Keyed.
var keyedContenders = []keyedContender{{
	name: "xrate",
	new: func(_ *testing.B, keys int) func(key string) bool {
		var mu sync.Mutex
		limiters := make(map[string]*rate.Limiter, keys)
		return func(key string) bool {
			mu.Lock()
			l, ok := limiters[key]
			if !ok {
				l = newXRate()
				limiters[key] = l
			}
			mu.Unlock()
			return l.Allow()
		}
	},
}}

// benchKeys are "user-0" … "user-999999", made once.
var benchKeys = sync.OnceValue(func() []string {
	keys := make([]string, 1_000_000)
	for i := range keys {
		keys[i] = "user-" + strconv.Itoa(i)
	}
	return keys
})

// BenchmarkKeyed: Allow on random keys among 1,000 or 1,000,000, one goroutine and
// GOMAXPROCS goroutines. Every key is inserted before timing starts.
func BenchmarkKeyed(b *testing.B) {
	for _, keys := range []int{1_000, 1_000_000} {
		names := benchKeys()[:keys]
		for _, c := range keyedContenders {
			allow := c.new(b, keys)
			for _, key := range names {
				allow(key)
			}
			b.Run(strconv.Itoa(keys)+"/"+c.name, func(b *testing.B) {
				x := xorshift(0x9e3779b97f4a7c15)
				for b.Loop() {
					if !allow(names[x.next(uint64(keys))]) {
						b.Fatal("denied on the admitting path")
					}
				}
			})
			b.Run(strconv.Itoa(keys)+"/"+c.name+"/parallel", func(b *testing.B) {
				var seed atomic.Uint64
				b.RunParallel(func(pb *testing.PB) {
					x := xorshift(0x9e3779b97f4a7c15 + seed.Add(0x632be59bd9b4e019))
					for pb.Next() {
						if !allow(names[x.next(uint64(keys))]) {
							b.Error("denied on the admitting path")
							return
						}
					}
				})
			})
		}
	}
}
