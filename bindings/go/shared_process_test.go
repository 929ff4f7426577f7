package librate_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// The process tests run this very test binary again as child processes: with
// -test.run=^TestHelperProcess$ and helperEnv naming what the child does (helperTake,
// helperInsert, helperNobody, helperReset, shared_change_test.go's helperSetConfig and
// helperReplace, shared_keyed_change_test.go's helperKeyedSetConfig,
// helperKeyedReplace, helperPolicySetRules and helperPolicyReplace, or
// lease_host_test.go's helperLead), TestHelperProcess is the child's whole work.
const (
	helperEnv    = "LIBRATE_TEST_HELPER"
	helperTake   = "take"   // take units from a shared file until denied
	helperInsert = "insert" // insert fresh keys into a shared keyed file until killed
	helperNobody = "nobody" // as another user, try to attach to a 0600 file
	helperReset  = "reset"  // have new keys refused by a full keyed file, maybe reset one
	kindEnv      = "LIBRATE_TEST_KIND"
	pathEnv      = "LIBRATE_TEST_PATH"
	copyEnv      = "LIBRATE_TEST_COPY"
	algorithmEnv = "LIBRATE_TEST_ALGORITHM"
	unitsEnv     = "LIBRATE_TEST_UNITS"
	resetEnv     = "LIBRATE_TEST_RESET"
)

// frozen is the instant every process decides at: 1000 s into the first hour-long window.
const frozen = 1000 * time.Second

// Processes and goroutines per process of TestProcessesShareOneLimit.
const (
	processes  = 4
	goroutines = 4
)

var algorithms = []librate.Algorithm{librate.GCRA, librate.FixedWindow, librate.SlidingWindow, librate.SlidingLog}

// sharedConfig is a limiter that admits exactly `units` units at one instant. GCRA
// L=10, P=1 h, B=units: T = 360 s, and at a frozen t the k-th admission leaves
// TAT = t + k·T, so the next is admitted iff (k+1)·T ≤ B·T: B of them (the burst, not
// the limit). The windows: L = units per hour.
func sharedConfig(algorithm librate.Algorithm, units uint64) librate.Config {
	if algorithm == librate.GCRA {
		return librate.Config{Algorithm: librate.GCRA, Limit: 10, Period: time.Hour, Burst: units}
	}
	return librate.Config{Algorithm: algorithm, Limit: units, Period: time.Hour}
}

// admittedDecision is the decision, at frozen, of the admission that leaves `remaining`:
// the k-th leaves units − k for every algorithm (GCRA: ⌊(B·T − k·T)/T⌋). ResetAfter:
// GCRA the debt k·T; the fixed window the next window, 3600 − 1000 = 2600 s away; the
// sliding window the start of window 2 (7200 − 1000 s), where window 1's count no longer
// weighs; the log the moment its entries, all at t, leave (t − P, t]: P.
func admittedDecision(algorithm librate.Algorithm, units, remaining uint64) librate.Decision {
	d := librate.Decision{Allowed: true, Limit: units, Remaining: remaining}
	switch algorithm {
	case librate.GCRA:
		d.ResetAfter = time.Duration(units-remaining) * 360 * time.Second
	case librate.FixedWindow:
		d.ResetAfter = 2600 * time.Second
	case librate.SlidingWindow:
		d.ResetAfter = 6200 * time.Second
	case librate.SlidingLog:
		d.ResetAfter = time.Hour
	}
	return d
}

// deniedDecision is the decision of every request at frozen once the units are taken.
// GCRA: debt B·T, retry T. Fixed window: retry and reset at the next window. Sliding
// window: in window 1, prev = L and e' = t + d − P, one unit is admitted iff
// L·(P − e') + P ≤ L·P iff e' ≥ P/L (exact: units divides 3600 s in ns), so retry is
// 2600 s + P/L; reset as above. Log: P.
func deniedDecision(algorithm librate.Algorithm, units uint64) librate.Decision {
	d := admittedDecision(algorithm, units, 0)
	d.Allowed = false
	switch algorithm {
	case librate.GCRA:
		d.RetryAfter = 360 * time.Second
	case librate.FixedWindow:
		d.RetryAfter = 2600 * time.Second
	case librate.SlidingWindow:
		d.RetryAfter = 2600*time.Second + time.Hour/time.Duration(units)
	case librate.SlidingLog:
		d.RetryAfter = time.Hour
	}
	return d
}

// TestHelperProcess is not a test of its own: it is the child process of the tests
// below, and skips unless one of them started it.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case helperTake:
		takeUntilDenied(t)
	case helperInsert:
		insertUntilKilled(t)
	case helperNobody:
		attachAsAnotherUser(t)
	case helperReset:
		resetAndRefuse(t)
	case helperSetConfig:
		changeToFive(t)
	case helperReplace:
		restartWithFive(t)
	case helperKeyedSetConfig:
		changeKeyedToFive(t)
	case helperKeyedReplace:
		restartKeyedWithFive(t)
	case helperPolicySetRules:
		changePolicyRules(t)
	case helperPolicyReplace:
		restartPolicyWithNewRules(t)
	case helperLead:
		leadUntilKilled(t)
	default:
		t.Skip("the child process of the shared-file tests")
	}
}

// awaitGo, in a child: says "ready" and waits for the parent's go (EOF on stdin).
func awaitGo(t *testing.T) {
	fmt.Println("ready")
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		t.Fatal(err)
	}
}

// takeUntilDenied, in a child: opens the shared file of the kind kindEnv names (racing
// its siblings to create it) and, at the parent's go, runs `goroutines` goroutines that
// take 1 unit at a time at frozen of each of the kind's keys in turn (each goroutine
// from another first key) until denied, checking each decision. It prints "seen" and,
// for each admission, the key's index and the remaining it left, as "key:remaining".
func takeUntilDenied(t *testing.T) {
	kind := fileKindNamed(t, os.Getenv(kindEnv))
	algorithm, _ := strconv.ParseUint(os.Getenv(algorithmEnv), 10, 32)
	units, _ := strconv.ParseUint(os.Getenv(unitsEnv), 10, 64)
	alg := librate.Algorithm(algorithm)
	shared, err := kind.open(os.Getenv(pathEnv), sharedConfig(alg, units))
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	awaitGo(t)
	seen := make([][]string, goroutines)
	// take takes units of key k until denied: false on a wrong decision.
	take := func(g, k int) bool {
		for {
			d, err := shared.AcquireAt(kind.keys[k], 1, frozen)
			if err != nil {
				t.Error(err)
				return false
			}
			if !d.Allowed {
				if want := deniedDecision(alg, units); d != want {
					t.Errorf("denied: %+v, want %+v", d, want)
				}
				return true
			}
			if want := admittedDecision(alg, units, d.Remaining); d != want || d.Remaining >= units {
				t.Errorf("admitted: %+v, want %+v", d, want)
				return false
			}
			seen[g] = append(seen[g], fmt.Sprintf("%d:%d", k, d.Remaining))
			// With fewer cores than threads in all the processes, one process could
			// take every unit in one time slice; giving up the core now and then
			// (sched_yield: Go's own scheduler would only run this process's other
			// goroutines) lets the processes interleave.
			if len(seen[g])%16 == 0 {
				syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
			}
		}
	}
	var wg sync.WaitGroup
	for g := range seen {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range kind.keys {
				if !take(g, (g+i)%len(kind.keys)) {
					return
				}
			}
		}()
	}
	wg.Wait()
	var line strings.Builder
	line.WriteString("seen")
	for _, admissions := range seen {
		for _, admission := range admissions {
			line.WriteString(" " + admission)
		}
	}
	fmt.Println(line.String())
}

// helper is a child process running TestHelperProcess.
type helper struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Scanner
	stderr bytes.Buffer
	output []string // the lines read so far
}

// startHelper starts `binary` (this test binary or a copy) as a child doing `work`, with
// `env` added to its environment; the test's cleanup kills and reaps it.
func startHelper(t *testing.T, binary, work string, env []string, configure func(*exec.Cmd)) (*helper, error) {
	t.Helper()
	h := &helper{cmd: exec.Command(binary, "-test.run=^TestHelperProcess$", "-test.count=1")}
	h.cmd.Env = append(append(os.Environ(), helperEnv+"="+work), env...)
	h.cmd.Stderr = &h.stderr
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.stdout = bufio.NewScanner(stdout)
	h.stdout.Buffer(nil, 1<<20) // a "seen" line: up to a few numbers per unit
	if configure != nil {
		configure(h.cmd)
	}
	if err := h.cmd.Start(); err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		_ = h.cmd.Process.Kill() // a no-op error once it has exited
		_ = h.cmd.Wait()
	})
	return h, nil
}

// readUntil reads lines until one starts with `prefix` and returns it; false at the end.
func (h *helper) readUntil(prefix string) (string, bool) {
	for h.stdout.Scan() {
		line := h.stdout.Text()
		h.output = append(h.output, line)
		if strings.HasPrefix(line, prefix) {
			return line, true
		}
	}
	return "", false
}

// finish lets the child go (EOF on its stdin), reads the rest of what it prints and
// waits for it: nil if it passed.
func (h *helper) finish() error {
	h.stdin.Close()
	for h.stdout.Scan() {
		h.output = append(h.output, h.stdout.Text())
	}
	if err := h.cmd.Wait(); err != nil {
		return h.failure(err)
	}
	return nil
}

// kill sends the child SIGKILL and reaps it: nil if that signal is what ended it.
func (h *helper) kill() error {
	if err := h.cmd.Process.Kill(); err != nil {
		return h.failure(err)
	}
	err := h.cmd.Wait()
	if status, ok := h.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !status.Signaled() || status.Signal() != syscall.SIGKILL {
		return h.failure(fmt.Errorf("ended before it was killed: %v", err))
	}
	return nil
}

// failure is err with what the child printed ("seen" lines shortened to a count).
func (h *helper) failure(err error) error {
	shown := make([]string, len(h.output))
	for i, line := range h.output {
		shown[i] = line
		if values := strings.Fields(line); len(values) > 1 && values[0] == "seen" {
			shown[i] = fmt.Sprintf("seen (%d values)", len(values)-1)
		}
	}
	return fmt.Errorf("child %v: %w\nstdout:\n%s\nstderr:\n%s", h.cmd.Process.Pid, err,
		strings.Join(shown, "\n"), h.stderr.String())
}

// startReady starts `processes` children of this test binary doing `work`, child i with
// env(i) added to its environment, and waits until every one has said "ready" (opened
// its file); each then waits for its go (EOF on stdin).
func startReady(t *testing.T, work string, env func(i int) []string) []*helper {
	t.Helper()
	children := make([]*helper, processes)
	for i := range children {
		child, err := startHelper(t, os.Args[0], work, env(i), nil)
		if err != nil {
			t.Fatal(err)
		}
		children[i] = child
	}
	for _, child := range children {
		if _, ok := child.readUntil("ready"); !ok {
			t.Fatalf("a child ended before it was ready: %v", child.finish())
		}
	}
	return children
}

// 4 processes × 4 goroutines on one file at a frozen time admit exactly the limit
// between them, for every algorithm, and each admission leaves a remaining of its own
// (units−1 down to 0, once each): one limit across the processes, not one per process.
// In a keyed file, the same holds for each of its 8 keys, every process taking units of
// all of them.
func TestProcessesShareOneLimit(t *testing.T) {
	for _, kind := range fileKinds {
		// The same number of admissions in all: 2000 of one limit, or 250 of each key.
		units := uint64(shortened(2000) / len(kind.keys))
		for _, algorithm := range algorithms {
			t.Run(kind.name+"/"+algorithm.String(), func(t *testing.T) {
				processesShareOneLimit(t, kind, algorithm, units)
			})
		}
	}
}

func processesShareOneLimit(t *testing.T, kind fileKind, algorithm librate.Algorithm, units uint64) {
	dir := t.TempDir()
	path := filepath.Join(dir, "table")
	children := startReady(t, helperTake, func(int) []string {
		return []string{
			kindEnv + "=" + kind.name,
			pathEnv + "=" + path,
			algorithmEnv + "=" + strconv.Itoa(int(algorithm)),
			unitsEnv + "=" + strconv.FormatUint(units, 10),
		}
	})
	// Every child has opened the file before any takes a unit.
	for _, child := range children {
		child.stdin.Close()
	}
	seen := make([][]int, len(kind.keys)) // seen[key][remaining]: admissions that left it
	for k := range seen {
		seen[k] = make([]int, units)
	}
	perProcess := make([]int, processes)
	for i, child := range children {
		line, ok := child.readUntil("seen")
		if err := child.finish(); err != nil || !ok {
			t.Fatalf("child %d: %v, seen line found: %v", i, err, ok)
		}
		for _, field := range strings.Fields(line)[1:] {
			key, remaining, _ := strings.Cut(field, ":")
			k, errKey := strconv.Atoi(key)
			r, errRemaining := strconv.ParseUint(remaining, 10, 64)
			if errKey != nil || errRemaining != nil || k < 0 || k >= len(kind.keys) || r >= units {
				t.Fatalf("child %d: admission %q", i, field)
			}
			seen[k][r]++
			perProcess[i]++
		}
	}
	t.Logf("admitted per process: %v", perProcess)
	for k, counts := range seen {
		total := 0
		for remaining, times := range counts {
			total += times
			if times != 1 {
				t.Errorf("key %q: %d admissions left remaining %d, want 1", kind.keys[k], times, remaining)
			}
		}
		if total != int(units) {
			t.Errorf("key %q: admitted %d in all, want %d", kind.keys[k], total, units)
		}
	}
	// One file, no temporary one left, mode exactly 0600; the state outlives the
	// processes: a later opener's query reports every key used up.
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
		t.Errorf("directory holds %v, %v; want only the table", entries, err)
	}
	if info, err := os.Stat(path); err != nil {
		t.Error(err)
	} else if info.Mode() != 0o600 {
		t.Errorf("mode %v, want -rw-------", info.Mode())
	}
	later, err := kind.open(path, sharedConfig(algorithm, units))
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	want := deniedDecision(algorithm, units)
	want.Allowed, want.RetryAfter = true, 0
	for _, key := range kind.keys {
		if d, err := later.AcquireAt(key, 0, frozen); err != nil || d != want {
			t.Errorf("query of %q after the run: %+v, %v; want %+v", key, d, err, want)
		}
	}
}

// attachAsAnotherUser, in a child running as nobody: the 0600 file of the kind kindEnv
// names is refused with EACCES (fs.ErrPermission), and its 0666 copy is attached, state
// included (3 of bob's 10 units taken at 1 s: 8 more are denied), so it is the mode
// that refuses.
func attachAsAnotherUser(t *testing.T) {
	kind := fileKindNamed(t, os.Getenv(kindEnv))
	if _, err := kind.open(os.Getenv(pathEnv), gcra10); !errors.Is(err, syscall.EACCES) || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("uid %d opening root's 0600 %s file: %v, want EACCES", os.Geteuid(), kind.name, err)
	}
	copied, err := kind.open(os.Getenv(copyEnv), gcra10)
	if err != nil {
		t.Fatalf("uid %d opening a 0666 copy: %v", os.Geteuid(), err)
	}
	defer copied.Close()
	if d, err := copied.AcquireAt("bob", 8, time.Second); err != nil || d.Allowed || d.Remaining != 7 {
		t.Errorf("8 of the copy's 7 units: %+v, %v", d, err)
	}
}

// Another user cannot attach to a limiter's or a keyed table's file (mode 0600). As
// root, who passes every permission check, a child of this test binary running as
// nobody tries; as anyone else, the file made unreadable refuses this very process.
func TestAnotherUserCannotAttach(t *testing.T) {
	// Not t.TempDir(): its parent is 0700, and nobody must reach the files and run
	// the binary.
	dir, err := os.MkdirTemp("", "librate-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() != 0 {
		for _, kind := range fileKinds {
			path := filepath.Join(dir, kind.name)
			kind.makeTable(t, path)
			if err := os.Chmod(path, 0); err != nil {
				t.Fatal(err)
			}
			kind.checkOSRefusal(t, path, syscall.EACCES)
		}
		t.Skip("not root: this process was refused; another user's attach is not tried")
	}
	binary := filepath.Join(dir, "librate.test")
	if err := copyExecutable(binary); err != nil {
		t.Fatal(err)
	}
	// Whatever the umask took off: nobody may search the directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, kind := range fileKinds {
		t.Run(kind.name, func(t *testing.T) {
			path := filepath.Join(dir, kind.name)
			content := kind.makeTable(t, path)
			if info, err := os.Stat(path); err != nil || info.Mode() != 0o600 {
				t.Fatalf("%v, %v; want mode -rw-------", info, err)
			}
			copied := path + "-open-to-all"
			if err := os.WriteFile(copied, content, 0o666); err != nil {
				t.Fatal(err)
			}
			// Whatever the umask took off: nobody may write the copy.
			if err := os.Chmod(copied, 0o666); err != nil {
				t.Fatal(err)
			}
			env := []string{kindEnv + "=" + kind.name, pathEnv + "=" + path, copyEnv + "=" + copied}
			child, err := startHelper(t, binary, helperNobody, env, func(cmd *exec.Cmd) {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			})
			if errors.Is(err, fs.ErrPermission) {
				t.Skipf("nobody cannot run %s (is %s searchable by all?): %v", binary, os.TempDir(), err)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := child.finish(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// copyExecutable copies this test binary to `to`, mode 0755.
func copyExecutable(to string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	binary, err := os.ReadFile(self)
	if err != nil {
		return err
	}
	if err := os.WriteFile(to, binary, 0o755); err != nil {
		return err
	}
	return os.Chmod(to, 0o755)
}
