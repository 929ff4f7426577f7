package librateredis_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// Shadow rules on Redis (docs/policies.md#shadow-rules): 2 a second enforced, 1 a second
// in shadow (GCRA, each burst its limit), worked out as in tests/c/test_policy.c.
func TestPolicyShadowReportsThenEnforces(t *testing.T) {
	client := startServer(t).client(t)
	p := newPolicy(t, client, []librate.Config{
		{Algorithm: librate.GCRA, Limit: 2, Period: time.Second},
		{Algorithm: librate.GCRA, Limit: 1, Period: time.Second},
	}, "go-shadow:")
	if err := p.SetShadow(1); err != nil {
		t.Fatal(err)
	}
	if got := p.Shadow(); !reflect.DeepEqual(got, []int{1}) {
		t.Fatalf("Shadow() = %v", got)
	}
	at := func(n int, now time.Duration) librate.PolicyDecision {
		t.Helper()
		d, err := p.AcquireAt(ctx, "k", n, now)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := at(1, 0); !d.Allowed || d.ShadowDeniedBy() != -1 || d.Limit != 2 || d.Remaining != 1 {
		t.Fatalf("first: %+v", d)
	}
	if d := at(1, 0); !d.Allowed || d.ShadowDeniedBy() != 1 || d.Rules[1].RetryAfter != time.Second {
		t.Fatalf("second: %+v", d)
	}
	if d := at(1, 0); d.DeniedBy != 0 || d.ShadowDeniedBy() != 1 || d.RetryAfter != 500*time.Millisecond {
		t.Fatalf("third: %+v", d)
	}
	if err := p.SetShadow(); err != nil {
		t.Fatal(err)
	}
	// The shadow rule took its one token at 0 only: it admits at 1 s, once.
	if d := at(1, time.Second); !d.Allowed {
		t.Fatalf("at 1 s: %+v", d)
	}
	if d := at(1, time.Second); d.DeniedBy != 1 || d.Shadow != 0 {
		t.Fatalf("enforced: %+v", d)
	}
	if err := p.SetShadow(2); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Fatalf("SetShadow(2) = %v", err)
	}
}

func TestPolicyAllShadowAdmitsEverything(t *testing.T) {
	client := startServer(t).client(t)
	p := newPolicy(t, client, []librate.Config{{Algorithm: librate.GCRA, Limit: 1, Period: time.Second}}, "go-all-shadow:")
	if err := p.SetShadow(0); err != nil {
		t.Fatal(err)
	}
	p.AcquireAt(ctx, "k", 1, 0)
	d, err := p.AcquireAt(ctx, "k", 1, 0)
	if err != nil || !d.Allowed || d.ShadowDeniedBy() != 0 || d.Limit != math.MaxUint64 || d.Remaining != math.MaxUint64 {
		t.Fatalf("%+v, %v", d, err)
	}
}

// Random policies and masks, costs 0 to the limit at times going forward: every decision
// is librate.Policy's with the same shadow rules.
func TestShadowedPoliciesDecideAsInProcess(t *testing.T) {
	client := startServer(t).client(t)
	rng := rand.New(rand.NewPCG(0x5ad0, 0x77))
	shadowDenials := 0
	for c := range 30 {
		rules := make([]librate.Config, 1+rng.IntN(8))
		var shadow []int
		for i := range rules {
			rules[i] = randomRule(rng)
			if rng.IntN(2) == 0 {
				shadow = append(shadow, i)
			}
		}
		local, err := librate.NewPolicy(rules...)
		if err != nil {
			t.Fatal(err)
		}
		defer local.Close()
		remote := newPolicy(t, client, rules, fmt.Sprintf("go-shadowed:%d:", c))
		if err := local.SetShadow(shadow...); err != nil {
			t.Fatal(err)
		}
		if err := remote.SetShadow(shadow...); err != nil {
			t.Fatal(err)
		}
		now := 10_000 * time.Second
		for step := range 20 {
			now += time.Duration(rng.Int64N(int64(20 * time.Second)))
			n := rng.IntN(int(remote.Limit()) + 1)
			want, wantErr := local.AcquireAt(n, now)
			got, err := remote.AcquireAt(ctx, "k", n, now)
			if err != nil || wantErr != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("case %d step %d: %d at %v, %+v, shadow %v:\n got %+v, %v\nwant %+v, %v", c, step, n, now, rules, shadow, got, err, want, wantErr)
			}
			if want.ShadowDeniedBy() >= 0 {
				shadowDenials++
			}
		}
	}
	if shadowDenials < 20 {
		t.Errorf("%d shadow denials", shadowDenials)
	}
}
