package librateredis

import (
	"sync/atomic"

	librate "github.com/librate/librate/bindings/go"
)

// tally counts the decisions a client receives, in this process (docs/metrics.md): off
// until enabled, as librate's own counters are. Each field is an atomic add, far below
// the Redis round trip it follows; a reading is each field's, not one snapshot of all.
type tally struct {
	on       atomic.Bool
	admitted atomic.Uint64
	// denied holds each rule's denials, by the first rule that denied (a limiter: rule 0);
	// shadowDenied each shadow rule's would-be denials.
	denied, shadowDenied [librate.MaxRules]atomic.Uint64
}

// count counts one decision of a request of n units, admitted (deniedBy < 0) or denied
// by rule deniedBy, and beside it each shadow rule of the mask shadowDenied (bit i for
// rule i), which would have denied it; a query (n == 0) decides nothing and is not
// counted.
func (t *tally) count(n int, deniedBy int, shadowDenied uint32) {
	// Relaxed would do (each counter is independent); sync/atomic has one ordering.
	if n == 0 || !t.on.Load() {
		return
	}
	if deniedBy < 0 {
		t.admitted.Add(1)
	} else {
		t.denied[deniedBy].Add(1)
	}
	for rule := range t.shadowDenied {
		if shadowDenied>>rule&1 == 1 {
			t.shadowDenied[rule].Add(1)
		}
	}
}

// read is the counts, with each of rules rules' own when rules > 0 (a policy's);
// librate.ErrUnsupported while counting is off.
func (t *tally) read(rules int) (librate.Counts, error) {
	if !t.on.Load() {
		return librate.Counts{}, librate.ErrUnsupported
	}
	counts := librate.Counts{Admitted: t.admitted.Load()}
	if rules == 0 {
		counts.Denied = t.denied[0].Load()
		return counts, nil
	}
	counts.Rules = make([]librate.RuleCounts, rules)
	for i := range counts.Rules {
		counts.Rules[i] = librate.RuleCounts{Denied: t.denied[i].Load(), ShadowDenied: t.shadowDenied[i].Load()}
		counts.Denied += counts.Rules[i].Denied
	}
	return counts, nil
}

// deniedBy is the rule that denied d, -1 when admitted: a limiter's rule 0.
func deniedBy(d librate.Decision) int {
	if d.Allowed {
		return -1
	}
	return 0
}

// shadowDenials is the mask of d's shadow rules whose own decision denied.
func shadowDenials(d librate.PolicyDecision) uint32 {
	var mask uint32
	for i, rule := range d.Rules {
		if d.Shadow>>i&1 == 1 && !rule.Allowed {
			mask |= 1 << i
		}
	}
	return mask
}

// EnableCounts turns on counting of the decisions l receives, in this process, from now
// on; it never fails (librate.Counted). A call Redis does not decide is not counted.
func (l *Limiter) EnableCounts() error {
	l.counts.on.Store(true)
	return nil
}

// Counts returns l's counts since EnableCounts: Admitted and Denied (TableFull is 0);
// librate.ErrUnsupported while counting is off (librate.Counted).
func (l *Limiter) Counts() (librate.Counts, error) { return l.counts.read(0) }

// EnableCounts turns on counting of the decisions p receives, in this process, from now
// on; it never fails (librate.Counted). A call Redis does not decide is not counted.
func (p *Policy) EnableCounts() error {
	p.counts.on.Store(true)
	return nil
}

// Counts returns p's counts since EnableCounts, with each rule's denials by the first
// rule that denied; librate.ErrUnsupported while counting is off (librate.Counted).
func (p *Policy) Counts() (librate.Counts, error) { return p.counts.read(len(p.rules)) }
