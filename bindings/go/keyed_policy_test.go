package librate_test

import (
	"errors"
	"net/http"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// A site's limits, scaled down: per customer 1 post and 5 likes a second (GCRA),
// everybody 3 a second (a fixed window), as in tests/c/test_keyed_policy.c.
var siteRules = []librate.KeyedRule{
	librate.PerKeyRule(librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Second}),
	librate.PerKeyRule(librate.Config{Algorithm: librate.GCRA, Limit: 5, Period: time.Second}),
	librate.GlobalRule(librate.Config{Algorithm: librate.FixedWindow, Limit: 3, Period: time.Second}),
}

var post, like = []int{1, 0, 1}, []int{0, 1, 1}

// mustKeyedPolicy builds a keyed policy, closed when the test ends, or fails the test.
func mustKeyedPolicy(t testing.TB, capacity int, rules ...librate.KeyedRule) *librate.KeyedPolicy {
	t.Helper()
	p, err := librate.NewKeyedPolicy(capacity, rules...)
	if err != nil {
		t.Fatalf("NewKeyedPolicy(%d, %+v): %v", capacity, rules, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestKeyedPolicyPostsAndLikes(t *testing.T) {
	p := mustKeyedPolicy(t, 100, siteRules...)
	s := time.Second
	d, err := p.AcquireCostsAt("alice", post, 0)
	// Combined over the post and global rules; the like rule reports its state (full).
	want := librate.PolicyDecision{
		Decision: librate.Decision{Allowed: true, Limit: 1, ResetAfter: s},
		DeniedBy: -1,
		Rules: []librate.Decision{
			{Allowed: true, Limit: 1, ResetAfter: s},
			{Allowed: true, Limit: 5, Remaining: 5},
			{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: s},
		},
	}
	if err != nil || !reflect.DeepEqual(d, want) {
		t.Fatalf("first post: %+v, %v\nwant %+v", d, err, want)
	}
	// Her second post: denied by her post rule for 1 s; the global unit given back.
	d, _ = p.AcquireCostsAt("alice", post, 0)
	if d.DeniedBy != 0 || d.RetryAfter != s || d.Rules[2].Remaining != 2 {
		t.Errorf("second post: %+v", d)
	}
	// A like and bob's post fill the window; carol's like is denied by the global rule.
	for _, request := range []struct {
		key   string
		costs []int
	}{{"alice", like}, {"bob", post}} {
		if d, err := p.AcquireCostsAt(request.key, request.costs, 0); err != nil || !d.Allowed {
			t.Errorf("%s: %+v, %v", request.key, d, err)
		}
	}
	if d, _ := p.AcquireCostsAt("carol", like, 0); d.DeniedBy != 2 || d.RetryAfter != s {
		t.Errorf("carol: %+v", d)
	}
	// Reset alice: her post rule is new; the global rule keeps its count.
	if err := p.Reset("alice"); err != nil {
		t.Fatal(err)
	}
	if d, _ := p.AcquireCostsAt("alice", post, s); !d.Allowed || d.Rules[2].Remaining != 2 {
		t.Errorf("after reset: %+v", d)
	}
	// n of every rule, now on librate's clock: dave's first request.
	if !p.Allow("dave") {
		t.Error("dave's first request was denied")
	}
	stats, err := p.StatsAt(s)
	if err != nil || stats.Capacity != 100 || stats.MaxKeys != 200 || stats.TableFull != 0 {
		t.Errorf("stats %+v, %v", stats, err)
	}
	if got := p.KeyedRules(); !reflect.DeepEqual(got, siteRules) {
		t.Errorf("rules %+v", got)
	}
}

func TestKeyedPolicyErrors(t *testing.T) {
	gcra := librate.Config{Algorithm: librate.GCRA, Limit: 2, Period: time.Second}
	if _, err := librate.NewKeyedPolicy(1); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("no rules: %v", err)
	}
	if _, err := librate.NewKeyedPolicy(0, librate.PerKeyRule(gcra)); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("capacity 0: %v", err)
	}
	if _, err := librate.NewKeyedPolicy(1, librate.KeyedRule{Config: gcra, Scope: 7}); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("scope 7: %v", err)
	}
	everybody := librate.Config{Algorithm: librate.GCRA, Limit: 5, Period: time.Second}
	p := mustKeyedPolicy(t, 1, librate.PerKeyRule(gcra), librate.GlobalRule(everybody))
	if _, err := p.AcquireCostsAt("k", []int{1}, 0); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("one cost for two rules: %v", err)
	}
	if _, err := p.AcquireAt("k", 3, 0); !errors.Is(err, librate.ErrInsufficientCapacity) {
		t.Errorf("n above the limit: %v", err)
	}
	if _, err := p.AcquireCostsAt("k", []int{-1, 0}, 0); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("a negative cost: %v", err)
	}
	// Capacity 1: two slots; a third key is refused and takes nothing.
	for _, key := range []string{"a", "b"} {
		if d, err := p.AcquireAt(key, 1, 0); err != nil || !d.Allowed {
			t.Fatalf("%s: %+v, %v", key, d, err)
		}
	}
	if _, err := p.AcquireAt("c", 1, 0); !errors.Is(err, librate.ErrTableFull) {
		t.Errorf("a full table: %v", err)
	}
	if d, _ := p.AcquireAt("c", 0, 0); d.Rules[1].Remaining != 3 {
		t.Errorf("the global rule holds a and b only: %+v", d)
	}
	p.Close()
	if _, err := p.Acquire("k", 1); !errors.Is(err, librate.ErrClosed) {
		t.Errorf("closed: %v", err)
	}
	// A closed policy keeps its rules, a nil one has none.
	made := []librate.KeyedRule{librate.PerKeyRule(gcra), librate.GlobalRule(everybody)}
	if got := p.KeyedRules(); !reflect.DeepEqual(got, made) {
		t.Errorf("closed: KeyedRules() = %+v, want %+v", got, made)
	}
	if got := p.Rules(); !reflect.DeepEqual(got, []librate.Config{gcra, everybody}) {
		t.Errorf("closed: Rules() = %+v, want %+v", got, []librate.Config{gcra, everybody})
	}
	var none *librate.KeyedPolicy
	if none.Allow("k") || none.Rules() != nil || none.KeyedRules() != nil {
		t.Error("a nil policy admitted or has rules")
	}
}

func TestOpenKeyedPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy")
	first, err := librate.OpenKeyedPolicy(path, 100, siteRules)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := librate.OpenKeyedPolicy(path, 100, siteRules)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if d, _ := first.AcquireCostsAt("alice", post, 0); !d.Allowed {
		t.Fatal("alice's first post was denied")
	}
	if d, _ := second.AcquireCostsAt("alice", post, 0); d.DeniedBy != 0 || d.Rules[2].Remaining != 2 {
		t.Errorf("the second handle: %+v", d)
	}
	if _, err := librate.OpenKeyedPolicy(path, 100, siteRules[:2]); !errors.Is(err, librate.ErrIncompatible) {
		t.Errorf("other rules: %v", err)
	}
	if _, err := librate.OpenKeyedPolicy(filepath.Join(path, "none"), 100, siteRules); err == nil {
		t.Error("a path under a file opened")
	}
}

// A keyed policy in front of a handler: per client 1 a second, everybody 3 a minute.
func TestKeyedPolicyMiddleware(t *testing.T) {
	clock := &fakeClock{}
	p := mustKeyedPolicy(t, 100,
		librate.PerKeyRule(librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Second}),
		librate.GlobalRule(librate.Config{Algorithm: librate.FixedWindow, Limit: 3, Period: time.Minute}))
	m, err := librate.NewMiddleware(p, librate.MiddlewareOptions{Now: clock.Now, RuleNames: []string{"client", "all"}})
	if err != nil {
		t.Fatal(err)
	}
	var served int
	h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served++ }))
	const policy = `"client";q=1;w=1, "all";q=3;w=60`
	steps := []httpStep{
		{0, "192.0.2.1:1000", response{200, `"client";r=0;t=1`, policy, ""}},
		// The same client: its own rule denies for 1 s; the global unit given back.
		{0, "192.0.2.1:1000", response{429, `"client";r=0;t=1`, policy, "1"}},
		{0, "192.0.2.2:1000", response{200, `"client";r=0;t=1`, policy, ""}},
		// The third admission leaves the global rule 0 until 1:00.
		{0, "192.0.2.3:1000", response{200, `"all";r=0;t=60`, policy, ""}},
		{time.Second, "192.0.2.4:1000", response{429, `"all";r=0;t=59`, policy, "59"}},
	}
	serveSteps(t, h, clock, steps)
	if served != 3 {
		t.Errorf("served %d requests, want the 3 admitted", served)
	}
}
