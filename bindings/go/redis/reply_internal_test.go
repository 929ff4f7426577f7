package librateredis

import (
	"errors"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// A script's reply is read field for field, integers or decimal strings, durations
// saturating at librate.Never; anything else, even one field off, is ErrReply.
func TestReplies(t *testing.T) {
	decided := []struct {
		reply any
		want  librate.Decision
	}{
		{[]any{int64(1), int64(5), int64(4), "0", "1000000000", "0"},
			librate.Decision{Allowed: true, Limit: 5, Remaining: 4, ResetAfter: time.Second}},
		{[]any{int64(0), "5", "0", "18446744073709551615", "9223372036854775807", "9223372036854775806"},
			librate.Decision{Limit: 5, RetryAfter: librate.Never, ResetAfter: librate.Never, Wait: librate.Never - 1}},
	}
	for _, c := range decided {
		if got, err := decisionOf("k", c.reply, nil); err != nil || got != c.want {
			t.Errorf("%v: %+v, %v; want %+v", c.reply, got, err, c.want)
		}
	}
	for _, reply := range []any{
		[]any{int64(2), int64(5), int64(4), "0", "0", "0"},                    // allowed neither 0 nor 1
		[]any{int64(1), int64(-5), int64(4), "0", "0", "0"},                   // negative
		[]any{int64(1), int64(5), int64(4), "0", "0"},                         // five fields
		[]any{int64(1), int64(5), int64(4), "0", "0", "0", "0"},               // seven
		[]any{int64(1), int64(5), int64(4), "0", "0", "18446744073709551616"}, // past 2^64 - 1
		[]any{int64(1), int64(5), int64(4), "0", "1e9", "0"},                  // no decimal integer
		[]any{int64(1), int64(5), 4.0, "0", "0", "0"},                         // a double
		"OK",
		int64(1),
	} {
		got, err := decisionOf("k", reply, nil)
		var failure *Error
		if !errors.Is(err, ErrReply) || !errors.As(err, &failure) || failure.Key != "k" || got != (librate.Decision{}) {
			t.Errorf("%v: %+v, %v; want ErrReply", reply, got, err)
		}
	}
}

// A brief call's reply (Allow's) is the integer 1 or 0 alone; anything else, a whole
// decision included, is ErrReply, and an error in its place is an *Error.
func TestBriefReplies(t *testing.T) {
	for reply, want := range map[int64]bool{1: true, 0: false} {
		if got, err := allowedOf("k", reply, nil); err != nil || got != want {
			t.Errorf("%v: %v, %v; want %v", reply, got, err, want)
		}
	}
	for _, reply := range []any{
		int64(2), int64(-1), "1", 1.0, nil, "OK",
		[]any{int64(1), int64(5), int64(4), "0", "0", "0"},
	} {
		got, err := allowedOf("k", reply, nil)
		var failure *Error
		if !errors.Is(err, ErrReply) || !errors.As(err, &failure) || failure.Key != "k" || got {
			t.Errorf("%v: %v, %v; want ErrReply", reply, got, err)
		}
	}
	down := errors.New("connection refused")
	if got, err := allowedOf("k", nil, down); !errors.Is(err, down) || got {
		t.Errorf("an error: %v, %v; want it wrapped, not admitted", got, err)
	}
}
