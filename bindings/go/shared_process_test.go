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

	librate "librate/bindings/go"
)

// The process tests run this very test binary again as child processes: with
// -test.run=^TestHelperProcess$ and helperEnv naming what the child does (helperTake or
// helperNobody), TestHelperProcess is the child's whole work.
const (
	helperEnv    = "LIBRATE_TEST_HELPER"
	helperTake   = "take"   // take units from a shared file until denied
	helperNobody = "nobody" // as another user, try to attach to a 0600 file
	pathEnv      = "LIBRATE_TEST_PATH"
	copyEnv      = "LIBRATE_TEST_COPY"
	algorithmEnv = "LIBRATE_TEST_ALGORITHM"
	unitsEnv     = "LIBRATE_TEST_UNITS"
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
	case helperNobody:
		attachAsAnotherUser(t)
	default:
		t.Skip("the child process of the shared-file tests")
	}
}

// takeUntilDenied, in a child: opens the shared file (racing its siblings to create it),
// prints "ready", waits for the parent's go (EOF on stdin), then runs `goroutines`
// goroutines taking 1 unit at a time at frozen until denied, checking each decision, and
// prints "seen" and the remaining that each of its admissions left.
func takeUntilDenied(t *testing.T) {
	algorithm, _ := strconv.ParseUint(os.Getenv(algorithmEnv), 10, 32)
	units, _ := strconv.ParseUint(os.Getenv(unitsEnv), 10, 64)
	alg := librate.Algorithm(algorithm)
	limiter, err := librate.Open(os.Getenv(pathEnv), sharedConfig(alg, units))
	if err != nil {
		t.Fatal(err)
	}
	defer limiter.Close()
	fmt.Println("ready")
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		t.Fatal(err)
	}
	seen := make([][]uint64, goroutines)
	var wg sync.WaitGroup
	for g := range seen {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				d, err := limiter.AcquireAt(1, frozen)
				if err != nil {
					t.Error(err)
					return
				}
				if !d.Allowed {
					if want := deniedDecision(alg, units); d != want {
						t.Errorf("denied: %+v, want %+v", d, want)
					}
					return
				}
				if want := admittedDecision(alg, units, d.Remaining); d != want || d.Remaining >= units {
					t.Errorf("admitted: %+v, want %+v", d, want)
					return
				}
				seen[g] = append(seen[g], d.Remaining)
				// With fewer cores than threads in all the processes, one process
				// could take every unit in one time slice; giving up the core now and
				// then (sched_yield: Go's own scheduler would only run this process's
				// other goroutines) lets the processes interleave.
				if len(seen[g])%16 == 0 {
					syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
				}
			}
		}()
	}
	wg.Wait()
	var line strings.Builder
	line.WriteString("seen")
	for _, values := range seen {
		for _, remaining := range values {
			fmt.Fprintf(&line, " %d", remaining)
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
	return nil
}

// 4 processes × 4 goroutines on one file at a frozen time admit exactly the limit
// between them, for every algorithm, and each admission leaves a remaining of its own
// (units−1 down to 0, once each): one limit across the processes, not one per process.
func TestProcessesShareOneLimit(t *testing.T) {
	units := uint64(shortened(2000))
	for _, algorithm := range algorithms {
		t.Run(algorithm.String(), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "limit")
			env := []string{
				pathEnv + "=" + path,
				algorithmEnv + "=" + strconv.Itoa(int(algorithm)),
				unitsEnv + "=" + strconv.FormatUint(units, 10),
			}
			children := make([]*helper, processes)
			for i := range children {
				child, err := startHelper(t, os.Args[0], helperTake, env, nil)
				if err != nil {
					t.Fatal(err)
				}
				children[i] = child
			}
			// Every child has opened the file before any takes a unit.
			for _, child := range children {
				if _, ok := child.readUntil("ready"); !ok {
					t.Fatalf("a child ended before it was ready: %v", child.finish())
				}
			}
			for _, child := range children {
				child.stdin.Close()
			}
			seen := make([]int, units)
			perProcess := make([]int, processes)
			for i, child := range children {
				line, ok := child.readUntil("seen")
				if err := child.finish(); err != nil || !ok {
					t.Fatalf("child %d: %v, seen line found: %v", i, err, ok)
				}
				for _, field := range strings.Fields(line)[1:] {
					remaining, err := strconv.ParseUint(field, 10, 64)
					if err != nil || remaining >= units {
						t.Fatalf("child %d: remaining %q", i, field)
					}
					seen[remaining]++
					perProcess[i]++
				}
			}
			t.Logf("admitted per process: %v", perProcess)
			total := 0
			for remaining, times := range seen {
				total += times
				if times != 1 {
					t.Errorf("%d admissions left remaining %d, want 1", times, remaining)
				}
			}
			if total != int(units) {
				t.Errorf("admitted %d in all, want %d", total, units)
			}
			// One file, no temporary one left, mode exactly 0600; the state outlives
			// the processes: a later opener's query reports it used up.
			if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
				t.Errorf("directory holds %v, %v; want only the table", entries, err)
			}
			if info, err := os.Stat(path); err != nil {
				t.Error(err)
			} else if info.Mode() != 0o600 {
				t.Errorf("mode %v, want -rw-------", info.Mode())
			}
			later, err := librate.Open(path, sharedConfig(algorithm, units))
			if err != nil {
				t.Fatal(err)
			}
			defer later.Close()
			want := deniedDecision(algorithm, units)
			want.Allowed, want.RetryAfter = true, 0
			if d, err := later.AcquireAt(0, frozen); err != nil || d != want {
				t.Errorf("query after the run: %+v, %v; want %+v", d, err, want)
			}
		})
	}
}

// attachAsAnotherUser, in a child running as nobody: the 0600 table is refused with
// EACCES (fs.ErrPermission), and its 0666 copy is attached, state included (3 of 10
// units taken at 1 s: 8 more are denied), so it is the mode that refuses.
func attachAsAnotherUser(t *testing.T) {
	if _, err := librate.Open(os.Getenv(pathEnv), gcra10); !errors.Is(err, syscall.EACCES) || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("uid %d opening root's 0600 table: %v, want EACCES", os.Geteuid(), err)
	}
	l, err := librate.Open(os.Getenv(copyEnv), gcra10)
	if err != nil {
		t.Fatalf("uid %d opening a 0666 copy: %v", os.Geteuid(), err)
	}
	defer l.Close()
	if d, err := l.AcquireAt(8, time.Second); err != nil || d.Allowed || d.Remaining != 7 {
		t.Errorf("8 of the copy's 7 units: %+v, %v", d, err)
	}
}

// Another user cannot attach to a table (mode 0600). As root, who passes every
// permission check, a child of this test binary running as nobody tries; as anyone
// else, the file made unreadable refuses this very process.
func TestAnotherUserCannotAttach(t *testing.T) {
	// Not t.TempDir(): its parent is 0700, and nobody must reach the files and run
	// the binary.
	dir, err := os.MkdirTemp("", "librate-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "private")
	table := makeTable(t, path)
	if os.Geteuid() != 0 {
		if err := os.Chmod(path, 0); err != nil {
			t.Fatal(err)
		}
		checkOSRefusal(t, path, syscall.EACCES)
		t.Skip("not root: this process was refused; another user's attach is not tried")
	}
	copied := filepath.Join(dir, "open-to-all")
	if err := os.WriteFile(copied, table, 0o666); err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(dir, "librate.test")
	if err := copyExecutable(binary); err != nil {
		t.Fatal(err)
	}
	// Whatever the umask took off: nobody may search the directory and write the copy.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(copied, 0o666); err != nil {
		t.Fatal(err)
	}
	child, err := startHelper(t, binary, helperNobody, []string{pathEnv + "=" + path, copyEnv + "=" + copied},
		func(cmd *exec.Cmd) {
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
