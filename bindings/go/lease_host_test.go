package librate_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// One share for a host (docs/leases.md) without Redis: holders opened from one file
// decide from one share under one name; a process renews while Lead says so, until it
// steps down or dies; and what an opener of the file is refused. The rule is
// thousandASecond (lease_test.go): GCRA, T = 1 ms, B = 1,000, leased 2 s.

// helperLead is the child that claims the renewing of a host's holder (lease_host_test.go).
const helperLead = "lead"

func openHost(t *testing.T, path string) *librate.LeaseHolder {
	t.Helper()
	h, err := librate.OpenLeaseHolder(path, thousandASecond, librate.LeaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func TestLeaseHostHoldersDecideFromOneShare(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lease")
	one, other := openHost(t, path), openHost(t, path)
	if one.Path() != path || other.Path() != path || one.Rule().RenewEvery != 500*ms {
		t.Fatalf("paths %q %q, renewed every %v", one.Path(), other.Path(), one.Rule().RenewEvery)
	}
	// One name, drawn at random when the file was made: 16 hex digits.
	a, b := renewalAt(t, one, 10*second), renewalAt(t, other, 10*second)
	if a.Args[5] != b.Args[5] || len(a.Args[5]) != 16 {
		t.Fatalf("names %q and %q: want one name of 16 digits", a.Args[5], b.Args[5])
	}
	// One process is one renewer, of both holders.
	if !one.Lead() || !other.Lead() {
		t.Fatal("this process must lead through either holder")
	}
	// A grant applied through one is the other's: a fresh share of the whole rule,
	// empty at 10 s, holds one unit at 10.001 s, which one of them takes.
	answer(t, one, a, "granted", 1_000_000, 1000, 10*second, librate.Leased)
	checkState(t, other, 10*second, librate.Leased)
	decide(t, one, 1, 10*second+ms, librate.Decision{Allowed: true, Limit: 1000, ResetAfter: second})
	decide(t, other, 1, 10*second+ms, librate.Decision{Limit: 1000, RetryAfter: ms, ResetAfter: second})
	want := librate.Grant{Rate: 1_000_000, Burst: 1000, Lease: 2 * second, Epoch: 7,
		HeldRate: 1_000_000, HeldBurst: 1000, Holders: 1}
	if g, err := other.LastGrant(); err != nil || g != want {
		t.Fatalf("the other's last grant %+v, %v\nwant %+v", g, err, want)
	}
	// A holder of its own always leads, and is no host's.
	own := newHolder(t, "own", nil)
	if !own.Lead() || own.Path() != "" {
		t.Fatalf("own holder: leads %v, path %q", own.Lead(), own.Path())
	}
	own.StepDown()
	if !own.Lead() {
		t.Fatal("a holder of its own leads after stepping down too")
	}
}

// leadUntilKilled, in a child: opens the host's holder, claims its renewing, says
// "ready"; at its go (EOF on stdin) closes the holder, which steps down, says "closed",
// and lives on until killed.
func leadUntilKilled(t *testing.T) {
	h, err := librate.OpenLeaseHolder(os.Getenv(pathEnv), thousandASecond, librate.LeaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !h.Lead() {
		t.Fatal("the child must claim the renewing: no live process has it")
	}
	awaitGo(t)
	h.Close()
	fmt.Println("closed")
	select {} // until killed
}

// The renewer is a process of the host: while it lives no other may claim the renewing;
// killed (SIGKILL), it is taken over by the next to ask; closed, it steps down, and
// another claims it while it still lives.
func TestLeaseHostRenewerIsTakenOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lease")
	h := openHost(t, path)
	env := []string{pathEnv + "=" + path}
	start := func() *helper {
		child, err := startHelper(t, os.Args[0], helperLead, env, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := child.readUntil("ready"); !ok {
			t.Fatalf("the child ended before it was ready: %v", child.finish())
		}
		return child
	}
	killed := start()
	if h.Lead() {
		t.Fatal("led while the child renews")
	}
	if err := killed.kill(); err != nil {
		t.Fatal(err)
	}
	if !h.Lead() {
		t.Fatal("the killed renewer was not taken over")
	}
	h.StepDown()
	closing := start() // claims it: this process stepped down
	if h.Lead() {
		t.Fatal("led while the second child renews")
	}
	closing.stdin.Close()
	if _, ok := closing.readUntil("closed"); !ok {
		t.Fatalf("the child ended before it closed: %v", closing.finish())
	}
	if !h.Lead() {
		t.Fatal("the child closed and lives, and still renews: it did not step down")
	}
	if err := closing.kill(); err != nil {
		t.Fatal(err)
	}
}

func TestLeaseHostRefusals(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing", "lease")
	h, err := librate.OpenLeaseHolder(missing, thousandASecond, librate.LeaseOptions{})
	var pathError *os.PathError
	if h != nil || !errors.As(err, &pathError) || pathError.Path != missing || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing directory: %v, %v; want an *os.PathError of ENOENT", h, err)
	}
	// A file of another kind, and a host's holder of another lease or rule: refused, and
	// left as they were.
	limiter := filepath.Join(dir, "limiter")
	if l, err := librate.Open(limiter, librate.Config{Algorithm: librate.GCRA, Limit: 10, Period: second}); err != nil {
		t.Fatal(err)
	} else {
		l.Close()
	}
	lease := filepath.Join(dir, "lease")
	longer := thousandASecond
	longer.Lease = 3 * second
	if h, err := librate.OpenLeaseHolder(lease, longer, librate.LeaseOptions{}); err != nil {
		t.Fatal(err)
	} else {
		h.Close()
	}
	heldByLease := ": a librate lease holder for a host of GCRA, limit 1000, period_ns 1000000000, burst 1000, leased 3000000 us at a time"
	slower := thousandASecond
	slower.Config.Limit = 999
	slower.Lease = 3 * second
	for _, c := range []struct {
		path        string
		rule        librate.LeaseRule
		description string
	}{
		{limiter, thousandASecond, limiter + ": a librate limiter holding GCRA, limit 10, period_ns 1000000000, burst 10"},
		{lease, thousandASecond, lease + heldByLease},
		{lease, slower, lease + heldByLease},
	} {
		before, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		h, err := librate.OpenLeaseHolder(c.path, c.rule, librate.LeaseOptions{})
		var incompatible *librate.IncompatibleError
		if h != nil || !errors.As(err, &incompatible) || !errors.Is(err, librate.ErrIncompatible) ||
			incompatible.Path != c.path || incompatible.Description != c.description {
			t.Errorf("%s with %+v: %v, %v\nwant an *IncompatibleError: %s", c.path, c.rule, h, err, c.description)
		}
		if after, err := os.ReadFile(c.path); err != nil || string(after) != string(before) {
			t.Errorf("%s changed by a refused opener (%v)", c.path, err)
		}
	}
	// What a holder of its own is refused, and a name: the file holds the holder's.
	for _, c := range []struct {
		rule    librate.LeaseRule
		options librate.LeaseOptions
		reason  string
	}{
		{thousandASecond, librate.LeaseOptions{Name: "host-a"}, `LeaseOptions.Name "host-a": a host's holder has the name its file holds`},
		{thousandASecond, librate.LeaseOptions{Fallback: &librate.Config{Limit: 0, Period: second}}, "fallback: limit 0: must be at least 1"},
		{librate.LeaseRule{Config: thousandASecond.Config, Lease: 999 * time.Microsecond}, librate.LeaseOptions{}, "lease_ns 999000 renewed every 249750 ns"},
	} {
		h, err := librate.OpenLeaseHolder(filepath.Join(dir, "other"), c.rule, c.options)
		var configError *librate.ConfigError
		if h != nil || !errors.As(err, &configError) || !errors.Is(err, librate.ErrInvalidConfig) ||
			!strings.HasPrefix(configError.Reason, c.reason) {
			t.Errorf("%+v %+v: %v\nwant a *ConfigError starting %q", c.rule, c.options, err, c.reason)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused rule made its file: %v", err)
	}
	// Closed or nil: no lead, and stepping down does nothing.
	closed := openHost(t, lease+"-closed")
	closed.Close()
	var none *librate.LeaseHolder
	for _, holder := range []*librate.LeaseHolder{closed, none} {
		holder.StepDown()
		if holder.Lead() {
			t.Error("a closed or nil holder leads")
		}
	}
	if none.Path() != "" {
		t.Errorf("a nil holder's path %q", none.Path())
	}
}
