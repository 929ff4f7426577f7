package librateredis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
)

// KeyedLeaseOptions are a KeyedLeasedLimiter's choices (docs/leases.md, keys).
type KeyedLeaseOptions struct {
	// Hot is how many units a key must be asked for here between two rounds of renewals
	// (one a renewal interval) to be leased here; 0 leases every key asked for. A leased
	// key stops being leased once it is asked for less than half of Hot in a round.
	Hot uint64
	// Capacity is the most keys leased at once: at least 1. The keys counted towards
	// being hot in a round, and those Fallback keeps, are four times as many.
	Capacity int
	// Name is the holder's name in every key's Redis hash, as LeaseOptions.Name: "" for
	// a random one; unique among the holders of the rule's keys.
	Name string
	// Fallback is the local rule, per key, that decides a request Redis does not answer
	// (such as each key's rule divided by the expected number of hosts: the caller's
	// choice, which the rule's promise does not cover); nil denies it.
	Fallback *librate.Config
}

// keptPerLeased is how many keys a holder counts towards being hot, per key it can lease
// (src/lease/keyed.rs): the fallback keeps as many.
const keptPerLeased = 4

// KeyedLeasedLimiter enforces a keyed rule kept in Redis, each key a global rule of its
// own in its own hash at the prefix and the key (docs/leases.md, keys). The keys hot at
// this process are leased and decided in process, with no Redis call; every other request
// is one lease script call over the caller's client, decided against what the key's
// leases leave. A goroutine renews the leased keys every rule.RenewEvery, each round
// bounded by that interval, and leases the keys that turned hot. A request Redis does not
// answer is decided by the fallback; its failure is counted and kept (Failures, Err),
// never returned.
//
// Every host that enforces the rule uses the same prefix and the same rule. Its
// decisions are safe for concurrent use. Close stops the goroutine and hands every share
// back.
type KeyedLeasedLimiter struct {
	holder *librate.KeyedLeaseHolder
	client redis.UniversalClient
	prefix string
	// script is the rule's lease script: EVALSHA, and EVAL after NOSCRIPT.
	script *redis.Script
	// fallback decides, per key, the requests Redis does not answer; nil denies them.
	fallback *librate.Keyed
	// renewing serializes the rounds and the hand-back: a round's calls and their
	// answers are one turn.
	renewing sync.Mutex
	renewer  renewer
}

// NewKeyedLeased returns a limiter of rule for every key under prefix, renewing its
// leased keys in a goroutine by the server's clock until Close, or until ctx ends (which
// hands every share back too: afterwards every request is decided in Redis). The first
// round runs at once; a key is leased at the first round after it turns hot, and decided
// from its share once Redis grants one (a key's rule made afresh grants nothing for one
// lease). The error is librate's: a *librate.ConfigError (matching
// librate.ErrInvalidConfig) for a rule, a capacity, a name or a fallback librate rejects,
// librate.ErrUnsupported for a sliding window or log, librate.ErrInvalidArgument for a nil
// client or ctx. Unless given GoRedisLog, it silences go-redis's logger (see GoRedisLog).
func NewKeyedLeased(ctx context.Context, client redis.UniversalClient, prefix string, rule librate.LeaseRule,
	options KeyedLeaseOptions, more ...Option) (*KeyedLeasedLimiter, error) {
	if ctx == nil {
		return nil, invalid("NewKeyedLeased with a nil context")
	}
	l, err := NewKeyedLeasedManual(client, prefix, rule, options, more...)
	if err != nil {
		return nil, err
	}
	l.renewer.start(ctx, l.holder.Rule().RenewEvery, func(call context.Context) {
		_, _ = l.Renew(call)
	}, l.handBack)
	return l, nil
}

// NewKeyedLeasedManual is NewKeyedLeased without the goroutine: the caller runs the
// rounds, with RenewAt on a timeline of its own (simulations, tests: every holder of the
// rule on that timeline, their decisions with AcquireAt) or Renew by the server's clock.
func NewKeyedLeasedManual(client redis.UniversalClient, prefix string, rule librate.LeaseRule,
	options KeyedLeaseOptions, more ...Option) (*KeyedLeasedLimiter, error) {
	if client == nil {
		return nil, invalid("NewKeyedLeased with a nil client")
	}
	holder, err := librate.NewKeyedLeaseHolder(rule, options.Hot, options.Capacity, librate.LeaseOptions{Name: options.Name})
	if err != nil {
		return nil, err
	}
	var fallback *librate.Keyed
	if options.Fallback != nil {
		fallback, err = librate.NewKeyed(*options.Fallback, min(options.Capacity, math.MaxInt/keptPerLeased)*keptPerLeased)
		if err != nil {
			holder.Close()
			var config *librate.ConfigError
			if errors.As(err, &config) {
				return nil, &librate.ConfigError{Reason: "fallback: " + config.Reason}
			}
			return nil, err
		}
	}
	apply(more)
	return &KeyedLeasedLimiter{holder: holder, client: client, prefix: prefix,
		script: redis.NewScript(holder.Script()), fallback: fallback}, nil
}

// Prefix returns the prefix of every key's Redis key.
func (l *KeyedLeasedLimiter) Prefix() string { return l.prefix }

// Key returns the Redis key of key's rule: the prefix, then the key.
func (l *KeyedLeasedLimiter) Key(key string) string { return l.prefix + key }

// Holder returns the holder deciding the leased keys: its rule, and its At forms.
func (l *KeyedLeasedLimiter) Holder() *librate.KeyedLeaseHolder { return l.holder }

// IsLeased reports whether key is leased here now (perhaps without a share yet).
func (l *KeyedLeasedLimiter) IsLeased(key string) bool { return l.holder.IsLeased(key) }

// Allow reports whether one unit is admitted now for key (AllowN).
func (l *KeyedLeasedLimiter) Allow(ctx context.Context, key string) (bool, error) {
	return l.AllowN(ctx, key, 1)
}

// AllowN reports whether n units are admitted now for key, and takes them if so: in
// process if key is leased here, else by one script call in Redis, else (Redis did not
// answer within ctx) by the fallback. The error is the caller's, never Redis's:
// librate.ErrInsufficientCapacity (n above the rule's burst, a window's limit),
// librate.ErrInvalidArgument (n negative, a nil ctx), librate.ErrClosed.
func (l *KeyedLeasedLimiter) AllowN(ctx context.Context, key string, n int) (bool, error) {
	d, err := l.Acquire(ctx, key, n)
	return d.Allowed, err
}

// Acquire is AllowN with the decision. Its fields are those of where it was decided: in
// Redis, what the key's leases leave (exact for it, conservative for the rule: Limit is
// its burst); by a local fallback, the local rule's; by the fallback deny, a denial
// whose RetryAfter is the renewal interval (a query, n == 0, is admitted); in process,
// the key's share's (exact for it, conservative for the rule).
func (l *KeyedLeasedLimiter) Acquire(ctx context.Context, key string, n int) (librate.Decision, error) {
	if ctx == nil {
		return librate.Decision{}, invalid("nil context")
	}
	d, decided, err := l.holder.Acquire(key, n)
	if err != nil || decided {
		return d, err
	}
	call, err := l.holder.InRedis(n)
	if err != nil {
		return librate.Decision{}, err
	}
	if d, ok := l.inRedis(ctx, key, n, call); ok {
		return d, nil
	}
	return l.byFallback(key, n, func() (librate.Decision, error) { return l.fallback.Acquire(key, n) })
}

// AcquireAt is Acquire at now on the caller's timeline, which the script decides at
// (simulations: every holder of the rule on one timeline, their rounds with RenewAt). Only
// a KeyedLeasedLimiter from NewKeyedLeasedManual takes it: NewKeyedLeased's renews by the
// server's clock, and the error is then librate.ErrInvalidArgument.
func (l *KeyedLeasedLimiter) AcquireAt(ctx context.Context, key string, n int, now time.Duration) (librate.Decision, error) {
	switch {
	case ctx == nil:
		return librate.Decision{}, invalid("nil context")
	case now < 0:
		return librate.Decision{}, negativeNow(now)
	case l.renewer.background():
		return librate.Decision{}, invalid("AcquireAt on a KeyedLeasedLimiter that renews itself (NewKeyedLeasedManual renews by hand)")
	}
	d, decided, err := l.holder.AcquireAt(key, n, now)
	if err != nil || decided {
		return d, err
	}
	call, err := l.holder.InRedisAt(n, now)
	if err != nil {
		return librate.Decision{}, err
	}
	if d, ok := l.inRedis(ctx, key, n, call); ok {
		return d, nil
	}
	return l.byFallback(key, n, func() (librate.Decision, error) { return l.fallback.AcquireAt(key, n, now) })
}

// Rules is the rule of every key, alone, as a librate.RequestLimiter (for
// librate.NewMiddleware).
func (l *KeyedLeasedLimiter) Rules() []librate.Config {
	return []librate.Config{l.holder.Rule().Config}
}

// LimitRequest takes costs[0] units (nil costs: 1) for key, as a librate.RequestLimiter:
// Acquire (a hot key decided in process, any other in Redis), or, when t is not the
// zero Time, AcquireAt t as nanoseconds since the Unix epoch, which only a
// KeyedLeasedLimiter from NewKeyedLeasedManual takes (librate.MiddlewareOptions.Now
// then sets the timeline of the script and the shares alike).
func (l *KeyedLeasedLimiter) LimitRequest(ctx context.Context, key string, t time.Time, costs []int) (librate.PolicyDecision, error) {
	return limitKey(t, costs,
		func(n int) (librate.Decision, error) { return l.Acquire(ctx, key, n) },
		func(n int, now uint64) (librate.Decision, error) { return l.AcquireAt(ctx, key, n, time.Duration(now)) })
}

// inRedis sends call, a request of n units for key, and reads the decision; false when
// Redis gave none, a failure counted and kept.
func (l *KeyedLeasedLimiter) inRedis(ctx context.Context, key string, n int, call librate.Renewal) (librate.Decision, bool) {
	redisKey := l.Key(key)
	reply, err := l.script.Run(ctx, l.client, []string{redisKey}, arguments(call)...).Result()
	if err == nil {
		var d librate.Decision
		if d, err = l.decisionOf(n, reply); err == nil {
			return d, true
		}
	}
	l.renewer.failed(redisKey, err)
	return librate.Decision{}, false
}

// decisionOf reads the answer to a request of n units decided in Redis: {allowed, limit,
// remaining, retry_after_us, reset_after_us}, integers or decimal strings. Anything else,
// or an answer the holder refuses (librate.ErrReply), is ErrReply.
func (l *KeyedLeasedLimiter) decisionOf(n int, reply any) (librate.Decision, error) {
	values, ok := reply.([]any)
	var fields [librate.KeyedLeaseFields]int64
	ok = ok && len(values) == len(fields)
	for i := 0; ok && i < len(fields); i++ {
		fields[i], ok = signed(values[i])
	}
	if !ok {
		return librate.Decision{}, fmt.Errorf("%w %v", ErrReply, reply)
	}
	d, err := l.holder.Decision(n, fields)
	if err != nil {
		return librate.Decision{}, fmt.Errorf("%w %v: %w", ErrReply, reply, err)
	}
	return d, nil
}

// signed is a reply field as an int64: an integer or a decimal string.
func signed(field any) (int64, bool) {
	switch field := field.(type) {
	case int64:
		return field, true
	case string:
		v, err := strconv.ParseInt(field, 10, 64)
		return v, err == nil
	}
	return 0, false
}

// byFallback decides n units for key that Redis did not decide: by the local rule
// (local), whose refusal (a full table, n above its burst) is a denial, or else a denial
// until the next renewal interval.
func (l *KeyedLeasedLimiter) byFallback(key string, n int, local func() (librate.Decision, error)) (librate.Decision, error) {
	if l.fallback != nil {
		if d, err := local(); err == nil {
			return d, nil
		}
	}
	if n == 0 {
		return librate.Decision{Allowed: true}, nil
	}
	return librate.Decision{RetryAfter: l.holder.Rule().RenewEvery}, nil
}

// Failures counts the calls Redis did not answer with a grant or a decision:
// unreachable, too slow, an error reply, or a reply no script gives.
func (l *KeyedLeasedLimiter) Failures() uint64 { return l.renewer.failures.Load() }

// Err returns the last failure, an *Error naming its key's Redis key (see Failures), or
// nil once a round since has renewed every key.
func (l *KeyedLeasedLimiter) Err() error { return l.renewer.err() }

// Renew runs a round of renewals now, by the server's clock: it leases the keys hot
// since the last round and renews every key leased. It returns how many keys Redis
// answered, and the first failure (each key not answered decides from the lease it holds
// until it ends).
func (l *KeyedLeasedLimiter) Renew(ctx context.Context) (int, error) {
	return l.renew(ctx, l.holder.Renewals, (*librate.KeyedRound).Apply)
}

// RenewAt runs a round at now on the caller's timeline, which the script decides at, as
// Renew does. Only a KeyedLeasedLimiter from NewKeyedLeasedManual takes it (the error is
// otherwise librate.ErrInvalidArgument).
func (l *KeyedLeasedLimiter) RenewAt(ctx context.Context, now time.Duration) (int, error) {
	switch {
	case now < 0:
		return 0, negativeNow(now)
	case l.renewer.background():
		return 0, invalid("RenewAt on a KeyedLeasedLimiter that renews itself (NewKeyedLeasedManual renews by hand)")
	}
	return l.renew(ctx,
		func() (*librate.KeyedRound, error) { return l.holder.RenewalsAt(now) },
		func(round *librate.KeyedRound, i int, status string, fields [librate.LeaseFields]uint64) (librate.HolderState, error) {
			return round.ApplyAt(i, status, fields, now)
		})
}

// renew makes a round, sends its calls one after another and applies each answer, in
// one turn.
func (l *KeyedLeasedLimiter) renew(ctx context.Context, start func() (*librate.KeyedRound, error),
	apply func(*librate.KeyedRound, int, string, [librate.LeaseFields]uint64) (librate.HolderState, error)) (int, error) {
	if ctx == nil {
		return 0, invalid("nil context")
	}
	l.renewing.Lock()
	defer l.renewing.Unlock()
	round, err := start()
	if err != nil {
		return 0, err
	}
	defer round.Close()
	renewed := 0
	var first error
	for i, call := range round.Renewals {
		redisKey := l.Key(call.Key)
		reply, err := l.script.Run(ctx, l.client, []string{redisKey}, arguments(call.Renewal)...).Result()
		if err == nil {
			_, err = answer(call.Renewal, reply, func(_ librate.Renewal, status string, fields [librate.LeaseFields]uint64) (librate.HolderState, error) {
				return apply(round, i, status, fields)
			})
		}
		if err != nil {
			first = cmp.Or(first, l.renewer.failed(redisKey, err))
			continue
		}
		renewed++
	}
	if first == nil {
		l.renewer.succeeded()
	}
	return renewed, first
}

// handBack stops leasing every key and hands each share back, within one renewal
// interval: from then on every request is decided in Redis.
func (l *KeyedLeasedLimiter) handBack(ctx context.Context) error {
	l.renewing.Lock()
	defer l.renewing.Unlock()
	round, err := l.holder.ReleaseAll()
	if err != nil {
		return err
	}
	defer round.Close()
	call, cancel := context.WithTimeout(ctx, l.holder.Rule().RenewEvery)
	defer cancel()
	var first error
	for _, r := range round.Renewals {
		redisKey := l.Key(r.Key)
		if err := l.script.Run(call, l.client, []string{redisKey}, arguments(r.Renewal)...).Err(); err != nil {
			first = cmp.Or(first, l.renewer.failed(redisKey, err))
		}
	}
	return first
}

// Close stops renewing, hands every share back (the other holders of each key share it
// from their next renewals) and frees the holder: afterwards every decision is
// librate.ErrClosed. It returns the first hand-back's failure, if any, as an *Error: those
// shares return to their rules when their leases end. It is idempotent, and must not run
// concurrently with other calls on l.
func (l *KeyedLeasedLimiter) Close() error {
	return l.renewer.close(l.handBack, func() {
		l.holder.Close()
		l.fallback.Close()
	})
}
