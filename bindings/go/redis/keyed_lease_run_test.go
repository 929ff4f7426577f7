package librateredis_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

// Keyed leases renewed by their goroutine on the server's clock: a hot key comes to be
// decided in process while others call at once, the fallback decides while the server
// is stopped, closing hands every share back, and bad input is refused before anything is
// sent.

// A rule of 1,000 a second per key, leased 400 ms (renewed every 100 ms).
var keyedRule = librate.LeaseRule{Config: thousandASecond, Lease: 400 * ms}

// holdsName reports whether redisKey's hash lists the holder name.
func holdsName(t *testing.T, client redis.UniversalClient, redisKey, name string) bool {
	t.Helper()
	held, err := client.HExists(ctx, redisKey, "h:"+name).Result()
	if err != nil {
		t.Fatal(err)
	}
	return held
}

func TestKeyedLeaseAHotKeyIsDecidedInProcess(t *testing.T) {
	s := startServer(t)
	client, counter := countedClient(t, s)
	l, err := librateredis.NewKeyedLeased(ctx, client, "hot:", keyedRule, librateredis.KeyedLeaseOptions{Hot: 5, Capacity: 4, Name: "g"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// A cold key: one call in Redis, full, and not leased.
	if allowed, err := l.Allow(ctx, "cold"); !allowed || err != nil || counter.of("hot:cold") != 1 {
		t.Fatalf("cold: %v, %v, %d calls; want admitted by one call", allowed, err, counter.of("hot:cold"))
	}

	// Four goroutines ask for "hot", 2 units every 2 ms each: leased at the next round,
	// granted a share once the rule made by its first request is past its quiet lease.
	stop := make(chan struct{})
	var asking sync.WaitGroup
	for range 4 {
		asking.Add(1)
		go func() {
			defer asking.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * ms):
				}
				if _, err := l.AllowN(ctx, "hot", 2); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	inProcess := func() bool {
		before := counter.of("hot:hot")
		for range 20 {
			if _, err := l.Acquire(ctx, "hot", 1); err != nil {
				t.Fatal(err)
			}
		}
		return l.IsLeased("hot") && counter.of("hot:hot") == before
	}
	waitFor(t, "hot decided in process", 5*time.Second, inProcess)
	close(stop)
	asking.Wait()
	if l.IsLeased("cold") || l.Err() != nil || l.Failures() != 0 {
		t.Fatalf("cold leased %v; failures %d, last %v", l.IsLeased("cold"), l.Failures(), l.Err())
	}
	if !holdsName(t, client, "hot:hot", "g") || holdsName(t, client, "hot:cold", "g") {
		t.Fatal("the holder must be listed at hot's hash, and only there")
	}
}

// Leased keys decide from their leases while the server is stopped; the others by the
// fallback, each failure counted and kept.
func TestKeyedLeaseFallbackWhenTheServerStops(t *testing.T) {
	s := startServer(t)
	client := impatientClient(t, s)
	rule := librate.LeaseRule{Config: thousandASecond, Lease: 2 * time.Second} // renewed every 500 ms
	hourly := librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Hour, Burst: 1}
	leaser := keyedBy(t, client, "fb:", rule, librateredis.KeyedLeaseOptions{Hot: 1, Capacity: 1, Name: "d"})
	deny := keyedBy(t, client, "fb:", rule, librateredis.KeyedLeaseOptions{Hot: 1000, Capacity: 1, Name: "n"})
	local := keyedBy(t, client, "fb:", rule, librateredis.KeyedLeaseOptions{Hot: 1000, Capacity: 1, Name: "l", Fallback: &hourly})
	background, err := librateredis.NewKeyedLeased(ctx, client, "fb:", rule, librateredis.KeyedLeaseOptions{Hot: 1000, Capacity: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer background.Close()
	// "lk" made at 0 and leased by leaser at once, asked for again at 1 s (in Redis,
	// enough to stay leased), granted a share at 2 s, past the quiet lease.
	decideAt(t, leaser, "lk", 1, 0, librate.Decision{Allowed: true, Limit: 1000, Remaining: 999, ResetAfter: ms})
	roundAt(t, leaser, 0, 1)
	decideAt(t, leaser, "lk", 1, time.Second, librate.Decision{Allowed: true, Limit: 1000, Remaining: 999, ResetAfter: ms})
	roundAt(t, leaser, 2*time.Second, 1)

	s.signal(t, syscall.SIGSTOP)
	defer s.signal(t, syscall.SIGCONT)
	// Each call waits 100 ms at most for the stopped server.
	short := func() context.Context {
		call, cancel := context.WithTimeout(ctx, 100*ms)
		t.Cleanup(cancel)
		return call
	}
	check := func(l *librateredis.KeyedLeasedLimiter, key string, now time.Duration, want librate.Decision) {
		t.Helper()
		if d, err := l.AcquireAt(short(), key, 1, now); err != nil || d != want {
			t.Fatalf("%q at %v: %+v, %v\nwant %+v", key, now, d, err, want)
		}
	}
	// From lk's share, which started empty at 2 s, 100 ms later: in process. Whatever
	// its rate, it holds a unit: the holder's demand is met in full, and the requests'.
	if d, err := leaser.AcquireAt(short(), "lk", 1, 2100*ms); err != nil || !d.Allowed {
		t.Fatalf("lk from its lease: %+v, %v", d, err)
	}
	// Deny: a retry after a renewal interval; a query is admitted.
	check(deny, "k", 2100*ms, librate.Decision{RetryAfter: 500 * ms})
	var failure *librateredis.Error
	if !errors.As(deny.Err(), &failure) || failure.Key != "fb:k" || deny.Failures() != 1 {
		t.Fatalf("%v after %d failures; want an *Error of fb:k", deny.Err(), deny.Failures())
	}
	if d, err := background.Acquire(short(), "k", 0); err != nil || d != (librate.Decision{Allowed: true}) {
		t.Errorf("a query by deny: %+v, %v", d, err)
	}
	if allowed, err := background.AllowN(short(), "k", 1); allowed || err != nil {
		t.Errorf("background deny: %v, %v", allowed, err)
	}
	// The local rule of 1 an hour per key, full at first.
	check(local, "k", 2100*ms, librate.Decision{Allowed: true, Limit: 1, ResetAfter: time.Hour})
	check(local, "k", 2100*ms, librate.Decision{Limit: 1, RetryAfter: time.Hour, ResetAfter: time.Hour})
	check(local, "k2", 2100*ms, librate.Decision{Allowed: true, Limit: 1, ResetAfter: time.Hour})
	// A round fails, and lk decides on from its lease.
	if _, err := leaser.RenewAt(short(), 2200*ms); !errors.As(err, &failure) || failure.Key != "fb:lk" || leaser.Failures() != 1 {
		t.Fatalf("a round while stopped: %v, %d failures", err, leaser.Failures())
	}
	if d, err := leaser.AcquireAt(short(), "lk", 1, 2200*ms); err != nil || !d.Allowed {
		t.Fatalf("lk from its lease after a failed round: %+v, %v", d, err)
	}

	s.signal(t, syscall.SIGCONT)
	roundAt(t, leaser, 2500*ms, 1)
	if leaser.Err() != nil {
		t.Fatalf("a round since succeeded: %v", leaser.Err())
	}
}

// Close, or the end of NewKeyedLeased's context, hands every share back: the keys'
// hashes no longer list the holder.
func TestKeyedLeaseCloseHandsEveryShareBack(t *testing.T) {
	for _, leave := range []string{"Close", "the context's end"} {
		t.Run(leave, func(t *testing.T) {
			client, counter := countedClient(t, startServer(t))
			leaveCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			// Hot 0: every key asked for is leased at the next round.
			l, err := librateredis.NewKeyedLeased(leaveCtx, client, "close:", keyedRule, librateredis.KeyedLeaseOptions{Capacity: 2, Name: "c"})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			for _, key := range []string{"a", "b"} {
				if _, err := l.Allow(ctx, key); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, "a and b listed", 5*time.Second, func() bool {
				return holdsName(t, client, "close:a", "c") && holdsName(t, client, "close:b", "c")
			})
			if leave == "Close" {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := l.Allow(ctx, "a"); !errors.Is(err, librate.ErrClosed) {
					t.Errorf("closed: %v, want ErrClosed", err)
				}
			} else {
				cancel()
			}
			waitFor(t, "a and b handed back", time.Second, func() bool {
				return !holdsName(t, client, "close:a", "c") && !holdsName(t, client, "close:b", "c")
			})
			if leave != "Close" {
				// Stopped, it leases nothing: every request is decided in Redis.
				// (Whether it is admitted depends on which made the key's hash first: the
				// first request, full, or the first round, empty until its quiet ends.)
				before := counter.of("close:a")
				if _, err := l.Allow(ctx, "a"); err != nil || l.IsLeased("a") || counter.of("close:a") != before+1 {
					t.Errorf("after the context's end: %v, leased %v, %d calls", err, l.IsLeased("a"), counter.of("close:a")-before)
				}
			}
			if err := l.Close(); err != nil {
				t.Errorf("closed again: %v", err)
			}
		})
	}
}

func TestKeyedLeaseRefusals(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + closedPort(t), MaxRetries: -1})
	defer client.Close()
	counter := &acquireCounter{calls: map[string]int{}}
	client.AddHook(counter)
	options := librateredis.KeyedLeaseOptions{Hot: 10, Capacity: 2}
	if _, err := librateredis.NewKeyedLeased(ctx, nil, "p:", keyedRule, options); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("nil client: %v", err)
	}
	if _, err := librateredis.NewKeyedLeased(nilContext(), client, "p:", keyedRule, options); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("nil context: %v", err)
	}
	noLimit := librate.Config{Algorithm: librate.GCRA, Period: time.Second}
	sliding := keyedRule
	sliding.Config.Algorithm = librate.SlidingWindow
	for _, c := range []struct {
		rule    librate.LeaseRule
		options librateredis.KeyedLeaseOptions
		want    error
		says    string
	}{
		{keyedRule, librateredis.KeyedLeaseOptions{Hot: 10}, librate.ErrInvalidConfig, "capacity 0: must be at least 1"},
		{keyedRule, librateredis.KeyedLeaseOptions{Capacity: 2, Fallback: &noLimit}, librate.ErrInvalidConfig, "fallback: limit 0"},
		{sliding, options, librate.ErrUnsupported, ""},
	} {
		_, err := librateredis.NewKeyedLeased(ctx, client, "p:", c.rule, c.options)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v; want %v saying %q", c.options, err, c.want, c.says)
		}
	}

	renewing, err := librateredis.NewKeyedLeased(ctx, client, "p:", keyedRule, options)
	if err != nil {
		t.Fatal(err)
	}
	defer renewing.Close()
	manual := keyedBy(t, client, "p:", keyedRule, options)
	for what, err := range map[string]error{
		"1,001 units":            errorOf(renewing.Acquire(ctx, "k", 1001)),
		"1,001 units, AllowN":    errorOf(renewing.AllowN(ctx, "k", 1001)),
		"1,001 units, AcquireAt": errorOf(manual.AcquireAt(ctx, "k", 1001, 0)),
	} {
		if !isInsufficient(err) {
			t.Errorf("%s: %v, want ErrInsufficientCapacity", what, err)
		}
	}
	for what, err := range map[string]error{
		"n -1":                           errorOf(renewing.Acquire(ctx, "k", -1)),
		"nil context":                    errorOf(renewing.Acquire(nilContext(), "k", 1)),
		"AcquireAt beside the goroutine": errorOf(renewing.AcquireAt(ctx, "k", 1, 0)),
		"RenewAt beside the goroutine":   errorOf(renewing.RenewAt(ctx, 0)),
		"AcquireAt(-1)":                  errorOf(manual.AcquireAt(ctx, "k", 1, -1)),
		"RenewAt(-1)":                    errorOf(manual.RenewAt(ctx, -1)),
		"Renew, nil context":             errorOf(manual.Renew(nilContext())),
	} {
		if !errors.Is(err, librate.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", what, err)
		}
	}
	if counter.of("p:k") != 0 {
		t.Fatalf("%d refused requests sent", counter.of("p:k"))
	}
	manual.Close()
	if allowed, err := manual.AllowN(ctx, "k", 1); allowed || !errors.Is(err, librate.ErrClosed) {
		t.Errorf("closed: %v, %v", allowed, err)
	}
}

// errorOf is the error of a call returning a value and an error.
func errorOf[T any](_ T, err error) error { return err }
