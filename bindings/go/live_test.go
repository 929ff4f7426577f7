package librate_test

import (
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// 10 a second (T = 100 ms): 6 taken, 4 tokens. Tightened to 1 a second, burst 2: the
// tokens are capped at 2, then one a second.
func TestSetConfigKeepsTheTokens(t *testing.T) {
	l := mustGCRA(t, 10, time.Second, 0)
	if d, _ := l.AcquireAt(6, 0); !d.Allowed {
		t.Fatal("6 of 10 denied")
	}
	tighter := librate.Config{Limit: 1, Period: time.Second, Burst: 2}
	if err := l.SetConfigAt(tighter, 0); err != nil {
		t.Fatal(err)
	}
	if l.Config() != tighter {
		t.Errorf("Config() = %+v, want %+v", l.Config(), tighter)
	}
	want := librate.Decision{Allowed: true, Limit: 2, ResetAfter: 2 * time.Second}
	if d, err := l.AcquireAt(2, 0); err != nil || d != want {
		t.Errorf("AcquireAt(2, 0) = %+v, %v; want %+v", d, err, want)
	}
	window := librate.Config{Algorithm: librate.FixedWindow, Limit: 2, Period: time.Second}
	if err := l.SetConfigAt(window, 0); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("a change of algorithm: %v, want ErrInvalidConfig", err)
	}
	if err := l.SetConfigAt(librate.Config{Period: time.Second}, 0); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("limit 0: %v, want ErrInvalidConfig", err)
	}
	if l.Config() != tighter {
		t.Errorf("a refused change changed Config() to %+v", l.Config())
	}
	var closed *librate.Limiter
	if err := closed.SetConfig(tighter); !errors.Is(err, librate.ErrClosed) {
		t.Errorf("nil Limiter: %v, want ErrClosed", err)
	}
}

// 10 a second (T = 100 ms): ann takes 6 (4 tokens), bob 1 (9). Tightened to 1 a second,
// burst 2: both are capped at 2 tokens, then one a second; a refused change changes
// nothing.
func TestKeyedSetConfigKeepsEachKeysTokens(t *testing.T) {
	users, err := librate.NewKeyed(librate.Config{Limit: 10, Period: time.Second}, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer users.Close()
	for key, n := range map[string]int{"ann": 6, "bob": 1} {
		if d, _ := users.AcquireAt(key, n, 0); !d.Allowed {
			t.Fatalf("%s: %d of 10 denied", key, n)
		}
	}
	tighter := librate.Config{Limit: 1, Period: time.Second, Burst: 2}
	if err := users.SetConfigAt(tighter, 0); err != nil {
		t.Fatal(err)
	}
	if users.Config() != tighter {
		t.Errorf("Config() = %+v, want %+v", users.Config(), tighter)
	}
	want := librate.Decision{Allowed: true, Limit: 2, ResetAfter: 2 * time.Second}
	if d, err := users.AcquireAt("ann", 2, 0); err != nil || d != want {
		t.Errorf("ann: AcquireAt(2, 0) = %+v, %v; want %+v", d, err, want)
	}
	if d, err := users.AcquireAt("bob", 0, 0); err != nil || d.Remaining != 2 {
		t.Errorf("bob: AcquireAt(0, 0) = %+v, %v; want 2 remaining", d, err)
	}
	window := librate.Config{Algorithm: librate.FixedWindow, Limit: 2, Period: time.Second}
	if err := users.SetConfigAt(window, 0); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("a change of algorithm: %v, want ErrInvalidConfig", err)
	}
	if users.Config() != tighter {
		t.Errorf("a refused change changed Config() to %+v", users.Config())
	}
	var closed *librate.Keyed
	if err := closed.SetConfig(tighter); !errors.Is(err, librate.ErrClosed) {
		t.Errorf("nil Keyed: %v, want ErrClosed", err)
	}
}

// A table from a file changes in the file: another handle decides under the new rule at
// its next decision. 10 a second (T = 100 ms, τ = 1 s): ann takes 9 at 0 (1 token
// left), bob 1 (9 left). Tightened to 1 a second, burst 2 (T = 1 s, τ = 2 s): ann keeps
// her 1 token, debt τ − T = 1 s; bob's 9 are capped at 2, a full bucket.
func TestSharedKeyedSetConfigKeepsEachKeysTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users")
	ten := librate.Config{Limit: 10, Period: time.Second}
	changer, err := librate.OpenKeyed(path, ten, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer changer.Close()
	other, err := librate.OpenKeyed(path, ten, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for key, n := range map[string]int{"ann": 9, "bob": 1} {
		if d, _ := changer.AcquireAt(key, n, 0); !d.Allowed {
			t.Fatalf("%s: %d of 10 denied", key, n)
		}
	}
	if got := other.Config(); got != ten {
		t.Errorf("the other handle's Config() before the change = %+v, want %+v", got, ten)
	}
	tighter := librate.Config{Limit: 1, Period: time.Second, Burst: 2}
	if err := changer.SetConfigAt(tighter, 0); err != nil {
		t.Fatal(err)
	}
	// Both handles report the file's rule in force, whichever made the change.
	for name, k := range map[string]*librate.Keyed{"changer": changer, "other": other} {
		if got := k.Config(); got != tighter {
			t.Errorf("%s: Config() = %+v, want %+v", name, got, tighter)
		}
	}
	// Through the other handle, at 0: ann's query sees 1 left, reset 1 s; 1 more leaves
	// TAT = 2 s (0 left, reset 2 s); another is denied until TAT + T − τ = 1 s.
	for _, step := range []struct {
		key  string
		n    int
		want librate.Decision
	}{
		{"ann", 0, librate.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: time.Second}},
		{"ann", 1, librate.Decision{Allowed: true, Limit: 2, ResetAfter: 2 * time.Second}},
		{"ann", 1, librate.Decision{Limit: 2, RetryAfter: time.Second, ResetAfter: 2 * time.Second}},
		{"bob", 0, librate.Decision{Allowed: true, Limit: 2, Remaining: 2}},
	} {
		if d, err := other.AcquireAt(step.key, step.n, 0); err != nil || d != step.want {
			t.Errorf("%s: %d at 0 = %+v, %v; want %+v", step.key, step.n, d, err, step.want)
		}
	}
	// Another algorithm is refused, and the file keeps its rule.
	window := librate.Config{Algorithm: librate.FixedWindow, Limit: 2, Period: time.Second}
	if err := changer.SetConfigAt(window, 0); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("a change of algorithm: %v, want ErrInvalidConfig", err)
	}
	if got := other.Config(); got != tighter {
		t.Errorf("the other handle's Config() after a refused change = %+v, want %+v", got, tighter)
	}
	describedAs(t, path, path+": a librate keyed table of capacity 16 holding GCRA, limit 1, "+
		"period_ns 1000000000, burst 2 (its rule changed 1 time since it was made)")
	// A change the other way, through the other handle: 3 a second, burst 3. A closed
	// handle keeps the last rule it read.
	three := librate.Config{Limit: 3, Period: time.Second, Burst: 3}
	if err := other.SetConfigAt(three, 0); err != nil {
		t.Fatal(err)
	}
	if got := changer.Config(); got != three {
		t.Errorf("changer: Config() after the other's change = %+v, want %+v", got, three)
	}
	other.Close()
	if got := other.Config(); got != three {
		t.Errorf("the other handle, closed: Config() = %+v, want %+v", got, three)
	}
}

// 2 a second and 3 a minute, 2 taken; upgraded to 4 a second and 10 a minute: the
// bucket's 0 tokens stay 0 (250 ms each now), the window keeps its 2.
func TestSetRulesChangesPlan(t *testing.T) {
	p, err := librate.NewPolicy(
		librate.Config{Limit: 2, Period: time.Second},
		librate.Config{Algorithm: librate.FixedWindow, Limit: 3, Period: time.Minute},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if d, _ := p.AcquireAt(2, 0); !d.Allowed {
		t.Fatal("2 denied")
	}
	upgrade := []librate.Config{
		{Limit: 4, Period: time.Second},
		{Algorithm: librate.FixedWindow, Limit: 10, Period: time.Minute},
	}
	if err := p.SetRulesAt(0, upgrade...); err != nil {
		t.Fatal(err)
	}
	if d, _ := p.AcquireAt(0, 0); d.Rules[1].Remaining != 8 || d.Rules[0].Remaining != 0 {
		t.Errorf("after the upgrade: %+v", d)
	}
	if d, _ := p.AcquireAt(1, 250*time.Millisecond); !d.Allowed {
		t.Errorf("at 250 ms: %+v", d)
	}
	if err := p.SetRulesAt(0, upgrade[0]); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("one rule for two: %v, want ErrInvalidConfig", err)
	}
	if got := p.Rules(); got[1] != upgrade[1] {
		t.Errorf("Rules() = %+v", got)
	}
}

// Per customer 2 a second (GCRA), everybody 100 a minute; ann takes 2 and bob 1 at 0.
// Upgraded to 4 a second and 10 a minute: ann's 0 tokens stay 0 (now 250 ms each), bob
// keeps his 1, the window its 3 of 10. Checked on a private policy and on one from a
// file, changed through one handle and seen through another.
func TestKeyedPolicySetRulesChangesPlan(t *testing.T) {
	window := librate.Config{Algorithm: librate.FixedWindow, Limit: 100, Period: time.Minute}
	plan := []librate.KeyedRule{librate.PerKeyRule(librate.Config{Limit: 2, Period: time.Second}), librate.GlobalRule(window)}
	t.Run("private", func(t *testing.T) {
		p, err := librate.NewKeyedPolicy(100, plan...)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		keyedPlanChange(t, p, p)
		var none *librate.KeyedPolicy
		if err := none.SetRules(plan...); !errors.Is(err, librate.ErrClosed) {
			t.Errorf("nil policy: %v, want ErrClosed", err)
		}
	})
	t.Run("file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "site")
		changer, err := librate.OpenKeyedPolicy(path, 100, plan)
		if err != nil {
			t.Fatal(err)
		}
		defer changer.Close()
		other, err := librate.OpenKeyedPolicy(path, 100, plan)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		keyedPlanChange(t, changer, other)
		// The other handle reports the rules the changer gave the file: per key 4 a second,
		// for everybody 10 a minute in fixed windows.
		upgrade := []librate.KeyedRule{
			librate.PerKeyRule(librate.Config{Limit: 4, Period: time.Second}),
			librate.GlobalRule(librate.Config{Algorithm: librate.FixedWindow, Limit: 10, Period: time.Minute}),
		}
		if got := other.KeyedRules(); !reflect.DeepEqual(got, upgrade) {
			t.Errorf("the other handle's KeyedRules() = %+v, want %+v", got, upgrade)
		}
		configs := []librate.Config{upgrade[0].Config, upgrade[1].Config}
		if got := other.Rules(); !reflect.DeepEqual(got, configs) {
			t.Errorf("the other handle's Rules() = %+v, want %+v", got, configs)
		}
		// A change the other way, through the other handle: per key 3 a second, for
		// everybody 20 a minute. A closed handle keeps the last rules it read.
		back := []librate.KeyedRule{
			librate.PerKeyRule(librate.Config{Limit: 3, Period: time.Second}),
			librate.GlobalRule(librate.Config{Algorithm: librate.FixedWindow, Limit: 20, Period: time.Minute}),
		}
		if err := other.SetRulesAt(0, back...); err != nil {
			t.Fatal(err)
		}
		if got := changer.KeyedRules(); !reflect.DeepEqual(got, back) {
			t.Errorf("the changer's KeyedRules() after the other's change = %+v, want %+v", got, back)
		}
		changer.Close()
		if got := changer.KeyedRules(); !reflect.DeepEqual(got, back) {
			t.Errorf("the changer, closed: KeyedRules() = %+v, want %+v", got, back)
		}
		// The file holds the upgrade: a later opener gives it.
		later, err := librate.OpenKeyedPolicy(path, 100, changer.KeyedRules())
		if err != nil {
			t.Fatalf("an opener with the rules in force: %v", err)
		}
		later.Close()
	})
}

// keyedPlanChange takes ann's 2 and bob's 1 at 0 through changer, upgrades its rules at 0
// and checks each key's state, carried over, through decider.
func keyedPlanChange(t *testing.T, changer, decider *librate.KeyedPolicy) {
	t.Helper()
	for key, n := range map[string]int{"ann": 2, "bob": 1} {
		if d, _ := changer.AcquireAt(key, n, 0); !d.Allowed {
			t.Fatalf("%s: %d denied", key, n)
		}
	}
	window := changer.KeyedRules()[1].Config
	window.Limit = 10
	upgrade := []librate.KeyedRule{
		librate.PerKeyRule(librate.Config{Limit: 4, Period: time.Second}), librate.GlobalRule(window),
	}
	if err := changer.SetRulesAt(0, upgrade...); err != nil {
		t.Fatal(err)
	}
	// 4 a second, burst 4: T = 250 ms, τ = 1 s. ann: 0 tokens, debt 1 s. bob: 1 token,
	// debt 750 ms. The window: 3 of 10 taken, its next at 1 min.
	counted := librate.Decision{Allowed: true, Limit: 10, Remaining: 7, ResetAfter: time.Minute}
	for _, c := range []struct {
		key  string
		want librate.Decision
	}{
		{"ann", librate.Decision{Allowed: true, Limit: 4, ResetAfter: time.Second}},
		{"bob", librate.Decision{Allowed: true, Limit: 4, Remaining: 1, ResetAfter: 750 * time.Millisecond}},
	} {
		d, err := decider.AcquireAt(c.key, 0, 0)
		if err != nil || len(d.Rules) != 2 || d.Rules[0] != c.want || d.Rules[1] != counted {
			t.Errorf("%s after the upgrade: %+v, %v; want %+v, %+v", c.key, d, err, c.want, counted)
		}
	}
	// At 250 ms ann's debt is 750 ms: 1 token.
	if d, _ := decider.AcquireAt("ann", 1, 250*time.Millisecond); !d.Allowed {
		t.Errorf("ann at 250 ms: %+v", d)
	}
	swapped := []librate.KeyedRule{librate.GlobalRule(upgrade[0].Config), upgrade[1]}
	if err := changer.SetRulesAt(0, swapped...); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("a per-key rule made global: %v, want ErrInvalidConfig", err)
	}
	if err := changer.SetRulesAt(0, upgrade[0]); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("one rule for two: %v, want ErrInvalidConfig", err)
	}
	if got := changer.KeyedRules(); got[0] != upgrade[0] || got[1] != upgrade[1] {
		t.Errorf("KeyedRules() = %+v", got)
	}
}
