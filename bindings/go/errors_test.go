package librate_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// The sentinels carry the status numbers of docs/c.md, match only themselves under
// errors.Is (wrapped or not), and unwrap to Error with errors.As.
func TestSentinelCodes(t *testing.T) {
	sentinels := []struct {
		err  error
		code int32
	}{
		{librate.ErrClosed, -1},
		{librate.ErrInvalidConfig, -2},
		{librate.ErrInsufficientCapacity, -3},
		{librate.ErrTableFull, -4},
		{librate.ErrUnsupported, -5},
		{librate.ErrInternal, -6},
		{librate.ErrIncompatible, -8},
		{librate.ErrReply, -9},
		{librate.ErrInvalidArgument, -1000},
	}
	messages := map[string]bool{}
	for _, s := range sentinels {
		wrapped := fmt.Errorf("context: %w", s.err)
		var e librate.Error
		if !errors.As(wrapped, &e) || e.Code != s.code {
			t.Errorf("%v: errors.As gave code %d, want %d", s.err, e.Code, s.code)
		}
		if !errors.Is(wrapped, librate.Error{Code: s.code}) {
			t.Errorf("%v: not errors.Is its own code", s.err)
		}
		for _, other := range sentinels {
			if other.code != s.code && errors.Is(wrapped, other.err) {
				t.Errorf("%v matches %v", s.err, other.err)
			}
		}
		msg := s.err.Error()
		if !strings.HasPrefix(msg, "librate: ") || messages[msg] {
			t.Errorf("message %q: want a distinct librate message", msg)
		}
		messages[msg] = true
	}
	// rate.h: "Unknown codes give "unknown status"."
	if msg := (librate.Error{Code: -77}).Error(); msg != "librate: unknown status (status -77)" {
		t.Errorf("unknown code: %q", msg)
	}
}

// Every rejected configuration names the field, its value and the bound it broke. The
// bounds follow from the rules in docs/decision.md; the numbers are worked out beside
// each case.
func TestConfigErrorsNameTheFieldAndTheBound(t *testing.T) {
	const tolerance = "(burst x (period_ns / limit) must be at most 2^64 - 257 ns)"
	cases := []struct {
		config librate.Config
		reason string
	}{
		{librate.Config{Limit: 0, Period: time.Second}, "limit 0: must be at least 1"},
		{librate.Config{Limit: 1, Period: 0}, "period 0s: must be at least 1ns"},
		{librate.Config{Limit: 1, Period: -time.Second}, "period -1s: must be at least 1ns"},
		// GCRA: T = floor(P / L) >= 1, so L <= P = 10^9.
		{librate.Config{Limit: 1e9 + 1, Period: time.Second},
			"limit 1000000001: must be at most 1000000000 for GCRA with period_ns 1000000000 (at most one unit per ns)"},
		{librate.Config{Algorithm: 99, Limit: 1, Period: time.Second},
			"algorithm 99: must be 0 (GCRA), 1 (fixed window), 2 (sliding window) or 3 (sliding log)"},
		// T = P = 2^63 - 2 ns; 2T = 2^64 - 4 is past 2^64 - 257, so only B = 1 fits. (A
		// Period of Never is Forever, which never refills: valid.)
		{librate.Config{Limit: 1, Period: librate.Never - 1, Burst: 3},
			"burst 3: must be at most 1 for GCRA with limit 1 and period_ns 9223372036854775806 " + tolerance},
		// floor((2^64-1) / 10^9) * 2^bits(L) + L <= 2^64-257 holds for 29 bits, not 30.
		{librate.Config{Algorithm: librate.FixedWindow, Limit: 1e9, Period: time.Second},
			"limit 1000000000: must be at most 536870911 for the fixed window with period_ns 1000000000"},
		{librate.Config{Algorithm: librate.SlidingWindow, Limit: 1e9, Period: time.Second},
			"limit 1000000000: must be at most 536870911 for the sliding window with period_ns 1000000000"},
		// The log's ring holds at most 2^20 timestamps.
		{librate.Config{Algorithm: librate.SlidingLog, Limit: 1<<20 + 1, Period: time.Second},
			"limit 1048577: must be at most 1048576 for the sliding log with period_ns 1000000000"},
	}
	for _, c := range cases {
		want := "librate: invalid configuration: " + c.reason
		_, err := librate.New(c.config)
		checkConfigError(t, "New", err, want)
		_, err = librate.NewKeyed(c.config, 8)
		checkConfigError(t, "NewKeyed", err, want)
	}

	config := librate.Config{Limit: 10, Period: time.Second}
	for _, c := range []struct {
		capacity int
		reason   string
	}{
		{0, "capacity 0: must be at least 1"},
		{-1, "capacity -1: must be at least 1"},
		// GCRA takes 32 bytes per key: (2^63 - 1) * 32 bytes fit no address space.
		{math.MaxInt, "capacity 9223372036854775807: its table needs 295147905179352825824 bytes (32 per key), more than can be allocated"},
	} {
		_, err := librate.NewKeyed(config, c.capacity)
		checkConfigError(t, "NewKeyed", err, "librate: invalid configuration: "+c.reason)
	}
}

func checkConfigError(t *testing.T, call string, err error, want string) {
	t.Helper()
	var configError *librate.ConfigError
	var e librate.Error
	switch {
	case err == nil || err.Error() != want:
		t.Errorf("%s: %v\nwant %s", call, err, want)
	case !errors.As(err, &configError) || !errors.Is(err, librate.ErrInvalidConfig):
		t.Errorf("%s: %v is not a *ConfigError matching ErrInvalidConfig", call, err)
	case !errors.As(err, &e) || e.Code != -2:
		t.Errorf("%s: %v does not unwrap to Error{-2}", call, err)
	}
}

// Each message carries the "librate: " prefix once, and the closed handle's names the
// handle, not a NULL pointer.
func TestMessagesHaveOnePrefix(t *testing.T) {
	closed := mustGCRA(t, 1, time.Second, 0)
	closed.Close()
	_, closedErr := closed.Acquire(1)
	_, negativeErr := mustGCRA(t, 1, time.Second, 0).Acquire(-1)
	_, negativeWait := mustGCRA(t, 1, time.Second, 0).ReserveWithin(1, -time.Nanosecond)
	for _, c := range []struct {
		err  error
		is   error
		want string
	}{
		{closedErr, librate.ErrClosed, "librate: closed or nil handle (status -1)"},
		{negativeErr, librate.ErrInvalidArgument, "librate: n is -1: invalid argument"},
		{negativeWait, librate.ErrInvalidArgument, "librate: maxWait (ns) is -1: invalid argument"},
		{mustGCRA(t, 1, time.Second, 0).WaitN(nilContext(), 1), librate.ErrInvalidArgument, "librate: WaitN with a nil context: invalid argument"},
		{librate.ErrNull, librate.ErrClosed, "librate: closed or nil handle (status -1)"},
	} {
		if c.err == nil || c.err.Error() != c.want || !errors.Is(c.err, c.is) {
			t.Errorf("%v: want %q, matching %v", c.err, c.want, c.is)
		}
	}
}
