package librateredis_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
	librateredis "github.com/librate/librate/bindings/go/redis"
)

// refusedEnv names the port a re-run of this test binary calls, refused; refusedLog,
// when set, passes GoRedisLog; refusedLease, when set, makes the child renew a lease
// instead of deciding through a Limiter and a Policy.
const (
	refusedEnv   = "LIBRATEREDIS_REFUSED_PORT"
	refusedLog   = "LIBRATEREDIS_REFUSED_LOG"
	refusedLease = "LIBRATEREDIS_REFUSED_LEASE"
)

// A refused connection is the caller's *Error and nothing on stderr: go-redis's own
// lines (it logs each failed dial on its process-wide logger) only with GoRedisLog. The
// calls run in a child process, whose stderr the test reads whole, since go-redis's
// default logger writes to the stderr it found when it started.
func TestRefusedConnectionLogsNothing(t *testing.T) {
	if port := os.Getenv(refusedEnv); port != "" {
		callRefused(t, port)
		return
	}
	port := closedPort(t)
	for _, c := range []struct {
		name, log, lease string
		quiet            bool
	}{
		{"by default", "", "", true}, {"with GoRedisLog", "1", "", false},
		{"a lease, by default", "", "1", true}, {"a lease, with GoRedisLog", "1", "1", false},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRefusedConnectionLogsNothing$", "-test.count=1")
		cmd.Env = append(os.Environ(), refusedEnv+"="+port, refusedLog+"="+c.log, refusedLease+"="+c.lease)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: the child failed: %v\n%s", c.name, err, stderr.String())
		}
		// go-redis's default logger prefixes its lines "redis: ".
		if logged := strings.Contains(stderr.String(), "redis: "); logged == c.quiet {
			t.Errorf("%s: stderr %q; want go-redis's lines: %v", c.name, stderr.String(), !c.quiet)
		}
	}
}

// closedPort is a port on 127.0.0.1 that refuses connections: one the kernel just found
// free, closed again.
func closedPort(t *testing.T) string {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(listener.Addr().String())
	listener.Close()
	return port
}

// callRefused is the child's part: a Limiter and a Policy, or a LeasedLimiter alone,
// over a client of port, each call an *Error wrapping the refusal.
func callRefused(t *testing.T, port string) {
	var options []librateredis.Option
	if os.Getenv(refusedLog) != "" {
		options = append(options, librateredis.GoRedisLog())
	}
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, MaxRetries: -1, DialTimeout: time.Second})
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	decide := decideRefused
	if os.Getenv(refusedLease) != "" {
		decide = renewRefused
	}
	for _, err := range decide(ctx, t, client, options) {
		var redisErr *librateredis.Error
		if !errors.As(err, &redisErr) || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("%v: want an *Error of a refused connection", err)
		}
	}
}

// decideRefused is a call of a Limiter and one of a Policy: their errors.
func decideRefused(ctx context.Context, t *testing.T, client *redis.Client, options []librateredis.Option) []error {
	l, err := librateredis.New(client, hourly, "refused:", options...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := librateredis.NewPolicy(client, []librate.Config{hourly}, "refused:", options...)
	if err != nil {
		t.Fatal(err)
	}
	_, limiterErr := l.Acquire(ctx, "k", 1)
	_, policyErr := p.Acquire(ctx, "k", 1)
	return []error{limiterErr, policyErr}
}

// renewRefused is a lease's renewal: its error, and the one the limiter keeps.
func renewRefused(ctx context.Context, t *testing.T, client *redis.Client, options []librateredis.Option) []error {
	rule := librate.LeaseRule{Config: hourly, Lease: time.Second}
	l, err := librateredis.NewLeasedManual(client, "refused:lease", rule, librate.LeaseOptions{}, options...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Renew(ctx)
	return []error{err, l.Err()}
}
