package librate_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// One request per second with bursts of two, on a caller's clock: A and B pass at
// once, C must wait a second, D a second later passes.
func ExampleNewGCRA() {
	limiter, err := librate.NewGCRA(1, time.Second, 2)
	if err != nil {
		panic(err)
	}
	defer limiter.Close()
	for _, request := range []struct {
		name string
		at   time.Duration
	}{{"A", 0}, {"B", 0}, {"C", 0}, {"D", time.Second}} {
		d, _ := limiter.AcquireAt(1, request.at)
		fmt.Printf("%s at %v: allowed=%v remaining=%d retry after %v\n",
			request.name, request.at, d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	// A at 0s: allowed=true remaining=1 retry after 0s
	// B at 0s: allowed=true remaining=0 retry after 0s
	// C at 0s: allowed=false remaining=0 retry after 1s
	// D at 1s: allowed=true remaining=0 retry after 0s
}

// Two limits at once, 2 a second and 3 a minute, on a caller's clock: a request is
// admitted only if both admit it, and a denial names the rule and takes nothing from the
// other.
func ExampleNewPolicy() {
	policy, err := librate.NewPolicy(
		librate.Config{Algorithm: librate.GCRA, Limit: 2, Period: time.Second},        // 2 a second
		librate.Config{Algorithm: librate.FixedWindow, Limit: 3, Period: time.Minute}, // 3 a minute
	)
	if err != nil {
		panic(err)
	}
	defer policy.Close()
	for _, at := range []time.Duration{0, 0, 0, time.Second, 2 * time.Second} {
		d, _ := policy.AcquireAt(1, at)
		fmt.Printf("at %v: allowed=%v denied by %d, retry after %v; per minute %d left\n",
			at, d.Allowed, d.DeniedBy, d.RetryAfter, d.Rules[1].Remaining)
	}
	// Output:
	// at 0s: allowed=true denied by -1, retry after 0s; per minute 2 left
	// at 0s: allowed=true denied by -1, retry after 0s; per minute 1 left
	// at 0s: allowed=false denied by 0, retry after 500ms; per minute 1 left
	// at 1s: allowed=true denied by -1, retry after 0s; per minute 0 left
	// at 2s: allowed=false denied by 1, retry after 58s; per minute 0 left
}

// Allow on librate's clock is the fast path for "may I?"; AllowN takes a time and a
// count, as x/time/rate's AllowN does.
func ExampleLimiter_Allow() {
	limiter, err := librate.NewGCRA(100, time.Second, 0)
	if err != nil {
		panic(err)
	}
	defer limiter.Close()
	if limiter.Allow() {
		fmt.Println("handle the request")
	}
	if limiter.AllowN(time.Now(), 10) {
		fmt.Println("handle a batch of 10")
	}
	// Output:
	// handle the request
	// handle a batch of 10
}

// Reserve as a traffic shaper, in x/time/rate's shape: ten units a second, no bursts,
// each caller told how long to wait before acting.
func ExampleLimiter_ReserveN() {
	shaper, err := librate.NewGCRA(10, time.Second, 1)
	if err != nil {
		panic(err)
	}
	defer shaper.Close()
	now := time.Now()
	for range 3 {
		r := shaper.ReserveN(now, 1)
		if !r.OK() {
			panic(r.Err())
		}
		fmt.Println("wait", r.DelayFrom(now))
	}
	// Output:
	// wait 0s
	// wait 100ms
	// wait 200ms
}

// ReserveAt on a timeline of your own, counted from 0: a reserve willing to wait at
// most maxWait (here a second), which takes nothing past it.
func ExampleLimiter_ReserveAt() {
	shaper, err := librate.NewGCRA(10, time.Second, 1)
	if err != nil {
		panic(err)
	}
	defer shaper.Close()
	for range 3 {
		d, _ := shaper.ReserveAt(1, 0, time.Second)
		fmt.Println("wait", d.Wait)
	}
	// Output:
	// wait 0s
	// wait 100ms
	// wait 200ms
}

// Wait blocks until admitted, and gives up at once when the deadline is too near.
func ExampleLimiter_Wait() {
	limiter, err := librate.NewGCRA(1, time.Hour, 1)
	if err != nil {
		panic(err)
	}
	defer limiter.Close()
	fmt.Println(limiter.Wait(context.Background()))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = limiter.WaitN(ctx, 1) // the next unit is an hour away
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	// Output:
	// <nil>
	// true
}

// Errors are values of Error, matched with errors.Is.
func ExampleError() {
	_, err := librate.NewGCRA(0, time.Second, 0)
	fmt.Println(errors.Is(err, librate.ErrInvalidConfig))

	limiter, _ := librate.NewGCRA(5, time.Second, 0)
	defer limiter.Close()
	_, err = limiter.Acquire(6)
	var e librate.Error
	fmt.Println(errors.As(err, &e), e.Code)
	// Output:
	// true
	// true -3
}

// Middleware in front of a handler; a fake clock keeps the output fixed.
func ExampleMiddleware() {
	limiter, err := librate.NewGCRA(2, time.Minute, 0)
	if err != nil {
		panic(err)
	}
	defer limiter.Close()
	start := time.Now()
	m, err := librate.NewMiddleware(limiter, librate.MiddlewareOptions{
		Now: func() time.Time { return start },
	})
	if err != nil {
		panic(err)
	}
	handler := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	}))
	var rec *httptest.ResponseRecorder
	for range 3 {
		rec = httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		fmt.Printf("%d RateLimit: %s Retry-After: %q\n",
			rec.Code, rec.Header().Get("RateLimit"), rec.Header().Get("Retry-After"))
	}
	fmt.Println("RateLimit-Policy:", rec.Header().Get("RateLimit-Policy"))
	// Output:
	// 200 RateLimit: "default";r=1;t=30 Retry-After: ""
	// 200 RateLimit: "default";r=0;t=60 Retry-After: ""
	// 429 RateLimit: "default";r=0;t=30 Retry-After: "30"
	// RateLimit-Policy: "default";q=2;w=60
}

// A policy of two rules, named in the fields, in front of a handler: RateLimit-Policy
// lists both, RateLimit reports the one closest to its limit, or the one that denied. A
// fake clock keeps the output fixed.
func ExampleMiddleware_policy() {
	policy, err := librate.NewPolicy(
		librate.Config{Algorithm: librate.GCRA, Limit: 2, Period: time.Second},           // 2 a second
		librate.Config{Algorithm: librate.FixedWindow, Limit: 3, Period: 24 * time.Hour}, // 3 a day
	)
	if err != nil {
		panic(err)
	}
	defer policy.Close()
	// Times count from 0 on librate's timeline, where the daily window starts.
	var now time.Duration
	m, err := librate.NewMiddleware(policy, librate.MiddlewareOptions{
		RuleNames: []string{"burst", "daily"},
		Now:       func() time.Time { return librate.TimeAt(now) },
	})
	if err != nil {
		panic(err)
	}
	handler := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	}))
	var rec *httptest.ResponseRecorder
	for _, now = range []time.Duration{0, 0, 0, time.Second, 2 * time.Second} {
		rec = httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		fmt.Printf("at %v: %d RateLimit: %s Retry-After: %q\n",
			now, rec.Code, rec.Header().Get("RateLimit"), rec.Header().Get("Retry-After"))
	}
	fmt.Println("RateLimit-Policy:", rec.Header().Get("RateLimit-Policy"))
	// Output:
	// at 0s: 200 RateLimit: "burst";r=1;t=1 Retry-After: ""
	// at 0s: 200 RateLimit: "burst";r=0;t=1 Retry-After: ""
	// at 0s: 429 RateLimit: "burst";r=0;t=1 Retry-After: "1"
	// at 1s: 200 RateLimit: "daily";r=0;t=86399 Retry-After: ""
	// at 2s: 429 RateLimit: "daily";r=0;t=86398 Retry-After: "86398"
	// RateLimit-Policy: "burst";q=2;w=1, "daily";q=3;w=86400
}

// One site's limits as one keyed policy, with a cost per rule for each route: a post
// costs the client's post rule and everybody's rule, a like the client's like rule and
// everybody's. RateLimit reports the binding rule of those the route costs: the like
// reports the like rule, not the spent post rule it does not cost.
func ExampleMiddleware_costs() {
	site, err := librate.NewKeyedPolicy(100_000,
		librate.PerKeyRule(librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Minute}),    // per client: 1 post a minute
		librate.PerKeyRule(librate.Config{Algorithm: librate.GCRA, Limit: 5, Period: time.Minute}),    // and 5 likes a minute
		librate.GlobalRule(librate.Config{Algorithm: librate.GCRA, Limit: 1000, Period: time.Second}), // everybody: 1,000 a second
	)
	if err != nil {
		panic(err)
	}
	defer site.Close()
	start := time.Now()
	now := func() time.Time { return start }
	names := []string{"posts", "likes", "all"}
	posts, err := librate.NewMiddleware(site, librate.MiddlewareOptions{RuleNames: names, Costs: []int{1, 0, 1}, Now: now})
	if err != nil {
		panic(err)
	}
	likes, err := librate.NewMiddleware(site, librate.MiddlewareOptions{RuleNames: names, Costs: []int{0, 1, 1}, Now: now})
	if err != nil {
		panic(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	mux := http.NewServeMux()
	mux.Handle("POST /posts", posts.Wrap(hello))
	mux.Handle("POST /likes", likes.Wrap(hello))
	for _, path := range []string{"/posts", "/likes", "/posts"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, nil))
		fmt.Println(path, rec.Code, rec.Header().Get("RateLimit"))
	}
	// Output:
	// /posts 200 "posts";r=0;t=60
	// /likes 200 "likes";r=4;t=12
	// /posts 429 "posts";r=0;t=60
}

// The README's first Go snippet (scripts/check-docs.py checks that each of its lines is
// here): one limit for an API, and one per client IP.
func Example_firstScreen() {
	api, err := librate.NewGCRA(100, time.Second, 0) // 100 per second
	if err != nil {
		log.Fatal(err) // a *librate.ConfigError names the field and its bound
	}
	ok := api.Allow() // false: answer 429

	perIP, err := librate.NewKeyed(librate.Config{Algorithm: librate.SlidingWindow, Limit: 10, Period: time.Minute}, 100_000)
	d, err := perIP.Acquire("203.0.113.7", 1) // 10 a minute for each IP: d.Allowed, d.RetryAfter
	fmt.Println(ok, d.Allowed, d.Remaining, err)
	api.Close()
	perIP.Close()
	// Output:
	// true true 9 <nil>
}

// Two handles on one keyed file, as two worker processes would open it: each key's
// limit holds across them (here one request per 2 s per IP, at explicit times).
func ExampleOpenKeyed() {
	dir, err := os.MkdirTemp("", "librate-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "per-ip") // in production, say /dev/shm/myservice-per-ip
	config := librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: 2 * time.Second}
	worker1, err := librate.OpenKeyed(path, config, 10_000)
	if err != nil {
		panic(err)
	}
	defer worker1.Close()
	worker2, err := librate.OpenKeyed(path, config, 10_000) // in another process
	if err != nil {
		panic(err)
	}
	defer worker2.Close()

	d, _ := worker1.AcquireAt("203.0.113.7", 1, 0)
	fmt.Println("worker 1, 203.0.113.7 at 0s:", d.Allowed)
	d, _ = worker2.AcquireAt("203.0.113.7", 1, time.Second)
	fmt.Println("worker 2, 203.0.113.7 at 1s:", d.Allowed, "retry after", d.RetryAfter)
	d, _ = worker2.AcquireAt("198.51.100.2", 1, time.Second)
	fmt.Println("worker 2, 198.51.100.2 at 1s:", d.Allowed)

	_, err = librate.OpenKeyed(path, config, 500) // another capacity: another table
	fmt.Println(errors.Is(err, librate.ErrIncompatible))
	// Output:
	// worker 1, 203.0.113.7 at 0s: true
	// worker 2, 203.0.113.7 at 1s: false retry after 1s
	// worker 2, 198.51.100.2 at 1s: true
	// true
}

// A holder of a share of 1,000 a second across hosts, without I/O, on a caller's clock:
// a client sends the renewal's Args to the lease script (Script) with the rule's
// Redis key, and applies its answer; package librateredis does both in a goroutine.
func ExampleLeaseHolder() {
	rule := librate.LeaseRule{Config: librate.Config{Algorithm: librate.GCRA, Limit: 1000, Period: time.Second}, Lease: 2 * time.Second}
	holder, err := librate.NewLeaseHolder(rule, librate.LeaseOptions{Name: "host-a"})
	if err != nil {
		panic(err)
	}
	defer holder.Close()
	renewal, _ := holder.RenewalAt(0)
	fmt.Println("ARGV:", renewal.Args)
	// The script's answer: half the rate, bursts of 500, for 2 s.
	state, _ := holder.ApplyAt(renewal, "granted", [librate.LeaseFields]uint64{500_000, 500, 2_000_000, 0, 500_000, 500, 1, 0}, 0)
	fmt.Println(state)
	// A share starts empty and fills at its rate: one unit every 2 ms.
	d, _ := holder.AcquireAt(1, 2*time.Millisecond)
	fmt.Println("allowed at 2ms:", d.Allowed)
	// Unrenewed, the lease ends a thousandth of it before Redis's end: 1.998 s.
	fmt.Println("at 1.998s:", holder.StateAt(1998*time.Millisecond))
	// Output:
	// ARGV: [renew 0 1000000 1000 2000000 host-a 1000000]
	// Leased
	// allowed at 2ms: true
	// at 1.998s: InFallback
}

// A holder of a keyed rule's hot keys (100 a second per key), without I/O, on a
// caller's clock: a request for a key not leased here is the caller's to decide in Redis,
// with the holder's call at the key's Redis key; a key asked for 4 units between two
// rounds is leased at the next round, and decided in process once granted a share.
// Package librateredis does all of it over go-redis (KeyedLeasedLimiter).
func ExampleKeyedLeaseHolder() {
	rule := librate.LeaseRule{Config: librate.Config{Algorithm: librate.GCRA, Limit: 100, Period: time.Second}, Lease: 2 * time.Second}
	holder, err := librate.NewKeyedLeaseHolder(rule, 4, 1000, librate.LeaseOptions{Name: "host-a"})
	if err != nil {
		panic(err)
	}
	defer holder.Close()
	_, decided, _ := holder.AcquireAt("user:7", 5, 0)
	call, _ := holder.InRedisAt(5, 0)
	fmt.Println("decided here:", decided, "ARGV:", call.Args)
	// The script's answer: admitted, 95 of 100 left, full again in 50 ms.
	d, _ := holder.Decision(5, [librate.KeyedLeaseFields]int64{1, 100, 95, 0, 50_000})
	fmt.Println("allowed:", d.Allowed, "remaining:", d.Remaining)
	round, _ := holder.RenewalsAt(0)
	defer round.Close()
	fmt.Println(round.Renewals[0].Key, "ARGV:", round.Renewals[0].Renewal.Args)
	// The script's answer: the whole rule, for 2 s.
	state, _ := round.ApplyAt(0, "granted", [librate.LeaseFields]uint64{1_000_000, 100, 2_000_000, 1, 1_000_000, 100, 1, 0}, 0)
	fmt.Println(state)
	// A share starts empty and fills at its rate: one unit every 10 ms.
	d, decided, _ = holder.AcquireAt("user:7", 1, 10*time.Millisecond)
	fmt.Println("decided here:", decided, "allowed:", d.Allowed, "remaining:", d.Remaining)
	// Output:
	// decided here: false ARGV: [acquire 0 10000000 100 2000000  5]
	// allowed: true remaining: 95
	// user:7 ARGV: [renew 0 10000000 100 2000000 host-a 1000000]
	// Leased
	// decided here: true allowed: true remaining: 0
}
