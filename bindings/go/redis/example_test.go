package librateredis_test

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

// Each user may make 10 requests a second, in bursts of up to 20, whichever host serves
// them: every host runs this with the same prefix against the same Redis. When Redis
// cannot decide (down, slow, an error), the handler chooses: here it fails closed.
func Example() {
	// ContextTimeoutEnabled: each request's deadline bounds its wait for Redis.
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	config := librate.Config{Algorithm: librate.GCRA, Limit: 10, Period: time.Second, Burst: 20}
	limiter, err := librateredis.New(client, config, "api:")
	if err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		allowed, err := limiter.Allow(r.Context(), r.Header.Get("X-User"))
		if err != nil {
			// Fail closed: refuse. To fail open, log and serve the request instead.
			slog.Error("rate limiter unavailable", "error", err)
			http.Error(w, "try again later", http.StatusServiceUnavailable)
			return
		}
		if !allowed {
			http.Error(w, "too many requests", http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, "hello\n")
	})
}

// The net/http middleware over Redis: one limit per client address for every host, by
// the Redis server's clock, with the RateLimit fields and 429s of librate.Middleware.
// FailOpen serves requests unlimited while Redis cannot decide; each failure is logged.
// A Limiter is a librate.RequestLimiter, as the in-process limiters are.
func ExampleLimiter_LimitRequest() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	perClient, err := librateredis.New(client, librate.Config{Limit: 100, Period: time.Minute}, "http:")
	if err != nil {
		log.Fatal(err)
	}
	m, err := librate.NewMiddleware(perClient, librate.MiddlewareOptions{FailOpen: true})
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(http.ListenAndServe(":8080", m.Wrap(http.DefaultServeMux)))
}

// Each customer may make 10 requests a second and 1,000 a day, whichever host serves
// them: one script call decides both rules at once, all or nothing.
func ExamplePolicy() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	rules := []librate.Config{
		{Algorithm: librate.GCRA, Limit: 10, Period: time.Second},
		{Algorithm: librate.FixedWindow, Limit: 1000, Period: 24 * time.Hour},
	}
	policy, err := librateredis.NewPolicy(client, rules, "api:")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	d, err := policy.Acquire(ctx, "customer-7", 1)
	if err != nil {
		log.Fatal(err) // Redis gave no decision: fail open or closed
	}
	if !d.Allowed {
		log.Printf("429: rule %d denied", d.DeniedBy)
	}
	// Support lifts the customer's limit:
	if err := policy.Reset(ctx, "customer-7"); err != nil {
		log.Fatal(err)
	}
}

// 10,000 requests a second across every host, each deciding in process from its share
// of the rule (one cgo call, never a wait on Redis), which a goroutine renews. While
// Redis does not answer, a host decides from its lease until the lease ends, then by
// its fallback: here a tenth of the rule, for about ten hosts.
func ExampleLeasedLimiter() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	global := librate.Config{Algorithm: librate.GCRA, Limit: 10_000, Period: time.Second}
	rule := librate.LeaseRule{Config: global, Lease: 2 * time.Second} // renewed every 500 ms
	local := librate.Config{Algorithm: librate.GCRA, Limit: 1000, Period: time.Second}
	limiter, err := librateredis.NewLeased(context.Background(), client, "api:global", rule, librate.LeaseOptions{Fallback: &local})
	if err != nil {
		log.Fatal(err)
	}
	defer limiter.Close() // stops renewing and hands the share back
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if !limiter.Allow() {
			http.Error(w, "too many requests", http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, "hello\n")
	})
	go func() {
		for range time.Tick(time.Minute) {
			if limiter.InFallback() {
				slog.Warn("global limit in fallback", "error", limiter.Err(), "failures", limiter.Failures())
			}
		}
	}()
	err = http.ListenAndServe(":8080", nil)
	slog.Error("server stopped", "error", err)
}

// The worker processes of one host (a service run as several processes on each host)
// decide from one share of the rule, kept in a file each of them maps: one process
// renews it at a time, and another takes over when that one stops or dies.
func ExampleNewLeasedHost() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	global := librate.Config{Algorithm: librate.GCRA, Limit: 10_000, Period: time.Second}
	rule := librate.LeaseRule{Config: global, Lease: 2 * time.Second}
	limiter, err := librateredis.NewLeasedHost(context.Background(), client, "api:global", "/dev/shm/api-lease", rule, librate.LeaseOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer limiter.Close() // stops renewing, for another process to take over
	http.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		if !limiter.Allow() {
			http.Error(w, "too many requests", http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, "hello\n")
	})
	err = http.ListenAndServe(":8080", nil)
	slog.Error("server stopped", "error", err)
}

// 100 requests a second per user across every host. A user asked for 20 units between
// two renewals at a host is leased there and decided in process; every other request is
// one script call, decided in Redis against what the user's leases leave. A request
// Redis does not answer is denied (KeyedLeaseOptions.Fallback sets a local rule instead).
func ExampleKeyedLeasedLimiter() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	perUser := librate.Config{Algorithm: librate.GCRA, Limit: 100, Period: time.Second}
	rule := librate.LeaseRule{Config: perUser, Lease: 2 * time.Second} // renewed every 500 ms
	options := librateredis.KeyedLeaseOptions{Hot: 20, Capacity: 1000}
	limiter, err := librateredis.NewKeyedLeased(context.Background(), client, "api:user:", rule, options)
	if err != nil {
		log.Fatal(err)
	}
	defer limiter.Close() // stops renewing and hands every share back
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allowed, _ := limiter.Allow(r.Context(), r.Header.Get("X-User")); !allowed {
			http.Error(w, "too many requests", http.StatusTooManyRequests)
			return
		}
		io.WriteString(w, "hello\n")
	})
	err = http.ListenAndServe(":8080", nil)
	slog.Error("server stopped", "error", err)
}
