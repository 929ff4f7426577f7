package librate_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// A reset limiter of each algorithm decides as a new one: after `fill` units at fillAt,
// one unit at `at` is denied; after the reset `n` units at `at` are admitted, leaving
// `remaining`, full again `resetAfter` later (worked out by hand from the contract).
func TestResetLimiterDecidesAsNew(t *testing.T) {
	cases := []struct {
		config     librate.Config
		fill       int
		fillAt, at time.Duration
		n          int
		remaining  uint64
		resetAfter time.Duration
	}{
		// GCRA 1/s, burst 2: TAT 0.5 + 1 s after the reset, 1 left, full 1 s later.
		{librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Second, Burst: 2}, 2, 0, 500 * ms, 1, 1, time.Second},
		// Fixed window 2/min: 1 of 2 in the window that ends at 60 s.
		{librate.Config{Algorithm: librate.FixedWindow, Limit: 2, Period: time.Minute}, 2, 24 * time.Second, 36 * time.Second, 1, 1, 24 * time.Second},
		// Sliding window 10/min, 10 at 30 s: at 65 s they weigh 10·55/60 = 9.17; after the
		// reset all 10 fit, both counts 0 from window 3 (180 s).
		{librate.Config{Algorithm: librate.SlidingWindow, Limit: 10, Period: time.Minute}, 10, 30 * time.Second, 65 * time.Second, 10, 0, 115 * time.Second},
		// Sliding log 2/min, full at 10 s: after the reset 2 fit at 20 s, gone at 80 s.
		{librate.Config{Algorithm: librate.SlidingLog, Limit: 2, Period: time.Minute}, 2, 10 * time.Second, 20 * time.Second, 2, 0, time.Minute},
	}
	for _, c := range cases {
		t.Run(c.config.Algorithm.String(), func(t *testing.T) {
			l := mustNew(t, c.config)
			if d, err := l.AcquireAt(c.fill, c.fillAt); err != nil || !d.Allowed {
				t.Fatalf("fill: %+v %v", d, err)
			}
			if d, err := l.AcquireAt(1, c.at); err != nil || d.Allowed {
				t.Fatalf("before the reset: %+v %v", d, err)
			}
			if err := l.Reset(); err != nil {
				t.Fatal(err)
			}
			limit := c.config.Limit
			if c.config.Burst != 0 {
				limit = c.config.Burst
			}
			want := librate.Decision{Allowed: true, Limit: limit, Remaining: c.remaining, ResetAfter: c.resetAfter}
			if d, err := l.AcquireAt(c.n, c.at); err != nil || d != want {
				t.Errorf("after the reset:\n got %+v %v\nwant %+v", d, err, want)
			}
		})
	}
}

// GCRA 1 per 10 s, burst 1, capacity 1 (two slots): a and b fill the table at 0; c is
// refused and, reset while absent, stays out; reset a is new again, but its former
// state (TAT 10 s) keeps its slot until 10 s, so a is refused until then too.
func TestResetKeyAndStats(t *testing.T) {
	k, err := librate.NewKeyed(librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: 10 * time.Second}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	acquire := func(key string, n int, at time.Duration) (librate.Decision, error) {
		return k.AcquireAt(key, n, at)
	}
	for _, key := range []string{"a", "b"} {
		if d, err := acquire(key, 1, 0); err != nil || !d.Allowed {
			t.Fatalf("%s: %+v %v", key, d, err)
		}
	}
	if _, err := acquire("c", 1, 0); !errors.Is(err, librate.ErrTableFull) {
		t.Fatalf("c: %v", err)
	}
	if err := k.Reset("c"); err != nil {
		t.Fatal(err)
	}
	if _, err := acquire("c", 1, 0); !errors.Is(err, librate.ErrTableFull) {
		t.Fatalf("c after its reset: %v", err)
	}
	if err := k.ResetBytes([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if d, err := acquire("a", 0, time.Second); err != nil || d.Remaining != 1 {
		t.Fatalf("a query of a: %+v %v", d, err)
	}
	if _, err := acquire("a", 1, time.Second); !errors.Is(err, librate.ErrTableFull) {
		t.Fatalf("a at 1 s: %v", err)
	}
	want := librate.Decision{Allowed: true, Limit: 1, ResetAfter: 10 * time.Second}
	if d, err := acquire("a", 1, 10*time.Second); err != nil || d != want {
		t.Fatalf("a at 10 s: %+v %v", d, err)
	}
	// At 10 s: a live (TAT 20 s), b fresh; three refusals.
	stats, err := k.StatsAt(10 * time.Second)
	if wantStats := (librate.KeyedStats{Capacity: 1, MaxKeys: 2, LiveKeys: 1, TableFull: 3}); err != nil || stats != wantStats {
		t.Errorf("stats: %+v %v, want %+v", stats, err, wantStats)
	}
	if stats, err := k.Stats(); err != nil || stats.TableFull != 3 {
		t.Errorf("stats now: %+v %v", stats, err)
	}
	if _, err := k.StatsAt(-1); !errors.Is(err, librate.ErrInvalidArgument) {
		t.Errorf("negative time: %v", err)
	}
}

func TestResetAndStatsOfNilOrClosed(t *testing.T) {
	var nilLimiter *librate.Limiter
	var nilKeyed *librate.Keyed
	closed := mustGCRA(t, 1, time.Second, 1)
	closed.Close()
	for name, err := range map[string]error{
		"nil limiter":    nilLimiter.Reset(),
		"closed limiter": closed.Reset(),
		"nil keyed":      nilKeyed.Reset("a"),
	} {
		if !errors.Is(err, librate.ErrClosed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := nilKeyed.Stats(); !errors.Is(err, librate.ErrClosed) {
		t.Errorf("stats of nil: %v", err)
	}
}

// 4 goroutines take units of a frozen limiter and key while this one resets them 50
// times: every acquire is decided before or after some reset, so at most the limit (8)
// gets through between two resets, and what the state left says remains is admitted.
func TestResetsRacingAcquires(t *testing.T) {
	const resets = 50
	config := librate.Config{Algorithm: librate.SlidingLog, Limit: 8, Period: time.Hour}
	l := mustNew(t, config)
	k, err := librate.NewKeyed(config, resets)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	var admitted, keyedAdmitted atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 500 {
				if d, err := l.AcquireAt(1, frozen); err == nil && d.Allowed {
					admitted.Add(1)
				}
				if d, err := k.AcquireAt("k", 1, frozen); err == nil && d.Allowed {
					keyedAdmitted.Add(1)
				}
			}
		}()
	}
	for range resets {
		if l.Reset() != nil || k.Reset("k") != nil {
			t.Fatal("reset failed")
		}
	}
	wg.Wait()
	if n := admitted.Load(); n > 8*(resets+1) {
		t.Errorf("limiter: %d admitted", n)
	}
	if n := keyedAdmitted.Load(); n > 8*(resets+1) {
		t.Errorf("keyed: %d admitted", n)
	}
	query, _ := l.AcquireAt(0, frozen)
	taken := 0
	for range 9 {
		if d, _ := l.AcquireAt(1, frozen); d.Allowed {
			taken++
		}
	}
	if uint64(taken) != query.Remaining {
		t.Errorf("remaining %d, then %d admitted", query.Remaining, taken)
	}
}

// resetConfig is the shared table of TestSharedResetsAndRefusals: GCRA 1 per hour.
var resetConfig = librate.Config{Algorithm: librate.GCRA, Limit: 1, Period: time.Hour}

// resetAndRefuse, in a child: opens the keyed file at pathEnv (capacity 1, full), has
// two new keys refused, and with resetEnv set resets key "a" and the limiter file beside.
func resetAndRefuse(t *testing.T) {
	path := os.Getenv(pathEnv)
	k, err := librate.OpenKeyed(path, resetConfig, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	for _, key := range []string{"c", "d"} {
		if _, err := k.AcquireAt(key+os.Getenv(resetEnv), 1, frozen); !errors.Is(err, librate.ErrTableFull) {
			t.Fatalf("%s: %v", key, err)
		}
	}
	if os.Getenv(resetEnv) == "" {
		return
	}
	if err := k.Reset("a"); err != nil {
		t.Fatal(err)
	}
	l, err := librate.Open(path+"-limiter", resetConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Reset(); err != nil {
		t.Fatal(err)
	}
}

// A shared table full of live keys: two child processes each have two new keys refused,
// and the second resets key a and a shared limiter. The parent sees 4 refusals counted
// in the file, the limiter full again, and a new again (refused as a new key, since its
// former state keeps its slot for the hour: a fifth refusal).
func TestSharedResetsAndRefusals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "table")
	k, err := librate.OpenKeyed(path, resetConfig, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	l, err := librate.Open(path+"-limiter", resetConfig)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, key := range []string{"a", "b"} {
		if d, err := k.AcquireAt(key, 1, frozen); err != nil || !d.Allowed {
			t.Fatalf("%s: %+v %v", key, d, err)
		}
	}
	if d, err := l.AcquireAt(1, frozen); err != nil || !d.Allowed {
		t.Fatalf("limiter: %+v %v", d, err)
	}
	for _, reset := range []string{"", "1"} {
		child, err := startHelper(t, os.Args[0], helperReset, []string{pathEnv + "=" + path, resetEnv + "=" + reset}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := child.finish(); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := l.AcquireAt(1, frozen); err != nil || !d.Allowed {
		t.Errorf("limiter after the reset: %+v %v", d, err)
	}
	if _, err := k.AcquireAt("a", 1, frozen); !errors.Is(err, librate.ErrTableFull) {
		t.Errorf("a after its reset: %v", err)
	}
	want := librate.KeyedStats{Capacity: 1, MaxKeys: 2, LiveKeys: 1, TableFull: 5}
	if stats, err := k.StatsAt(frozen); err != nil || stats != want {
		t.Errorf("stats: %+v %v, want %+v", stats, err, want)
	}
}
