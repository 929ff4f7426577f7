package librateredis_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

// One share for a host (docs/leases.md): worker processes (this test binary run again,
// TestLeaseHostWorker) open the host's holder in one file with NewLeasedHost, against a
// real redis-server whose MONITOR shows whose connection sends each call of the lease
// script. The rule is GCRA, 1,000 a second (T = 1 ms, B = 1,000), leased 1 s at a time
// and renewed every 100 ms, so that a renewer killed is taken over well before its lease
// ends, however slow the machine. The processes of a host are one holder under one name,
// so the script sees one holder, alone: its fair share is the whole rule, held 1 s at a
// time.

const (
	hostPathEnv = "LIBRATEREDIS_TEST_HOST_PATH"
	workerEnv   = "LIBRATEREDIS_TEST_WORKER"
	// endEnv is how a worker stops renewing at its first line on stdin: "close" (Close)
	// or "cancel" (its context ends; the holder stays open).
	endEnv  = "LIBRATEREDIS_TEST_END"
	hostKey = "lease:{host}"
)

var hostRule = librate.LeaseRule{Config: thousandASecond, Lease: time.Second, RenewEvery: 100 * ms}

// TestLeaseHostWorker is not a test of its own: it is a worker process of
// TestLeaseHostWorkersShareOneLease, and skips unless that test started it. It opens the
// host's holder over a client named after the worker, says "ready"; at its first line on
// stdin it stops renewing (endEnv) and says "closed"; it lives on until stdin ends.
func TestLeaseHostWorker(t *testing.T) {
	path := os.Getenv(hostPathEnv)
	if path == "" {
		t.Skip("a worker process of TestLeaseHostWorkersShareOneLease")
	}
	client := redis.NewClient(&redis.Options{Addr: os.Getenv(addrEnv), ClientName: os.Getenv(workerEnv),
		ContextTimeoutEnabled: true, MaxRetries: -1})
	defer client.Close()
	renewing, cancel := context.WithCancel(ctx)
	defer cancel()
	l, err := librateredis.NewLeasedHost(renewing, client, hostKey, path, hostRule, librate.LeaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fmt.Println("ready")
	stdin := bufio.NewReader(os.Stdin)
	if _, err := stdin.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if os.Getenv(endEnv) == "cancel" {
		cancel()
	} else if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fmt.Println("closed")
	if _, err := io.Copy(io.Discard, stdin); err != nil {
		t.Fatal(err)
	}
}

// worker is a worker process of the host.
type worker struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Scanner
}

func startWorker(t *testing.T, s *server, path, name, end string) *worker {
	t.Helper()
	w := &worker{name: name, cmd: exec.Command(os.Args[0], "-test.run=^TestLeaseHostWorker$", "-test.count=1")}
	w.cmd.Env = append(os.Environ(), addrEnv+"="+s.addr, hostPathEnv+"="+path, workerEnv+"="+name, endEnv+"="+end)
	w.cmd.Stderr = os.Stderr
	var err error
	if w.stdin, err = w.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.stdout = bufio.NewScanner(stdout)
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.cmd.Process.Kill() // a no-op error once it has exited
		_ = w.cmd.Wait()
	})
	w.await(t, "ready")
	return w
}

// await reads the worker's lines until `line`.
func (w *worker) await(t *testing.T, line string) {
	t.Helper()
	for w.stdout.Scan() {
		if w.stdout.Text() == line {
			return
		}
	}
	t.Fatalf("%s ended before it said %q: %v", w.name, line, w.cmd.Wait())
}

// end has the worker stop renewing; the process lives on.
func (w *worker) end(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(w.stdin, "end\n"); err != nil {
		t.Fatal(err)
	}
	w.await(t, "closed")
}

// finish lets the worker exit (EOF on stdin), which it does with status 0 only then.
func (w *worker) finish(t *testing.T) {
	t.Helper()
	w.stdin.Close()
	for w.stdout.Scan() {
	}
	if err := w.cmd.Wait(); err != nil {
		t.Errorf("%s: %v", w.name, err)
	}
}

// kill ends the worker with SIGKILL and reaps it.
func (w *worker) kill(t *testing.T) {
	t.Helper()
	_ = w.cmd.Process.Kill()
	err := w.cmd.Wait()
	if status, ok := w.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !status.Signaled() {
		t.Fatalf("%s ended before it was killed: %v", w.name, err)
	}
}

// scriptCalls are the lease script's calls (EVALSHA, EVAL) the server serves, in order,
// each as the name of the client that sent it: MONITOR, read on a connection and a
// goroutine of their own.
type scriptCalls struct {
	admin *redis.Client
	mu    sync.Mutex
	names []string
}

// monitored is a line of MONITOR: +time [db address] "command" "arg"...
var monitored = regexp.MustCompile(`^\+[0-9.]+ \[[0-9]+ ([^\]]+)\] "([A-Za-z]+)"`)

func monitorScripts(t *testing.T, s *server) *scriptCalls {
	t.Helper()
	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	reader := bufio.NewReader(conn)
	if _, err := io.WriteString(conn, "MONITOR\r\n"); err != nil {
		t.Fatal(err)
	}
	if reply, err := reader.ReadString('\n'); err != nil || reply != "+OK\r\n" {
		t.Fatalf("MONITOR: %q, %v", reply, err)
	}
	c := &scriptCalls{admin: s.client(t)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		names := map[string]string{}
		for {
			line, err := reader.ReadString('\n')
			if err != nil {
				return // the connection closed
			}
			m := monitored.FindStringSubmatch(line)
			if m == nil || !strings.EqualFold(m[2], "evalsha") && !strings.EqualFold(m[2], "eval") {
				continue
			}
			if _, known := names[m[1]]; !known { // connected now: listed
				c.clientNames(names)
			}
			name := names[m[1]]
			if name == "" {
				name = m[1]
			}
			c.mu.Lock()
			c.names = append(c.names, name)
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		<-done
	})
	return c
}

// clientNames adds the named clients' addresses to names.
func (c *scriptCalls) clientNames(names map[string]string) {
	list, err := c.admin.ClientList(ctx).Result()
	if err != nil {
		return
	}
	for _, client := range strings.Split(strings.TrimSpace(list), "\n") {
		var addr, name string
		for _, field := range strings.Fields(client) {
			if value, ok := strings.CutPrefix(field, "addr="); ok {
				addr = value
			} else if value, ok := strings.CutPrefix(field, "name="); ok {
				name = value
			}
		}
		if name != "" {
			names[addr] = name
		}
	}
}

// seen returns the calls so far.
func (c *scriptCalls) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.names)
}

// last returns the name of the last call's client, "" before the first.
func (c *scriptCalls) last() string {
	if seen := c.seen(); len(seen) > 0 {
		return seen[len(seen)-1]
	}
	return ""
}

// holdersInRedis are the holder records in the rule's hash.
func holdersInRedis(t *testing.T, client *redis.Client) []string {
	t.Helper()
	fields, err := client.HKeys(ctx, hostKey).Result()
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(fields, func(field string) bool { return !strings.HasPrefix(field, "h:") })
}

// Three worker processes on one file decide from one share, renewed by one of them; the
// renewer killed with SIGKILL is taken over by another, and the share lasts past the
// end of the dead renewer's last lease; a renewer that stops, its process alive, steps
// down for another to take over.
func TestLeaseHostWorkersShareOneLease(t *testing.T) {
	s := startServer(t)
	client := s.client(t)
	path := filepath.Join(t.TempDir(), "lease")
	// This process decides from the host's share too, and never renews: it asks to lead
	// only at the end.
	host, err := librate.OpenLeaseHolder(path, hostRule, librate.LeaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	calls := monitorScripts(t, s)
	checkGrant := func(epoch uint64) {
		t.Helper()
		want := librate.Grant{Rate: wholeRate, Burst: 1000, Lease: time.Second, Epoch: epoch,
			HeldRate: wholeRate, HeldBurst: 1000, Holders: 1}
		if got, err := host.LastGrant(); err != nil || got != want {
			t.Fatalf("grant %+v, %v\nwant %+v", got, err, want)
		}
	}
	// Alone, worker-0 claims the renewing; a rule new to Redis is quiet for a lease,
	// then the whole rule is the host's.
	workers := []*worker{startWorker(t, s, path, "worker-0", "close")}
	waitFor(t, "the host leased", 20*time.Second, func() bool { return host.State() == librate.Leased })
	first, err := host.LastGrant()
	if err != nil {
		t.Fatal(err)
	}
	checkGrant(first.Epoch)
	// Two more workers, renewing goroutines of their own: the first renewer renews alone,
	// for one holder in Redis.
	workers = append(workers, startWorker(t, s, path, "worker-1", "cancel"), startWorker(t, s, path, "worker-2", "close"))
	before := len(calls.seen())
	waitFor(t, "ten renewals more", 20*time.Second, func() bool { return len(calls.seen()) >= before+10 })
	if seen := calls.seen(); slices.ContainsFunc(seen, func(name string) bool { return name != "worker-0" }) {
		t.Fatalf("script calls from %q: want worker-0's alone", seen)
	}
	holders := holdersInRedis(t, client)
	if len(holders) != 1 {
		t.Fatalf("holders in Redis %q: want one", holders)
	}

	// The renewer killed: another worker finds it dead and takes over, before its last
	// lease (sent before it died) ends, a lease after the kill.
	killedAt := time.Now()
	workers[0].kill(t)
	waitFor(t, "another renewer", 20*time.Second, func() bool { return calls.last() != "worker-0" })
	taker := calls.last()
	time.Sleep(time.Until(killedAt.Add(hostRule.Lease + 100*ms)))
	seen := calls.seen()
	from := slices.Index(seen, taker)
	for i, name := range seen {
		if (i < from && name != "worker-0") || (i >= from && name != taker) {
			t.Fatalf("script calls from %q: want worker-0's, then %s's", seen, taker)
		}
	}
	if host.State() != librate.Leased || !host.Allow() {
		t.Fatalf("past the dead renewer's lease: %v, a unit denied", host.State())
	}
	checkGrant(first.Epoch)
	if got := holdersInRedis(t, client); !slices.Equal(got, holders) {
		t.Fatalf("holders in Redis %q, want %q", got, holders)
	}

	// A renewer that stops steps down, its process alive: the last worker takes over;
	// once it stops too, no live process renews, and this one may.
	i := slices.IndexFunc(workers, func(w *worker) bool { return w.name == taker })
	stopping, last := workers[i], workers[3-i] // workers 1 and 2: the taker and the other
	stopping.end(t)
	waitFor(t, last.name+" renewing", 20*time.Second, func() bool { return calls.last() == last.name })
	last.end(t)
	// A context's end steps down in the goroutine, a moment after the worker says so.
	waitFor(t, "this process leading", 20*time.Second, host.Lead)
	// Both lived until now: they exit, and with status 0, only at EOF.
	stopping.finish(t)
	last.finish(t)
}

// What NewLeasedHost refuses, beside librate.OpenLeaseHolder's refusals.
func TestLeaseHostRefusals(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + closedPort(t), MaxRetries: -1})
	defer client.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "lease")
	if _, err := librateredis.NewLeasedHost(ctx, nil, "k", path, hostRule, librate.LeaseOptions{}); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("nil client: %v", err)
	}
	if _, err := librateredis.NewLeasedHost(nilContext(), client, "k", path, hostRule, librate.LeaseOptions{}); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("nil context: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused opener made the file: %v", err)
	}
	missing := filepath.Join(dir, "missing", "lease")
	var pathError *os.PathError
	if _, err := librateredis.NewLeasedHost(ctx, client, "k", missing, hostRule, librate.LeaseOptions{}); !errors.As(err, &pathError) ||
		pathError.Path != missing || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing directory: %v", err)
	}
	l, err := librateredis.NewLeasedHost(ctx, client, "k", path, hostRule, librate.LeaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	longer := hostRule
	longer.Lease = 2 * time.Second
	if _, err := librateredis.NewLeasedHost(ctx, client, "k", path, longer, librate.LeaseOptions{}); !errors.Is(err, librate.ErrIncompatible) {
		t.Errorf("another lease: %v", err)
	}
	if _, err := librateredis.NewLeasedHost(ctx, client, "k", path, hostRule, librate.LeaseOptions{Name: "h"}); !errors.Is(err, librate.ErrInvalidConfig) {
		t.Errorf("a name: %v", err)
	}
	if l.Holder().Path() != path {
		t.Errorf("path %q, want %q", l.Holder().Path(), path)
	}
	// Redis never answers: closing hands nothing back, so nothing fails.
	if err := l.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}
