//go:build debug

package librate

import (
	"runtime"
	"testing"
	"time"
)

// The cleanup backstop frees exactly the limiters dropped without Close: never one that
// was closed (that would be a double free), and every unclosed one eventually.
func TestCleanupFreesExactlyTheUnclosed(t *testing.T) {
	const closed, unclosed = 50, 50
	settle() // handles other tests dropped are freed before counting starts
	before := freedHandles.Load()
	for i := range closed + unclosed {
		l, err := NewGCRA(1, time.Second, 0)
		if err != nil {
			t.Fatal(err)
		}
		if i < closed {
			l.Close()
		}
	}
	freed := func() int64 { return freedHandles.Load() - before }
	// Cleanups run on their own goroutine after a collection finds the object dead;
	// collect until they have all run (bounded by a count of collections, not a time).
	for i := 0; i < 1000 && freed() < unclosed; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	settle()
	if freed() != unclosed {
		t.Fatalf("the cleanup freed %d handles, want exactly %d", freed(), unclosed)
	}
}

// settle collects until the backstop has freed every unreachable handle: until the count
// of freed handles stays put over several collections.
func settle() {
	for stable, last := 0, freedHandles.Load(); stable < 5; {
		runtime.GC()
		runtime.Gosched()
		if now := freedHandles.Load(); now != last {
			stable, last = 0, now
		} else {
			stable++
		}
	}
}

// A keyed lease holder and a round of it, dropped without Close, are freed too: the round
// holds its keys' holders, never the keyed holder's C handle.
func TestCleanupFreesKeyedLeaseHoldersAndRounds(t *testing.T) {
	settle()
	before := freedHandles.Load()
	func() {
		rule := LeaseRule{Config: Config{Limit: 10, Period: time.Second}, Lease: time.Second}
		h, err := NewKeyedLeaseHolder(rule, 0, 1, LeaseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h.AcquireAt("k", 1, 0)
		round, err := h.RenewalsAt(0)
		if err != nil || len(round.Renewals) != 1 {
			t.Fatalf("round: %+v, %v", round, err)
		}
	}()
	settle()
	if freed := freedHandles.Load() - before; freed != 2 {
		t.Fatalf("the cleanup freed %d handles, want the holder and its round", freed)
	}
}
