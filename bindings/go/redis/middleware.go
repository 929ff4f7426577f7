package librateredis

import (
	"context"
	"fmt"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// Rules is the limiter's Config, alone, as a librate.RequestLimiter.
func (l *Limiter) Rules() []librate.Config { return []librate.Config{l.config} }

// LimitRequest takes costs[0] units (nil costs: 1) for key, as a librate.RequestLimiter,
// for librate.NewMiddleware: with the request's context, so a slow or unreachable
// server costs a request no more than its own deadline, and by the server's clock, which
// every host shares, or at t, as nanoseconds since the Unix epoch (the server clock's
// timeline) when t is not the zero Time. The middleware answers what Redis does not
// decide as librate.MiddlewareOptions.FailOpen says: the request served unlimited, or
// 503.
func (l *Limiter) LimitRequest(ctx context.Context, key string, t time.Time, costs []int) (librate.PolicyDecision, error) {
	return limitKey(t, costs,
		func(n int) (librate.Decision, error) { return l.Acquire(ctx, key, n) },
		func(n int, now uint64) (librate.Decision, error) { return l.acquireAtNs(ctx, key, n, now) })
}

// limitKey is the LimitRequest of a limit of one rule per key: costs[0] units (nil
// costs: 1) by decide, now by the limiter's clock, or by decideAt, at t as nanoseconds
// since the Unix epoch, when t is not the zero Time.
func limitKey(t time.Time, costs []int, decide func(n int) (librate.Decision, error),
	decideAt func(n int, now uint64) (librate.Decision, error)) (librate.PolicyDecision, error) {
	n, err := uniformCost(costs, 1)
	if err != nil {
		return librate.PolicyDecision{}, err
	}
	if t.IsZero() {
		return oneRule(decide(n))
	}
	now, err := unixNanos(t)
	if err != nil {
		return librate.PolicyDecision{}, err
	}
	return oneRule(decideAt(n, now))
}

// LimitRequest takes n units of every rule for key, or none, as a
// librate.RequestLimiter, as Limiter.LimitRequest does. The policy's script takes one
// cost for every rule: costs other than one per rule, all equal, are
// librate.ErrUnsupported.
func (p *Policy) LimitRequest(ctx context.Context, key string, t time.Time, costs []int) (librate.PolicyDecision, error) {
	n, err := uniformCost(costs, len(p.rules))
	if err != nil {
		return librate.PolicyDecision{}, err
	}
	if t.IsZero() {
		return p.Acquire(ctx, key, n)
	}
	now, err := unixNanos(t)
	if err != nil {
		return librate.PolicyDecision{}, err
	}
	return p.acquireAtNs(ctx, key, n, now)
}

// IsPolicy marks p as a librate.PolicyLimiter: NewMiddleware names its rules as a
// policy's, "rule0", "rule1", … (even one).
func (p *Policy) IsPolicy() {}

// ForMiddleware returns l, which is a librate.RequestLimiter.
//
// Deprecated: pass l to librate.NewMiddleware itself; ForMiddleware goes in the next
// release.
func (l *Limiter) ForMiddleware() librate.RequestLimiter { return l }

// ForMiddleware returns p, which is a librate.RequestLimiter.
//
// Deprecated: pass p to librate.NewMiddleware itself; ForMiddleware goes in the next
// release.
func (p *Policy) ForMiddleware() librate.RequestLimiter { return p }

// uniformCost is the one cost a request of costs takes of each of rules rules: 1 for
// nil costs, else the cost every rule shares.
func uniformCost(costs []int, rules int) (int, error) {
	if costs == nil {
		return 1, nil
	}
	if len(costs) != rules {
		return 0, invalid("%d costs for %d rules", len(costs), rules)
	}
	for _, cost := range costs {
		if cost != costs[0] {
			return 0, &refusal{what: fmt.Sprintf("costs %v", costs),
				text: "unsupported: a Redis policy takes one cost for every rule", err: librate.ErrUnsupported}
		}
	}
	return costs[0], nil
}

// unixNanos is t as nanoseconds since the Unix epoch, the timeline of the server's clock.
func unixNanos(t time.Time) (uint64, error) {
	if t.Before(time.Unix(0, 0)) {
		return 0, invalid("time %v is before the Unix epoch", t)
	}
	return uint64(t.UnixNano()), nil
}

// oneRule is a limiter's decision as a policy of one rule.
func oneRule(d librate.Decision, err error) (librate.PolicyDecision, error) {
	if err != nil {
		return librate.PolicyDecision{}, err
	}
	deniedBy := -1
	if !d.Allowed {
		deniedBy = 0
	}
	return librate.PolicyDecision{Decision: d, DeniedBy: deniedBy, Rules: []librate.Decision{d}}, nil
}
