package librate

/*
#include "rate.h"

// librate_go_policy_allow is rate_policy_acquire without a decision, with the handle as
// an integer, as librate_go_allow in rate.go.
static int32_t librate_go_policy_allow(uintptr_t policy, uint64_t n) {
	return rate_policy_acquire((rate_policy *)policy, n, NULL);
}

// As in rate.go: librate keeps no pointer past a call and never calls back into Go, so
// the rules and the decision on the Go stack stay there.
#cgo noescape rate_policy_new
#cgo nocallback rate_policy_new
#cgo noescape rate_policy_free
#cgo nocallback rate_policy_free
#cgo noescape rate_policy_acquire
#cgo nocallback rate_policy_acquire
#cgo noescape rate_policy_acquire_at
#cgo nocallback rate_policy_acquire_at
#cgo noescape rate_policy_acquire_costs
#cgo nocallback rate_policy_acquire_costs
#cgo noescape rate_policy_acquire_costs_at
#cgo nocallback rate_policy_acquire_costs_at
#cgo noescape librate_go_policy_allow
#cgo nocallback librate_go_policy_allow
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"
)

// MaxRules is the most rules one Policy holds (rate.h's RATE_POLICY_MAX_RULES).
const MaxRules = 8

// MaxRules matches rate.h, as the Algorithm constants do (rate.go).
var _ [0]struct{} = [MaxRules - C.RATE_POLICY_MAX_RULES]struct{}{}

// Policy enforces several Configs over one subject at once ("10 a second and 1,000 a
// day"): a request is admitted iff every rule admits it, and a denied request takes
// nothing from any rule.
//
// Its methods are safe for concurrent use and never block. What concurrent callers may
// observe:
//   - No rule ever admits past its limit.
//   - From one goroutine at a time every decision is exact: a denial leaves every rule
//     as it was, so the decisions are those of the rules' own limiters on the admitted
//     requests alone.
//   - A request takes from the rules one after the other. While it holds units of the
//     rules it passed, before a later rule denies it and they are given back, another
//     request can find one of those rules full and be denied (a denial it would not get
//     a moment later).
//   - A rule gives units back only if no other request changed it in between; otherwise
//     the denied request's units stay taken, as if admitted, and expire as admitted
//     units do. So do a sliding log's (logs take last and never give back) when a later
//     sliding log denies because a concurrent request changed it after it was asked.
//     Either way a rule only ever errs on the side of its limit.
//
// A nil or closed Policy answers every call with ErrClosed (and Allow with false).
type Policy struct {
	ptr *C.rate_policy
	// rules are the rules in force: those given to NewPolicy, or to the last SetRules.
	rules   atomic.Pointer[[]Config]
	shadow  shadowRules
	cleanup runtime.Cleanup
}

// PolicyDecision is a Policy's decision: the combined Decision, which rule denied, and
// each rule's own.
type PolicyDecision struct {
	// Decision is the policy's: Allowed iff every rule admitted; Limit and Remaining the
	// least over the rules, RetryAfter and ResetAfter the greatest; Wait 0. With shadow
	// rules (SetShadow), over the enforced rules alone; every rule shadow: allowed, with
	// Limit and Remaining math.MaxUint64.
	Decision
	// DeniedBy is the index of the first rule, in the order given, that denied the
	// request; -1 when admitted.
	DeniedBy int
	// Rules holds each rule's own decision, in the order given. Admitted: what each rule
	// decided, units taken. Denied: what each rule would decide alone, with Remaining and
	// ResetAfter of its state as it is, since nothing was taken. A shadow rule's is its
	// own, made alone: Allowed false is a denial it would have made (ShadowDeniedBy).
	Rules []Decision
	// Shadow holds the shadow rules the decision was made with, bit i for rule i
	// (docs/policies.md#shadow-rules); DeniedBy is never one of them.
	Shadow uint32
}

// NewPolicy creates a Policy of 1 to MaxRules rules of any algorithms, each full at any
// time. For a wrong number of rules, or a rule librate rejects, the error is a
// *ConfigError (naming the rule by its index), which matches ErrInvalidConfig.
func NewPolicy(rules ...Config) (*Policy, error) {
	if err := ruleCountError(len(rules)); err != nil {
		return nil, err
	}
	var cRules [MaxRules]C.rate_config
	for i, rule := range rules {
		c, err := rule.toC()
		if err != nil {
			return nil, ruleError(i, err)
		}
		cRules[i] = c
	}
	var ptr *C.rate_policy
	if status := C.rate_policy_new(&cRules[0], C.size_t(len(rules)), &ptr); status != C.RATE_OK {
		return nil, policyRejected(status, cRules[:len(rules)])
	}
	p := &Policy{ptr: ptr}
	given := slices.Clone(rules)
	p.rules.Store(&given)
	// As for Limiter: the cleanup holds the C pointer, never p.
	p.cleanup = runtime.AddCleanup(p, freePolicy, ptr)
	return p, nil
}

// policyRejected is NewPolicy's error for a failed rate_policy_new: the first rule that
// rate_limiter_explain_config rejects, with its index and reason, else the status's error.
func policyRejected(status C.int32_t, rules []C.rate_config) error {
	for i := range rules {
		err := rejected(status, func(reason *C.char, length C.size_t) C.int32_t {
			return C.rate_limiter_explain_config(&rules[i], reason, length)
		})
		if errors.As(err, new(*ConfigError)) {
			return ruleError(i, err)
		}
	}
	return statusError(status)
}

// ruleError names rule i in err's reason if err is a *ConfigError; else it is err.
func ruleError(i int, err error) error {
	var configErr *ConfigError
	if !errors.As(err, &configErr) {
		return err
	}
	return &ConfigError{Reason: fmt.Sprintf("rule %d: %s", i, configErr.Reason)}
}

func freePolicy(ptr *C.rate_policy) {
	C.rate_policy_free(ptr)
	noteFreed()
}

// Rules returns a copy of the rules in force, in the order given.
func (p *Policy) Rules() []Config {
	if p == nil {
		return nil
	}
	return slices.Clone(*p.rules.Load())
}

// handle is the C handle for one call (NULL when nil or closed; librate answers
// RATE_E_NULL). Every caller follows its C call with runtime.KeepAlive(p).
func (p *Policy) handle() *C.rate_policy {
	if p == nil {
		return nil
	}
	ptr := p.ptr
	maybeGC() // as in Limiter.handle
	return ptr
}

// Allow reports whether one unit is admitted now by every rule (and takes it from
// each), on librate's fastest path.
func (p *Policy) Allow() bool {
	return p.allowNow(1)
}

// AllowN reports whether n units are admitted at time t by every rule (and takes them
// from each), as Limiter.AllowN. It returns false for a negative n, an n above a rule's
// burst, and a nil or closed Policy; use Acquire to tell those apart from a denial.
func (p *Policy) AllowN(t time.Time, n int) bool {
	if n < 0 {
		return false
	}
	status := C.rate_policy_acquire_at(p.handle(), C.uint64_t(n), C.uint64_t(onTimeline(t)), nil)
	runtime.KeepAlive(p)
	return status == C.RATE_OK
}

// AllowNow is AllowN now, on librate's fastest path.
//
// Deprecated: use AllowN(time.Now(), n); AllowNow was AllowN's shape before 0.2 and
// goes in the next release.
func (p *Policy) AllowNow(n int) bool {
	return p.allowNow(n)
}

// allowNow is Allow for n units.
func (p *Policy) allowNow(n int) bool {
	if n < 0 {
		return false
	}
	status := C.librate_go_policy_allow(address(unsafe.Pointer(p.handle())), C.uint64_t(n))
	runtime.KeepAlive(p)
	return status == C.RATE_OK
}

// Wait is WaitN(ctx, 1).
func (p *Policy) Wait(ctx context.Context) error {
	return p.WaitN(ctx, 1)
}

// WaitN blocks until n units of every rule are admitted, as Limiter.WaitN. A policy has
// no queue: it acquires, and while denied sleeps out the denial's RetryAfter and
// acquires again, holding nothing while it sleeps.
func (p *Policy) WaitN(ctx context.Context, n int) error {
	return wait(ctx, n, nil, func(n int) (Decision, error) {
		decision, err := p.Acquire(n)
		return decision.Decision, err
	})
}

// Acquire takes n units now from every rule, or from none, and reports the decision. n
// == 0 is a query: admitted, changes nothing. A denial is a PolicyDecision with Allowed
// false and a nil error; errors are ErrInsufficientCapacity (n above a rule's limit),
// ErrInvalidArgument (n negative) and ErrClosed (nil or closed).
func (p *Policy) Acquire(n int) (PolicyDecision, error) {
	if n < 0 {
		return PolicyDecision{}, negative("n", int64(n))
	}
	var out C.rate_policy_decision
	status := C.rate_policy_acquire(p.handle(), C.uint64_t(n), &out)
	runtime.KeepAlive(p)
	return policyResult(status, &out, p.shadowMask())
}

// AcquireAt is Acquire at time now on the caller's timeline.
func (p *Policy) AcquireAt(n int, now time.Duration) (PolicyDecision, error) {
	if n < 0 || now < 0 {
		return PolicyDecision{}, negativeArgument(n, now, 0)
	}
	var out C.rate_policy_decision
	status := C.rate_policy_acquire_at(p.handle(), C.uint64_t(n), C.uint64_t(now), &out)
	runtime.KeepAlive(p)
	return policyResult(status, &out, p.shadowMask())
}

// AcquireCosts takes costs[i] units of rule i now, for every rule, or nothing: a rule
// of cost 0 takes no part (its entry in Rules only reports its state, and the combined
// Decision leaves it out); all costs 0 is a query. Errors: ErrInvalidConfig for other
// than one cost per rule, ErrInsufficientCapacity for a cost above its rule's limit,
// ErrInvalidArgument for a negative cost, ErrClosed (nil or closed).
func (p *Policy) AcquireCosts(costs []int) (PolicyDecision, error) {
	return p.acquireCosts(costs, -1)
}

// AcquireCostsAt is AcquireCosts at time now on the caller's timeline.
func (p *Policy) AcquireCostsAt(costs []int, now time.Duration) (PolicyDecision, error) {
	if now < 0 {
		return PolicyDecision{}, negative("now", int64(now))
	}
	return p.acquireCosts(costs, now)
}

// acquireCosts decides costs at now, or now on librate's clock when now is -1.
func (p *Policy) acquireCosts(costs []int, now time.Duration) (PolicyDecision, error) {
	cCosts, err := costArray(costs)
	if err != nil {
		return PolicyDecision{}, err
	}
	var out C.rate_policy_decision
	var status C.int32_t
	if now < 0 {
		status = C.rate_policy_acquire_costs(p.handle(), &cCosts[0], C.size_t(len(costs)), &out)
	} else {
		status = C.rate_policy_acquire_costs_at(p.handle(), &cCosts[0], C.size_t(len(costs)), C.uint64_t(now), &out)
	}
	runtime.KeepAlive(p)
	return policyResult(status, &out, p.shadowMask())
}

// costArray is costs as the C *_acquire_costs functions take them (which check their
// number against the rules'): a *ConfigError for more than MaxRules, ErrInvalidArgument
// for a negative cost.
func costArray(costs []int) ([MaxRules]C.uint64_t, error) {
	var cCosts [MaxRules]C.uint64_t
	if len(costs) > MaxRules {
		return cCosts, &ConfigError{Reason: fmt.Sprintf("%d costs: a policy request gives one cost per rule", len(costs))}
	}
	for i, cost := range costs {
		if cost < 0 {
			return cCosts, negative("cost", int64(cost))
		}
		cCosts[i] = C.uint64_t(cost)
	}
	return cCosts, nil
}

// Close frees the policy. It is idempotent and always returns nil; afterwards every call
// returns ErrClosed. It must not run concurrently with other calls on p. A Policy dropped
// without Close is freed when the garbage collector finds it unreachable.
func (p *Policy) Close() error {
	if p != nil {
		release(&p.ptr, p.cleanup, func(ptr *C.rate_policy) { C.rate_policy_free(ptr) })
	}
	return nil
}

// policyResult turns a C status and the decision it wrote, with the shadow rules of the
// mask shadow, into the Go result, as result does for one limiter.
func policyResult(status C.int32_t, out *C.rate_policy_decision, shadow uint32) (PolicyDecision, error) {
	if status != C.RATE_OK && status != C.RATE_LIMITED {
		return PolicyDecision{}, statusError(status)
	}
	d := PolicyDecision{Decision: decisionOf(&out.decision), DeniedBy: -1, Rules: make([]Decision, out.rules_len), Shadow: shadow}
	if out.denied_by != C.RATE_POLICY_NO_RULE {
		d.DeniedBy = int(out.denied_by)
	}
	for i := range d.Rules {
		d.Rules[i] = decisionOf(&out.rules[i])
	}
	return d, nil
}

// ruleCountError is the *ConfigError for a policy of count rules, or nil for 1 to
// MaxRules.
func ruleCountError(count int) error {
	if count == 0 || count > MaxRules {
		return &ConfigError{Reason: fmt.Sprintf("a policy holds 1 to %d rules, not %d", MaxRules, count)}
	}
	return nil
}
