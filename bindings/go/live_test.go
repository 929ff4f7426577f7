package librate_test

import (
	"errors"
	"testing"
	"time"

	librate "librate/bindings/go"
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
	if err := closed.SetConfig(tighter); !errors.Is(err, librate.ErrNull) {
		t.Errorf("nil Limiter: %v, want ErrNull", err)
	}
}

// 10 a second (T = 100 ms): ann takes 6 (4 tokens), bob 1 (9). Tightened to 1 a second,
// burst 2: both are capped at 2 tokens, then one a second; a refused change and a shared
// table's change change nothing.
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
	shared, err := librate.OpenKeyed(t.TempDir()+"/users", tighter, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	if err := shared.SetConfig(window); !errors.Is(err, librate.ErrUnsupported) {
		t.Errorf("a shared table: %v, want ErrUnsupported", err)
	}
	var closed *librate.Keyed
	if err := closed.SetConfig(tighter); !errors.Is(err, librate.ErrNull) {
		t.Errorf("nil Keyed: %v, want ErrNull", err)
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
// keeps his 1, the window its 3 of 10.
func TestKeyedPolicySetRulesChangesPlan(t *testing.T) {
	window := librate.Config{Algorithm: librate.FixedWindow, Limit: 100, Period: time.Minute}
	p, err := librate.NewKeyedPolicy(100,
		librate.PerKeyRule(librate.Config{Limit: 2, Period: time.Second}), librate.GlobalRule(window))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for key, n := range map[string]int{"ann": 2, "bob": 1} {
		if d, _ := p.AcquireAt(key, n, 0); !d.Allowed {
			t.Fatalf("%s: %d denied", key, n)
		}
	}
	window.Limit = 10
	upgrade := []librate.KeyedRule{
		librate.PerKeyRule(librate.Config{Limit: 4, Period: time.Second}), librate.GlobalRule(window),
	}
	if err := p.SetRulesAt(0, upgrade...); err != nil {
		t.Fatal(err)
	}
	if d, _ := p.AcquireAt("ann", 0, 0); d.Rules[0].Remaining != 0 || d.Rules[1].Remaining != 7 {
		t.Errorf("ann after the upgrade: %+v", d)
	}
	if d, _ := p.AcquireAt("bob", 0, 0); d.Rules[0].Remaining != 1 {
		t.Errorf("bob after the upgrade: %+v", d)
	}
	if d, _ := p.AcquireAt("ann", 1, 250*time.Millisecond); !d.Allowed {
		t.Errorf("ann at 250 ms: %+v", d)
	}
	swapped := []librate.KeyedRule{librate.GlobalRule(upgrade[0].Config), upgrade[1]}
	if err := p.SetRulesAt(0, swapped...); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("a per-key rule made global: %v, want ErrInvalidConfig", err)
	}
	if err := p.SetRulesAt(0, upgrade[0]); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("one rule for two: %v, want ErrInvalidConfig", err)
	}
	if got := p.KeyedRules(); got[0] != upgrade[0] || got[1] != upgrade[1] {
		t.Errorf("KeyedRules() = %+v", got)
	}
	shared, err := librate.OpenKeyedPolicy(t.TempDir()+"/site", 16, upgrade)
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	if err := shared.SetRulesAt(0, upgrade...); !errors.Is(err, librate.ErrUnsupported) {
		t.Errorf("a shared policy's change: %v, want ErrUnsupported", err)
	}
	var none *librate.KeyedPolicy
	if err := none.SetRules(upgrade...); !errors.Is(err, librate.ErrNull) {
		t.Errorf("nil policy: %v, want ErrNull", err)
	}
}
