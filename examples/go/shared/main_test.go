package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// runMainEnv makes this test binary run main instead of the tests, so the test can start
// the program as processes of its own.
const runMainEnv = "LIBRATE_EXAMPLE_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The program run twice, one process after the other, on one file: the first is
// admitted 5 of its 7 requests, the second none (GCRA 5 an hour, bursts of 5: the
// 5 units come back one every 12 minutes, far longer than the test takes).
func TestTwoProcessesShareOneLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "limit")
	for _, want := range []int{5, 0} {
		cmd := exec.Command(os.Args[0], "-path", path)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
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
