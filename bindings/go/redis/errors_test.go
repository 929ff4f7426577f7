package librateredis_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

var gcra2 = librate.Config{Algorithm: librate.GCRA, Limit: 2, Period: time.Second}

// Configurations refused as the in-process limiter refuses them, and those Redis's
// doubles cannot decide exactly, are *librate.ConfigError values naming the bound.
func TestConfigurationsRefused(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer client.Close()
	cases := []struct {
		config librate.Config
		reason string
	}{
		{librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: 1 << 53}, "on Redis, burst x (period_ns / limit) and period_ns must be below 2^53 ns (about 104 days)"},
		{librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: 1 << 50, Burst: 8}, "on Redis, burst x (period_ns / limit) and period_ns must be below 2^53 ns (about 104 days)"},
		{librate.Config{Algorithm: librate.GCRA, Limit: 0, Period: time.Second}, "limit 0: must be at least 1"},
		{librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: -1}, "period -1ns: must be at least 1ns"},
	}
	for _, c := range cases {
		_, err := librateredis.New(client, c.config, "x:")
		var configError *librate.ConfigError
		if !errors.As(err, &configError) || configError.Reason != c.reason || !errors.Is(err, librate.ErrInvalidConfig) {
			t.Errorf("%+v: %v; want a ConfigError %q", c.config, err, c.reason)
		}
	}
	if _, err := librateredis.New(client, librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: 1<<53 - 1}, "x:"); err != nil {
		t.Errorf("a period of 2^53 - 1 ns: %v", err)
	}
	if _, err := librateredis.New(nil, gcra2, "x:"); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("a nil client: %v", err)
	}
}

// Requests that no state could admit are refused before anything is sent, as in
// process; so is a context already done. Nothing reaches the server: the key does not
// exist afterwards.
func TestRequestsRefusedBeforeRedis(t *testing.T) {
	client := startServer(t).client(t)
	l := newLimiter(t, client, gcra2, "refused:")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		name string
		call func() (librate.Decision, error)
		want error
	}{
		{"n above the burst", func() (librate.Decision, error) { return l.AcquireAt(ctx, "k", 3, 0) }, librate.ErrInsufficientCapacity},
		{"a reserve above the burst", func() (librate.Decision, error) { return l.Reserve(ctx, "k", 3, time.Hour) }, librate.ErrInsufficientCapacity},
		{"n negative", func() (librate.Decision, error) { return l.Acquire(ctx, "k", -1) }, librate.ErrInvalidArgument},
		{"maxWait negative", func() (librate.Decision, error) { return l.ReserveAt(ctx, "k", 1, 0, -1) }, librate.ErrInvalidArgument},
		{"a nil context", func() (librate.Decision, error) { return l.Acquire(nil, "k", 1) }, librate.ErrInvalidArgument},
		{"a cancelled context", func() (librate.Decision, error) { return l.AcquireAt(cancelled, "k", 1, 0) }, context.Canceled},
	} {
		if d, err := c.call(); !errors.Is(err, c.want) || d != (librate.Decision{}) {
			t.Errorf("%s: %+v, %v; want %v", c.name, d, err, c.want)
		}
	}
	if _, err := l.AcquireManyAt(cancelled, []string{"k"}, 1, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("a batch with a cancelled context: %v", err)
	}
	if n := client.Exists(ctx, l.Key("k")).Val(); n != 0 {
		t.Errorf("a refused request reached Redis")
	}
	// A window algorithm has no reserve, whatever the wait.
	for _, algorithm := range algorithms[1:] {
		window := newLimiter(t, client, librate.Config{Algorithm: algorithm, Limit: 2, Period: time.Second}, "refused:")
		if window == nil {
			continue
		}
		for _, maxWait := range []time.Duration{0, time.Second} {
			if _, err := window.ReserveAt(ctx, "k", 1, 0, maxWait); !errors.Is(err, librate.ErrUnsupported) {
				t.Errorf("%v: a reserve of up to %v: %v", algorithm, maxWait, err)
			}
		}
	}
}

// redisFailure checks that err is an *Error for l's key k, wrapping a redis.Error whose
// message has want, and that d is no decision.
func redisFailure(t *testing.T, what string, l *librateredis.Limiter, d librate.Decision, err error, want string) {
	t.Helper()
	var failure *librateredis.Error
	var reply redis.Error
	if !errors.As(err, &failure) || failure.Key != l.Key("k") || !errors.As(err, &reply) ||
		!strings.Contains(reply.Error(), want) || d != (librate.Decision{}) {
		t.Errorf("%s: %+v, %v; want an *Error wrapping a redis.Error with %q", what, d, err, want)
	}
}

// What Redis answers with an error is an *Error wrapping it, never a decision: a key
// holding another type, or a string that is no state of the algorithm (left as it
// was), and a server out of memory or read-only.
func TestRedisErrorsAreErrors(t *testing.T) {
	client := startServer(t).client(t)
	for _, algorithm := range algorithms {
		l := newLimiter(t, client, librate.Config{Algorithm: algorithm, Limit: 2, Period: time.Second}, algorithm.String()+":")
		if l == nil {
			continue
		}
		client.Del(ctx, l.Key("k"))
		client.RPush(ctx, l.Key("k"), "x")
		d, err := l.AcquireAt(ctx, "k", 1, 0)
		redisFailure(t, algorithm.String()+" on a list", l, d, err, "WRONGTYPE")
		allowed, err := l.Allow(ctx, "k")
		redisFailure(t, algorithm.String()+" on a list, Allow", l, librate.Decision{Allowed: allowed}, err, "WRONGTYPE")
		client.Set(ctx, l.Key("k"), "12ab", 0)
		d, err = l.AcquireAt(ctx, "k", 1, 0)
		redisFailure(t, algorithm.String()+" on a string of garbage", l, d, err, "")
		if value := client.Get(ctx, l.Key("k")).Val(); value != "12ab" {
			t.Errorf("%v: the garbage became %q", algorithm, value)
		}
	}
	l := newLimiter(t, client, gcra2, "server:")
	settings := []struct{ set, reset []any }{
		{[]any{"CONFIG", "SET", "maxmemory", "1"}, []any{"CONFIG", "SET", "maxmemory", "0"}},
		{[]any{"REPLICAOF", "127.0.0.1", "1"}, []any{"REPLICAOF", "NO", "ONE"}},
	}
	for i, want := range []string{"OOM", "READONLY"} {
		if err := client.Do(ctx, settings[i].set...).Err(); err != nil {
			t.Fatal(err)
		}
		d, err := l.AcquireAt(ctx, "k", 1, 0)
		redisFailure(t, want, l, d, err, want)
		allowed, err := l.Allow(ctx, "k")
		redisFailure(t, want+", Allow", l, librate.Decision{Allowed: allowed}, err, want)
		if err := client.Do(ctx, settings[i].reset...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := l.AcquireAt(ctx, "k", 1, 0); err != nil || !d.Allowed {
		t.Errorf("after the settings are undone: %+v, %v", d, err)
	}
}

// A server that stops answering (SIGSTOP) fails the call at the context's deadline, not
// at the client's minute-long read timeout; a killed server fails it with the refused
// connection, within the deadline. Neither is ever an admission.
func TestAServerGoneIsAnError(t *testing.T) {
	s := startServer(t)
	client := redis.NewClient(&redis.Options{Addr: s.addr, ContextTimeoutEnabled: true,
		ReadTimeout: time.Minute, WriteTimeout: time.Minute})
	defer client.Close()
	l := newLimiter(t, client, gcra2, "gone:")
	if _, err := l.AcquireAt(ctx, "k", 1, 0); err != nil { // the connection is open
		t.Fatal(err)
	}
	call := func(what string, deadline time.Duration, causes ...error) {
		t.Helper()
		bounded, cancel := context.WithTimeout(ctx, deadline)
		defer cancel()
		started := time.Now()
		d, err := l.AcquireAt(bounded, "k", 1, 0)
		t.Logf("%s: %v after %v", what, err, time.Since(started))
		var failure *librateredis.Error
		if !errors.As(err, &failure) || d != (librate.Decision{}) {
			t.Errorf("%s: %+v, %v; want an *Error", what, d, err)
		}
		if !slices.ContainsFunc(causes, func(cause error) bool { return errors.Is(err, cause) }) {
			t.Errorf("%s: %v; want one of %v", what, err, causes)
		}
		// Bounded by the deadline (with room for a loaded machine), far below the
		// client's read timeout.
		if elapsed := time.Since(started); elapsed > deadline+20*time.Second {
			t.Errorf("%s: failed after %v, past the %v deadline", what, elapsed, deadline)
		}
	}
	s.signal(t, syscall.SIGSTOP)
	call("a stopped server", 300*time.Millisecond, context.DeadlineExceeded)
	s.signal(t, syscall.SIGCONT)
	s.kill()
	// go-redis dials again, pausing between tries, until the deadline.
	call("a killed server", 2*time.Second, syscall.ECONNREFUSED, context.DeadlineExceeded)
	bounded, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	results, err := l.AcquireManyAt(bounded, []string{"a", "b"}, 1, 0)
	var failure *librateredis.Error
	if !errors.As(err, &failure) || len(results) != 2 || results[0].Err != err || results[1].Err == nil ||
		results[0].Decision != (librate.Decision{}) || results[1].Decision != (librate.Decision{}) {
		t.Errorf("a batch to a killed server: %+v, %v; want an *Error for each key", results, err)
	}
}

// A refused argument's message says "librateredis: " once, then what was wrong and
// librate's error's own text, which errors.Is finds.
func TestRefusalMessagesHaveOnePrefix(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer client.Close()
	l, err := librateredis.New(client, gcra2, "k:")
	if err != nil {
		t.Fatal(err)
	}
	p, err := librateredis.NewPolicy(client, []librate.Config{gcra2, gcra2}, "p:")
	if err != nil {
		t.Fatal(err)
	}
	_, negativeN := l.Acquire(ctx, "k", -1)
	_, negativeNow := l.AcquireAt(ctx, "k", 1, -time.Second)
	_, perRule := p.LimitRequest(ctx, "k", time.Time{}, []int{1, 0})
	_, beforeEpoch := l.LimitRequest(ctx, "k", time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), nil)
	_, nilClient := librateredis.New(nil, gcra2, "k:")
	for _, c := range []struct {
		err  error
		is   error
		want string
	}{
		{negativeN, librate.ErrInvalidArgument, "librateredis: n is -1: invalid argument"},
		{negativeNow, librate.ErrInvalidArgument, "librateredis: now is -1s: invalid argument"},
		{perRule, librate.ErrUnsupported, "librateredis: costs [1 0]: unsupported: a Redis policy takes one cost for every rule"},
		{beforeEpoch, librate.ErrInvalidArgument, "librateredis: time 1969-12-31 00:00:00 +0000 UTC is before the Unix epoch: invalid argument"},
		{nilClient, librate.ErrInvalidArgument, "librateredis: New with a nil client: invalid argument"},
	} {
		if c.err == nil || c.err.Error() != c.want || !errors.Is(c.err, c.is) {
			t.Errorf("%v\nwant %q, matching %v", c.err, c.want, c.is)
		}
	}
}
