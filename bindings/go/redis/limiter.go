// Package librateredis keeps librate's limits in Redis (or Valkey) through go-redis v9,
// so that one limit per key holds across every host that shares the server: librate's
// Lua scripts decide each request inside Redis, atomically, with the decisions of the
// in-process librate.Limiter field for field for the same times.
//
// The client is the caller's redis.UniversalClient (a *redis.Client, a
// *redis.ClusterClient, a failover client or a Ring), with its pool, TLS, auth and
// timeouts. Each call takes a context.Context: with the client's ContextTimeoutEnabled
// option set, its deadline bounds the wait for the server; otherwise the client's
// ReadTimeout and WriteTimeout do (3 s by default). Time is the Redis server's clock
// (TIME), so the clocks of the hosts never matter; the At methods take the time from the
// caller instead, for tests and simulations.
//
// A request that cannot be admitted whatever the state (a cost above the limit, a
// reserve on a window algorithm) is refused before it is sent, with librate's errors.
// Redis unreachable, too slow for the context or answering an error is an *Error
// wrapping go-redis's error: never a decision, so the caller chooses to fail open or
// closed (librate.MiddlewareOptions.FailOpen, when a Limiter or a Policy is behind
// librate.NewMiddleware).
package librateredis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
)

// Limiter enforces one librate.Config for every key under a prefix, in Redis. The
// Redis key of a key is the prefix followed by the key in braces, "prefix{key}": the
// braces make the key its own Cluster hash tag. Each Redis key expires once its state
// is fresh again, so Redis holds live keys only. A Limiter is safe for concurrent use
// and holds no state of its own besides the client and its counts (EnableCounts).
type Limiter struct {
	client redis.UniversalClient
	config librate.Config
	prefix string
	script *redis.Script
	// limit is the most units one request may take; configArgs the script's
	// configuration arguments, as decimal strings.
	limit      uint64
	configArgs []any
	// oneNow is the script's arguments for one unit now, built once (go-redis copies
	// arguments, so they can be shared by concurrent calls); allowArgs the same request
	// in the script's brief form (max_wait ""), whose reply is the decision's allowed
	// alone, which is all Allow returns.
	oneNow, allowArgs []any
	counts            tally
}

// New returns a Limiter of config for the keys under prefix, deciding through client.
// The error is librate's: a *librate.ConfigError (matching librate.ErrInvalidConfig)
// for a configuration librate.New rejects or one whose durations reach 2^53 ns (about
// 104 days), which Redis's Lua numbers do not hold exactly; librate.ErrUnsupported for
// an algorithm librate has no Redis script for yet; librate.ErrInvalidArgument for a nil
// client. Unless given GoRedisLog, it silences go-redis's logger (see GoRedisLog).
func New(client redis.UniversalClient, config librate.Config, prefix string, options ...Option) (*Limiter, error) {
	if client == nil {
		return nil, invalid("New with a nil client")
	}
	script, err := librate.PrepareRedis(config)
	if err != nil {
		return nil, err
	}
	apply(options)
	l := &Limiter{
		client:     client,
		config:     config,
		prefix:     prefix,
		script:     redis.NewScript(script.Source),
		limit:      script.Limit,
		configArgs: decimals(script.ConfigArgs),
	}
	l.oneNow = l.args(oneNow)
	l.allowArgs = slices.Clone(l.oneNow)
	l.allowArgs[2] = "" // max_wait: the brief form
	return l, nil
}

// oneNow is the request of Allow: one unit now, by the server's clock.
var oneNow = request{n: 1}

// Config returns the configuration every key follows.
func (l *Limiter) Config() librate.Config { return l.config }

// Key returns the Redis key holding key's state: the prefix, then key in braces.
func (l *Limiter) Key(key string) string { return l.prefix + "{" + key + "}" }

// Allow reports whether one unit is admitted now for key, by the server's clock. A
// denial is false with a nil error; an error is never an admission.
func (l *Limiter) Allow(ctx context.Context, key string) (bool, error) {
	redisKey, cmd, err := l.run(ctx, key, oneNow, l.allowArgs)
	if err != nil {
		return false, err
	}
	allowed, err := allowedOf(redisKey, cmd.Val(), cmd.Err())
	if err == nil {
		l.counts.count(1, deniedBy(librate.Decision{Allowed: allowed}), 0)
	}
	return allowed, err
}

// Acquire takes n units for key now, by the server's clock, if the limit allows, and
// reports the decision; n == 0 is a query, which changes nothing. A denial is a
// Decision with Allowed false and a nil error. Errors: librate.ErrInsufficientCapacity
// (n above the limit) and librate.ErrInvalidArgument (n negative, or a nil ctx), before
// anything is sent; an *Error when Redis gives no decision.
func (l *Limiter) Acquire(ctx context.Context, key string, n int) (librate.Decision, error) {
	return l.decide(ctx, key, request{n: n})
}

// AcquireAt is Acquire at now on the caller's timeline instead of the server's clock,
// as librate.Limiter.AcquireAt takes it: an offset from the timeline's origin, from 0.
// The server's clock is nanoseconds since the Unix epoch (TIME), so
// time.Duration(t.UnixNano()) is the time.Time t on it. Use one timeline per key.
func (l *Limiter) AcquireAt(ctx context.Context, key string, n int, now time.Duration) (librate.Decision, error) {
	if now < 0 {
		return librate.Decision{}, negativeNow(now)
	}
	return l.acquireAtNs(ctx, key, n, uint64(now))
}

// acquireAtNs is AcquireAt anywhere on the script's uint64 timeline.
func (l *Limiter) acquireAtNs(ctx context.Context, key string, n int, now uint64) (librate.Decision, error) {
	return l.decide(ctx, key, request{n: n, now: strconv.FormatUint(now, 10)})
}

// Reserve takes n units for key now if the caller would have to wait at most maxWait
// before acting on them (GCRA's queue); Decision.Wait says how long. With maxWait 0 it
// is Acquire. GCRA only: the window algorithms return librate.ErrUnsupported, as
// librate.Limiter.Reserve does. A denied reserve's RetryAfter is for the same reserve.
func (l *Limiter) Reserve(ctx context.Context, key string, n int, maxWait time.Duration) (librate.Decision, error) {
	return l.decide(ctx, key, request{n: n, maxWait: maxWait, reserve: true})
}

// ReserveAt is Reserve at now on the caller's timeline, as AcquireAt takes it.
func (l *Limiter) ReserveAt(ctx context.Context, key string, n int, now, maxWait time.Duration) (librate.Decision, error) {
	if now < 0 {
		return librate.Decision{}, negativeNow(now)
	}
	return l.reserveAtNs(ctx, key, n, uint64(now), maxWait)
}

// reserveAtNs is ReserveAt anywhere on the script's uint64 timeline.
func (l *Limiter) reserveAtNs(ctx context.Context, key string, n int, now uint64, maxWait time.Duration) (librate.Decision, error) {
	return l.decide(ctx, key, request{n: n, now: strconv.FormatUint(now, 10), maxWait: maxWait, reserve: true})
}

// Reset deletes key's state (DEL of its Redis key), so its next request finds the limit
// full, as a fresh key does; other keys keep theirs.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	return deleted(ctx, l.client, []string{l.Key(key)})
}

// request is one call's arguments: now is "" for the server's clock.
type request struct {
	n       int
	now     string
	maxWait time.Duration
	reserve bool
}

// check refuses what the in-process limiter refuses, in its order, and a context that
// is nil or already done, before anything is sent.
func (l *Limiter) check(ctx context.Context, r request) error {
	return checked(ctx, r, l.limit, r.reserve && l.config.Algorithm != librate.GCRA)
}

// checked refuses a request that no state admits (n negative or above limit, a negative
// maxWait, a reserve where unsupported) and a context that is nil or already done,
// before anything is sent.
func checked(ctx context.Context, r request, limit uint64, unsupported bool) error {
	switch {
	case ctx == nil:
		return invalid("nil context")
	case r.n < 0:
		return invalid("n is %d", r.n)
	case r.maxWait < 0:
		return invalid("maxWait is %v", r.maxWait)
	case unsupported:
		return librate.ErrUnsupported
	case uint64(r.n) > limit:
		return librate.ErrInsufficientCapacity
	}
	if err := ctx.Err(); err != nil {
		return &Error{Key: "", Err: err}
	}
	return nil
}

// args are the script's arguments for r: now, n, maxWait, then the configuration's.
func (l *Limiter) args(r request) []any {
	args := make([]any, 0, 3+len(l.configArgs))
	args = append(args, r.now, strconv.Itoa(r.n), strconv.FormatInt(int64(r.maxWait), 10))
	return append(args, l.configArgs...)
}

func (l *Limiter) decide(ctx context.Context, key string, r request) (librate.Decision, error) {
	args := l.oneNow
	if r != oneNow {
		args = l.args(r)
	}
	redisKey, cmd, err := l.run(ctx, key, r, args)
	if err != nil {
		return librate.Decision{}, err
	}
	d, err := decisionOf(redisKey, cmd.Val(), cmd.Err())
	if err == nil {
		l.counts.count(r.n, deniedBy(d), 0)
	}
	return d, err
}

// run checks r, then runs the script on key's Redis key with args (r's, in full or brief
// form): the Redis key and the command, or the refusal, with nothing sent.
func (l *Limiter) run(ctx context.Context, key string, r request, args []any) (string, *redis.Cmd, error) {
	if err := l.check(ctx, r); err != nil {
		return "", nil, err
	}
	redisKey := l.Key(key)
	// EVALSHA, then EVAL (which caches the script again) after NOSCRIPT.
	return redisKey, l.script.Run(ctx, l.client, []string{redisKey}, args...), nil
}

// Error is a call that Redis did not decide: the server could not be reached within
// the context or the client's timeouts, or it answered an error (OOM, READONLY,
// WRONGTYPE, the script's refusal of a key holding something else), or a reply no
// script gives (ErrReply). Err is go-redis's error (a redis.Error for an error reply),
// the context's, or ErrReply; errors.Is and errors.As see through to it.
type Error struct {
	// Key is the Redis key of the call; empty when nothing was sent.
	Key string
	// Err is the cause: go-redis's error, the context's, or ErrReply.
	Err error
}

// Error is "librateredis: ", the quoted Key when there is one, and Err's message.
func (e *Error) Error() string {
	if e.Key == "" {
		return "librateredis: " + e.Err.Error()
	}
	return fmt.Sprintf("librateredis: %q: %v", e.Key, e.Err)
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// ErrReply is the Err of an *Error for a reply that no librate script gives.
var ErrReply = errors.New("unexpected reply")

// decisionOf reads a key's reply from a script, or the error in its place:
// {allowed, limit, remaining, retry_after_ns, reset_after_ns, wait_ns}, integers or
// decimal strings. Durations saturate at librate.Never, as the in-process limiter's do.
func decisionOf(redisKey string, reply any, err error) (librate.Decision, error) {
	if err != nil {
		return librate.Decision{}, &Error{Key: redisKey, Err: err}
	}
	fields, ok := reply.([]any)
	var v [6]uint64
	ok = ok && len(fields) == len(v)
	for i := 0; ok && i < len(v); i++ {
		v[i], ok = unsigned(fields[i])
	}
	if !ok || v[0] > 1 {
		return librate.Decision{}, &Error{Key: redisKey, Err: fmt.Errorf("%w %v", ErrReply, reply)}
	}
	return librate.Decision{
		Allowed:    v[0] == 1,
		Limit:      v[1],
		Remaining:  v[2],
		RetryAfter: duration(v[3]),
		ResetAfter: duration(v[4]),
		Wait:       duration(v[5]),
	}, nil
}

// allowedOf reads a brief call's reply, the decision's allowed as the integer 1 or 0,
// or the error in its place.
func allowedOf(redisKey string, reply any, err error) (bool, error) {
	if err != nil {
		return false, &Error{Key: redisKey, Err: err}
	}
	if allowed, ok := reply.(int64); ok && (allowed == 0 || allowed == 1) {
		return allowed == 1, nil
	}
	return false, &Error{Key: redisKey, Err: fmt.Errorf("%w %v", ErrReply, reply)}
}

// unsigned is a reply field as a uint64: a non-negative integer or a decimal string.
func unsigned(field any) (uint64, bool) {
	switch field := field.(type) {
	case int64:
		return uint64(field), field >= 0
	case string:
		v, err := strconv.ParseUint(field, 10, 64)
		return v, err == nil
	}
	return 0, false
}

// duration is ns as a Duration, saturated at librate.Never.
func duration(ns uint64) time.Duration {
	return time.Duration(min(ns, uint64(librate.Never)))
}
