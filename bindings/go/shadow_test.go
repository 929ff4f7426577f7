package librate_test

import (
	"errors"
	"math"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// Shadow rules (docs/policies.md#shadow-rules), worked out from GCRA (L a second: L
// tokens, one back every 1/L s), as in tests/c/test_policy.c's test_shadow.
func TestPolicyShadowReportsThenEnforces(t *testing.T) {
	p := mustPolicy(t,
		librate.Config{Algorithm: librate.GCRA, Limit: 2, Period: time.Second},
		librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Second})
	if err := p.SetShadow(1); err != nil {
		t.Fatal(err)
	}
	if got := p.Shadow(); !reflect.DeepEqual(got, []int{1}) {
		t.Fatalf("Shadow() = %v, want [1]", got)
	}
	first, _ := p.AcquireAt(1, 0)
	// Combined over the enforced rule alone: 1 of its 2 left.
	if !first.Allowed || first.ShadowDeniedBy() != -1 || first.Limit != 2 || first.Remaining != 1 {
		t.Fatalf("first: %+v", first)
	}
	// The second: admitted; the shadow rule would have denied it until 1 s.
	second, _ := p.AcquireAt(1, 0)
	if !second.Allowed || second.DeniedBy != -1 || second.ShadowDeniedBy() != 1 || second.Rules[1].RetryAfter != time.Second {
		t.Fatalf("second: %+v", second)
	}
	// The third: the enforced rule denies until 0.5 s; the shadow rule is only peeked.
	third, _ := p.AcquireAt(1, 0)
	if third.Allowed || third.DeniedBy != 0 || third.ShadowDeniedBy() != 1 || third.RetryAfter != 500*time.Millisecond {
		t.Fatalf("third: %+v", third)
	}
	// Enforced at 1 s: the shadow rule took its one token at 0 only.
	if err := p.SetShadow(); err != nil {
		t.Fatal(err)
	}
	if d, _ := p.AcquireAt(1, time.Second); !d.Allowed {
		t.Fatalf("at 1 s: %+v", d)
	}
	if d, _ := p.AcquireAt(1, time.Second); d.DeniedBy != 1 || d.ShadowDeniedBy() != -1 || d.Shadow != 0 {
		t.Fatalf("enforced: %+v", d)
	}
}

func TestPolicyAllShadowAdmitsEverything(t *testing.T) {
	p := mustPolicy(t, librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Second})
	if err := p.SetShadow(0); err != nil {
		t.Fatal(err)
	}
	p.AcquireAt(1, 0)
	d, _ := p.AcquireAt(1, 0)
	if !d.Allowed || d.ShadowDeniedBy() != 0 || d.Limit != math.MaxUint64 || d.Remaining != math.MaxUint64 || d.RetryAfter != 0 {
		t.Fatalf("%+v", d)
	}
}

func TestPolicyBadShadow(t *testing.T) {
	p := mustPolicy(t, twoRules...)
	if err := p.SetShadow(0); err != nil {
		t.Fatal(err)
	}
	for _, rules := range [][]int{{2}, {-1}, {0, 8}} {
		err := p.SetShadow(rules...)
		var configErr *librate.ConfigError
		if !errors.As(err, &configErr) || !errors.Is(err, librate.ErrInvalidConfig) {
			t.Fatalf("SetShadow(%v) = %v", rules, err)
		}
	}
	if err := p.SetShadow(2); err.Error() != "librate: invalid configuration: shadow rules [2] for 2 rules: a shadow mask names only rules the policy holds" {
		t.Errorf("SetShadow(2) = %q", err)
	}
	if got := p.Shadow(); !reflect.DeepEqual(got, []int{0}) {
		t.Fatalf("Shadow() = %v, want [0]", got)
	}
	p.Close()
	if err := p.SetShadow(1); !errors.Is(err, librate.ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
	var nilPolicy *librate.Policy
	if err := nilPolicy.SetShadow(); !errors.Is(err, librate.ErrClosed) {
		t.Fatalf("nil: %v", err)
	}
}

// Two handles of one file: the shadow rules are each handle's own, the rules' state the
// file's. Fixed windows of an hour: 2 and 1.
func TestKeyedPolicyShadowInAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy")
	rules := []librate.KeyedRule{
		librate.GlobalRule(librate.Config{Algorithm: librate.FixedWindow, Limit: 2, Period: time.Hour}),
		librate.GlobalRule(librate.Config{Algorithm: librate.FixedWindow, Limit: 1, Period: time.Hour}),
	}
	shadowing, err := librate.OpenKeyedPolicy(path, 4, rules)
	if err != nil {
		t.Fatal(err)
	}
	defer shadowing.Close()
	enforcing, err := librate.OpenKeyedPolicy(path, 4, rules)
	if err != nil {
		t.Fatal(err)
	}
	defer enforcing.Close()
	if err := shadowing.SetShadow(1); err != nil {
		t.Fatal(err)
	}
	if err := shadowing.SetShadow(2); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Fatalf("SetShadow(2) = %v", err)
	}
	now := 10 * time.Second
	if d, _ := shadowing.AcquireAt("k", 1, now); !d.Allowed {
		t.Fatalf("shadowing: %+v", d)
	}
	if d, _ := enforcing.AcquireAt("k", 1, now); d.DeniedBy != 1 {
		t.Fatalf("enforcing: %+v", d)
	}
	if d, _ := shadowing.AcquireAt("k", 1, now); !d.Allowed || d.ShadowDeniedBy() != 1 {
		t.Fatalf("shadowing again: %+v", d)
	}
	if d, _ := enforcing.AcquireAt("k", 1, now); d.DeniedBy != 0 {
		t.Fatalf("enforcing again: %+v", d)
	}
	if got := enforcing.Shadow(); len(got) != 0 {
		t.Fatalf("enforcing.Shadow() = %v", got)
	}
}
