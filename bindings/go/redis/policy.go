package librateredis

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
)

// Policy enforces several librate.Configs over each key under a prefix at once, in
// Redis: a request is admitted iff every rule admits it, and a denied request takes from
// no rule. One script call decides every rule of a key at one time and writes their
// states only if all admit, so each decision is exact and atomic on Redis: that of
// librate.Policy, field for field, for the same times. Rule i of a key is kept at
// "prefix{=key}:i": every rule's key has the hash tag "=key", so a request stays in one
// Cluster slot. A Policy is safe for concurrent use and holds no state of its own
// besides the client, its shadow rules (SetShadow) and its counts (EnableCounts).
type Policy struct {
	client redis.UniversalClient
	rules  []librate.Config
	prefix string
	script *redis.Script
	// limit is the most units one request may take (the least of the rules');
	// configArgs the script's configuration arguments, as decimal strings.
	limit      uint64
	configArgs []any
	// shadow is the shadow rules' mask, sent with each call (docs/policies.md#shadow-rules).
	shadow atomic.Uint32
	counts tally
}

// NewPolicy returns a Policy of rules (1 to librate.MaxRules, any algorithms) for the
// keys under prefix, deciding through client. The error is librate's: a
// *librate.ConfigError (matching librate.ErrInvalidConfig) for a wrong number of rules,
// a rule New refuses, or a prefix holding "{" or "}" (which would make part of it the
// rules' hash tag); librate.ErrInvalidArgument for a nil client. Unless given
// GoRedisLog, it silences go-redis's logger (see GoRedisLog).
func NewPolicy(client redis.UniversalClient, rules []librate.Config, prefix string, options ...Option) (*Policy, error) {
	if client == nil {
		return nil, invalid("NewPolicy with a nil client")
	}
	if strings.ContainsAny(prefix, "{}") {
		return nil, &librate.ConfigError{Reason: fmt.Sprintf("a Redis policy's prefix must not contain '{' or '}': %q", prefix)}
	}
	script, err := librate.PrepareRedisPolicy(rules...)
	if err != nil {
		return nil, err
	}
	apply(options)
	return &Policy{
		client:     client,
		rules:      append([]librate.Config(nil), rules...),
		prefix:     prefix,
		script:     redis.NewScript(script.Source),
		limit:      script.Limit,
		configArgs: decimals(script.ConfigArgs),
	}, nil
}

// SetShadow makes the rules of these indices this client's shadow rules, as
// librate.Policy.SetShadow does: the script decides them and reports their would-be
// denials (PolicyDecision.ShadowDeniedBy), and they never deny. The shadow rules are this
// client's, sent with each call, never stored in Redis: give every client of the policy
// the same. An index outside the rules is a *librate.ConfigError and changes nothing.
func (p *Policy) SetShadow(rules ...int) error {
	mask, err := librate.ShadowMask(len(p.rules), rules...)
	if err != nil {
		return err
	}
	p.shadow.Store(mask)
	return nil
}

// Shadow returns this client's shadow rules' indices, in order.
func (p *Policy) Shadow() []int { return librate.ShadowIndices(p.shadow.Load()) }

// decimals are args as the decimal strings a script takes.
func decimals(args []uint64) []any {
	strs := make([]any, len(args))
	for i, arg := range args {
		strs[i] = strconv.FormatUint(arg, 10)
	}
	return strs
}

// Rules returns the rules, in the order given.
func (p *Policy) Rules() []librate.Config { return append([]librate.Config(nil), p.rules...) }

// Limit returns the largest n the policy can ever admit: the least of its rules' limits.
func (p *Policy) Limit() uint64 { return p.limit }

// Keys returns the Redis keys holding key's rules' states, in rule order.
func (p *Policy) Keys(key string) []string {
	common := p.prefix + "{=" + key + "}:"
	keys := make([]string, len(p.rules))
	for i := range keys {
		keys[i] = common + strconv.Itoa(i)
	}
	return keys
}

// Allow reports whether one unit is admitted now for key by every rule, by the server's
// clock. A denial is false with a nil error; an error is never an admission.
func (p *Policy) Allow(ctx context.Context, key string) (bool, error) {
	d, err := p.Acquire(ctx, key, 1)
	return d.Allowed, err
}

// Acquire takes n units for key now, by the server's clock, from every rule or from
// none, and reports the decision; n == 0 is a query. A denial is a PolicyDecision with
// Allowed false and a nil error. Errors: librate.ErrInsufficientCapacity (n above
// Limit) and librate.ErrInvalidArgument (n negative, or a nil ctx), before anything is
// sent; an *Error when Redis gives no decision (a rule's key holding something else is
// one, and nothing is written).
func (p *Policy) Acquire(ctx context.Context, key string, n int) (librate.PolicyDecision, error) {
	return p.decide(ctx, key, n, "")
}

// AcquireAt is Acquire with every rule decided at now on the caller's timeline instead
// of the server's clock, as Limiter.AcquireAt takes it. Use one timeline per key.
func (p *Policy) AcquireAt(ctx context.Context, key string, n int, now time.Duration) (librate.PolicyDecision, error) {
	if now < 0 {
		return librate.PolicyDecision{}, negativeNow(now)
	}
	return p.acquireAtNs(ctx, key, n, uint64(now))
}

// acquireAtNs is AcquireAt anywhere on the script's uint64 timeline.
func (p *Policy) acquireAtNs(ctx context.Context, key string, n int, now uint64) (librate.PolicyDecision, error) {
	return p.decide(ctx, key, n, strconv.FormatUint(now, 10))
}

// Reset deletes key's state in every rule (one DEL of its rules' keys), so its next
// request finds every rule full, as a fresh key does; other keys keep theirs.
func (p *Policy) Reset(ctx context.Context, key string) error {
	return deleted(ctx, p.client, p.Keys(key))
}

func (p *Policy) decide(ctx context.Context, key string, n int, now string) (librate.PolicyDecision, error) {
	r := request{n: n, now: now}
	if err := checked(ctx, r, p.limit, false); err != nil {
		return librate.PolicyDecision{}, err
	}
	keys := p.Keys(key)
	args := append([]any{now, strconv.Itoa(n), "0"}, p.configArgs...)
	shadow := p.shadow.Load()
	if shadow != 0 {
		args = append(args, strconv.FormatUint(uint64(shadow), 10))
	}
	// EVALSHA, then EVAL (which caches the script again) after NOSCRIPT.
	cmd := p.script.Run(ctx, p.client, keys, args...)
	d, err := p.decisionOf(keys[0], cmd.Val(), cmd.Err(), shadow)
	if err == nil {
		p.counts.count(n, d.DeniedBy, shadowDenials(d))
	}
	return d, err
}

// decisionOf reads the rules' decisions a policy's script replied, in rule order, and
// combines them as librate.Policy does: admitted iff every rule admitted, denied by the
// first that denied, Limit and Remaining the least, RetryAfter and ResetAfter the
// greatest, Wait 0; with the shadow rules of the mask shadow, over the other rules alone
// (each its own Limit; every rule shadow: admitted, Limit and Remaining MaxUint64).
func (p *Policy) decisionOf(redisKey string, reply any, err error, shadow uint32) (librate.PolicyDecision, error) {
	if err != nil {
		return librate.PolicyDecision{}, &Error{Key: redisKey, Err: err}
	}
	replies, ok := reply.([]any)
	if !ok || len(replies) != len(p.rules) {
		return librate.PolicyDecision{}, &Error{Key: redisKey, Err: fmt.Errorf("%w %v", ErrReply, reply)}
	}
	combined := librate.PolicyDecision{
		Decision: librate.Decision{Allowed: true, Limit: p.limit, Remaining: p.limit},
		DeniedBy: -1,
		Rules:    make([]librate.Decision, len(replies)),
		Shadow:   shadow,
	}
	if shadow != 0 {
		combined.Limit, combined.Remaining = math.MaxUint64, math.MaxUint64
	}
	for i, each := range replies {
		rule, err := decisionOf(redisKey, each, nil)
		if err != nil {
			return librate.PolicyDecision{}, err
		}
		combined.Rules[i] = rule
		if shadow>>i&1 == 1 {
			continue
		}
		if shadow != 0 {
			combined.Limit = min(combined.Limit, rule.Limit)
		}
		if !rule.Allowed && combined.Allowed {
			combined.Allowed, combined.DeniedBy = false, i
		}
		combined.Remaining = min(combined.Remaining, rule.Remaining)
		combined.RetryAfter = max(combined.RetryAfter, rule.RetryAfter)
		combined.ResetAfter = max(combined.ResetAfter, rule.ResetAfter)
	}
	return combined, nil
}

// deleted is the DEL of redisKeys: a key's state, gone, is a fresh state.
func deleted(ctx context.Context, client redis.UniversalClient, redisKeys []string) error {
	if ctx == nil {
		return invalid("nil context")
	}
	if err := client.Del(ctx, redisKeys...).Err(); err != nil {
		return &Error{Key: redisKeys[0], Err: err}
	}
	return nil
}
