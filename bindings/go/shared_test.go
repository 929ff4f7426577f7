package librate_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	librate "librate/bindings/go"
)

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

// gcra10 is the configuration of the refusal tests' table: L=10, P=1 s, B=0 meaning 10.
var gcra10 = librate.Config{Algorithm: librate.GCRA, Limit: 10, Period: time.Second}

// makeTable makes a gcra10 table at path with 3 units taken at 1 s (so its state is
// not all zero) and returns its bytes.
func makeTable(t *testing.T, path string) []byte {
	t.Helper()
	l, err := librate.Open(path, gcra10)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := l.AcquireAt(3, time.Second); err != nil || !d.Allowed {
		t.Fatalf("3 units of a fresh table: %+v, %v", d, err)
	}
	l.Close()
	table, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return table
}

// A file of another configuration, of garbage or of the wrong size is ErrIncompatible,
// and the file is left exactly as it was.
func TestOpenRefusesWhatIsNotThisTable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "limit")
	table := makeTable(t, path)
	for _, other := range []librate.Config{
		{Algorithm: librate.GCRA, Limit: 11, Period: time.Second},
		{Algorithm: librate.GCRA, Limit: 10, Period: 2 * time.Second},
		{Algorithm: librate.GCRA, Limit: 10, Period: time.Second, Burst: 5},
		{Algorithm: librate.GCRA, Limit: 10, Period: time.Second, Burst: 11},
		{Algorithm: librate.FixedWindow, Limit: 10, Period: time.Second},
		{Algorithm: librate.SlidingWindow, Limit: 10, Period: time.Second},
		{Algorithm: librate.SlidingLog, Limit: 10, Period: time.Second},
	} {
		if l, err := librate.Open(path, other); !errors.Is(err, librate.ErrIncompatible) {
			l.Close()
			t.Errorf("%+v: %v, want ErrIncompatible", other, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, table) {
			t.Fatalf("%+v: a refused open changed the file", other)
		}
	}
	// Burst 10 is what burst 0 means for L = 10: the same table, 3 units taken at 1 s:
	// T = 100 ms, TAT = 1.3 s, remaining ⌊(1 s − 300 ms)/100 ms⌋ = 7, reset 300 ms.
	same, err := librate.Open(path, librate.Config{Algorithm: librate.GCRA, Limit: 10, Period: time.Second, Burst: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := librate.Decision{Allowed: true, Limit: 10, Remaining: 7, ResetAfter: 300 * time.Millisecond}
	if d, err := same.AcquireAt(0, time.Second); err != nil || d != want {
		t.Errorf("burst 10 on burst 0's table: %+v, %v; want %+v", d, err, want)
	}
	same.Close()

	garbage := make([]byte, len(table))
	for i := range garbage {
		garbage[i] = byte(i * 131 % 251)
	}
	twice := append(append([]byte{}, table...), table...)
	n := len(table)
	for name, content := range map[string][]byte{
		"garbage":  garbage,
		"zeros":    make([]byte, n),
		"empty":    {},
		"one byte": table[:1],
		"half":     table[:n/2],
		"8 short":  table[:n-8],
		"1 short":  table[:n-1],
		"1 long":   twice[:n+1],
		"8 long":   twice[:n+8],
		"twice":    twice,
	} {
		refused := filepath.Join(dir, name)
		if err := os.WriteFile(refused, content, 0o600); err != nil {
			t.Fatal(err)
		}
		if l, err := librate.Open(refused, gcra10); !errors.Is(err, librate.ErrIncompatible) {
			l.Close()
			t.Errorf("%s (%d bytes, a table has %d): %v, want ErrIncompatible", name, len(content), n, err)
		}
		if after, _ := os.ReadFile(refused); !bytes.Equal(after, content) {
			t.Errorf("%s: a refused open changed the file", name)
		}
	}
}

// checkOSRefusal checks that Open(path) failed as the OS refused it: an *os.PathError
// for path wrapping errno.
func checkOSRefusal(t *testing.T, path string, errno syscall.Errno) {
	t.Helper()
	l, err := librate.Open(path, gcra10)
	var pathError *os.PathError
	if !errors.Is(err, errno) || !errors.As(err, &pathError) || pathError.Path != path {
		l.Close()
		t.Errorf("Open(%q): %v, want an *os.PathError for it wrapping %v", path, err, errno)
	}
}

// What the operating system refuses is an *os.PathError wrapping its errno, which the
// fs errors match.
func TestOpenOSRefusals(t *testing.T) {
	dir := t.TempDir()
	checkOSRefusal(t, dir, syscall.EISDIR)
	checkOSRefusal(t, dir+"/", syscall.EISDIR)
	checkOSRefusal(t, filepath.Join(dir, "none", "limit"), syscall.ENOENT)
	if _, err := librate.Open(filepath.Join(dir, "none", "limit"), gcra10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v, want fs.ErrNotExist", err)
	}
	plain := filepath.Join(dir, "plain")
	makeTable(t, plain)
	checkOSRefusal(t, filepath.Join(plain, "limit"), syscall.ENOTDIR)
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the refusals left %v behind", entries)
	}
}
