package librate_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// A shared keyed table's and keyed policy's rules changed in their file (docs/shared.md,
// changing the rule): SetConfig or SetRules in one process is every process's rule at its
// next decision, each key's state carried over, and OpenKeyed and OpenKeyedPolicy with
// ReplaceRule give the file the opener's rule. The process tests run this test binary
// again as a child (shared_process_test.go's helper) doing one of the helpers below.
//
// GCRA as in shared_change_test.go: T = P/L, τ = B·T; debt = max(0, TAT − t), Remaining
// = ⌊(τ − debt)/T⌋, ResetAfter = debt. A change keeps each key's tokens, capped at the
// new burst; a key whose state is then fresh (a full bucket) starts anew, which shows
// the same tokens (docs/live-changes.md).

const (
	helperKeyedSetConfig = "keyed-set-config" // attach at 10 a second, change the table to 5 a second
	helperKeyedReplace   = "keyed-replace"    // a worker restarted with a new limit, 5 an hour
	helperPolicySetRules = "policy-set-rules" // attach to a policy, change its rules at 0
	helperPolicyReplace  = "policy-replace"   // a worker restarted with a policy's new rules
)

// changeCapacity is the capacity of every keyed table and policy here.
const changeCapacity = 64

var (
	hourly200 = librate.Config{Algorithm: librate.GCRA, Limit: 200, Period: time.Hour}
	hourly100 = librate.Config{Algorithm: librate.GCRA, Limit: 100, Period: time.Hour}
	// A keyed policy before and after a change at 0: per key 10 then 5 a second, for
	// everybody 100 then 50 a minute in fixed windows.
	policyBefore = []librate.KeyedRule{
		librate.PerKeyRule(gcra10),
		librate.GlobalRule(librate.Config{Algorithm: librate.FixedWindow, Limit: 100, Period: time.Minute}),
	}
	policyAfter = []librate.KeyedRule{
		librate.PerKeyRule(gcra5),
		librate.GlobalRule(librate.Config{Algorithm: librate.FixedWindow, Limit: 50, Period: time.Minute}),
	}
	// A keyed policy on the real clock before and after a replacing open: per key 10
	// then 5 an hour, for everybody 100 then 200 an hour, all GCRA (no window to roll
	// over while the test runs; T is 6 min at the least, so nothing refills meanwhile).
	hourlyBefore = []librate.KeyedRule{librate.PerKeyRule(hourly10), librate.GlobalRule(hourly100)}
	hourlyAfter  = []librate.KeyedRule{librate.PerKeyRule(hourly5), librate.GlobalRule(hourly200)}
)

// changeKeyedToFive, in a child: attaches to the table with the file's rule, 10 a
// second, and changes it to 5 a second at 0. ann's 6 tokens left at 0 are capped at the
// new burst, 5: a query at 0 sees a full bucket of 5.
func changeKeyedToFive(t *testing.T) {
	there, err := librate.OpenKeyed(os.Getenv(pathEnv), gcra10, changeCapacity)
	if err != nil {
		t.Fatal(err)
	}
	defer there.Close()
	if err := there.SetConfigAt(gcra5, 0); err != nil {
		t.Fatal(err)
	}
	if d, err := there.AcquireAt("ann", 0, 0); err != nil || d != fullOfFive {
		t.Errorf("ann's query after the change: %+v, %v; want %+v", d, err, fullOfFive)
	}
}

func TestKeyedSetConfigChangesTheFileForEveryProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users")
	here, err := librate.OpenKeyed(path, gcra10, changeCapacity)
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	// 10 a second, T = 100 ms, τ = 1 s: ann's 4 at 0 leave TAT = 400 ms, 6 tokens; bob's
	// 8 leave TAT = 800 ms, 2 tokens.
	for _, take := range []struct {
		key  string
		n    int
		want librate.Decision
	}{
		{"ann", 4, librate.Decision{Allowed: true, Limit: 10, Remaining: 6, ResetAfter: 400 * time.Millisecond}},
		{"bob", 8, librate.Decision{Allowed: true, Limit: 10, Remaining: 2, ResetAfter: 800 * time.Millisecond}},
	} {
		if d, err := here.AcquireAt(take.key, take.n, 0); err != nil || d != take.want {
			t.Fatalf("%s: %d of 10: %+v, %v; want %+v", take.key, take.n, d, err, take.want)
		}
	}
	runChild(t, helperKeyedSetConfig, path)
	// This process's Keyed reports the file's rule in force, as the child gave it.
	if got := here.Config(); got != gcra5 {
		t.Errorf("Config() after the child's change: %+v, want %+v", got, gcra5)
	}
	// Here at the next decision: 5 a second, T = 200 ms, τ = 1 s. ann: 6 tokens capped at
	// 5, a full bucket; then 5 at 0 leave TAT = 1 s, 0 left, and 1 more waits
	// 1 s + 200 ms − 1 s = 200 ms. bob: 2 tokens kept, debt τ − 2·T = 600 ms. A new key:
	// a full bucket.
	for _, step := range []struct {
		key  string
		n    int
		want librate.Decision
	}{
		{"ann", 0, fullOfFive},
		{"ann", 5, librate.Decision{Allowed: true, Limit: 5, ResetAfter: time.Second}},
		{"ann", 1, librate.Decision{Limit: 5, RetryAfter: 200 * time.Millisecond, ResetAfter: time.Second}},
		{"bob", 0, librate.Decision{Allowed: true, Limit: 5, Remaining: 2, ResetAfter: 600 * time.Millisecond}},
		{"new", 0, fullOfFive},
	} {
		if d, err := here.AcquireAt(step.key, step.n, 0); err != nil || d != step.want {
			t.Errorf("%s: %d at 0: %+v, %v; want %+v", step.key, step.n, d, err, step.want)
		}
	}
	// The file holds the new rule: the old one is refused, told what the file holds.
	held := path + ": a librate keyed table of capacity 64 holding GCRA, limit 5, " +
		"period_ns 1000000000, burst 5 (its rule changed 1 time since it was made)"
	_, err = librate.OpenKeyed(path, gcra10, changeCapacity)
	checkIncompatibleError(t, err, path, held)
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "holding GCRA, limit 5") {
		t.Errorf("err.Error() = %q, want the path and the rule in force", err.Error())
	}
	again, err := librate.OpenKeyed(path, gcra5, changeCapacity)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	// The keys are the later opener's too: ann's 5 taken at 0 deny her as above.
	denied := librate.Decision{Limit: 5, RetryAfter: 200 * time.Millisecond, ResetAfter: time.Second}
	if d, err := again.AcquireAt("ann", 1, 0); err != nil || d != denied {
		t.Errorf("a later opener's 1 for ann at 0: %+v, %v; want %+v", d, err, denied)
	}
}

// restartKeyedWithFive, in a child: a worker restarted with a new limit, 5 an hour.
// OpenKeyed refuses the file (it holds 10 an hour) with an *IncompatibleError that names
// the path and the rule; with ReplaceRule the file takes the new rule. ann's 6 tokens are
// capped at 5, and none refills while the test runs (T = 12 min).
func restartKeyedWithFive(t *testing.T) {
	path := os.Getenv(pathEnv)
	_, err := librate.OpenKeyed(path, hourly5, changeCapacity)
	checkIncompatibleError(t, err, path, path+": a librate keyed table of capacity 64 holding "+
		"GCRA, limit 10, period_ns 3600000000000, burst 10")
	worker, err := librate.OpenKeyed(path, hourly5, changeCapacity, librate.ReplaceRule())
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	if d, err := worker.Acquire("ann", 0); err != nil || d.Limit != 5 || d.Remaining != 5 {
		t.Errorf("ann's query after the replacing open: %+v, %v; want limit 5, remaining 5", d, err)
	}
}

func TestOpenKeyedReplaceRuleReplacesTheFilesRule(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users")
	// On the real clock, 10 an hour (T = 6 min): ann's 4 now leave 6 tokens, bob's 8
	// leave 2.
	old, err := librate.OpenKeyed(path, hourly10, changeCapacity)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	for key, n := range map[string]int{"ann": 4, "bob": 8} {
		if d, err := old.Acquire(key, n); err != nil || d.Limit != 10 || d.Remaining != uint64(10-n) {
			t.Fatalf("%s: %d of 10: %+v, %v", key, n, d, err)
		}
	}
	runChild(t, helperKeyedReplace, path)
	// This process's Keyed reports the rule the restarted worker gave the file.
	if got := old.Config(); got != hourly5 {
		t.Errorf("Config() after the replacing open: %+v, want %+v", got, hourly5)
	}
	// The process still on the old rule follows at its next decision, 5 an hour: ann 5
	// (6 capped), bob his 2, a new key 5.
	for key, remaining := range map[string]uint64{"ann": 5, "bob": 2, "new": 5} {
		if d, err := old.Acquire(key, 0); err != nil || d.Limit != 5 || d.Remaining != remaining {
			t.Errorf("the old handle's query of %s: %+v, %v; want limit 5, remaining %d", key, d, err, remaining)
		}
	}
	if d, err := old.Acquire("bob", 3); err != nil || d.Allowed {
		t.Errorf("3 for bob, who has 2: %+v, %v; want denied", d, err)
	}
	held := path + ": a librate keyed table of capacity 64 holding GCRA, limit 5, period_ns " +
		"3600000000000, burst 5 (its rule changed 1 time since it was made)"
	describedAs(t, path, held)
	// The rule the file holds changes nothing (burst 5 is what 0 means).
	same, err := librate.OpenKeyed(path, librate.Config{Algorithm: librate.GCRA, Limit: 5, Period: time.Hour, Burst: 5},
		changeCapacity, librate.ReplaceRule())
	if err != nil {
		t.Fatal(err)
	}
	same.Close()
	describedAs(t, path, held)
	// Another algorithm cannot carry the state over: refused, the file's rule kept.
	fixed := librate.Config{Algorithm: librate.FixedWindow, Limit: 5, Period: time.Hour}
	if _, err := librate.OpenKeyed(path, fixed, changeCapacity, librate.ReplaceRule()); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("another algorithm: %v, want ErrInvalidConfig", err)
	}
	describedAs(t, path, held)
	// Another capacity is no rule to replace: refused, told what the file holds.
	_, err = librate.OpenKeyed(path, hourly5, 2*changeCapacity, librate.ReplaceRule())
	checkIncompatibleError(t, err, path, held)
	// A limiter's file is no keyed table's, replacing or not.
	limiter := filepath.Join(dir, "limit")
	l, err := librate.Open(limiter, gcra10)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	_, err = librate.OpenKeyed(limiter, gcra10, changeCapacity, librate.ReplaceRule())
	checkIncompatibleError(t, err, limiter, limiter+": a librate limiter holding GCRA, limit 10, "+
		"period_ns 1000000000, burst 10")
}

// A new file is made with the opener's rule, replacing or not.
func TestOpenKeyedReplaceRuleMakesANewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new")
	users, err := librate.OpenKeyed(path, gcra10, changeCapacity, librate.ReplaceRule(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// 3 at 1 s: TAT = 1.3 s, remaining ⌊700 ms / 100 ms⌋ = 7, reset 300 ms.
	want := librate.Decision{Allowed: true, Limit: 10, Remaining: 7, ResetAfter: 300 * time.Millisecond}
	if d, err := users.AcquireAt("ann", 3, time.Second); err != nil || d != want {
		t.Errorf("3 at 1 s: %+v, %v; want %+v", d, err, want)
	}
	users.Close()
	describedAs(t, path, path+": a librate keyed table of capacity 64 holding GCRA, limit 10, "+
		"period_ns 1000000000, burst 10")
}

// changePolicyRules, in a child: attaches to the policy with its rules and changes them
// at 0, per key 10 to 5 a second, for everybody 100 to 50 a minute.
func changePolicyRules(t *testing.T) {
	there, err := librate.OpenKeyedPolicy(os.Getenv(pathEnv), changeCapacity, policyBefore)
	if err != nil {
		t.Fatal(err)
	}
	defer there.Close()
	if err := there.SetRulesAt(0, policyAfter...); err != nil {
		t.Fatal(err)
	}
}

func TestKeyedPolicySetRulesChangesTheFileForEveryProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "site")
	here, err := librate.OpenKeyedPolicy(path, changeCapacity, policyBefore)
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	// At 0: ann takes 4 (6 tokens of 10 left), bob 8 (2 left); the window counts 12.
	for key, n := range map[string]int{"ann": 4, "bob": 8} {
		if d, err := here.AcquireAt(key, n, 0); err != nil || !d.Allowed {
			t.Fatalf("%s: %d: %+v, %v", key, n, d, err)
		}
	}
	runChild(t, helperPolicySetRules, path)
	// This process's KeyedPolicy reports the file's rules in force, as the child gave them.
	if got := here.KeyedRules(); !reflect.DeepEqual(got, policyAfter) {
		t.Errorf("KeyedRules() after the child's change: %+v, want %+v", got, policyAfter)
	}
	if got, want := here.Rules(), []librate.Config{gcra5, policyAfter[1].Config}; !reflect.DeepEqual(got, want) {
		t.Errorf("Rules() after the child's change: %+v, want %+v", got, want)
	}
	// Here at the next decision, at 0. Per key 5 a second (T = 200 ms, τ = 1 s): ann's 6
	// tokens capped at 5, a full bucket; bob keeps 2, debt 600 ms. For everybody 50 a
	// minute: the window keeps its 12, 38 left, its next at 1 min.
	counted := librate.Decision{Allowed: true, Limit: 50, Remaining: 38, ResetAfter: time.Minute}
	for _, c := range []struct {
		key  string
		want librate.Decision
	}{
		{"ann", fullOfFive},
		{"bob", librate.Decision{Allowed: true, Limit: 5, Remaining: 2, ResetAfter: 600 * time.Millisecond}},
		{"new", fullOfFive},
	} {
		d, err := here.AcquireAt(c.key, 0, 0)
		if err != nil || len(d.Rules) != 2 || d.Rules[0] != c.want || d.Rules[1] != counted {
			t.Errorf("%s's query after the change: %+v, %v; want %+v, %+v", c.key, d, err, c.want, counted)
		}
	}
	// 3 for bob, who has 2: denied by the per-key rule, nothing taken.
	if d, err := here.AcquireAt("bob", 3, 0); err != nil || d.Allowed || d.DeniedBy != 0 {
		t.Errorf("3 for bob: %+v, %v; want denied by rule 0", d, err)
	}
	// The file holds the new rules: the old ones are refused, the new ones open it.
	_, err = librate.OpenKeyedPolicy(path, changeCapacity, policyBefore)
	var refused *librate.IncompatibleError
	if !errors.As(err, &refused) || refused.Path != path || !strings.HasPrefix(refused.Description, path+": a librate keyed policy") {
		t.Errorf("the old rules: %v, want an *IncompatibleError describing %s", err, path)
	}
	again, err := librate.OpenKeyedPolicy(path, changeCapacity, policyAfter)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if d, err := again.AcquireAt("bob", 0, 0); err != nil || d.Rules[0].Remaining != 2 || d.Rules[1] != counted {
		t.Errorf("a later opener's query of bob: %+v, %v", d, err)
	}
}

// restartPolicyWithNewRules, in a child: a worker restarted with the policy's new rules,
// per key 5 an hour and for everybody 200 an hour. OpenKeyedPolicy refuses the file with
// an *IncompatibleError that says what it holds; with ReplaceRule the file takes the new
// rules.
func restartPolicyWithNewRules(t *testing.T) {
	path := os.Getenv(pathEnv)
	_, err := librate.OpenKeyedPolicy(path, changeCapacity, hourlyAfter)
	checkIncompatibleError(t, err, path, path+": a librate keyed policy of capacity 64 holding 2 "+
		"rules: GCRA, limit 10, period_ns 3600000000000, burst 10 (per key); GCRA, limit 100, "+
		"period_ns 3600000000000, burst 100 (global)")
	worker, err := librate.OpenKeyedPolicy(path, changeCapacity, hourlyAfter, librate.ReplaceRule())
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	if d, err := worker.Acquire("ann", 0); err != nil || d.Rules[0].Limit != 5 || d.Rules[0].Remaining != 5 {
		t.Errorf("ann's query after the replacing open: %+v, %v; want limit 5, remaining 5", d, err)
	}
}

func TestOpenKeyedPolicyReplaceRuleReplacesTheFilesRules(t *testing.T) {
	path := filepath.Join(t.TempDir(), "site")
	// On the real clock: ann takes 4 now (6 of 10 left), bob 8 (2 left); everybody's
	// bucket 100 − 12 = 88.
	old, err := librate.OpenKeyedPolicy(path, changeCapacity, hourlyBefore)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	for key, n := range map[string]int{"ann": 4, "bob": 8} {
		if d, err := old.Acquire(key, n); err != nil || !d.Allowed {
			t.Fatalf("%s: %d: %+v, %v", key, n, d, err)
		}
	}
	runChild(t, helperPolicyReplace, path)
	// This process's KeyedPolicy reports the rules the restarted worker gave the file.
	if got := old.KeyedRules(); !reflect.DeepEqual(got, hourlyAfter) {
		t.Errorf("KeyedRules() after the replacing open: %+v, want %+v", got, hourlyAfter)
	}
	// The process still on the old rules follows at its next decision: per key 5 an hour
	// (ann's 6 capped at 5, bob his 2, a new key 5), for everybody 200 an hour, burst 200,
	// keeping its 88.
	for key, remaining := range map[string]uint64{"ann": 5, "bob": 2, "new": 5} {
		d, err := old.Acquire(key, 0)
		if err != nil || len(d.Rules) != 2 || d.Rules[0].Limit != 5 || d.Rules[0].Remaining != remaining ||
			d.Rules[1].Limit != 200 || d.Rules[1].Remaining != 88 {
			t.Errorf("the old handle's query of %s: %+v, %v; want %d of 5 and 88 of 200", key, d, err, remaining)
		}
	}
	// The file holds the new rules: an opener with them needs no ReplaceRule.
	again, err := librate.OpenKeyedPolicy(path, changeCapacity, hourlyAfter)
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	// A rule that cannot carry its state over (another algorithm), or other scopes, is
	// refused, and the file keeps its rules.
	windowed := []librate.KeyedRule{
		librate.PerKeyRule(librate.Config{Algorithm: librate.FixedWindow, Limit: 5, Period: time.Hour}),
		hourlyAfter[1],
	}
	if _, err := librate.OpenKeyedPolicy(path, changeCapacity, windowed, librate.ReplaceRule()); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("another algorithm: %v, want ErrInvalidConfig", err)
	}
	swapped := []librate.KeyedRule{librate.GlobalRule(hourly5), librate.PerKeyRule(hourly200)}
	if _, err := librate.OpenKeyedPolicy(path, changeCapacity, swapped, librate.ReplaceRule()); !errors.Is(err, librate.ErrIncompatible) {
		t.Errorf("other scopes: %v, want ErrIncompatible", err)
	}
	if d, err := old.Acquire("bob", 0); err != nil || d.Rules[0].Limit != 5 || d.Rules[0].Remaining != 2 {
		t.Errorf("bob after the refused opens: %+v, %v; want 2 of 5", d, err)
	}
}

// ExampleOpenKeyed_replaceRule rolls out a new per-user limit by restarting the processes
// that share a keyed table: the restarted one opens it with ReplaceRule, and those still
// running follow, each key keeping what it took.
func ExampleOpenKeyed_replaceRule() {
	dir, err := os.MkdirTemp("", "librate-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "per-user") // on /dev/shm in production
	old := librate.Config{Algorithm: librate.GCRA, Limit: 100, Period: time.Hour}
	running, _ := librate.OpenKeyed(path, old, 10_000) // a worker started before the release
	running.Acquire("alice", 70)                       // alice has 30 left

	// The release lowers the limit to 50 an hour: the restarted worker replaces the rule.
	tighter := librate.Config{Algorithm: librate.GCRA, Limit: 50, Period: time.Hour}
	restarted, err := librate.OpenKeyed(path, tighter, 10_000, librate.ReplaceRule())
	if err != nil {
		panic(err)
	}
	d, _ := running.Acquire("alice", 1) // the old worker decides under the new rule too
	fmt.Println(d.Limit, d.Remaining)
	restarted.Close()
	running.Close()
	// Output:
	// 50 29
}
