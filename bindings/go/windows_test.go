package librate_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// windowModel is a sequential reference for the three window algorithms, written from
// docs/decision.md alone: admission is the formula, every other field brute force.
type windowModel struct {
	algorithm     librate.Algorithm
	limit, period uint64
	counts        map[uint64]uint64 // units admitted per window index k = ⌊t/P⌋
	log           []uint64          // one timestamp per admitted unit, the last L
}

func newWindowModel(algorithm librate.Algorithm, limit, period uint64) *windowModel {
	return &windowModel{algorithm: algorithm, limit: limit, period: period, counts: map[uint64]uint64{}}
}

func (m *windowModel) admits(t, n uint64) bool {
	k := t / m.period
	switch m.algorithm {
	case librate.FixedWindow:
		return m.counts[k]+n <= m.limit
	case librate.SlidingWindow:
		e := t - k*m.period
		prev := uint64(0)
		if k > 0 {
			prev = m.counts[k-1]
		}
		return prev*(m.period-e)+(m.counts[k]+n)*m.period <= m.limit*m.period
	default: // SlidingLog: admitted timestamps in (t − P, t]
		live := uint64(0)
		for _, ts := range m.log {
			if ts+m.period > t && ts <= t {
				live++
			}
		}
		return live+n <= m.limit
	}
}

func (m *windowModel) take(t, n uint64) {
	m.counts[t/m.period] += n
	for range n {
		m.log = append(m.log, t)
	}
	// Only the last L timestamps can be live (never more than L are), as in librate's
	// ring; dropping older ones keeps each count short.
	if over := len(m.log) - int(m.limit); over > 0 {
		m.log = m.log[over:]
	}
}

func (m *windowModel) remaining(t uint64) uint64 {
	n := uint64(0)
	for n < m.limit && m.admits(t, n+1) {
		n++
	}
	return n
}

func (m *windowModel) decide(now, n uint64) librate.Decision {
	d := librate.Decision{Limit: m.limit}
	if m.admits(now, n) {
		d.Allowed = true
		m.take(now, n)
	} else {
		d.RetryAfter = firstAfter(now, func(at uint64) bool { return m.admits(at, n) })
	}
	d.Remaining = m.remaining(now)
	d.ResetAfter = firstAfter(now, func(at uint64) bool { return m.remaining(at) == m.limit })
	return d
}

var windowAlgorithms = []librate.Algorithm{librate.FixedWindow, librate.SlidingWindow, librate.SlidingLog}

// Every field of every decision matches the model, for each window algorithm, over a
// pseudo-random run at non-decreasing times: L=4 per 1000 ns.
func TestWindowsMatchReferenceModel(t *testing.T) {
	for _, algorithm := range windowAlgorithms {
		t.Run(algorithm.String(), func(t *testing.T) {
			// Burst is ignored by the window algorithms: Limit stays 4.
			l := mustNew(t, librate.Config{Algorithm: algorithm, Limit: 4, Period: 1000, Burst: 99})
			model := newWindowModel(algorithm, 4, 1000)
			modelRun(t, 0x853c49e6748fea9b, 2000, 150, 300, func(rng *xorshift, now uint64) (librate.Decision, librate.Decision, string, error) {
				n := rng.Next(5)
				got, err := l.AcquireAt(int(n), time.Duration(now))
				return got, model.decide(now, n), fmt.Sprintf("AcquireAt n=%d", n), err
			})
		})
	}
}

// The sliding window by hand: L=4 per second, 4 units at 0. At 1.25 s the previous
// window weighs 4·0.75 = 3, so one unit fits (3 + 1 ≤ 4) and none remains. Another
// needs 4·(1 − e) + 2 ≤ 4, that is e ≥ 0.5: retry after 250 ms. Remaining reaches 4
// only when the previous window is empty and the current one too: at 3 s (window 2
// still carries window 1's unit), a reset after 1.75 s.
func TestSlidingWindowByHand(t *testing.T) {
	l := mustNew(t, librate.Config{Algorithm: librate.SlidingWindow, Limit: 4, Period: time.Second})
	checkSteps(t, func(at time.Duration) (librate.Decision, error) { return l.AcquireAt(4, at) }, []step{
		{"four at 0", 0, librate.Decision{Allowed: true, Limit: 4, ResetAfter: 2 * time.Second}},
	})
	checkSteps(t, func(at time.Duration) (librate.Decision, error) { return l.AcquireAt(1, at) }, []step{
		{"one at 1.25 s", 1250 * ms, librate.Decision{Allowed: true, Limit: 4, ResetAfter: 1750 * ms}},
		{"another", 1250 * ms, librate.Decision{Limit: 4, RetryAfter: 250 * ms, ResetAfter: 1750 * ms}},
	})
}

// Fixed window by hand: L=3 per second; windows end on whole seconds.
func TestFixedWindowByHand(t *testing.T) {
	l := mustNew(t, librate.Config{Algorithm: librate.FixedWindow, Limit: 3, Period: time.Second})
	checkSteps(t, func(at time.Duration) (librate.Decision, error) { return l.AcquireAt(1, at) }, []step{
		{"1st", 100 * ms, librate.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 900 * ms}},
		{"2nd", 200 * ms, librate.Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: 800 * ms}},
		{"3rd", 300 * ms, librate.Decision{Allowed: true, Limit: 3, ResetAfter: 700 * ms}},
		{"4th", 500 * ms, librate.Decision{Limit: 3, RetryAfter: 500 * ms, ResetAfter: 500 * ms}},
		{"next window", time.Second, librate.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: time.Second}},
	})
}

// The window algorithms have no reserve.
func TestWindowsHaveNoReserve(t *testing.T) {
	for _, algorithm := range windowAlgorithms {
		l, err := librate.New(librate.Config{Algorithm: algorithm, Limit: 2, Period: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.ReserveAt(1, 0, time.Second); !errors.Is(err, librate.ErrUnsupported) {
			t.Errorf("%v ReserveAt: %v; want ErrUnsupported", algorithm, err)
		}
		if _, err := l.ReserveWithin(1, time.Second); !errors.Is(err, librate.ErrUnsupported) {
			t.Errorf("%v Reserve: %v; want ErrUnsupported", algorithm, err)
		}
		if _, err := l.AcquireAt(3, 0); !errors.Is(err, librate.ErrInsufficientCapacity) {
			t.Errorf("%v AcquireAt(3): %v; want ErrInsufficientCapacity", algorithm, err)
		}
		if _, err := librate.New(librate.Config{Algorithm: algorithm, Period: time.Second}); !errors.Is(err, librate.ErrInvalidConfig) {
			t.Errorf("%v with limit 0: %v; want ErrInvalidConfig", algorithm, err)
		}
		l.Close()
	}
}

// Wait on a window limiter retries after each RetryAfter until admitted, and still
// returns at once when the next admission is past the deadline.
func TestWindowsWait(t *testing.T) {
	for _, algorithm := range windowAlgorithms {
		l, err := librate.New(librate.Config{Algorithm: algorithm, Limit: 1, Period: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := l.WaitN(context.Background(), 1); err != nil {
				t.Fatalf("%v Wait %d: %v", algorithm, i, err)
			}
		}
		l.Close()
	}
	// A sliding log of one an hour: the next unit is an hour after the first.
	l, err := librate.NewSlidingLog(1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !l.Allow() {
		t.Fatal("first unit denied")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := l.WaitN(ctx, 1); !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("Wait past the deadline: %v; want an early DeadlineExceeded", err)
	}
	cancelled, cancelNow := context.WithCancel(context.Background())
	go cancelNow()
	if err := l.WaitN(cancelled, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Wait: %v", err)
	}
}
