package librateredis_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

// randomRule is a rule of any algorithm with a small limit and a period of a minute or
// more: every state the scripts write then lives at least 10 s by Redis's clock, far
// longer than a case takes, so nothing expires under the times the test passes.
func randomRule(rng *rand.Rand) librate.Config {
	periods := []time.Duration{time.Minute, 7 * time.Minute, time.Hour, 61234567891}
	config := librate.Config{
		Algorithm: algorithms[rng.IntN(len(algorithms))],
		Limit:     uint64(1 + rng.IntN(6)),
		Period:    periods[rng.IntN(len(periods))],
	}
	if config.Algorithm == librate.GCRA {
		config.Burst = uint64(1 + rng.IntN(6))
	}
	return config
}

// everyAlgorithm is a rule of each algorithm, in the order of algorithms, each of period
// with its limit from limits.
func everyAlgorithm(period time.Duration, limits ...uint64) []librate.Config {
	rules := make([]librate.Config, len(algorithms))
	for i, algorithm := range algorithms {
		rules[i] = librate.Config{Algorithm: algorithm, Limit: limits[i], Period: period}
	}
	return rules
}

func newPolicy(t testing.TB, client redis.UniversalClient, rules []librate.Config, prefix string) *librateredis.Policy {
	t.Helper()
	p, err := librateredis.NewPolicy(client, rules, prefix)
	if err != nil {
		t.Fatalf("NewPolicy(%+v): %v", rules, err)
	}
	return p
}

// Random policies of 1 to 8 rules of any mix; costs 0 to one past the limit, at times
// forward and back: every decision, DeniedBy and rule is librate.Policy's.
func TestPoliciesDecideAsInProcess(t *testing.T) {
	client := startServer(t).client(t)
	rng := rand.New(rand.NewPCG(0x90, 0x11c7))
	denials := 0
	for c := range 40 {
		rules := make([]librate.Config, 1+rng.IntN(8))
		for i := range rules {
			rules[i] = randomRule(rng)
		}
		local, err := librate.NewPolicy(rules...)
		if err != nil {
			t.Fatal(err)
		}
		remote := newPolicy(t, client, rules, fmt.Sprintf("go-conform:%d:", c))
		if !reflect.DeepEqual(remote.Rules(), rules) {
			t.Fatalf("Rules() = %+v", remote.Rules())
		}
		now := 10_000 * time.Second
		for step := range 25 {
			if rng.IntN(5) == 0 {
				now -= time.Duration(rng.Int64N(int64(30 * time.Second)))
			} else {
				now += time.Duration(rng.Int64N(int64(20 * time.Second)))
			}
			n := rng.IntN(int(remote.Limit()) + 2)
			want, wantErr := local.AcquireAt(n, now)
			got, err := remote.AcquireAt(ctx, "k", n, now)
			if !errors.Is(err, wantErr) || (wantErr == nil && !reflect.DeepEqual(got, want)) {
				t.Fatalf("case %d step %d: %d at %v, %+v:\n got %+v, %v\nwant %+v, %v", c, step, n, now, rules, got, err, want, wantErr)
			}
			if wantErr == nil && !want.Allowed {
				denials++
			}
		}
	}
	if denials < 100 {
		t.Errorf("%d denials", denials)
	}
}

// 16 goroutines over a pool of connections, 10 requests each at one frozen time: exactly
// the tightest rule's 30 admitted, and every other rule holds exactly those 30.
func TestConnectionsAdmitExactlyTheTightestLimit(t *testing.T) {
	client := startServer(t).client(t)
	rules := everyAlgorithm(time.Hour, 40, 40, 40, 30)
	p := newPolicy(t, client, rules, "go-hammer:")
	var admitted sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 16 {
		admitted.Add(1)
		go func() {
			defer admitted.Done()
			for range 10 {
				d, err := p.AcquireAt(ctx, "shared", 1, time.Second)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					mu.Lock()
					total++
					mu.Unlock()
				}
			}
		}()
	}
	admitted.Wait()
	if total != 30 {
		t.Errorf("%d admitted, want 30", total)
	}
	state, err := p.AcquireAt(ctx, "shared", 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []uint64{10, 10, 10, 0} {
		if state.Rules[i].Remaining != want {
			t.Errorf("rule %d: %d remaining, want %d", i, state.Rules[i].Remaining, want)
		}
	}
}

// Reset deletes every rule's state of one key: it is admitted again at once, full; other
// keys keep theirs. So does a Limiter's.
func TestResetLiftsAKeysLimit(t *testing.T) {
	client := startServer(t).client(t)
	p := newPolicy(t, client, everyAlgorithm(time.Minute, 2, 3, 3, 3), "go-reset:")
	for _, key := range []string{"alice", "bob"} {
		if d, err := p.AcquireAt(ctx, key, 2, 0); err != nil || !d.Allowed {
			t.Fatalf("%s: %+v, %v", key, d, err)
		}
	}
	if err := p.Reset(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if kept := client.Exists(ctx, p.Keys("alice")...).Val(); kept != 0 {
		t.Errorf("%d of alice's keys kept", kept)
	}
	fresh, err := p.AcquireAt(ctx, "alice", 2, 0)
	if err != nil || !fresh.Allowed || fresh.Rules[0].Remaining != 0 || fresh.Rules[3].Remaining != 1 {
		t.Errorf("after reset: %+v, %v", fresh, err)
	}
	if d, err := p.AcquireAt(ctx, "bob", 1, 0); err != nil || d.DeniedBy != 0 {
		t.Errorf("bob: %+v, %v", d, err)
	}
	if err := p.Reset(ctx, "nobody"); err != nil {
		t.Error(err)
	}
	l := newLimiter(t, client, librate.Config{Algorithm: librate.FixedWindow, Limit: 1, Period: time.Minute}, "go-reset-one:")
	for _, key := range []string{"alice", "bob"} {
		if d, err := l.AcquireAt(ctx, key, 1, 0); err != nil || !d.Allowed {
			t.Fatalf("%s: %+v, %v", key, d, err)
		}
	}
	if err := l.Reset(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	alice, _ := l.AcquireAt(ctx, "alice", 1, 0)
	bob, _ := l.AcquireAt(ctx, "bob", 1, 0)
	if !alice.Allowed || bob.Allowed {
		t.Errorf("after alice's reset: alice %+v, bob %+v", alice, bob)
	}
}

// Keys are "prefix{=key}:i", one slot whatever the key; a prefix with a brace, a wrong
// number of rules, a rule Redis cannot decide exactly, and costs past the least limit
// are refused before anything is sent.
func TestPolicyRefusals(t *testing.T) {
	client := startServer(t).client(t)
	rules := []librate.Config{
		{Algorithm: librate.GCRA, Limit: 5, Period: time.Second},
		{Algorithm: librate.SlidingLog, Limit: 3, Period: time.Second},
	}
	p := newPolicy(t, client, rules, "api:")
	if keys := p.Keys("bob"); !reflect.DeepEqual(keys, []string{"api:{=bob}:0", "api:{=bob}:1"}) {
		t.Errorf("Keys = %q", keys)
	}
	for _, key := range []string{"", "}", "{}", "a}b{c}"} {
		keys := p.Keys(key)
		if librate.RedisSlot(keys[0]) != librate.RedisSlot(keys[1]) {
			t.Errorf("%q: %q in two slots", key, keys)
		}
	}
	if p.Limit() != 3 {
		t.Errorf("Limit() = %d", p.Limit())
	}
	for _, prefix := range []string{"{api}:", "api{", "api}"} {
		if _, err := librateredis.NewPolicy(client, rules, prefix); !errors.Is(err, librate.ErrInvalidConfig) {
			t.Errorf("prefix %q: %v", prefix, err)
		}
	}
	tooLong := librate.Config{Algorithm: librate.FixedWindow, Limit: 1, Period: 1 << 53}
	for _, bad := range [][]librate.Config{nil, make([]librate.Config, 9), {rules[0], tooLong}} {
		if _, err := librateredis.NewPolicy(client, bad, "x"); !errors.Is(err, librate.ErrInvalidConfig) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if _, err := librateredis.NewPolicy(client, []librate.Config{rules[0], tooLong}, "x"); err == nil ||
		!strings.Contains(err.Error(), "rule 1") {
		t.Errorf("a rule too long for Redis: %v", err)
	}
	if _, err := librateredis.NewPolicy(nil, rules, "x"); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("nil client: %v", err)
	}
	if _, err := p.AcquireAt(ctx, "k", 4, 0); !errors.Is(err, librate.ErrInsufficientCapacity) {
		t.Errorf("n past the limit: %v", err)
	}
	if _, err := p.AcquireAt(ctx, "k", -1, 0); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("negative n: %v", err)
	}
	//lint:ignore SA1012 a nil context is what is tested
	if _, err := p.Acquire(nil, "k", 1); !errors.Is(err, librate.ErrInvalidArgument) { //nolint:staticcheck
		t.Errorf("nil context: %v", err)
	}
}

// A rule's key holding another type is that request's *Error and nothing is written; so
// is a server out of memory; a flushed script is loaded again; a killed server is an
// error, never an admission.
func TestPolicyFailuresAreErrors(t *testing.T) {
	s := startServer(t)
	client := s.client(t)
	rules := everyAlgorithm(time.Second, 2, 2, 2, 2)
	p := newPolicy(t, client, rules, "go-fail:")
	failed := func(what string, d librate.PolicyDecision, err error) {
		t.Helper()
		var failure *librateredis.Error
		if !errors.As(err, &failure) || d.Allowed || d.Rules != nil {
			t.Errorf("%s: %+v, %v; want an *Error", what, d, err)
		}
	}
	for wrong := range rules {
		key := fmt.Sprintf("wrong-%d", wrong)
		keys := p.Keys(key)
		client.RPush(ctx, keys[wrong], "x")
		d, err := p.AcquireAt(ctx, key, 1, 0)
		failed(fmt.Sprintf("rule %d a list", wrong), d, err)
		if written := client.Exists(ctx, keys...).Val(); written != 1 {
			t.Errorf("rule %d a list: %d keys", wrong, written)
		}
	}
	client.ConfigSet(ctx, "maxmemory", "1")
	d, err := p.AcquireAt(ctx, "oom", 1, 0)
	failed("out of memory", d, err)
	client.ConfigSet(ctx, "maxmemory", "0")
	if written := client.Exists(ctx, p.Keys("oom")...).Val(); written != 0 {
		t.Errorf("out of memory: %d keys written", written)
	}
	client.ScriptFlush(ctx)
	if d, err := p.AcquireAt(ctx, "k", 2, 0); err != nil || !d.Allowed {
		t.Errorf("after SCRIPT FLUSH: %+v, %v", d, err)
	}
	// The server's clock: long after time 0, the key is fresh again.
	if d, err := p.Acquire(ctx, "k", 2); err != nil || !d.Allowed {
		t.Errorf("by the server's clock: %+v, %v", d, err)
	}
	s.kill()
	d, err = p.AcquireAt(ctx, "k", 1, 0)
	failed("a killed server", d, err)
	if err := p.Reset(ctx, "k"); err == nil {
		t.Error("reset on a killed server: no error")
	}
}
