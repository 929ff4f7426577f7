package librateredis

import (
	"errors"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// A renewal's reply is read field for field, a status and eight integers or decimal
// strings; anything else is ErrReply, and so is a reply the holder refuses (then
// librate.ErrReply too); either way nothing of it is applied. The rule is 1,000 a second,
// leased 2 s: a share past its rate (10^6 millionths) or its burst is no grant of its.
func TestLeaseReplies(t *testing.T) {
	rule := librate.LeaseRule{Config: librate.Config{Algorithm: librate.GCRA, Limit: 1000, Period: time.Second}, Lease: 2 * time.Second}
	holder, err := librate.NewLeaseHolder(rule, librate.LeaseOptions{Name: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	applyAtZero := func(r librate.Renewal, status string, fields [librate.LeaseFields]uint64) (librate.HolderState, error) {
		return holder.ApplyAt(r, status, fields, 0)
	}
	renewal, err := holder.RenewalAt(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		reply   any
		refused bool // by the holder, not by its shape
	}{
		{int64(1), false},
		{[]any{"granted", int64(1000000), int64(1000), int64(2000000), int64(0), int64(1000000), int64(1000)}, false},
		{[]any{int64(1), int64(1000000), int64(1000), int64(2000000), int64(0), int64(1000000), int64(1000), int64(1), int64(0)}, false},
		{[]any{"granted", int64(-1), int64(1000), int64(2000000), int64(0), int64(1000000), int64(1000), int64(1), int64(0)}, false},
		{[]any{"granted", "1e6", int64(1000), int64(2000000), int64(0), int64(1000000), int64(1000), int64(1), int64(0)}, false},
		{[]any{"granted", int64(1000001), int64(1000), int64(2000000), int64(0), int64(1000000), int64(1000), int64(1), int64(0)}, true},
		{[]any{"granted", int64(1000000), int64(1001), int64(2000000), int64(0), int64(1000000), int64(1000), int64(1), int64(0)}, true},
		{[]any{"nope", int64(1000000), int64(1000), int64(2000000), int64(0), int64(1000000), int64(1000), int64(1), int64(0)}, true},
	} {
		state, err := answer(renewal, c.reply, applyAtZero)
		if !errors.Is(err, ErrReply) || errors.Is(err, librate.ErrReply) != c.refused || state != librate.InFallback {
			t.Errorf("%v: %v, %v; want ErrReply (refused by the holder: %v)", c.reply, state, err, c.refused)
		}
	}
	if state := holder.StateAt(0); state != librate.InFallback {
		t.Fatalf("%v after replies never applied", state)
	}
	// Decimal strings are read as integers are.
	whole := []any{"granted", "1000000", "1000", "2000000", "0", "1000000", "1000", "1", "0"}
	if state, err := answer(renewal, whole, applyAtZero); err != nil || state != librate.Leased {
		t.Errorf("%v: %v, %v; want a lease", whole, state, err)
	}
}
