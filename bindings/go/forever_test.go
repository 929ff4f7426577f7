package librate_test

import (
	"testing"

	librate "github.com/librate/librate/bindings/go"
)

// A Period of Forever never refills: each algorithm admits its allowance once (GCRA its
// burst), and reports Never for what never comes.
func TestForeverAdmitsTheAllowanceOnce(t *testing.T) {
	for _, algorithm := range []librate.Algorithm{librate.GCRA, librate.FixedWindow, librate.SlidingWindow, librate.SlidingLog} {
		l, err := librate.New(librate.Config{Algorithm: algorithm, Limit: 3, Period: librate.Forever})
		if err != nil {
			t.Fatalf("%v: %v", algorithm, err)
		}
		want := librate.Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: librate.Never}
		if d, err := l.AcquireAt(2, 0); err != nil || d != want {
			t.Errorf("%v: first: %+v, %v; want %+v", algorithm, d, err, want)
		}
		want = librate.Decision{Limit: 3, Remaining: 1, RetryAfter: librate.Never, ResetAfter: librate.Never}
		if d, err := l.AcquireAt(2, librate.Never); err != nil || d != want {
			t.Errorf("%v: at the end: %+v, %v; want %+v", algorithm, d, err, want)
		}
		l.Close()
	}
	gcra, err := librate.New(librate.Config{Limit: 10, Period: librate.Forever, Burst: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer gcra.Close()
	if d, _ := gcra.AcquireAt(2, 0); !d.Allowed || d.Limit != 2 {
		t.Errorf("GCRA admits its burst of 2: %+v", d)
	}
}
