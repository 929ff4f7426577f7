// Package exampletest holds what the examples' tests share: running an example's main as
// a process of its own, and requests from a chosen loopback address.
package exampletest

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"
)

// runMainEnv makes a test binary run the example's main instead of its tests.
const runMainEnv = "LIBRATE_EXAMPLE_RUN_MAIN"

// Main is an example test's TestMain: with runMainEnv set the process is the example
// program (main, then exit 0), else it runs the tests.
func Main(m *testing.M, main func()) {
	if os.Getenv(runMainEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Command is the example program with args, as a process of its own: this test binary
// run again, with Main running main.
func Command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	return cmd
}

// Get sends one GET to url from the loopback address source.
func Get(t *testing.T, url, source string) *http.Response {
	t.Helper()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}, Timeout: 10 * time.Second}
	client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	res, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}
