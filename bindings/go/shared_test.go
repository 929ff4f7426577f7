package librate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Two handles on one file share one limit; another configuration is refused and leaves
// the file as it was; a missing directory is the OS's ENOENT.
func TestOpenSharesAFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "limit")
	config := Config{Algorithm: GCRA, Limit: 1, Period: time.Hour}
	first, err := Open(path, config)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := Open(path, config)
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
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", info.Mode(), err)
	}
	before, _ := os.ReadFile(path)
	other := Config{Algorithm: GCRA, Limit: 2, Period: time.Hour}
	if _, err := Open(path, other); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("another configuration: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a refused open changed the file")
	}
	_, err = Open(filepath.Join(dir, "none", "limit"), config)
	var pathError *os.PathError
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pathError) {
		t.Fatalf("missing directory: %v", err)
	}
}
