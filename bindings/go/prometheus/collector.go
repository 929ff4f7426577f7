// Package librateprometheus exports librate's counts (docs/metrics.md) to Prometheus: a
// client_golang Collector that reads each limiter's counts when Prometheus scrapes. It
// is a module of its own, so the librate package does not depend on Prometheus.
//
// Every limiter is one series family, ratelimit_requests_total (OpenTelemetry's
// ratelimit.requests, in Prometheus's words), a counter labelled limiter (the name given
// to Add), result and rule:
//
//   - result="admitted", rule="": the requests admitted;
//   - result="table_full", rule="": the requests for a new key refused for a full table
//     (a Keyed's or KeyedPolicy's; 0 for the others);
//   - result="denied": a limiter's denials with rule=""; a policy's per rule, labelled
//     with the rule's name (or its index, "0", "1", …), counting the requests that rule
//     denied first, so the rules' series add up to the policy's denials;
//   - result="shadow_denied", a policy's, per rule: a shadow rule's would-be denials.
//
// A policy of one rule not named is reported as a limiter is, as Rust's
// librate::metrics::Reporter reports it. Labels never hold a key: a limiter has at most
// 2 + 2 × its rules series.
package librateprometheus

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	librate "github.com/librate/librate/bindings/go"
)

// requests describes the one family every sample belongs to, with the help text of every
// language's exporter (Rust's librate::metrics).
var requests = prometheus.NewDesc("ratelimit_requests_total",
	"Requests decided by a rate limiter, by result and by the rule that denied",
	[]string{"limiter", "result", "rule"}, nil)

// Collector is a prometheus.Collector over the limiters Add names; register it with a
// registry (prometheus.MustRegister). Each scrape reads every limiter's counts (a few
// loads each, never a pass over a table's keys). Safe for concurrent use.
type Collector struct {
	mu       sync.Mutex
	limiters map[string]entry
	// order is the names in the order added, the order of the samples.
	order []string
}

// entry is one limiter added: what it counts, and the rule label of each of a policy's
// rules (nil for a limiter).
type entry struct {
	limiter librate.Counted
	rules   []string
}

// NewCollector returns a Collector of no limiters.
func NewCollector() *Collector {
	return &Collector{limiters: map[string]entry{}}
}

// Add exports limiter's counts labelled limiter=name, turning its counting on
// (EnableCounts). ruleNames labels a policy's rules, one name per rule (nil: their
// indices, "0", "1", …). The error is EnableCounts's, or one for a name already added,
// or rule names for a limiter or of another number than the rules.
func (c *Collector) Add(name string, limiter librate.Counted, ruleNames ...string) error {
	if err := limiter.EnableCounts(); err != nil {
		return fmt.Errorf("librateprometheus: %s: %w", name, err)
	}
	counts, err := limiter.Counts()
	if err != nil {
		return fmt.Errorf("librateprometheus: %s: %w", name, err)
	}
	rules, err := ruleLabels(len(counts.Rules), ruleNames)
	if err != nil {
		return fmt.Errorf("librateprometheus: %s: %w", name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.limiters[name]; ok {
		return fmt.Errorf("librateprometheus: a limiter named %q is exported already", name)
	}
	c.limiters[name] = entry{limiter, rules}
	c.order = append(c.order, name)
	return nil
}

// Remove stops exporting the limiter added as name; a name not added is no error.
func (c *Collector) Remove(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.limiters[name]; !ok {
		return
	}
	delete(c.limiters, name)
	for i, each := range c.order {
		if each == name {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
}

// Describe sends the one family's description (prometheus.Collector).
func (c *Collector) Describe(descs chan<- *prometheus.Desc) { descs <- requests }

// Collect sends a sample per limiter and result (and rule), read now
// (prometheus.Collector). A limiter closed since it was added has no samples.
func (c *Collector) Collect(metrics chan<- prometheus.Metric) {
	c.mu.Lock()
	names := append([]string(nil), c.order...)
	entries := make([]entry, len(names))
	for i, name := range names {
		entries[i] = c.limiters[name]
	}
	c.mu.Unlock()
	for i, e := range entries {
		counts, err := e.limiter.Counts()
		if errors.Is(err, librate.ErrClosed) || errors.Is(err, librate.ErrUnsupported) {
			continue
		}
		if err != nil {
			metrics <- prometheus.NewInvalidMetric(requests, err)
			continue
		}
		samples(metrics, names[i], e, counts)
	}
}

// ruleLabels is the rule label of each of a policy's rules (rules 0: a limiter's, which
// has none), names checked against them; nil too for one rule not named.
func ruleLabels(rules int, names []string) ([]string, error) {
	switch {
	case rules == 0 && names != nil:
		return nil, errors.New("rule names label a policy's rules; a limiter has one rule")
	case rules == 0, rules == 1 && names == nil:
		return nil, nil
	case names == nil:
		labels := make([]string, rules)
		for i := range labels {
			labels[i] = strconv.Itoa(i)
		}
		return labels, nil
	case len(names) != rules:
		return nil, fmt.Errorf("%d rule names for %d rules", len(names), rules)
	}
	return append([]string(nil), names...), nil
}

// samples sends the samples of the limiter named name, whose counts are counts.
func samples(metrics chan<- prometheus.Metric, name string, e entry, counts librate.Counts) {
	send := func(value uint64, result, rule string) {
		metrics <- prometheus.MustNewConstMetric(requests, prometheus.CounterValue, float64(value), name, result, rule)
	}
	send(counts.Admitted, "admitted", "")
	send(counts.TableFull, "table_full", "")
	if e.rules == nil {
		send(counts.Denied, "denied", "")
	}
	for i, rule := range e.rules {
		send(counts.Rules[i].Denied, "denied", rule)
	}
	for i, rule := range e.rules {
		send(counts.Rules[i].ShadowDenied, "shadow_denied", rule)
	}
}
