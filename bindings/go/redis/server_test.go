package librateredis_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The tests run against a real redis-server each test starts on a free loopback port,
// with its files in the test's temporary directory, killed when the test ends. Where
// none is installed the tests skip, saying why, unless CI is set: there a missing
// server fails them. The Cluster tests start three, which form a Redis Cluster.

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

// clusterSlots is the number of hash slots of a Redis Cluster (the Cluster specification).
const clusterSlots = 16384

// cluster is three redis-server masters forming one Redis Cluster: nodes[i] serves the
// slots from firstSlot(i) to firstSlot(i+1) − 1, and admin[i] is a plain client of it,
// which answers MOVED for a key of another node's slot.
type cluster struct {
	nodes []*server
	admin []*redis.Client
}

// firstSlot is the first slot of node i; firstSlot(3) is one past the last slot.
func firstSlot(i int) int { return i * clusterSlots / 3 }

// startCluster starts three Cluster nodes for t, each with its own free port, its own
// free bus port (so no port+10000 has to be free) and its own directory; gives each a
// third of the slots and a config epoch of its own, as redis-cli --cluster create does;
// introduces them (CLUSTER MEET); and waits until every node reports cluster_state:ok.
// Skips t (fails it under CI) where redis-server is not installed. The bus ports
// (--cluster-port, CLUSTER MEET's third argument) need Redis 7.0 or later.
func startCluster(t testing.TB) *cluster {
	t.Helper()
	ports := freePorts(t, 6) // three client ports, then three bus ports
	c := &cluster{}
	for i := range 3 {
		bus := strconv.Itoa(ports[3+i])
		node := startServerOn(t, ports[i], "--cluster-enabled", "yes", "--cluster-port", bus,
			"--cluster-announce-ip", "127.0.0.1")
		c.nodes = append(c.nodes, node)
		c.admin = append(c.admin, node.client(t))
	}
	for i, admin := range c.admin {
		if err := admin.ClusterAddSlotsRange(ctx, firstSlot(i), firstSlot(i+1)-1).Err(); err != nil {
			t.Fatalf("node %d: CLUSTER ADDSLOTSRANGE: %v", i, err)
		}
		if err := admin.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			t.Fatalf("node %d: CLUSTER SET-CONFIG-EPOCH: %v", i, err)
		}
	}
	for i := 1; i < 3; i++ {
		if err := c.admin[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", ports[i], ports[3+i]).Err(); err != nil {
			t.Fatalf("CLUSTER MEET node %d: %v", i, err)
		}
	}
	// Long enough for the nodes to agree on a loaded machine; they take about 2 s (a
	// master waits CLUSTER_WRITABLE_DELAY, 2 s after it starts, before it turns ok).
	started := time.Now()
	for ; !c.ok(); time.Sleep(50 * time.Millisecond) {
		if time.Since(started) > 20*time.Second {
			t.Fatal("the cluster did not form: no cluster_state:ok from every node within 20 s")
		}
	}
	t.Logf("cluster formed in %v", time.Since(started))
	return c
}

// ok reports whether every node says cluster_state:ok.
func (c *cluster) ok() bool {
	for _, admin := range c.admin {
		if !strings.Contains(admin.ClusterInfo(ctx).Val(), "cluster_state:ok") {
			return false
		}
	}
	return true
}

// client is a new Cluster client of c, starting from every node, honouring its
// contexts' deadlines, closed when t ends.
func (c *cluster) client(t testing.TB) *redis.ClusterClient {
	addrs := make([]string, len(c.nodes))
	for i, node := range c.nodes {
		addrs[i] = node.addr
	}
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	return client
}

// master is the node that serves redisKey's slot, by the slot ranges startCluster gave
// out and the slot the server computes (CLUSTER KEYSLOT).
func (c *cluster) master(t testing.TB, redisKey string) int {
	t.Helper()
	slot, err := c.admin[0].ClusterKeySlot(ctx, redisKey).Result()
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT %q: %v", redisKey, err)
	}
	for i := range c.admin {
		if int(slot) < firstSlot(i+1) {
			return i
		}
	}
	t.Fatalf("CLUSTER KEYSLOT %q: %d, not a slot", redisKey, slot)
	return -1
}
