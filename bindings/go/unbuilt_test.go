package librate_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A checkout whose Rust library was never built fails the Go build with one line that
// says what to run, not with a linker error: the package is copied beside a copy of the
// header and no target/ directory, and built there, both ways it links.
func TestAnUnbuiltCheckoutSaysToRunCargoBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package twice")
	}
	checkout := t.TempDir()
	module := filepath.Join(checkout, "bindings", "go")
	copyFiles(t, ".", module, func(name string) bool {
		return name == "go.mod" || strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")
	})
	copyFiles(t, "internal/hook", filepath.Join(module, "internal", "hook"), func(string) bool { return true })
	copyFiles(t, "../../include", filepath.Join(checkout, "include"), func(name string) bool { return name == "rate.h" })
	for _, tags := range []string{"", "librate_dynamic"} {
		build := exec.Command("go", "build", "-tags", tags, ".")
		build.Dir = module
		build.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		output, err := build.CombinedOutput()
		if err == nil {
			t.Fatalf("tags %q: the build succeeded without a library", tags)
		}
		want := "librate is not built: run `cargo build --release` in the repository's root"
		if !strings.Contains(string(output), want) {
			t.Errorf("tags %q: the build's output lacks %q:\n%s", tags, want, output)
		}
	}
}

// copyFiles copies the files of directory from that keep says to keep into to.
func copyFiles(t *testing.T, from, to string, keep func(name string) bool) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, entry := range entries {
		if entry.IsDir() || !keep(entry.Name()) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, entry.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, entry.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
