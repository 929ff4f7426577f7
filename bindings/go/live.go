package librate

/*
#include "rate.h"

// As in rate.go: librate keeps no pointer past a call and never calls back into Go.
#cgo noescape rate_limiter_set_config_at
#cgo nocallback rate_limiter_set_config_at
#cgo noescape rate_keyed_set_config_at
#cgo nocallback rate_keyed_set_config_at
#cgo noescape rate_policy_set_rules_at
#cgo nocallback rate_policy_set_rules_at
#cgo noescape rate_keyed_policy_set_rules_at
#cgo nocallback rate_keyed_policy_set_rules_at
*/
import "C"

import (
	"runtime"
	"slices"
	"time"
)

// SetConfig replaces the rule the limiter enforces, now, keeping what was consumed: see
// SetConfigAt.
func (l *Limiter) SetConfig(config Config) error {
	return l.SetConfigAt(config, Now())
}

// SetConfigAt replaces the rule the limiter enforces at time now (a customer changes
// plan, an operator tightens a limit), carrying its state over: GCRA keeps its tokens
// (capped at the new Burst, then refilled at the new rate); the fixed and sliding
// windows keep their counts, moved to the new Period's windows holding now (capped at
// the new Limit); a Period of Forever keeps the algorithm (a bucket's whole tokens left,
// a window's count used). Each acquire racing it, in any goroutine, is decided wholly
// under the old rule or wholly under the new one. Config then returns the new rule.
//
// A limiter from Open changes in its file, once, for every process: each decides under
// the new rule from its next decision, and later openers must give it (or ReplaceRule).
// Config returns the file's rule in force, whichever process set it.
//
// The error is a *ConfigError matching ErrInvalidConfig for an invalid rule, another
// algorithm, or a sliding log's rule (its entries are not carried over); ErrClosed for a
// nil or closed Limiter. Nothing changes then.
func (l *Limiter) SetConfigAt(config Config, now time.Duration) error {
	set := func(cConfig *C.rate_config) C.int32_t {
		defer runtime.KeepAlive(l)
		return C.rate_limiter_set_config_at(l.handle(), cConfig, C.uint64_t(now))
	}
	return setConfigAt(config, now, set, func() { l.config.Store(&config) })
}

// SetConfig replaces the rule every key follows, now, keeping what each key consumed:
// see SetConfigAt.
func (k *Keyed) SetConfig(config Config) error {
	return k.SetConfigAt(config, Now())
}

// SetConfigAt replaces the rule every key follows at time now (a customer changes plan,
// an operator tightens a limit), carrying each key's state over as Limiter.SetConfigAt
// does: GCRA keeps each key's tokens, the windows their counts, capped at the new Burst
// or Limit. A key whose state is fresh (it would admit as much as a new key) starts anew
// under the new rule. The keys move one table slot after another: each acquire racing
// the change, in any goroutine, is decided wholly under the old rule or wholly under the
// new one; keys already in the table never wait for it, new keys wait until every key
// has moved. The old rule's table is freed once no goroutine can still be reading it.
// Config then returns the new rule.
//
// A table from OpenKeyed changes in its file, once, for every process: each decides
// under the new rule from its next decision (every key's state carried over as above),
// and later openers must give it (or ReplaceRule). Config, through any handle in any
// process, returns the file's rule in force, whichever process set it.
//
// The error is a *ConfigError matching ErrInvalidConfig for an invalid rule, another
// algorithm, or a sliding log's rule (its entries are not carried over); ErrClosed for a
// nil or closed Keyed. Nothing changes then.
func (k *Keyed) SetConfigAt(config Config, now time.Duration) error {
	set := func(cConfig *C.rate_config) C.int32_t {
		defer runtime.KeepAlive(k)
		return C.rate_keyed_set_config_at(k.handle(), cConfig, C.uint64_t(now))
	}
	return setConfigAt(config, now, set, func() { k.config.Store(&config) })
}

// setConfigAt is the body of every SetConfigAt: config checked and given to set, which
// calls librate, and once librate took it, store (which records it as the rule in force:
// never called on a nil handle, which librate refuses).
func setConfigAt(config Config, now time.Duration, set func(*C.rate_config) C.int32_t,
	store func()) error {
	if now < 0 {
		return negativeArgument(0, now, 0)
	}
	cConfig, err := config.toC()
	if err != nil {
		return err
	}
	status := set(&cConfig)
	if status == C.RATE_E_INVALID_CONFIG {
		return changeRejected(cConfig)
	}
	if err := okOrError(status); err != nil {
		return err
	}
	store()
	return nil
}

// SetRules replaces the policy's rules, now: see SetRulesAt.
func (p *Policy) SetRules(rules ...Config) error {
	return p.SetRulesAt(Now(), rules...)
}

// SetRulesAt replaces the policy's rules at time now (a customer changes plan): as many
// as before, each of the same algorithm as the one it replaces, each keeping what was
// consumed as SetConfigAt does. Each rule's step of a racing request is decided wholly
// under that rule's old or new configuration. Rules then returns the new rules.
//
// The error is a *ConfigError matching ErrInvalidConfig for another number of rules, an
// invalid rule, or a rule that cannot carry its state over; ErrClosed for a nil or closed
// Policy. Nothing changes then.
func (p *Policy) SetRulesAt(now time.Duration, rules ...Config) error {
	if now < 0 {
		return negativeArgument(0, now, 0)
	}
	if err := ruleCountError(len(rules)); err != nil {
		return err
	}
	var cRules [MaxRules]C.rate_config
	for i, rule := range rules {
		c, err := rule.toC()
		if err != nil {
			return ruleError(i, err)
		}
		cRules[i] = c
	}
	status := C.rate_policy_set_rules_at(p.handle(), &cRules[0], C.size_t(len(rules)), C.uint64_t(now))
	runtime.KeepAlive(p)
	if err := changeError(status, cRules[:len(rules)], errCarriedOver); err != nil {
		return err
	}
	given := slices.Clone(rules)
	p.rules.Store(&given)
	return nil
}

// SetRules replaces the keyed policy's rules, now, keeping what was consumed: see
// SetRulesAt.
func (p *KeyedPolicy) SetRules(rules ...KeyedRule) error {
	return p.SetRulesAt(Now(), rules...)
}

// SetRulesAt replaces the keyed policy's rules at time now (a customer changes plan): as
// many as before, each of the same Scope and algorithm as the one it replaces. Each
// per-key rule carries every key's state over as Keyed.SetConfigAt does (a key fresh at
// the change starts anew; new keys wait until every key is moved), each global rule as
// Limiter.SetConfigAt. Each rule's step of a racing request is decided wholly under that
// rule's old or new configuration. KeyedRules then returns the new rules.
//
// A policy from OpenKeyedPolicy changes in its file, once, for every process: each
// decides under the new rules from its next decision, and later openers must give them
// (or ReplaceRule). KeyedRules and Rules, through any handle in any process, return the
// file's rules in force, whichever process set them.
//
// The error is a *ConfigError matching ErrInvalidConfig for another number of rules, an
// invalid rule or scope, or a rule that cannot carry its state over (another scope or
// algorithm, a sliding log); ErrClosed for a nil or closed KeyedPolicy. Nothing changes
// then.
func (p *KeyedPolicy) SetRulesAt(now time.Duration, rules ...KeyedRule) error {
	if now < 0 {
		return negativeArgument(0, now, 0)
	}
	if err := ruleCountError(len(rules)); err != nil {
		return err
	}
	cRules, configs, err := keyedRulesToC(rules)
	if err != nil {
		return err
	}
	status := C.rate_keyed_policy_set_rules_at(p.handle(), &cRules[0], C.size_t(len(rules)), C.uint64_t(now))
	runtime.KeepAlive(p)
	if err := changeError(status, configs[:len(rules)], errKeyedCarriedOver); err != nil {
		return err
	}
	given := slices.Clone(rules)
	p.rules.Store(&given)
	return nil
}

// changeError is the error for a change librate answered with status: for an invalid
// configuration, why the first invalid rule of configs is, or carried if each is valid.
func changeError(status C.int32_t, configs []C.rate_config, carried error) error {
	if status == C.RATE_E_INVALID_CONFIG {
		for i := range configs {
			if err := changeRejected(configs[i]); err != errCarriedOver {
				return ruleError(i, err)
			}
		}
		return carried
	}
	return okOrError(status)
}

// errCarriedOver is a change's error for a valid rule that cannot carry the state over.
var errCarriedOver = &ConfigError{Reason: "a live change keeps each rule's algorithm (and the number of rules), " +
	"and a sliding log's rule does not change"}

// errKeyedCarriedOver is errCarriedOver for a keyed policy, whose rules keep their scope too.
var errKeyedCarriedOver = &ConfigError{Reason: "a live change keeps each rule's scope and algorithm (and the number of rules), " +
	"and a sliding log's rule does not change"}

// changeRejected is the error for a change to cConfig that librate refused as an invalid
// configuration: why rate_limiter_new would reject it, or errCarriedOver if it would not.
func changeRejected(cConfig C.rate_config) error {
	err := rejected(C.RATE_E_INVALID_CONFIG, func(reason *C.char, length C.size_t) C.int32_t {
		return C.rate_limiter_explain_config(&cConfig, reason, length)
	})
	if err == ErrInvalidConfig {
		return errCarriedOver
	}
	return err
}
