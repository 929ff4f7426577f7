package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"librate/examples/go/internal/exampletest"
)

// TestMain lets the test start the program as processes of its own.
func TestMain(m *testing.M) { exampletest.Main(m, main) }

// serve starts the program as a process serving on a free port of 127.0.0.1 with its
// table at path, and returns its URL; the test's cleanup kills it.
func serve(t *testing.T, path string) string {
	t.Helper()
	cmd := exampletest.Command("-port", "0", "-path", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	prefix := fmt.Sprintf("pid %d listening on ", cmd.Process.Pid)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), prefix) {
		t.Fatalf("first line %q, want %s…; stderr:\n%s", lines.Text(), prefix, stderr.String())
	}
	return strings.TrimPrefix(lines.Text(), prefix)
}

// Two processes of the program on one file share each client address's limit: of
// requests from 127.0.0.1 sent to either in turn, 5 pass, leaving 4 down to 0, and the
// next ones get 429 from both (GCRA 5 a minute, bursts of 5: T = 12 s, and the unit
// after the first comes back 12 s after it, longer than the test takes). 127.0.0.2
// still has a limit of its own, in both.
func TestTwoProcessesShareOnePerIPLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "per-ip")
	servers := []string{serve(t, path), serve(t, path)}
	for i, left := 0, 4; left >= 0; i, left = i+1, left-1 {
		res := exampletest.Get(t, servers[i%2], "127.0.0.1")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("request %d, to process %d, with %d left: %s", i+1, i%2+1, left, res.Status)
		}
		if got, want := res.Header.Get("RateLimit"), `"default";r=`+strconv.Itoa(left)+";t="; !strings.HasPrefix(got, want) {
			t.Errorf("request %d: RateLimit %q, want %s…", i+1, got, want)
		}
	}
	for i, server := range servers {
		denied := exampletest.Get(t, server, "127.0.0.1")
		retry, _ := strconv.Atoi(denied.Header.Get("Retry-After"))
		if denied.StatusCode != http.StatusTooManyRequests || retry < 1 || retry > 12 {
			t.Errorf("process %d, 6th request: %s, Retry-After %q", i+1, denied.Status, denied.Header.Get("Retry-After"))
		}
	}
	for i, server := range servers {
		other := exampletest.Get(t, server, "127.0.0.2")
		want := `"default";r=` + strconv.Itoa(4-i) + ";t="
		if got := other.Header.Get("RateLimit"); other.StatusCode != http.StatusOK || !strings.HasPrefix(got, want) {
			t.Errorf("127.0.0.2 to process %d: %s, RateLimit %q, want %s…", i+1, other.Status, got, want)
		}
	}
}
