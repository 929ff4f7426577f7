package librate_test

import (
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// mustPolicy builds a policy, closed when the test ends, or fails the test.
func mustPolicy(t testing.TB, rules ...librate.Config) *librate.Policy {
	t.Helper()
	p, err := librate.NewPolicy(rules...)
	if err != nil {
		t.Fatalf("NewPolicy(%+v): %v", rules, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// 2 a second (GCRA, burst 2) and 3 a minute (fixed window), as in tests/c/test_policy.c.
var twoRules = []librate.Config{
	{Algorithm: librate.GCRA, Limit: 2, Period: time.Second},
	{Algorithm: librate.FixedWindow, Limit: 3, Period: time.Minute},
}

// The C test's scenario: every field of every decision. GCRA with T = 500 ms: the n-th
// unit at 0 sets the TAT to n·500 ms; the window counts units in [0, 1 min).
func TestPolicyAllOrNothing(t *testing.T) {
	p := mustPolicy(t, twoRules...)
	s := time.Second
	steps := []struct {
		name string
		at   time.Duration
		want librate.PolicyDecision
	}{
		{"first", 0, librate.PolicyDecision{
			Decision: librate.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: time.Minute},
			DeniedBy: -1,
			Rules: []librate.Decision{
				{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 500 * ms},
				{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: time.Minute},
			}}},
		{"second", 0, librate.PolicyDecision{
			Decision: librate.Decision{Allowed: true, Limit: 2, ResetAfter: time.Minute},
			DeniedBy: -1,
			Rules: []librate.Decision{
				{Allowed: true, Limit: 2, ResetAfter: s},
				{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: time.Minute},
			}}},
		// The GCRA rule denies until 500 ms; the window gives its unit back.
		{"third", 0, librate.PolicyDecision{
			Decision: librate.Decision{Limit: 2, RetryAfter: 500 * ms, ResetAfter: time.Minute},
			DeniedBy: 0,
			Rules: []librate.Decision{
				{Limit: 2, RetryAfter: 500 * ms, ResetAfter: s},
				{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: time.Minute},
			}}},
		// At 1 s the GCRA rule (TAT 1 s) is full again and takes one (TAT 1.5 s); the
		// window takes its third.
		{"at 1 s", s, librate.PolicyDecision{
			Decision: librate.Decision{Allowed: true, Limit: 2, ResetAfter: 59 * s},
			DeniedBy: -1,
			Rules: []librate.Decision{
				{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 500 * ms},
				{Allowed: true, Limit: 3, ResetAfter: 59 * s},
			}}},
		// Three this minute: the window denies until 1:00; the GCRA rule (TAT 1.5 s) is
		// full again at 2 s and would admit.
		{"at 2 s", 2 * s, librate.PolicyDecision{
			Decision: librate.Decision{Limit: 2, RetryAfter: 58 * s, ResetAfter: 58 * s},
			DeniedBy: 1,
			Rules: []librate.Decision{
				{Allowed: true, Limit: 2, Remaining: 2},
				{Limit: 3, RetryAfter: 58 * s, ResetAfter: 58 * s},
			}}},
	}
	for _, step := range steps {
		got, err := p.AcquireAt(1, step.at)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if !reflect.DeepEqual(got, step.want) {
			t.Errorf("%s at %v:\n got %+v\nwant %+v", step.name, step.at, got, step.want)
		}
	}
	// A query: admitted, nothing taken, each rule's state.
	query := librate.PolicyDecision{
		Decision: librate.Decision{Allowed: true, Limit: 2, ResetAfter: 58 * s},
		DeniedBy: -1,
		Rules: []librate.Decision{
			{Allowed: true, Limit: 2, Remaining: 2},
			{Allowed: true, Limit: 3, ResetAfter: 58 * s},
		},
	}
	for range 2 {
		if got, err := p.AcquireAt(0, 2*s); err != nil || !reflect.DeepEqual(got, query) {
			t.Errorf("query: %+v, %v\nwant %+v", got, err, query)
		}
	}
}

// Allow and Acquire on librate's clock: 1 an hour and 5 a day admit one unit, then the
// hourly rule denies with about an hour to wait.
func TestPolicyOnTheRealClock(t *testing.T) {
	p := mustPolicy(t,
		librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Hour},
		librate.Config{Algorithm: librate.SlidingLog, Limit: 5, Period: 24 * time.Hour})
	if !p.Allow() || p.Allow() || p.AllowN(time.Now(), 1) {
		t.Fatal("want exactly one unit admitted")
	}
	if !p.AllowN(time.Now(), 0) {
		t.Fatal("a query is always admitted")
	}
	d, err := p.Acquire(1)
	if err != nil || d.Allowed || d.DeniedBy != 0 || d.Rules[1].Remaining != 4 ||
		d.RetryAfter <= 59*time.Minute || d.RetryAfter > time.Hour {
		t.Fatalf("Acquire: %+v, %v; want denied by rule 0 within the hour, 4 left in rule 1", d, err)
	}
	if got := p.Rules(); !reflect.DeepEqual(got, []librate.Config{
		{Algorithm: librate.GCRA, Limit: 1, Period: time.Hour},
		{Algorithm: librate.SlidingLog, Limit: 5, Period: 24 * time.Hour},
	}) {
		t.Errorf("Rules: %+v", got)
	}
	p.Rules()[0].Limit = 99 // a copy: the policy's rules stay as given
	if p.Rules()[0].Limit != 1 {
		t.Error("Rules returned the policy's own slice")
	}
}

// Eight rules, two of each algorithm, limits 3 to 10: the tightest admits three units at
// one time, then denies alone.
func TestPolicyEightRules(t *testing.T) {
	algorithms := []librate.Algorithm{librate.GCRA, librate.FixedWindow, librate.SlidingWindow, librate.SlidingLog}
	var rules []librate.Config
	for i := range librate.MaxRules {
		rules = append(rules, librate.Config{Algorithm: algorithms[i%4], Limit: uint64(3 + i), Period: time.Second})
	}
	p := mustPolicy(t, rules...)
	for i := range 3 {
		if d, err := p.AcquireAt(1, 0); err != nil || !d.Allowed {
			t.Fatalf("unit %d: %+v, %v", i, d, err)
		}
	}
	d, err := p.AcquireAt(1, 0)
	if err != nil || d.Allowed || d.DeniedBy != 0 || len(d.Rules) != librate.MaxRules {
		t.Fatalf("fourth unit: %+v, %v", d, err)
	}
	for i, rule := range d.Rules {
		if rule.Remaining != uint64(i) || rule.Allowed != (i > 0) {
			t.Errorf("rule %d: %+v; want %d remaining", i, rule, i)
		}
	}
}

func TestPolicyBadInput(t *testing.T) {
	gcra := librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Second}
	nine := make([]librate.Config, 9)
	for i := range nine {
		nine[i] = gcra
	}
	rejected := []struct {
		name   string
		rules  []librate.Config
		reason string
	}{
		{"no rules", nil, "a policy holds 1 to 8 rules, not 0"},
		{"nine rules", nine, "a policy holds 1 to 8 rules, not 9"},
		{"a zero limit", []librate.Config{gcra, {Period: time.Second}}, "rule 1: limit 0: must be at least 1"},
		{"a negative period", []librate.Config{gcra, {Limit: 1, Period: -1}}, "rule 1: period -1ns: must be at least 1ns"},
		{"an unknown algorithm", []librate.Config{{Algorithm: 99, Limit: 1, Period: time.Second}}, "rule 0: algorithm 99:"},
		{"more than a unit a ns", []librate.Config{gcra, gcra, {Limit: 10, Period: 9}}, "rule 2: limit 10: must be at most 9"},
	}
	for _, c := range rejected {
		p, err := librate.NewPolicy(c.rules...)
		var configErr *librate.ConfigError
		if p != nil || !errors.Is(err, librate.ErrInvalidConfig) || !errors.As(err, &configErr) ||
			!strings.HasPrefix(configErr.Reason, c.reason) {
			t.Errorf("%s: %v, %v; want a *ConfigError starting %q", c.name, p, err, c.reason)
		}
	}

	p := mustPolicy(t, twoRules...)
	calls := []struct {
		name string
		call func() error
		want error
	}{
		{"Acquire(3)", func() error { _, err := p.Acquire(3); return err }, librate.ErrInsufficientCapacity},
		{"AcquireAt(3, 0)", func() error { _, err := p.AcquireAt(3, 0); return err }, librate.ErrInsufficientCapacity},
		{"Acquire(-1)", func() error { _, err := p.Acquire(-1); return err }, librate.ErrInvalidArgument},
		{"AcquireAt(-1, 0)", func() error { _, err := p.AcquireAt(-1, 0); return err }, librate.ErrInvalidArgument},
		{"AcquireAt(1, -1)", func() error { _, err := p.AcquireAt(1, -1); return err }, librate.ErrInvalidArgument},
		{"AcquireCosts([3, 0])", func() error { _, err := p.AcquireCosts([]int{3, 0}); return err }, librate.ErrInsufficientCapacity},
		{"AcquireCosts([1])", func() error { _, err := p.AcquireCosts([]int{1}); return err }, librate.ErrInvalidConfig},
		{"AcquireCosts(nine)", func() error { _, err := p.AcquireCosts(make([]int, 9)); return err }, librate.ErrInvalidConfig},
		{"AcquireCosts([0, -1])", func() error { _, err := p.AcquireCosts([]int{0, -1}); return err }, librate.ErrInvalidArgument},
		{"AcquireCostsAt([1, 1], -1)", func() error { _, err := p.AcquireCostsAt([]int{1, 1}, -1); return err }, librate.ErrInvalidArgument},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, c.want) {
			t.Errorf("%s: %v; want %v", c.name, err, c.want)
		}
	}
	if p.AllowN(time.Now(), 3) || p.AllowN(time.Now(), -1) {
		t.Error("AllowN(3) and AllowN(-1) must be false")
	}
	// None of the failed calls took anything.
	if d, err := p.AcquireAt(0, 0); err != nil || d.Rules[0].Remaining != 2 || d.Rules[1].Remaining != 3 {
		t.Fatalf("after errors: %+v, %v; want both rules full", d, err)
	}
}

// A cost per rule: a rule of cost 0 takes no part, and the combined decision leaves it
// out. GCRA with T = 500 ms (burst 2); the window counts units in [0, 1 min).
func TestPolicyAcquireCosts(t *testing.T) {
	p := mustPolicy(t, twoRules...)
	minute := librate.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: time.Minute}
	// [0, 1]: the minute rule alone takes 1, and alone makes the combined decision
	// (Limit 3); the GCRA rule only reports, full.
	d, err := p.AcquireCostsAt([]int{0, 1}, 0)
	if err != nil || d.Decision != minute || d.Rules[0] != (librate.Decision{Allowed: true, Limit: 2, Remaining: 2}) || d.Rules[1] != minute {
		t.Fatalf("[0, 1]: %+v, %v", d, err)
	}
	// [2, 2]: both take 2; the GCRA rule is empty until 1 s, the minute rule until 1:00.
	d, err = p.AcquireCostsAt([]int{2, 2}, 0)
	want := librate.Decision{Allowed: true, Limit: 2, Remaining: 0, ResetAfter: time.Minute}
	if err != nil || d.Decision != want {
		t.Fatalf("[2, 2]: %+v, %v; want %+v", d.Decision, err, want)
	}
	// [2, 0] at 1 s: the GCRA rule, full again, admits; the spent minute rule only
	// reports.
	d, err = p.AcquireCostsAt([]int{2, 0}, time.Second)
	if err != nil || !d.Allowed || d.Limit != 2 || d.Rules[1] != (librate.Decision{Allowed: true, Limit: 3, ResetAfter: time.Minute - time.Second}) {
		t.Fatalf("[2, 0] at 1 s: %+v, %v", d, err)
	}
	// [0, 1] at 1 s: denied by the minute rule until 1:00; the GCRA rule untouched.
	d, err = p.AcquireCostsAt([]int{0, 1}, time.Second)
	if err != nil || d.Allowed || d.DeniedBy != 1 || d.RetryAfter != time.Minute-time.Second {
		t.Fatalf("[0, 1] at 1 s: %+v, %v", d, err)
	}
	// All 0 is a query; the call without a time reads librate's clock.
	if d, err = p.AcquireCostsAt([]int{0, 0}, time.Second); err != nil || d.Rules[0].Remaining != 0 || d.Rules[1].Remaining != 0 {
		t.Fatalf("query: %+v, %v", d, err)
	}
	if d, err = p.AcquireCosts([]int{0, 0}); err != nil || !d.Allowed {
		t.Fatalf("AcquireCosts query: %+v, %v", d, err)
	}
}

// Every method of a closed or nil Policy returns ErrClosed (Allow false); Close is
// idempotent.
func TestPolicyClosedAndNil(t *testing.T) {
	closed := mustPolicy(t, twoRules...)
	closed.Close()
	var nilPolicy *librate.Policy
	for name, p := range map[string]*librate.Policy{"closed": closed, "nil": nilPolicy} {
		if _, err := p.Acquire(1); !errors.Is(err, librate.ErrClosed) {
			t.Errorf("%s policy, Acquire: %v; want ErrClosed", name, err)
		}
		if _, err := p.AcquireAt(1, 0); !errors.Is(err, librate.ErrClosed) {
			t.Errorf("%s policy, AcquireAt: %v; want ErrClosed", name, err)
		}
		if p.Allow() || p.AllowN(time.Now(), 0) {
			t.Errorf("%s policy: Allow returned true", name)
		}
		if err := p.Close(); err != nil {
			t.Errorf("%s policy, Close: %v", name, err)
		}
	}
	if len(closed.Rules()) != 2 || nilPolicy.Rules() != nil {
		t.Error("Rules: a closed policy keeps its rules, a nil one has none")
	}
}

// Four goroutines take one unit at a time from a two-rule policy at one frozen time,
// each until its first denial: exactly the tighter rule's limit is admitted, whichever
// rule is the tighter and whichever comes first. A denial comes only from a full rule,
// so at most four units fail to be given back: never enough to fill the looser rule
// first. Run under -race.
func TestPolicyConcurrentFrozenTimeAdmitsExactlyTheTighterLimit(t *testing.T) {
	pairs := [][]librate.Config{
		{{Algorithm: librate.GCRA, Limit: 50, Period: time.Second}, {Algorithm: librate.GCRA, Limit: 20, Period: time.Second}},
		{{Algorithm: librate.GCRA, Limit: 20, Period: time.Second}, {Algorithm: librate.GCRA, Limit: 50, Period: time.Second}},
		{{Algorithm: librate.FixedWindow, Limit: 30, Period: time.Second}, {Algorithm: librate.SlidingWindow, Limit: 25, Period: time.Second}},
		{{Algorithm: librate.SlidingLog, Limit: 40, Period: time.Second}, {Algorithm: librate.GCRA, Limit: 35, Period: time.Second}},
	}
	for _, rules := range pairs {
		tighter := min(rules[0].Limit, rules[1].Limit)
		for range 20 {
			p := mustPolicy(t, rules...)
			var admitted atomic.Uint64
			parallel(4, func() {
				for {
					d, err := p.AcquireAt(1, time.Second)
					if err != nil {
						t.Error(err)
					}
					if !d.Allowed {
						return
					}
					admitted.Add(1)
				}
			})
			if got := admitted.Load(); got != tighter {
				t.Fatalf("%+v: admitted %d, want exactly %d", rules, got, tighter)
			}
			state, err := p.AcquireAt(0, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for i, rule := range state.Rules {
				// Within its limit, and holding at least the admitted units.
				if rule.Limit-rule.Remaining < tighter {
					t.Errorf("%+v: rule %d holds %d units, fewer than the %d admitted", rules, i, rule.Limit-rule.Remaining, tighter)
				}
			}
		}
	}
}
