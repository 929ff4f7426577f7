package librateredis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
)

// LeasedLimiter holds a share of a global rule kept in Redis and decides from it in
// process (docs/leases.md): a decision is one cgo call and never waits on Redis. A
// goroutine renews the lease every rule.RenewEvery over the caller's client, each call
// bounded by that interval (with the client's ContextTimeoutEnabled; otherwise its
// ReadTimeout and WriteTimeout bound it), and Redis shares the rule among its holders by
// their demand. While Redis does not answer, the holder decides from its lease until the
// lease ends, then by its fallback, and InFallback says so. Redis's errors and replies no
// script gives are counted and kept (Failures, Err), never decisions.
//
// The rule's Redis key is the one key of every call, so on a Cluster a rule lives in one
// slot. Every host that enforces the rule uses the same key and the same rule.
//
// Its decisions are safe for concurrent use. Close stops the goroutine and hands the
// share back to the others. NewLeasedHost's is the one holder of every process of a
// host, in a file, renewed by one of them at a time.
type LeasedLimiter struct {
	holder *librate.LeaseHolder
	client redis.UniversalClient
	key    string
	// script is the holder's lease script: EVALSHA, and EVAL after NOSCRIPT.
	script *redis.Script
	// renewing serializes renewals and the hand-back: a renewal's arguments, its call
	// and its answer are one turn.
	renewing sync.Mutex
	renewer  renewer
}

// NewLeased returns a holder of rule at the Redis key key, renewing in a goroutine by
// the server's clock until Close, or until ctx ends (which hands the share back too:
// afterwards it decides by its fallback). The first renewal is sent at once; until its
// answer the holder decides by options.Fallback, and a rule new to Redis grants nothing
// for one lease. The error is librate's, as librate.NewLeaseHolder's, or
// librate.ErrInvalidArgument for a nil client or ctx. Unless given GoRedisLog, it
// silences go-redis's logger (see GoRedisLog).
func NewLeased(ctx context.Context, client redis.UniversalClient, key string, rule librate.LeaseRule,
	options librate.LeaseOptions, more ...Option) (*LeasedLimiter, error) {
	if ctx == nil {
		return nil, invalid("NewLeased with a nil context")
	}
	l, err := NewLeasedManual(client, key, rule, options, more...)
	if err != nil {
		return nil, err
	}
	l.start(ctx)
	return l, nil
}

// NewLeasedHost returns the holder of rule for this host (docs/leases.md, one share for
// a host), in the file at path (librate.OpenLeaseHolder): every worker process of the
// host that opens it decides from one share, and one of them renews it. Each process
// runs NewLeased's goroutine, which renews only while its holder leads (Lead): the first
// process to claim the renewing, until it closes, its ctx ends or it dies, when another
// process's goroutine takes it over. Close, or the end of ctx, gives up renewing and
// hands nothing back: the other processes still decide from the share, which lapses once
// none renews it. The error is librate.OpenLeaseHolder's, or librate.ErrInvalidArgument
// for a nil client or ctx.
func NewLeasedHost(ctx context.Context, client redis.UniversalClient, key, path string, rule librate.LeaseRule,
	options librate.LeaseOptions, more ...Option) (*LeasedLimiter, error) {
	switch {
	case ctx == nil:
		return nil, invalid("NewLeasedHost with a nil context")
	case client == nil:
		return nil, invalid("NewLeasedHost with a nil client")
	}
	holder, err := librate.OpenLeaseHolder(path, rule, options)
	if err != nil {
		return nil, err
	}
	l := leased(client, key, holder, more)
	l.start(ctx)
	return l, nil
}

// NewLeasedManual is NewLeased without the goroutine: the caller renews, with RenewAt on
// a timeline of its own (simulations, tests: every holder of the rule on that timeline,
// their decisions with AcquireAt) or Renew by the server's clock.
func NewLeasedManual(client redis.UniversalClient, key string, rule librate.LeaseRule,
	options librate.LeaseOptions, more ...Option) (*LeasedLimiter, error) {
	if client == nil {
		return nil, invalid("NewLeased with a nil client")
	}
	holder, err := librate.NewLeaseHolder(rule, options)
	if err != nil {
		return nil, err
	}
	return leased(client, key, holder, more), nil
}

// leased is the LeasedLimiter of holder, renewed by hand until start.
func leased(client redis.UniversalClient, key string, holder *librate.LeaseHolder, more []Option) *LeasedLimiter {
	apply(more)
	script := redis.NewScript(holder.Script())
	return &LeasedLimiter{holder: holder, client: client, key: key, script: script}
}

// start renews l in a goroutine until Close or ctx's end: a renewal at once and then every
// RenewEvery while this process leads (always, for a holder of its own); then the
// hand-back.
func (l *LeasedLimiter) start(ctx context.Context) {
	l.renewer.start(ctx, l.holder.Rule().RenewEvery, func(call context.Context) {
		if l.holder.Lead() {
			_, _ = l.Renew(call)
		}
	}, l.handBack)
}

// Key returns the rule's Redis key.
func (l *LeasedLimiter) Key() string { return l.key }

// Holder returns the holder deciding: its State, StateAt, LastGrant and At forms.
func (l *LeasedLimiter) Holder() *librate.LeaseHolder { return l.holder }

// Allow reports whether one unit is admitted now (librate.LeaseHolder.Allow).
func (l *LeasedLimiter) Allow() bool { return l.holder.Allow() }

// AllowN reports whether n units are admitted at t (librate.LeaseHolder.AllowN).
func (l *LeasedLimiter) AllowN(t time.Time, n int) bool { return l.holder.AllowN(t, n) }

// Acquire takes n units now if the share allows, and reports the decision, whose fields
// are the share's (librate.LeaseHolder.Acquire).
func (l *LeasedLimiter) Acquire(n int) (librate.Decision, error) { return l.holder.Acquire(n) }

// AcquireAt is Acquire at now on the caller's timeline, the one RenewAt takes.
func (l *LeasedLimiter) AcquireAt(n int, now time.Duration) (librate.Decision, error) {
	return l.holder.AcquireAt(n, now)
}

// Rules is the global rule's Config, alone, as a librate.RequestLimiter (for
// librate.NewMiddleware): the limit the holders together keep.
func (l *LeasedLimiter) Rules() []librate.Config { return l.holder.Rules() }

// LimitRequest takes costs[0] units (nil costs: 1) for every key together, as a
// librate.RequestLimiter: decided in process from the share held now, or by the
// fallback, never waiting on Redis (librate.LeaseHolder.LimitRequest). With
// librate.MiddlewareOptions.Shadow, the middleware trials the whole leased limit.
func (l *LeasedLimiter) LimitRequest(ctx context.Context, key string, t time.Time, costs []int) (librate.PolicyDecision, error) {
	return l.holder.LimitRequest(ctx, key, t, costs)
}

// InFallback reports whether decisions come from the fallback now: the holder has no
// lease and no answer from Redis (not yet, or not since its lease ended).
func (l *LeasedLimiter) InFallback() bool { return l.holder.State() == librate.InFallback }

// Failures counts the renewals and hand-backs that Redis did not answer with a grant:
// unreachable, too slow, an error reply, or a reply no script gives.
func (l *LeasedLimiter) Failures() uint64 { return l.renewer.failures.Load() }

// Err returns the last failure, an *Error (see Failures), or nil once a renewal since
// has succeeded.
func (l *LeasedLimiter) Err() error { return l.renewer.err() }

// Renew renews the lease now, by the server's clock, and reports where decisions come
// from afterwards, whether or not this process leads (Holder().Lead()). The error is the
// failure Failures counts; either way the holder decides from the lease it holds until
// it ends.
func (l *LeasedLimiter) Renew(ctx context.Context) (librate.HolderState, error) {
	return l.renew(ctx, l.holder.Renewal, l.holder.Apply, l.holder.State)
}

// RenewAt renews the lease at now on the caller's timeline, which the script decides at
// (simulations: every holder of a rule on one timeline), as Renew does. Only a
// LeasedLimiter from NewLeasedManual takes it: NewLeased's renews by the server's clock,
// and the error is then librate.ErrInvalidArgument.
func (l *LeasedLimiter) RenewAt(ctx context.Context, now time.Duration) (librate.HolderState, error) {
	switch {
	case now < 0:
		return librate.InFallback, negativeNow(now)
	case l.renewer.background():
		// Its goroutine renews by the server's clock: one rule, two timelines.
		return librate.InFallback, invalid("RenewAt on a LeasedLimiter that renews itself (NewLeasedManual renews by hand)")
	}
	return l.renew(ctx,
		func() (librate.Renewal, error) { return l.holder.RenewalAt(now) },
		func(r librate.Renewal, status string, fields [librate.LeaseFields]uint64) (librate.HolderState, error) {
			return l.holder.ApplyAt(r, status, fields, now)
		},
		func() librate.HolderState { return l.holder.StateAt(now) })
}

// applier applies a renewal's answer, at a time of its own.
type applier func(r librate.Renewal, status string, fields [librate.LeaseFields]uint64) (librate.HolderState, error)

// renew asks for a renewal, sends it and applies the answer, in one turn; on a failure
// it reports the state at the renewal's time.
func (l *LeasedLimiter) renew(ctx context.Context, renewal func() (librate.Renewal, error), apply applier,
	state func() librate.HolderState) (librate.HolderState, error) {
	if ctx == nil {
		return librate.InFallback, invalid("nil context")
	}
	l.renewing.Lock()
	defer l.renewing.Unlock()
	r, err := renewal()
	if err != nil {
		return librate.InFallback, err
	}
	reply, err := l.script.Run(ctx, l.client, []string{l.key}, arguments(r)...).Result()
	if err != nil {
		return state(), l.renewer.failed(l.key, err)
	}
	applied, err := answer(r, reply, apply)
	if err != nil {
		return state(), l.renewer.failed(l.key, err)
	}
	l.renewer.succeeded()
	return applied, nil
}

// answer applies a renewal's reply: {status, rate, burst, lease_us, epoch, held_rate,
// held_burst, holders, window}, integers or decimal strings. Anything else, or a reply the
// holder refuses (librate.ErrReply), is ErrReply, and nothing of it is applied.
func answer(r librate.Renewal, reply any, apply applier) (librate.HolderState, error) {
	status, fields, ok := grantOf(reply)
	if !ok {
		return librate.InFallback, fmt.Errorf("%w %v", ErrReply, reply)
	}
	state, err := apply(r, status, fields)
	if err != nil {
		return librate.InFallback, fmt.Errorf("%w %v: %w", ErrReply, reply, err)
	}
	return state, nil
}

// grantOf reads a renewal's reply as a status and librate.LeaseFields unsigned integers.
func grantOf(reply any) (status string, fields [librate.LeaseFields]uint64, ok bool) {
	values, ok := reply.([]any)
	if !ok || len(values) != 1+len(fields) {
		return "", fields, false
	}
	status, ok = values[0].(string)
	for i := 0; ok && i < len(fields); i++ {
		fields[i], ok = unsigned(values[1+i])
	}
	return status, fields, ok
}

// arguments are a renewal's Args as go-redis takes them.
func arguments(r librate.Renewal) []any {
	args := make([]any, len(r.Args))
	for i, arg := range r.Args {
		args[i] = arg
	}
	return args
}

// handBack stops the holder deciding from its share and hands it back to the rule,
// within one renewal interval. A host's holder only gives up renewing: the host's other
// processes decide from the share still.
func (l *LeasedLimiter) handBack(ctx context.Context) error {
	l.renewing.Lock()
	defer l.renewing.Unlock()
	if l.holder.Path() != "" {
		l.holder.StepDown()
		return nil
	}
	r, err := l.holder.Release()
	if err != nil {
		return err
	}
	call, cancel := context.WithTimeout(ctx, l.holder.Rule().RenewEvery)
	defer cancel()
	if err := l.script.Run(call, l.client, []string{l.key}, arguments(r)...).Err(); err != nil {
		return l.renewer.failed(l.key, err)
	}
	return nil
}

// Close stops renewing, hands the share back (the other holders share it from their
// next renewals; a host's holder gives up renewing instead, for another process to take
// over) and frees the holder: afterwards every decision is librate.ErrClosed.
// It returns the hand-back's failure, if any, as an *Error: the share then returns to
// the rule when its lease ends. It is idempotent, and must not run concurrently with
// other calls on l.
func (l *LeasedLimiter) Close() error {
	return l.renewer.close(l.handBack, func() { l.holder.Close() })
}
