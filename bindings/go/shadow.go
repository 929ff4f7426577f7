package librate

/*
#include "rate.h"

// As in rate.go: librate keeps no pointer past a call and never calls back into Go.
#cgo noescape rate_policy_set_shadow
#cgo nocallback rate_policy_set_shadow
#cgo noescape rate_keyed_policy_set_shadow
#cgo nocallback rate_keyed_policy_set_shadow
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// shadowRules is a policy handle's shadow rules (docs/policies.md#shadow-rules) as its
// decisions read them: the mask last set in librate, bit i for rule i.
type shadowRules struct {
	mask atomic.Uint32
	// changing is held across a change, so that librate's mask and mask end up the same
	// when two goroutines change it at once.
	changing sync.Mutex
}

// ShadowMask is the mask of the shadow rules of these indices (bit i for rule i) of a
// policy of count rules, as a Redis policy's script takes it
// (docs/policies.md#shadow-rules). An index outside the rules is a *ConfigError
// (matching ErrInvalidConfig).
func ShadowMask(count int, rules ...int) (uint32, error) {
	var mask uint32
	for _, rule := range rules {
		if rule < 0 || rule >= count {
			// As Rust says it (ConfigError::ShadowMask), with the indices given.
			return 0, &ConfigError{Reason: fmt.Sprintf("shadow rules %v for %d rules: a shadow mask names only rules the policy holds", rules, count)}
		}
		mask |= 1 << rule
	}
	return mask, nil
}

// ShadowIndices is the rule indices of a shadow mask (bit i for rule i), in order.
func ShadowIndices(mask uint32) []int {
	rules := []int{}
	for rule := 0; rule < 32; rule++ {
		if mask>>rule&1 == 1 {
			rules = append(rules, rule)
		}
	}
	return rules
}

// set makes rules the shadow rules of a policy of count rules with set, librate's call.
func (s *shadowRules) set(rules []int, count int, set func(mask C.uint32_t) C.int32_t) error {
	mask, err := ShadowMask(count, rules...)
	if err != nil {
		return err
	}
	s.changing.Lock()
	defer s.changing.Unlock()
	if status := set(C.uint32_t(mask)); status != C.RATE_OK {
		return statusError(status)
	}
	s.mask.Store(mask)
	return nil
}

// rules is the shadow rules' indices, in order.
func (s *shadowRules) rules() []int {
	return ShadowIndices(s.mask.Load())
}

// SetShadow makes the rules of these indices the policy's shadow rules, replacing the
// ones before (none enforces every rule). A shadow rule is decided and reports its
// would-be denials (PolicyDecision.ShadowDeniedBy), but never denies a request and takes
// units only from requests the enforced rules admit (docs/policies.md#shadow-rules). A
// rule keeps its state whether shadow or enforced: roll a limit out in shadow, then
// enforce it, with one call each on a running policy. A decision racing the change may
// apply either set of rules. An index outside the rules is a *ConfigError (matching
// ErrInvalidConfig) and changes nothing; a nil or closed Policy is ErrClosed.
func (p *Policy) SetShadow(rules ...int) error {
	if p == nil {
		return ErrClosed
	}
	err := p.shadow.set(rules, len(p.Rules()), func(mask C.uint32_t) C.int32_t {
		return C.rate_policy_set_shadow(p.handle(), mask)
	})
	runtime.KeepAlive(p)
	return err
}

// Shadow returns the shadow rules' indices, in order: empty when every rule is enforced.
func (p *Policy) Shadow() []int {
	if p == nil {
		return nil
	}
	return p.shadow.rules()
}

// SetShadow makes the rules of these indices this handle's shadow rules, as
// Policy.SetShadow does, rule by rule. A shadow per-key rule whose table is full cannot
// decide a new key: the request is decided by the enforced rules, never failed for it.
// For a policy opened from a file the shadow rules are this handle's alone: every process
// sets its own (set the same ones everywhere).
func (p *KeyedPolicy) SetShadow(rules ...int) error {
	if p == nil {
		return ErrClosed
	}
	err := p.shadow.set(rules, len(*p.rules.Load()), func(mask C.uint32_t) C.int32_t {
		return C.rate_keyed_policy_set_shadow(p.handle(), mask)
	})
	runtime.KeepAlive(p)
	return err
}

// Shadow returns this handle's shadow rules' indices, in order.
func (p *KeyedPolicy) Shadow() []int {
	if p == nil {
		return nil
	}
	return p.shadow.rules()
}

// ShadowDeniedBy is the first shadow rule, in the order given, whose own decision (in
// Rules) denied the request: the rule that would have denied it, were it enforced; -1
// when none did.
func (d PolicyDecision) ShadowDeniedBy() int {
	for rule, decision := range d.Rules {
		if d.Shadow>>rule&1 == 1 && !decision.Allowed {
			return rule
		}
	}
	return -1
}

// shadowMask is the mask the policy's decisions are read with (0 when nil).
func (p *Policy) shadowMask() uint32 {
	if p == nil {
		return 0
	}
	return p.shadow.mask.Load()
}

// shadowMask is the mask the policy's decisions are read with (0 when nil).
func (p *KeyedPolicy) shadowMask() uint32 {
	if p == nil {
		return 0
	}
	return p.shadow.mask.Load()
}
