package librateredis_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The tests run against a real redis-server each test starts on a free loopback port,
// with its files in the test's temporary directory, killed when the test ends. Where
// none is installed the tests skip, saying why, unless CI is set: there a missing
// server fails them.

// serverBinary is the redis-server to run: $REDIS_SERVER, or redis-server on PATH; ""
// when there is none.
func serverBinary() (binary, path string) {
	binary = os.Getenv("REDIS_SERVER")
	if binary == "" {
		binary = "redis-server"
	}
	path, _ = exec.LookPath(binary)
	return binary, path
}

func TestMain(m *testing.M) {
	if binary, path := serverBinary(); path == "" && os.Getenv(helperEnv) == "" {
		if os.Getenv("CI") != "" {
			fmt.Fprintf(os.Stderr, "librateredis: %s is not installed, and CI must run the Redis tests\n", binary)
		} else {
			fmt.Fprintf(os.Stderr, "librateredis: skipping the Redis tests: %s is not installed (apt-get install redis-server)\n", binary)
		}
	}
	os.Exit(m.Run())
}

// server is a running redis-server.
type server struct {
	cmd  *exec.Cmd
	addr string
}

// startServer starts a redis-server for t, or skips t (fails it under CI) where none is
// installed.
func startServer(t testing.TB) *server {
	t.Helper()
	return startServerOn(t, freePorts(t, 1)[0])
}

// freePorts returns n distinct ports the kernel just found free on 127.0.0.1, all held
// at once so that none is handed out twice; a server takes each a moment later.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	for i := range ports {
		listener, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer listener.Close()
		ports[i] = listener.Addr().(*net.TCPAddr).Port
	}
	return ports
}

// startServerOn is startServer on port, with more redis-server arguments (a Cluster
// node's).
func startServerOn(t testing.TB, port int, extra ...string) *server {
	t.Helper()
	binary, path := serverBinary()
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed, and CI must run the Redis tests", binary)
		}
		t.Skipf("%s is not installed (apt-get install redis-server)", binary)
	}
	s := &server{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--dir", t.TempDir()}
	s.cmd = exec.Command(path, append(args, extra...)...)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.kill)
	client := s.client(t)
	for started := time.Now(); client.Ping(context.Background()).Err() != nil; {
		if time.Since(started) > 10*time.Second {
			t.Fatalf("redis-server on %s did not answer PING", s.addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

// client is a new client of s, honouring its contexts' deadlines, closed when t ends.
func (s *server) client(t testing.TB) *redis.Client {
	client := redis.NewClient(&redis.Options{Addr: s.addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	return client
}

// kill ends the server (SIGKILL) and reaps it; a second kill does nothing.
func (s *server) kill() {
	if s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// signal sends the server sig (SIGSTOP, SIGCONT).
func (s *server) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}
