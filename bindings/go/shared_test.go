package librate_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// table is a *Limiter or a *Keyed from a file, as the shared-file tests use either: units
// taken for a key (a limiter has one limit for every key), and Close.
type table struct {
	acquireAt func(key string, n int, now time.Duration) (librate.Decision, error)
	io.Closer
}

// AcquireAt takes n units for key at now: a Keyed's AcquireAt, a Limiter's for every key.
func (t table) AcquireAt(key string, n int, now time.Duration) (librate.Decision, error) {
	return t.acquireAt(key, n, now)
}

// fileKind is one of the two kinds of table a file holds, and how the tests open one.
type fileKind struct {
	name string
	open func(path string, config librate.Config) (table, error)
	// keys are the keys the process tests take units of: one for a limiter, whose one
	// limit they all share, several of a keyed table, each with a limit of its own.
	keys []string
}

// keyedCapacity is the capacity of the keyed tables of the shared-file tests.
const keyedCapacity = 8

var (
	limiterFiles = fileKind{
		name: "limiter",
		open: func(path string, config librate.Config) (table, error) {
			l, err := librate.Open(path, config)
			if err != nil {
				return table{}, err
			}
			return table{func(_ string, n int, now time.Duration) (librate.Decision, error) { return l.AcquireAt(n, now) }, l}, nil
		},
		keys: []string{""},
	}
	keyedFiles = fileKind{
		name: "keyed",
		open: func(path string, config librate.Config) (table, error) {
			k, err := librate.OpenKeyed(path, config, keyedCapacity)
			if err != nil {
				return table{}, err
			}
			return table{k.AcquireAt, k}, nil
		},
		keys: []string{"user-0", "user-1", "user-2", "user-3", "user-4", "user-5", "user-6", "user-7"},
	}
	fileKinds = []fileKind{limiterFiles, keyedFiles}
)

// fileKindNamed is the fileKind called name (a child process is told it by name).
func fileKindNamed(t *testing.T, name string) fileKind {
	for _, kind := range fileKinds {
		if kind.name == name {
			return kind
		}
	}
	t.Fatalf("no file kind %q", name)
	return fileKind{}
}

// Two handles on one file share one limit.
func TestOpenSharesAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "limit")
	config := librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Hour}
	first, err := librate.Open(path, config)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := librate.Open(path, config)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if d, err := first.AcquireAt(1, 0); err != nil || !d.Allowed {
		t.Fatalf("first: %+v %v", d, err)
	}
	if d, err := second.AcquireAt(1, 0); err != nil || d.Allowed {
		t.Fatalf("second shares the used-up limit: %+v %v", d, err)
	}
}

// Two handles on one keyed file share each key's limit, and keys stay apart: GCRA L=1,
// P=2 s, B=1 (T = 2 s). Bob at 0 leaves TAT = 2 s, remaining 0, reset 2 s; Bob again at
// 1 s through the other handle is denied, retry 2 s + 2 s − 1 s − 2 s = 1 s; Alice at
// 1 s is a fresh key.
func TestOpenKeyedSharesAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "table")
	config := librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: 2 * time.Second}
	first, err := librate.OpenKeyed(path, config, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := librate.OpenKeyed(path, config, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if first.Capacity() != 100 || second.Config() != config {
		t.Errorf("capacity %d, config %+v", first.Capacity(), second.Config())
	}
	admitted := librate.Decision{Allowed: true, Limit: 1, ResetAfter: 2 * time.Second}
	for _, step := range []struct {
		keyed *librate.Keyed
		key   string
		at    time.Duration
		want  librate.Decision
	}{
		{first, "bob", 0, admitted},
		{second, "bob", time.Second, librate.Decision{Limit: 1, RetryAfter: time.Second, ResetAfter: time.Second}},
		{second, "alice", time.Second, admitted},
		{first, "alice", time.Second, librate.Decision{Limit: 1, RetryAfter: 2 * time.Second, ResetAfter: 2 * time.Second}},
	} {
		if d, err := step.keyed.AcquireAt(step.key, 1, step.at); err != nil || d != step.want {
			t.Errorf("%s at %v: %+v, %v; want %+v", step.key, step.at, d, err, step.want)
		}
	}
}

// gcra10 is the configuration of the refusal tests' tables: L=10, P=1 s, B=0 meaning 10.
var gcra10 = librate.Config{Algorithm: librate.GCRA, Limit: 10, Period: time.Second}

// makeTable makes a gcra10 table of this kind at path with 3 units of "bob" taken at
// 1 s (so its state is not all zero) and returns its bytes.
func (kind fileKind) makeTable(t *testing.T, path string) []byte {
	t.Helper()
	tb, err := kind.open(path, gcra10)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := tb.AcquireAt("bob", 3, time.Second); err != nil || !d.Allowed {
		t.Fatalf("3 units of a fresh table: %+v, %v", d, err)
	}
	tb.Close()
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return content
}

// checkIncompatible checks that open, on the file at path, fails with ErrIncompatible
// and leaves the file exactly as it was.
func checkIncompatible(t *testing.T, what, path string, open func() (table, error)) {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if tb, err := open(); !errors.Is(err, librate.ErrIncompatible) {
		if err == nil {
			tb.Close()
		}
		t.Errorf("%s: %v, want ErrIncompatible", what, err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
		t.Errorf("%s: a refused open changed the file", what)
	}
}

// A file of another configuration, of the other kind, of garbage or of the wrong size is
// ErrIncompatible, and the file is left exactly as it was.
func TestOpenRefusesWhatIsNotThisTable(t *testing.T) {
	for _, kind := range fileKinds {
		t.Run(kind.name, func(t *testing.T) { refusesWhatIsNotThisTable(t, kind) })
	}
}

func refusesWhatIsNotThisTable(t *testing.T, kind fileKind) {
	dir := t.TempDir()
	path := filepath.Join(dir, "table")
	content := kind.makeTable(t, path)
	for _, other := range []librate.Config{
		{Algorithm: librate.GCRA, Limit: 11, Period: time.Second},
		{Algorithm: librate.GCRA, Limit: 10, Period: 2 * time.Second},
		{Algorithm: librate.GCRA, Limit: 10, Period: time.Second, Burst: 5},
		{Algorithm: librate.GCRA, Limit: 10, Period: time.Second, Burst: 11},
		{Algorithm: librate.FixedWindow, Limit: 10, Period: time.Second},
		{Algorithm: librate.SlidingWindow, Limit: 10, Period: time.Second},
		{Algorithm: librate.SlidingLog, Limit: 10, Period: time.Second},
	} {
		checkIncompatible(t, fmt.Sprintf("config %+v", other), path, func() (table, error) { return kind.open(path, other) })
	}
	// The other kind of table, with the same config, in either file.
	for _, otherKind := range fileKinds {
		if otherKind.name != kind.name {
			checkIncompatible(t, "a "+kind.name+" file opened as a "+otherKind.name, path,
				func() (table, error) { return otherKind.open(path, gcra10) })
		}
	}
	// Burst 10 is what burst 0 means for L = 10: the same table, 3 units taken at 1 s:
	// T = 100 ms, TAT = 1.3 s, remaining ⌊(1 s − 300 ms)/100 ms⌋ = 7, reset 300 ms.
	same, err := kind.open(path, librate.Config{Algorithm: librate.GCRA, Limit: 10, Period: time.Second, Burst: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := librate.Decision{Allowed: true, Limit: 10, Remaining: 7, ResetAfter: 300 * time.Millisecond}
	if d, err := same.AcquireAt("bob", 0, time.Second); err != nil || d != want {
		t.Errorf("burst 10 on burst 0's table: %+v, %v; want %+v", d, err, want)
	}
	same.Close()

	garbage := make([]byte, len(content))
	for i := range garbage {
		garbage[i] = byte(i * 131 % 251)
	}
	twice := append(append([]byte{}, content...), content...)
	n := len(content)
	for name, refused := range map[string][]byte{
		"garbage":  garbage,
		"zeros":    make([]byte, n),
		"empty":    {},
		"one byte": content[:1],
		"half":     content[:n/2],
		"8 short":  content[:n-8],
		"1 short":  content[:n-1],
		"1 long":   twice[:n+1],
		"8 long":   twice[:n+8],
		"twice":    twice,
	} {
		refusedPath := filepath.Join(dir, name)
		if err := os.WriteFile(refusedPath, refused, 0o600); err != nil {
			t.Fatal(err)
		}
		checkIncompatible(t, name, refusedPath, func() (table, error) { return kind.open(refusedPath, gcra10) })
	}
}

// A keyed table of another capacity is ErrIncompatible and left untouched; a capacity
// librate rejects is a *ConfigError, and no file is made.
func TestOpenKeyedRefusesAnotherCapacity(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "table")
	keyedFiles.makeTable(t, path)
	for _, capacity := range []int{1, keyedCapacity - 1, keyedCapacity + 1, 2 * keyedCapacity} {
		checkIncompatible(t, "capacity "+strconv.Itoa(capacity), path, func() (table, error) {
			k, err := librate.OpenKeyed(path, gcra10, capacity)
			return table{k.AcquireAt, k}, err
		})
	}
	for _, capacity := range []int{0, -1} {
		missing := filepath.Join(dir, "capacity "+strconv.Itoa(capacity))
		k, err := librate.OpenKeyed(missing, gcra10, capacity)
		var configError *librate.ConfigError
		if !errors.As(err, &configError) || configError.Reason != "capacity "+strconv.Itoa(capacity)+": must be at least 1" {
			k.Close()
			t.Errorf("capacity %d: %v, want a *ConfigError", capacity, err)
		}
		if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("capacity %d: the refused open made a file: %v", capacity, err)
		}
	}
}

// checkOSRefusal checks that opening path as this kind failed as the OS refused it: an
// *os.PathError for path wrapping errno.
func (kind fileKind) checkOSRefusal(t *testing.T, path string, errno syscall.Errno) {
	t.Helper()
	tb, err := kind.open(path, gcra10)
	var pathError *os.PathError
	if !errors.Is(err, errno) || !errors.As(err, &pathError) || pathError.Path != path {
		if err == nil {
			tb.Close()
		}
		t.Errorf("%s %q: %v, want an *os.PathError for it wrapping %v", kind.name, path, err, errno)
	}
}

// What the operating system refuses is an *os.PathError wrapping its errno, which the
// fs errors match.
func TestOpenOSRefusals(t *testing.T) {
	for _, kind := range fileKinds {
		t.Run(kind.name, func(t *testing.T) {
			dir := t.TempDir()
			kind.checkOSRefusal(t, dir, syscall.EISDIR)
			kind.checkOSRefusal(t, dir+"/", syscall.EISDIR)
			kind.checkOSRefusal(t, filepath.Join(dir, "none", "table"), syscall.ENOENT)
			if _, err := kind.open(filepath.Join(dir, "none", "table"), gcra10); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("missing directory: %v, want fs.ErrNotExist", err)
			}
			plain := filepath.Join(dir, "plain")
			kind.makeTable(t, plain)
			kind.checkOSRefusal(t, filepath.Join(plain, "table"), syscall.ENOTDIR)
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("the refusals left %v behind", entries)
			}
		})
	}
}
