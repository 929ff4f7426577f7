package librateredis

import (
	"context"
	"fmt"
	"time"

	librate "librate/bindings/go"
)

// ForMiddleware returns l as a librate.ContextLimiter for librate.NewMiddleware. The
// middleware then decides each request with the request's context, by the Redis
// server's clock (or, when MiddlewareOptions.Now is set, at the time it gives), and
// answers what Redis does not decide as MiddlewareOptions.FailOpen says: the request
// served unlimited, or 503.
func (l *Limiter) ForMiddleware() librate.ContextLimiter {
	return requests{contextual[librate.Decision]{l.Acquire, l.AcquireAt}, l}
}

// requests is Limiter.ForMiddleware's adapter.
type requests struct {
	contextual[librate.Decision]
	limiter *Limiter
}

func (r requests) Config() librate.Config { return r.limiter.Config() }

// ForMiddleware returns p as a librate.ContextPolicyLimiter for
// librate.NewPolicyMiddleware, which then decides each request as over a Limiter's
// ForMiddleware: with the request's context, by the Redis server's clock (or at
// MiddlewareOptions.Now), failing open or closed on what Redis does not decide. Every
// request takes 1 unit of every rule: the policy's script takes one cost for all its
// rules, so MiddlewareOptions.Costs are refused (ErrInvalidArgument).
func (p *Policy) ForMiddleware() librate.ContextPolicyLimiter {
	return policyRequests{contextual[librate.PolicyDecision]{p.Acquire, p.AcquireAt}, p}
}

// policyRequests is Policy.ForMiddleware's adapter.
type policyRequests struct {
	contextual[librate.PolicyDecision]
	policy *Policy
}

func (r policyRequests) Rules() []librate.Config { return r.policy.Rules() }

// contextual is the part of a middleware's adapter that decides, for a Limiter (D a
// librate.Decision) or a Policy (a librate.PolicyDecision): its Acquire and AcquireAt.
type contextual[D any] struct {
	acquire   func(ctx context.Context, key string, n int) (D, error)
	acquireAt func(ctx context.Context, key string, n int, now uint64) (D, error)
}

// AcquireAt is AcquireAtContext without a deadline of its own (the client's timeouts
// still apply).
func (c contextual[D]) AcquireAt(key string, n int, now time.Duration) (D, error) {
	return c.AcquireAtContext(context.Background(), key, n, now)
}

func (c contextual[D]) AcquireAtContext(ctx context.Context, key string, n int, now time.Duration) (D, error) {
	if now < 0 {
		var none D
		return none, fmt.Errorf("librateredis: now is %v: %w", now, librate.ErrInvalidArgument)
	}
	return c.acquireAt(ctx, key, n, uint64(now))
}

func (c contextual[D]) AcquireContext(ctx context.Context, key string, n int) (D, error) {
	return c.acquire(ctx, key, n)
}
