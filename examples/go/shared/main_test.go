package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"librate/examples/go/internal/exampletest"
)

// TestMain lets the test start the program as processes of its own.
func TestMain(m *testing.M) { exampletest.Main(m, main) }

// The program run twice, one process after the other, on one file: the first is
// admitted 5 of its 7 requests, the second none (GCRA 5 an hour, bursts of 5: the
// 5 units come back one every 12 minutes, far longer than the test takes).
func TestTwoProcessesShareOneLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "limit")
	for _, want := range []int{5, 0} {
		cmd := exampletest.Command("-path", path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		line := fmt.Sprintf("pid %d: %d of 7 requests admitted\n", cmd.Process.Pid, want)
		if string(out) != line {
			t.Errorf("got %q, want %q", out, line)
		}
	}
}
