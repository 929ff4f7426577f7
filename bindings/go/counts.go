package librate

/*
#include "rate.h"
*/
import "C"

import "runtime"

// Counts are a limiter's counts since EnableCounts (docs/metrics.md): each request
// counted once, in one of Admitted, Denied or TableFull, so a reading is consistent.
// Queries (n == 0) are not counted.
type Counts struct {
	// Admitted is the requests admitted.
	Admitted uint64
	// Denied is the requests denied by the limit; a policy's, the sum of its rules'.
	Denied uint64
	// TableFull is, for a Keyed or KeyedPolicy, the requests for a new key refused
	// with ErrTableFull; 0 for the others.
	TableFull uint64
	// Rules are a policy's rules' own counts, in the order given; nil for a limiter.
	Rules []RuleCounts
}

// RuleCounts are one policy rule's counts.
type RuleCounts struct {
	// Denied is the requests this rule denied first, in the order the rules were
	// given: the rule PolicyDecision.DeniedBy names.
	Denied uint64
	// ShadowDenied is a shadow rule's would-be denials; 0 for an enforced rule.
	ShadowDenied uint64
}

// Counted is what counts its requests: Limiter, Keyed, Policy, KeyedPolicy, LeaseHolder
// (its decisions from its share and by its fallback alike), and the librateredis
// clients (which count in the binding). Counting is off until
// EnableCounts, since it costs an atomic add a request; once on it stays on. Counts
// returns ErrUnsupported while counting is off, ErrClosed once closed.
type Counted interface {
	// EnableCounts turns counting on, from now on.
	EnableCounts() error
	// Counts returns the counts since EnableCounts.
	Counts() (Counts, error)
}

// EnableCounts turns on counting of l's requests, from now on (see Counted).
func (l *Limiter) EnableCounts() error {
	status := C.rate_limiter_enable_counts(l.handle())
	runtime.KeepAlive(l)
	return okOrError(status)
}

// Counts returns l's counts since EnableCounts (see Counted).
func (l *Limiter) Counts() (Counts, error) {
	var out C.rate_counts
	status := C.rate_limiter_read_counts(l.handle(), &out)
	runtime.KeepAlive(l)
	return countsOf(status, &out, nil)
}

// EnableCounts turns on counting of k's requests, from now on (see Counted).
func (k *Keyed) EnableCounts() error {
	status := C.rate_keyed_enable_counts(k.handle())
	runtime.KeepAlive(k)
	return okOrError(status)
}

// Counts returns k's counts since EnableCounts (see Counted).
func (k *Keyed) Counts() (Counts, error) {
	var out C.rate_counts
	status := C.rate_keyed_read_counts(k.handle(), &out)
	runtime.KeepAlive(k)
	return countsOf(status, &out, nil)
}

// EnableCounts turns on counting of p's requests, from now on (see Counted).
func (p *Policy) EnableCounts() error {
	status := C.rate_policy_enable_counts(p.handle())
	runtime.KeepAlive(p)
	return okOrError(status)
}

// Counts returns p's counts since EnableCounts, with each rule's (see Counted).
func (p *Policy) Counts() (Counts, error) {
	var out C.rate_counts
	var rules [MaxRules]C.rate_rule_counts
	n := len(p.Rules())
	status := C.rate_policy_read_counts(p.handle(), &out, &rules[0], C.size_t(n))
	runtime.KeepAlive(p)
	return countsOf(status, &out, rules[:n])
}

// EnableCounts turns on counting of p's requests, from now on (see Counted).
func (p *KeyedPolicy) EnableCounts() error {
	status := C.rate_keyed_policy_enable_counts(p.handle())
	runtime.KeepAlive(p)
	return okOrError(status)
}

// Counts returns p's counts since EnableCounts, with each rule's (see Counted).
func (p *KeyedPolicy) Counts() (Counts, error) {
	var out C.rate_counts
	var rules [MaxRules]C.rate_rule_counts
	n := len(p.Rules())
	status := C.rate_keyed_policy_read_counts(p.handle(), &out, &rules[0], C.size_t(n))
	runtime.KeepAlive(p)
	return countsOf(status, &out, rules[:n])
}

// EnableCounts turns on counting of h's decisions, from now on (see Counted).
func (h *LeaseHolder) EnableCounts() error {
	status := C.rate_lease_enable_counts(h.handle())
	runtime.KeepAlive(h)
	return okOrError(status)
}

// Counts returns h's counts since EnableCounts (see Counted).
func (h *LeaseHolder) Counts() (Counts, error) {
	var out C.rate_counts
	status := C.rate_lease_read_counts(h.handle(), &out)
	runtime.KeepAlive(h)
	return countsOf(status, &out, nil)
}

// countsOf turns a C status and the counts it wrote (and each rule's, for a policy)
// into the Go result.
func countsOf(status C.int32_t, out *C.rate_counts, rules []C.rate_rule_counts) (Counts, error) {
	if err := okOrError(status); err != nil {
		return Counts{}, err
	}
	counts := Counts{Admitted: uint64(out.admitted), Denied: uint64(out.denied), TableFull: uint64(out.table_full)}
	if rules != nil {
		counts.Rules = make([]RuleCounts, len(rules))
		for i, rule := range rules {
			counts.Rules[i] = RuleCounts{Denied: uint64(rule.denied), ShadowDenied: uint64(rule.shadow_denied)}
		}
	}
	return counts, nil
}
