package librate_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// A shared limiter's rule changed in its file (docs/shared.md, changing the rule):
// SetConfig in one process is every process's rule at its next decision, Open with
// ReplaceRule gives the file the opener's rule, and DescribeFile (and every
// *IncompatibleError) says what a file holds. The process tests run this test binary
// again as a child (shared_process_test.go's helper), doing helperSetConfig or
// helperReplace.
//
// GCRA with limit L, period P, burst B (0: L): T = P/L, τ = B·T; after a decision,
// debt = max(0, TAT − t), Remaining = ⌊(τ − debt)/T⌋, ResetAfter = debt. A change keeps
// the tokens, capped at the new burst (docs/live-changes.md).

const (
	helperSetConfig = "set-config" // attach at 10 a second, change the file to 5 a second
	helperReplace   = "replace"    // a worker restarted with a new limit, 5 an hour
)

var (
	gcra5      = librate.Config{Algorithm: librate.GCRA, Limit: 5, Period: time.Second}
	hourly10   = librate.Config{Algorithm: librate.GCRA, Limit: 10, Period: time.Hour}
	hourly5    = librate.Config{Algorithm: librate.GCRA, Limit: 5, Period: time.Hour}
	fullOfFive = librate.Decision{Allowed: true, Limit: 5, Remaining: 5}
)

// runChild runs this test binary as a child doing work on the file at path, and fails
// the test unless it passes.
func runChild(t *testing.T, work, path string) {
	t.Helper()
	child, err := startHelper(t, os.Args[0], work, []string{pathEnv + "=" + path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := child.finish(); err != nil {
		t.Fatal(err)
	}
}

// changeToFive, in a child: attaches with the file's rule, 10 a second, and changes it to
// 5 a second at 0. The 6 tokens left at 0 are capped at the new burst, 5: a query at 0
// sees a full bucket of 5.
func changeToFive(t *testing.T) {
	there, err := librate.Open(os.Getenv(pathEnv), gcra10)
	if err != nil {
		t.Fatal(err)
	}
	defer there.Close()
	if err := there.SetConfigAt(gcra5, 0); err != nil {
		t.Fatal(err)
	}
	if d, err := there.AcquireAt(0, 0); err != nil || d != fullOfFive {
		t.Errorf("a query after the change: %+v, %v; want %+v", d, err, fullOfFive)
	}
}

func TestSetConfigChangesTheFileForEveryProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "limit")
	here, err := librate.Open(path, gcra10)
	if err != nil {
		t.Fatal(err)
	}
	defer here.Close()
	// 10 a second, T = 100 ms, τ = 1 s: 4 at 0 leave TAT = 400 ms, remaining 6.
	took := librate.Decision{Allowed: true, Limit: 10, Remaining: 6, ResetAfter: 400 * time.Millisecond}
	if d, err := here.AcquireAt(4, 0); err != nil || d != took {
		t.Fatalf("4 of 10: %+v, %v; want %+v", d, err, took)
	}
	runChild(t, helperSetConfig, path)
	// This process's Limiter reports the file's rule in force, as the child gave it.
	if got := here.Config(); got != gcra5 {
		t.Errorf("Config() after the child's change: %+v, want %+v", got, gcra5)
	}
	// Here too at the next decision: 5 a second, T = 200 ms, τ = 1 s, a full bucket. 5 at
	// 0: TAT = 1 s, remaining 0, reset 1 s; 1 more: retry 1 s + 200 ms − 1 s = 200 ms.
	for _, step := range []struct {
		n    int
		want librate.Decision
	}{
		{0, fullOfFive},
		{5, librate.Decision{Allowed: true, Limit: 5, ResetAfter: time.Second}},
		{1, librate.Decision{Limit: 5, RetryAfter: 200 * time.Millisecond, ResetAfter: time.Second}},
	} {
		if d, err := here.AcquireAt(step.n, 0); err != nil || d != step.want {
			t.Errorf("%d at 0: %+v, %v; want %+v", step.n, d, err, step.want)
		}
	}
	// The file holds the new rule: the old one is refused, told what the file holds.
	held := path + ": a librate limiter holding GCRA, limit 5, period_ns 1000000000, burst 5 " +
		"(its rule changed 1 time since it was made)"
	_, err = librate.Open(path, gcra10)
	checkIncompatibleError(t, err, path, held)
	again, err := librate.Open(path, gcra5)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	// The 5 taken at 0 are the new opener's too: denied as above.
	denied := librate.Decision{Limit: 5, RetryAfter: 200 * time.Millisecond, ResetAfter: time.Second}
	if d, err := again.AcquireAt(1, 0); err != nil || d != denied {
		t.Errorf("a later opener's 1 at 0: %+v, %v; want %+v", d, err, denied)
	}
}

// checkIncompatibleError checks that err is an *IncompatibleError for path whose
// description is described, matching ErrIncompatible, and that DescribeFile agrees.
func checkIncompatibleError(t *testing.T, err error, path, described string) {
	t.Helper()
	var refused *librate.IncompatibleError
	if !errors.As(err, &refused) || !errors.Is(err, librate.ErrIncompatible) {
		t.Fatalf("%v (%T), want an *IncompatibleError matching ErrIncompatible", err, err)
	}
	if refused.Path != path || refused.Description != described {
		t.Errorf("refused: %+v, want path %q, description %q", *refused, path, described)
	}
	if want := "librate: incompatible shared file: " + described; err.Error() != want {
		t.Errorf("err.Error() = %q, want %q", err.Error(), want)
	}
	if got, err := librate.DescribeFile(path); err != nil || got != described {
		t.Errorf("DescribeFile: %q, %v; want %q", got, err, described)
	}
}

// restartWithFive, in a child: a worker restarted with a new limit, 5 an hour. Open
// refuses the file (it holds 10 an hour); Open with ReplaceRule gives it the new rule.
// The 6 tokens left are capped at 5, and none refills while the test runs (T = 12 min).
func restartWithFive(t *testing.T) {
	path := os.Getenv(pathEnv)
	if _, err := librate.Open(path, hourly5); !errors.Is(err, librate.ErrIncompatible) {
		t.Fatalf("Open without ReplaceRule: %v, want ErrIncompatible", err)
	}
	worker, err := librate.Open(path, hourly5, librate.ReplaceRule())
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	if d, err := worker.Acquire(0); err != nil || d.Limit != 5 || d.Remaining != 5 {
		t.Errorf("a query after the replacing open: %+v, %v; want limit 5, remaining 5", d, err)
	}
}

func TestOpenReplaceRuleReplacesTheFilesRule(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "limit")
	// On the real clock, 10 an hour (T = 6 min): 4 now leave 6 tokens.
	old, err := librate.Open(path, hourly10)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if d, err := old.Acquire(4); err != nil || d.Limit != 10 || d.Remaining != 6 {
		t.Fatalf("4 of 10: %+v, %v", d, err)
	}
	runChild(t, helperReplace, path)
	// The process still on the old rule follows at its next decision: 5 of 5 left.
	if d, err := old.Acquire(0); err != nil || d.Limit != 5 || d.Remaining != 5 {
		t.Errorf("the old handle's query: %+v, %v; want limit 5, remaining 5", d, err)
	}
	if d, err := old.Acquire(5); err != nil || !d.Allowed || d.Remaining != 0 {
		t.Errorf("5 of 5: %+v, %v", d, err)
	}
	if old.Allow() {
		t.Error("a sixth unit was admitted")
	}
	held := path + ": a librate limiter holding GCRA, limit 5, period_ns 3600000000000, " +
		"burst 5 (its rule changed 1 time since it was made)"
	describedAs(t, path, held)
	// The rule the file holds changes nothing (burst 5 is what 0 means).
	same, err := librate.Open(path, librate.Config{Algorithm: librate.GCRA, Limit: 5, Period: time.Hour, Burst: 5}, librate.ReplaceRule())
	if err != nil {
		t.Fatal(err)
	}
	same.Close()
	describedAs(t, path, held)
	// Another algorithm cannot carry the state over: refused, the file's rule kept.
	fixed := librate.Config{Algorithm: librate.FixedWindow, Limit: 5, Period: time.Hour}
	if _, err := librate.Open(path, fixed, librate.ReplaceRule()); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("another algorithm: %v, want ErrInvalidConfig", err)
	}
	describedAs(t, path, held)
	// A keyed table's file is no limiter's, replacing or not.
	keyed := filepath.Join(dir, "keyed")
	k, err := librate.OpenKeyed(keyed, gcra10, 64)
	if err != nil {
		t.Fatal(err)
	}
	k.Close()
	_, err = librate.Open(keyed, gcra10, librate.ReplaceRule())
	checkIncompatibleError(t, err, keyed, keyed+": a librate keyed table of capacity 64 holding "+
		"GCRA, limit 10, period_ns 1000000000, burst 10")
}

// describedAs checks DescribeFile's sentence for path.
func describedAs(t *testing.T, path, want string) {
	t.Helper()
	if got, err := librate.DescribeFile(path); err != nil || got != want {
		t.Errorf("DescribeFile(%q) = %q, %v; want %q", path, got, err, want)
	}
}

// A new file is made with the opener's rule; a missing directory is the OS's refusal.
func TestOpenReplaceRuleMakesANewFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new")
	limiter, err := librate.Open(path, gcra10, librate.ReplaceRule(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// 3 at 1 s: TAT = 1.3 s, remaining ⌊700 ms / 100 ms⌋ = 7, reset 300 ms.
	want := librate.Decision{Allowed: true, Limit: 10, Remaining: 7, ResetAfter: 300 * time.Millisecond}
	if d, err := limiter.AcquireAt(3, time.Second); err != nil || d != want {
		t.Errorf("3 at 1 s: %+v, %v; want %+v", d, err, want)
	}
	limiter.Close()
	describedAs(t, path, path+": a librate limiter holding GCRA, limit 10, period_ns 1000000000, burst 10")
	_, err = librate.Open(filepath.Join(dir, "none", "limit"), gcra10, librate.ReplaceRule())
	var pathError *os.PathError
	if !errors.As(err, &pathError) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v", err)
	}
}

// Every opener's *IncompatibleError says what the file holds: a keyed table, a keyed
// policy, and bytes that are no table.
func TestEveryOpenSaysWhatTheFileHolds(t *testing.T) {
	dir := t.TempDir()
	keyed := filepath.Join(dir, "keyed")
	k, err := librate.OpenKeyed(keyed, gcra10, 64)
	if err != nil {
		t.Fatal(err)
	}
	k.Close()
	_, err = librate.OpenKeyed(keyed, librate.Config{Algorithm: librate.GCRA, Limit: 20, Period: time.Second}, 64)
	checkIncompatibleError(t, err, keyed, keyed+": a librate keyed table of capacity 64 holding "+
		"GCRA, limit 10, period_ns 1000000000, burst 10")

	policy := filepath.Join(dir, "policy")
	rules := []librate.KeyedRule{
		{Config: librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Second}, Scope: librate.PerKey},
		{Config: librate.Config{Algorithm: librate.FixedWindow, Limit: 100, Period: time.Minute}, Scope: librate.Global},
	}
	p, err := librate.OpenKeyedPolicy(policy, 64, rules)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	_, err = librate.OpenKeyedPolicy(policy, 64, rules[:1])
	checkIncompatibleError(t, err, policy, policy+": a librate keyed policy of capacity 64 "+
		"holding 2 rules: GCRA, limit 1, period_ns 1000000000, burst 1 (per key); fixed "+
		"window, limit 100, period_ns 60000000000 (global)")

	// 128 bytes that do not start with librate's magic bytes.
	zeros := filepath.Join(dir, "zeros")
	if err := os.WriteFile(zeros, make([]byte, 128), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = librate.Open(zeros, gcra10)
	checkIncompatibleError(t, err, zeros, zeros+": not a librate table (it does not start "+
		"with librate's magic bytes)")
}

// The sentence is whole however long the path: a name of 200 bytes outgrows
// RATE_REASON_LEN (256 bytes).
func TestDescribeFileIsWholeHoweverLong(t *testing.T) {
	path := filepath.Join(t.TempDir(), strings.Repeat("x", 200))
	l, err := librate.Open(path, librate.Config{Algorithm: librate.SlidingWindow, Limit: 7, Period: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	describedAs(t, path, path+": a librate limiter holding sliding window, limit 7, period_ns 60000000000")
}

// A file that cannot be read is an *os.PathError wrapping the errno.
func TestDescribeFileOSErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		path  string
		errno syscall.Errno
	}{
		{filepath.Join(dir, "missing"), syscall.ENOENT},
		{dir, syscall.EISDIR},
	} {
		got, err := librate.DescribeFile(c.path)
		var pathError *os.PathError
		if got != "" || !errors.As(err, &pathError) || pathError.Path != c.path || !errors.Is(err, c.errno) {
			t.Errorf("DescribeFile(%q) = %q, %v; want an *os.PathError of %v", c.path, got, err, c.errno)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DescribeFile created a file: %v", err)
	}
}

// ExampleReplaceRule rolls out a new limit by restarting the processes that share a
// file: the restarted one opens it with ReplaceRule, and those still running follow.
func ExampleReplaceRule() {
	dir, err := os.MkdirTemp("", "librate-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "api") // on /dev/shm in production
	old := librate.Config{Algorithm: librate.GCRA, Limit: 100, Period: time.Minute}
	running, _ := librate.Open(path, old) // a worker started before the release

	// The release lowers the limit to 50 a minute. Open without ReplaceRule refuses
	// the file, and says what it holds; with it, the file takes the new rule.
	tighter := librate.Config{Algorithm: librate.GCRA, Limit: 50, Period: time.Minute}
	if _, err := librate.Open(path, tighter); errors.Is(err, librate.ErrIncompatible) {
		fmt.Println("refused: the file holds 100 a minute")
	}
	restarted, err := librate.Open(path, tighter, librate.ReplaceRule())
	if err != nil {
		panic(err)
	}
	d, _ := running.Acquire(1) // the old worker decides under the new rule too
	fmt.Println(d.Limit, d.Remaining)
	restarted.Close()
	running.Close()
	// Output:
	// refused: the file holds 100 a minute
	// 50 49
}
