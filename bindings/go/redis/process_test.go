package librateredis_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

// The hammer runs this test binary again as child processes: with
// -test.run=^TestHelperProcess$ and helperEnv set, TestHelperProcess is a child's work.
const (
	helperEnv    = "LIBRATEREDIS_TEST_HELPER"
	addrEnv      = "LIBRATEREDIS_TEST_ADDR"
	algorithmEnv = "LIBRATEREDIS_TEST_ALGORITHM"
	unitsEnv     = "LIBRATEREDIS_TEST_UNITS"
)

// Processes, and connections (one goroutine each) per process, of the hammer.
const (
	processes   = 4
	connections = 4
)

// frozen is the instant every process decides at: 1000 s into the first hour.
const frozen = 1000 * time.Second

// hammerConfig admits exactly units units at one instant: GCRA a burst of units (10 an
// hour, T = 360 s), the windows a limit of units an hour.
func hammerConfig(algorithm librate.Algorithm, units uint64) librate.Config {
	if algorithm == librate.GCRA {
		return librate.Config{Algorithm: librate.GCRA, Limit: 10, Period: time.Hour, Burst: units}
	}
	return librate.Config{Algorithm: algorithm, Limit: units, Period: time.Hour}
}

// inProcessAtFrozen is what the in-process limiter decides at frozen, unit after unit
// from fresh until the first denial: admitted[r] is the admission that leaves r
// remaining, denied the denial after them.
func inProcessAtFrozen(t testing.TB, config librate.Config) (admitted map[uint64]librate.Decision, denied librate.Decision) {
	t.Helper()
	local, err := librate.New(config)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	admitted = map[uint64]librate.Decision{}
	for {
		d, err := local.AcquireAt(1, frozen)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed {
			return admitted, d
		}
		admitted[d.Remaining] = d
	}
}

// TestHelperProcess is not a test of its own: it is the child of TestProcessesShareOneLimit,
// and skips unless that test started it.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("the child process of TestProcessesShareOneLimit")
	}
	algorithm, _ := strconv.ParseUint(os.Getenv(algorithmEnv), 10, 32)
	units, _ := strconv.ParseUint(os.Getenv(unitsEnv), 10, 64)
	config := hammerConfig(librate.Algorithm(algorithm), units)
	admitted, denied := inProcessAtFrozen(t, config)
	// One client of one connection a goroutine.
	limiters := make([]*librateredis.Limiter, connections)
	for i := range limiters {
		client := redis.NewClient(&redis.Options{Addr: os.Getenv(addrEnv), PoolSize: 1})
		defer client.Close()
		limiters[i] = newLimiter(t, client, config, "hammer:")
	}
	fmt.Println("ready")
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		t.Fatal(err)
	}
	seen := make([][]uint64, connections)
	var wg sync.WaitGroup
	for c, l := range limiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				d, err := l.AcquireAt(ctx, "k", 1, frozen)
				switch {
				case err != nil:
					t.Error(err)
					return
				case !d.Allowed:
					if d != denied {
						t.Errorf("denied: %+v, want %+v", d, denied)
					}
					return
				case d != admitted[d.Remaining]:
					t.Errorf("admitted: %+v, want %+v", d, admitted[d.Remaining])
					return
				}
				seen[c] = append(seen[c], d.Remaining)
			}
		}()
	}
	wg.Wait()
	var line strings.Builder
	line.WriteString("seen")
	for _, remaining := range seen {
		for _, r := range remaining {
			fmt.Fprintf(&line, " %d", r)
		}
	}
	fmt.Println(line.String())
}

// 4 processes × 4 connections, all at one frozen time, admit exactly the limit between
// them, for every algorithm with a Redis script: each admission leaves a remaining of
// its own (units−1 down to 0, once each), and every decision, admission or denial, is
// the in-process limiter's at that time.
func TestProcessesShareOneLimit(t *testing.T) {
	s := startServer(t)
	units := uint64(400)
	if testing.Short() {
		units = 100
	}
	for _, algorithm := range algorithms {
		t.Run(algorithm.String(), func(t *testing.T) {
			config := hammerConfig(algorithm, units)
			if newLimiter(t, s.client(t), config, "hammer:") == nil {
				return
			}
			processesShareOneLimit(t, s, algorithm, units)
		})
	}
}

func processesShareOneLimit(t *testing.T, s *server, algorithm librate.Algorithm, units uint64) {
	if err := s.client(t).FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Scanner
		stderr bytes.Buffer
	}
	children := make([]*child, processes)
	for i := range children {
		c := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")}
		c.cmd.Env = append(os.Environ(), helperEnv+"=1", addrEnv+"="+s.addr,
			algorithmEnv+"="+strconv.Itoa(int(algorithm)), unitsEnv+"="+strconv.FormatUint(units, 10))
		c.cmd.Stderr = &c.stderr
		stdin, err := c.cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := c.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		c.stdin, c.stdout = stdin, bufio.NewScanner(stdout)
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.cmd.Process.Kill() // a no-op error once it has exited
			_ = c.cmd.Wait()
		})
		children[i] = c
	}
	// readLine is the child's next line starting with prefix, or "".
	readLine := func(c *child, prefix string) string {
		for c.stdout.Scan() {
			if line := c.stdout.Text(); strings.HasPrefix(line, prefix) {
				return line
			}
		}
		return ""
	}
	for _, c := range children {
		if readLine(c, "ready") == "" {
			t.Fatalf("a child ended before it was ready: %v\n%s", c.cmd.Wait(), c.stderr.String())
		}
	}
	// Every child is connected before any takes a unit.
	for _, c := range children {
		c.stdin.Close()
	}
	seen := make([]int, units) // seen[r]: admissions that left r remaining
	for i, c := range children {
		line := readLine(c, "seen")
		if err := c.cmd.Wait(); err != nil || line == "" {
			t.Fatalf("child %d: %v, seen line %q\n%s", i, err, line, c.stderr.String())
		}
		for _, field := range strings.Fields(line)[1:] {
			r, err := strconv.ParseUint(field, 10, 64)
			if err != nil || r >= units {
				t.Fatalf("child %d: admission leaving %q", i, field)
			}
			seen[r]++
		}
	}
	total := 0
	for r, times := range seen {
		total += times
		if times != 1 {
			t.Errorf("%d admissions left %d remaining, want 1", times, r)
		}
	}
	if total != int(units) {
		t.Errorf("admitted %d in all, want %d", total, units)
	}
}
