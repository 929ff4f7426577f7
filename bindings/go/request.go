package librate

import (
	"context"
	"time"
)

// RequestLimiter is what a Middleware consults for each request, the one interface
// between the middleware and a limiter: *Limiter and *Policy (one limit for all keys
// together), *Keyed and *KeyedPolicy (a limit per key), *LeaseHolder (one limit for all
// keys, leased: docs/leases.md), and the Redis Limiter and Policy (a limit per key across
// hosts) and LeasedLimiter (one global limit, decided in process from this holder's
// share) of package github.com/librate/librate/bindings/go/redis are all RequestLimiters.
type RequestLimiter interface {
	// Rules are the rules each key gets, in order, advertised in RateLimit-Policy: one
	// for a limiter, several for a policy.
	Rules() []Config
	// LimitRequest takes a request's units for key from every rule, or from none, and
	// reports the decision, with one entry in Rules per rule. costs are the units of
	// each rule, one per rule; nil means 1 of every rule. t is the time of the request;
	// the zero Time means now by the limiter's own clock (librate's, or a Redis
	// server's). ctx is the request's: a limiter deciding over the network gives up
	// when it ends.
	LimitRequest(ctx context.Context, key string, t time.Time, costs []int) (PolicyDecision, error)
}

// Rules is the limiter's Config, alone, as a RequestLimiter.
func (l *Limiter) Rules() []Config { return []Config{l.Config()} }

// LimitRequest is Acquire, or AcquireAt t, of costs[0] units (nil costs: 1), for every
// key together, as a RequestLimiter.
func (l *Limiter) LimitRequest(_ context.Context, _ string, t time.Time, costs []int) (PolicyDecision, error) {
	return limitAll(l, t, costs)
}

// Rules is the global rule's Config, alone, as a RequestLimiter: the rule every holder's
// share is part of.
func (h *LeaseHolder) Rules() []Config { return []Config{h.Rule().Config} }

// LimitRequest is Acquire, or AcquireAt t, of costs[0] units (nil costs: 1), for every
// key together, as a RequestLimiter: decided from the share held now, or by the
// fallback (docs/leases.md).
func (h *LeaseHolder) LimitRequest(_ context.Context, _ string, t time.Time, costs []int) (PolicyDecision, error) {
	return limitAll(h, t, costs)
}

// oneLimit is a limit of one rule for every key together: a Limiter, a LeaseHolder.
type oneLimit interface {
	Acquire(n int) (Decision, error)
	AcquireAt(n int, now time.Duration) (Decision, error)
}

// limitAll is the LimitRequest of a limit for every key together: Acquire, or AcquireAt
// t, of costs[0] units (nil costs: 1).
func limitAll(l oneLimit, t time.Time, costs []int) (PolicyDecision, error) {
	n, err := singleCost(costs)
	if err != nil {
		return PolicyDecision{}, err
	}
	if t.IsZero() {
		return oneRule(l.Acquire(n))
	}
	return oneRule(l.AcquireAt(n, time.Duration(onTimeline(t))))
}

// Rules is the table's Config, alone, as a RequestLimiter.
func (k *Keyed) Rules() []Config { return []Config{k.Config()} }

// LimitRequest is Acquire, or AcquireAt t, of costs[0] units (nil costs: 1) for key,
// as a RequestLimiter.
func (k *Keyed) LimitRequest(_ context.Context, key string, t time.Time, costs []int) (PolicyDecision, error) {
	n, err := singleCost(costs)
	if err != nil {
		return PolicyDecision{}, err
	}
	if t.IsZero() {
		return oneRule(k.Acquire(key, n))
	}
	return oneRule(k.AcquireAt(key, n, time.Duration(onTimeline(t))))
}

// LimitRequest is AcquireCosts, or AcquireCostsAt t (nil costs: 1 of every rule), for
// every key together, as a RequestLimiter.
func (p *Policy) LimitRequest(_ context.Context, _ string, t time.Time, costs []int) (PolicyDecision, error) {
	switch {
	case costs == nil && t.IsZero():
		return p.Acquire(1)
	case costs == nil:
		return p.AcquireAt(1, time.Duration(onTimeline(t)))
	case t.IsZero():
		return p.AcquireCosts(costs)
	}
	return p.AcquireCostsAt(costs, time.Duration(onTimeline(t)))
}

// LimitRequest is AcquireCosts, or AcquireCostsAt t (nil costs: 1 of every rule), for
// key, as a RequestLimiter.
func (p *KeyedPolicy) LimitRequest(_ context.Context, key string, t time.Time, costs []int) (PolicyDecision, error) {
	if costs == nil {
		costs = p.uniform(1)
	}
	if t.IsZero() {
		return p.AcquireCosts(key, costs)
	}
	return p.AcquireCostsAt(key, costs, time.Duration(onTimeline(t)))
}

// Shared returns limiter, which is a RequestLimiter whose keys all share its limit.
//
// Deprecated: pass the *Limiter itself; Shared goes in the next release.
func Shared(limiter *Limiter) RequestLimiter { return limiter }

// SharedPolicy returns policy, which is a RequestLimiter whose keys all share its rules.
//
// Deprecated: pass the *Policy itself; SharedPolicy goes in the next release.
func SharedPolicy(policy *Policy) RequestLimiter { return policy }

// singleCost is the units a request takes of a single limiter's one rule: costs[0], or
// 1 for nil costs.
func singleCost(costs []int) (int, error) {
	switch len(costs) {
	case 0:
		if costs == nil {
			return 1, nil
		}
	case 1:
		return costs[0], nil
	}
	return 0, detailed(ErrInvalidArgument, "%d costs for a limiter of one rule", len(costs))
}

// oneRule is a single limiter's decision as a policy of one rule.
func oneRule(d Decision, err error) (PolicyDecision, error) {
	if err != nil {
		return PolicyDecision{}, err
	}
	deniedBy := -1
	if !d.Allowed {
		deniedBy = 0
	}
	return PolicyDecision{Decision: d, DeniedBy: deniedBy, Rules: []Decision{d}}, nil
}

// IsPolicy marks p as a PolicyLimiter: its rules are named as a policy's.
func (p *Policy) IsPolicy() {}

// IsPolicy marks p as a PolicyLimiter: its rules are named as a policy's.
func (p *KeyedPolicy) IsPolicy() {}
