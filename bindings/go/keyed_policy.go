package librate

/*
#include <stdlib.h>
#include "rate.h"

// As in rate.go: librate keeps no pointer past a call and never calls back into Go, so
// the rules, costs and decision on the Go stack stay there.
#cgo noescape rate_keyed_policy_new
#cgo nocallback rate_keyed_policy_new
#cgo noescape rate_keyed_policy_free
#cgo nocallback rate_keyed_policy_free
#cgo noescape rate_keyed_policy_acquire_costs
#cgo nocallback rate_keyed_policy_acquire_costs
#cgo noescape rate_keyed_policy_acquire_costs_at
#cgo nocallback rate_keyed_policy_acquire_costs_at
#cgo noescape rate_keyed_policy_reset
#cgo nocallback rate_keyed_policy_reset
#cgo noescape rate_keyed_policy_read_stats_at
#cgo nocallback rate_keyed_policy_read_stats_at
#cgo noescape rate_keyed_policy_get_rules
#cgo nocallback rate_keyed_policy_get_rules
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"
)

// Scope says whether a KeyedPolicy's rule is kept per key or once for every key.
type Scope uint32

const (
	// Global: one state of the rule for every key (rate.h's RATE_RULE_GLOBAL).
	Global Scope = C.RATE_RULE_GLOBAL
	// PerKey: each key its own state of the rule, in a bounded table (RATE_RULE_PER_KEY).
	PerKey Scope = C.RATE_RULE_PER_KEY
)

// KeyedRule is one rule of a KeyedPolicy: a Config and its Scope.
type KeyedRule struct {
	// Config is the rule: its algorithm, limit, period and burst.
	Config Config
	// Scope says whether each key has its own state of the rule (PerKey) or every key
	// shares one (Global).
	Scope Scope
}

// PerKeyRule is a rule each key has its own state of.
func PerKeyRule(config Config) KeyedRule { return KeyedRule{Config: config, Scope: PerKey} }

// GlobalRule is a rule every key shares one state of.
func GlobalRule(config Config) KeyedRule { return KeyedRule{Config: config, Scope: Global} }

// KeyedPolicy enforces per-key and global rules over one request at once: a request for
// a key is admitted iff every rule admits it (a per-key rule on the key's own state, a
// global rule on the state all keys share), and a denied request takes nothing from any
// rule. Each per-key rule is a table of the policy's capacity, as a *Keyed: a new key
// that finds one full of live keys is ErrTableFull, and nothing is taken.
//
// A request may cost each rule differently (AcquireCosts): a cost of 0 leaves a rule out,
// so one policy holds a site's limits for every kind of request. Its methods are safe for
// concurrent use and never block; what concurrent callers may observe is what they may
// observe of a Policy, rule by rule. It is a RequestLimiter, for NewMiddleware.
//
// A nil or closed KeyedPolicy answers every call with ErrClosed (and Allow with false).
type KeyedPolicy struct {
	ptr *C.rate_keyed_policy
	// The rules last known in force: those given to NewKeyedPolicy or OpenKeyedPolicy,
	// to the last SetRules, or last read by KeyedRules or Rules, which return them once
	// p is closed. Replaced whole, read without a lock; their number never changes.
	rules    atomic.Pointer[[]KeyedRule]
	capacity int
	shadow   shadowRules
	cleanup  runtime.Cleanup
}

// NewKeyedPolicy creates a KeyedPolicy of 1 to MaxRules rules, each per-key rule a table
// of capacity keys, every rule full at any time. A wrong number of rules, a capacity
// below 1 or a rule librate rejects is a *ConfigError.
func NewKeyedPolicy(capacity int, rules ...KeyedRule) (*KeyedPolicy, error) {
	return makeKeyedPolicy(capacity, rules, func(cRules *C.rate_keyed_rule, out **C.rate_keyed_policy) (C.int32_t, error) {
		return C.rate_keyed_policy_new(cRules, C.size_t(len(rules)), C.uint64_t(capacity), out), nil
	})
}

// OpenKeyedPolicy opens the keyed policy whose rules live in the file at path, creating
// the file (mode 0600) if it does not exist: every process that opens the same file with
// the same rules, in the same order, and capacity shares one policy, each rule's limit
// holding across the processes as across goroutines. As OpenKeyed otherwise: a file that
// exists must hold rules (those it was made with, or the last ones any process set in it
// with SetRules, which changes them in the file for every process attached); with the
// option ReplaceRule, a file holding other rules of the same scopes and algorithms is
// given rules instead, as SetRules would change them. A file of other rules or another
// capacity is an *IncompatibleError matching ErrIncompatible, which says what the file
// holds, and is left untouched; with ReplaceRule, one of as many rules and the same
// scopes whose state cannot be carried over (another algorithm, a sliding log's rule) is
// an error matching ErrInvalidConfig, and the file keeps its rules.
func OpenKeyedPolicy(path string, capacity int, rules []KeyedRule, options ...OpenOption) (*KeyedPolicy, error) {
	chosen := chosenOptions(options)
	cPath := C.CString(path)
	defer C.free(unsafe.Pointer(cPath))
	return makeKeyedPolicy(capacity, rules, func(cRules *C.rate_keyed_rule, out **C.rate_keyed_policy) (C.int32_t, error) {
		var status C.int32_t
		var errno error
		if chosen.replaceRule {
			status, errno = C.rate_keyed_policy_open_replacing(cPath, cRules, C.size_t(len(rules)), C.uint64_t(capacity), out)
		} else {
			status, errno = C.rate_keyed_policy_open(cPath, cRules, C.size_t(len(rules)), C.uint64_t(capacity), out)
		}
		switch status {
		case C.RATE_E_IO:
			return status, refusedByOS(path, errno)
		case C.RATE_E_INCOMPATIBLE:
			return status, incompatible(path)
		}
		return status, nil
	})
}

// makeKeyedPolicy checks the rules and capacity, and wraps the handle build creates.
func makeKeyedPolicy(capacity int, rules []KeyedRule, build func(*C.rate_keyed_rule, **C.rate_keyed_policy) (C.int32_t, error)) (*KeyedPolicy, error) {
	if err := ruleCountError(len(rules)); err != nil {
		return nil, err
	}
	if capacity <= 0 {
		return nil, badCapacity(capacity)
	}
	cRules, configs, err := keyedRulesToC(rules)
	if err != nil {
		return nil, err
	}
	var ptr *C.rate_keyed_policy
	status, err := build(&cRules[0], &ptr)
	if err != nil {
		return nil, err
	}
	if status != C.RATE_OK {
		return nil, policyRejected(status, configs[:len(rules)])
	}
	p := &KeyedPolicy{ptr: ptr, capacity: capacity}
	given := slices.Clone(rules)
	p.rules.Store(&given)
	// As for Limiter: the cleanup holds the C pointer, never p.
	p.cleanup = runtime.AddCleanup(p, freeKeyedPolicy, ptr)
	return p, nil
}

// keyedRulesToC is rules (1 to MaxRules of them, checked by the caller) in C form, and
// their configurations alone, or the *ConfigError of the first a Go check rejects.
func keyedRulesToC(rules []KeyedRule) (cRules [MaxRules]C.rate_keyed_rule, configs [MaxRules]C.rate_config, err error) {
	for i, rule := range rules {
		c, err := rule.Config.toC()
		if err != nil {
			return cRules, configs, ruleError(i, err)
		}
		if rule.Scope != PerKey && rule.Scope != Global {
			return cRules, configs, &ConfigError{Reason: fmt.Sprintf("rule %d: scope %d: must be PerKey or Global", i, rule.Scope)}
		}
		cRules[i] = C.rate_keyed_rule{config: c, scope: C.uint32_t(rule.Scope)}
		configs[i] = c
	}
	return cRules, configs, nil
}

func freeKeyedPolicy(ptr *C.rate_keyed_policy) {
	C.rate_keyed_policy_free(ptr)
	noteFreed()
}

// KeyedRules returns a copy of the rules in force, in the order given: those the policy
// was created with, or the last SetRules gave. For a policy from OpenKeyedPolicy, the
// file's rules in force, which SetRules in any process attached, or an opener's
// ReplaceRule, may have changed. A closed KeyedPolicy returns the last ones it knew; so
// does one whose file holds a period no time.Duration holds.
func (p *KeyedPolicy) KeyedRules() []KeyedRule {
	if p == nil {
		return nil
	}
	rules, n := p.inForce()
	return slices.Clone(rules[:n])
}

// Rules returns the configurations of the rules in force (KeyedRules), in the order
// given: what RateLimit-Policy advertises (RequestLimiter).
func (p *KeyedPolicy) Rules() []Config {
	if p == nil {
		return nil
	}
	rules, n := p.inForce()
	configs := make([]Config, n)
	for i, rule := range rules[:n] {
		configs[i] = rule.Config
	}
	return configs
}

// inForce returns, in rules[:n], the rules in force as librate reports them (and keeps
// them in p.rules), or the last ones known when librate reports none (p closed) or one
// no Config holds.
func (p *KeyedPolicy) inForce() (rules [MaxRules]KeyedRule, n int) {
	known := *p.rules.Load()
	n = copy(rules[:], known)
	var held [MaxRules]C.rate_keyed_rule
	status := C.rate_keyed_policy_get_rules(p.handle(), &held[0], C.size_t(n))
	runtime.KeepAlive(p)
	if status != C.RATE_OK {
		return rules, n
	}
	var read [MaxRules]KeyedRule
	for i := range n {
		config, ok := configFromC(held[i].config)
		if !ok {
			return rules, n
		}
		read[i] = KeyedRule{Config: config, Scope: Scope(held[i].scope)}
	}
	if !slices.Equal(read[:n], known) {
		fresh := slices.Clone(read[:n])
		p.rules.Store(&fresh)
	}
	return read, n
}

// Capacity is the capacity each per-key rule's table was created with.
func (p *KeyedPolicy) Capacity() int {
	if p == nil {
		return 0
	}
	return p.capacity
}

// handle is the C handle for one call (NULL when nil or closed; librate answers
// RATE_E_NULL). Every caller follows its C call with runtime.KeepAlive(p).
func (p *KeyedPolicy) handle() *C.rate_keyed_policy {
	if p == nil {
		return nil
	}
	ptr := p.ptr
	maybeGC() // as in Limiter.handle
	return ptr
}

// uniform is n of every rule (0 rules for a nil policy, which librate answers ErrClosed).
func (p *KeyedPolicy) uniform(n int) []int {
	if p == nil {
		return nil
	}
	costs := make([]int, len(*p.rules.Load()))
	for i := range costs {
		costs[i] = n
	}
	return costs
}

// Allow reports whether one unit of every rule is admitted now for key.
func (p *KeyedPolicy) Allow(key string) bool { return p.allowNow(key, 1) }

// AllowN reports whether n units of every rule are admitted for key at time t (and
// takes them), as Limiter.AllowN. It returns false on any error; use Acquire to tell
// those apart from a denial.
func (p *KeyedPolicy) AllowN(key string, t time.Time, n int) bool {
	if n < 0 {
		return false
	}
	d, err := p.acquireCosts(key, p.uniform(n), time.Duration(onTimeline(t)))
	return err == nil && d.Allowed
}

// AllowNow is AllowN now.
//
// Deprecated: use AllowN(key, time.Now(), n); AllowNow was AllowN's shape before 0.2
// and goes in the next release.
func (p *KeyedPolicy) AllowNow(key string, n int) bool { return p.allowNow(key, n) }

// allowNow is Allow for n units.
func (p *KeyedPolicy) allowNow(key string, n int) bool {
	d, err := p.AcquireCosts(key, p.uniform(n))
	return err == nil && d.Allowed
}

// Wait is WaitN(ctx, key, 1).
func (p *KeyedPolicy) Wait(ctx context.Context, key string) error {
	return p.WaitN(ctx, key, 1)
}

// WaitN is Policy.WaitN for key.
func (p *KeyedPolicy) WaitN(ctx context.Context, key string, n int) error {
	return wait(ctx, n, nil, func(n int) (Decision, error) {
		decision, err := p.Acquire(key, n)
		return decision.Decision, err
	})
}

// Acquire takes n units of every rule for key now, or nothing, and reports the decision.
// n == 0 is a query. Errors: ErrInsufficientCapacity (n above a rule's limit),
// ErrTableFull (a new key a per-key rule's full table refuses), ErrInvalidArgument (n
// negative), ErrClosed (nil or closed).
func (p *KeyedPolicy) Acquire(key string, n int) (PolicyDecision, error) {
	return p.AcquireCosts(key, p.uniform(n))
}

// AcquireAt is Acquire at time now on the caller's timeline.
func (p *KeyedPolicy) AcquireAt(key string, n int, now time.Duration) (PolicyDecision, error) {
	return p.AcquireCostsAt(key, p.uniform(n), now)
}

// AcquireCosts takes costs[i] units of rule i for key now, for every rule, or nothing:
// a rule of cost 0 takes no part (its entry in Rules only reports its state, and the
// combined Decision leaves it out). Not one cost per rule is ErrInvalidConfig.
func (p *KeyedPolicy) AcquireCosts(key string, costs []int) (PolicyDecision, error) {
	return p.acquireCosts(key, costs, -1)
}

// AcquireCostsAt is AcquireCosts at time now on the caller's timeline.
func (p *KeyedPolicy) AcquireCostsAt(key string, costs []int, now time.Duration) (PolicyDecision, error) {
	if now < 0 {
		return PolicyDecision{}, negative("now", int64(now))
	}
	return p.acquireCosts(key, costs, now)
}

// acquireCosts decides costs for key at now, or now on librate's clock when now is -1.
func (p *KeyedPolicy) acquireCosts(key string, costs []int, now time.Duration) (PolicyDecision, error) {
	cCosts, err := costArray(costs)
	if err != nil {
		return PolicyDecision{}, err
	}
	k := stringKey(key)
	var out C.rate_policy_decision
	var status C.int32_t
	if now < 0 {
		status = C.rate_keyed_policy_acquire_costs(p.handle(), k.ptr, k.len, &cCosts[0], C.size_t(len(costs)), &out)
	} else {
		status = C.rate_keyed_policy_acquire_costs_at(p.handle(), k.ptr, k.len, &cCosts[0], C.size_t(len(costs)), C.uint64_t(now), &out)
	}
	runtime.KeepAlive(p)
	runtime.KeepAlive(key)
	return policyResult(status, &out, p.shadowMask())
}

// Reset makes key new in every per-key rule: its next request is decided by them as a
// new key's. The global rules keep their counts.
func (p *KeyedPolicy) Reset(key string) error {
	k := stringKey(key)
	status := C.rate_keyed_policy_reset(p.handle(), k.ptr, k.len)
	runtime.KeepAlive(p)
	runtime.KeepAlive(key)
	return okOrError(status)
}

// Stats reports the per-key rules' tables: their capacity and slots, the live keys of the
// fullest, and the requests refused with ErrTableFull. It reads every slot: for a
// dashboard, not a hot path.
func (p *KeyedPolicy) Stats() (KeyedStats, error) {
	return p.StatsAt(Now())
}

// StatsAt is Stats with the live keys counted at time now on the caller's timeline.
func (p *KeyedPolicy) StatsAt(now time.Duration) (KeyedStats, error) {
	if now < 0 {
		return KeyedStats{}, negative("now", int64(now))
	}
	var out C.rate_keyed_stats
	status := C.rate_keyed_policy_read_stats_at(p.handle(), C.uint64_t(now), &out)
	runtime.KeepAlive(p)
	return statsOf(status, &out)
}

// Close frees the policy (and unmaps a shared file). It is idempotent and always returns
// nil; afterwards every call returns ErrClosed. It must not run concurrently with other
// calls on p.
func (p *KeyedPolicy) Close() error {
	if p != nil {
		release(&p.ptr, p.cleanup, func(ptr *C.rate_keyed_policy) { C.rate_keyed_policy_free(ptr) })
	}
	return nil
}
