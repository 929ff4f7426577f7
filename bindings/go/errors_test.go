package librate_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	librate "librate/bindings/go"
)

// The sentinels carry DESIGN.md §6's status numbers, match only themselves under
// errors.Is (wrapped or not), and unwrap to Error with errors.As.
func TestSentinelCodes(t *testing.T) {
	sentinels := []struct {
		err  error
		code int32
	}{
		{librate.ErrNull, -1},
		{librate.ErrInvalidConfig, -2},
		{librate.ErrInsufficientCapacity, -3},
		{librate.ErrTableFull, -4},
		{librate.ErrUnsupported, -5},
		{librate.ErrInternal, -6},
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
