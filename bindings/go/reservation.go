package librate

/*
#include "rate.h"
*/
import "C"

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"
)

// unbounded is the max_wait of a reserve that waits however long it takes.
const unbounded = C.uint64_t(math.MaxUint64)

// Reserve is ReserveN(time.Now(), 1), with the time read on librate's clock.
func (l *Limiter) Reserve() *Reservation {
	return l.reserveNow(1, Never)
}

// ReserveN takes n units at time t, however long the holder must wait before acting on
// them, as x/time/rate's ReserveN: the Reservation says how long (Delay), and is not OK
// when no wait admits n (see Reservation.OK). t maps onto librate's timeline as for
// AllowN. To wait at most so long, use ReserveWithin, which takes nothing past it.
func (l *Limiter) ReserveN(t time.Time, n int) *Reservation {
	if n < 0 {
		return refused(negative("n", int64(n)))
	}
	now := onTimeline(t)
	var out C.rate_decision
	r := &Reservation{}
	status := C.rate_limiter_reserve_cancellable_at(l.handle(), C.uint64_t(n), C.uint64_t(now), unbounded, &out, &r.held)
	runtime.KeepAlive(l)
	decision, err := result(status, &out)
	return r.decided(decision, now, err, l.cancel)
}

// Reservation holds units taken for an action that may happen later, as x/time/rate's
// Reservation: the reserve of a GCRA limiter, which queues requests instead of denying
// them (docs/decision.md, reserve). Its methods are safe for concurrent use; a nil
// *Reservation is one that is not OK.
type Reservation struct {
	ok bool
	// act is when the holder may act, on librate's timeline (ns): the time of the
	// reserve plus its wait.
	act uint64
	// decision is the reserve's decision; err its error, if it had one.
	decision Decision
	err      error
	// held is what giving the units back takes (rate.h's rate_reservation), written by
	// the reserve and never after; cancel gives it back on the handle that made it.
	held   C.rate_reservation
	cancel func(*C.rate_reservation)
	// spent is set by the first CancelAt that gives back, so the units go back once.
	spent atomic.Bool
}

// refused is the Reservation of a reserve refused before C was called.
func refused(err error) *Reservation {
	return (&Reservation{}).decided(Decision{}, 0, err, nil)
}

// decided completes r, whose held the reserve at now (librate's timeline) wrote, with
// that reserve's outcome: admitted, or not OK with its error (a denied reserve, whose
// wait has no bound, can only be one that waits past the end of time: also not OK).
// cancel gives held back.
func (r *Reservation) decided(decision Decision, now uint64, err error, cancel func(*C.rate_reservation)) *Reservation {
	r.decision, r.err = decision, err
	if err == nil && decision.Allowed {
		r.ok = true
		r.act = now + uint64(decision.Wait)
		r.cancel = cancel
	}
	return r
}

// OK reports whether the units were reserved. Not OK: n above the burst
// (ErrInsufficientCapacity), a window algorithm (ErrUnsupported: they have no queue), a
// negative n, a closed handle, or a new key in a full table, which Err names; or a wait
// past the end of time (a Period of Forever, past its burst), where Err is nil. The
// holder of a Reservation that is not OK must not act.
func (r *Reservation) OK() bool {
	return r != nil && r.ok
}

// Err is why the units were not reserved, or nil when OK. x/time/rate's Reservation has
// no such method: its only reason is an n above the burst.
func (r *Reservation) Err() error {
	if r == nil {
		return ErrClosed
	}
	return r.err
}

// Decision is the reserve's decision: Wait is Delay at the time of the reserve.
func (r *Reservation) Decision() Decision {
	if r == nil {
		return Decision{}
	}
	return r.decision
}

// Delay is DelayFrom(time.Now()), read on librate's clock.
func (r *Reservation) Delay() time.Duration {
	if !r.OK() {
		return Never
	}
	now := uint64(Now())
	if r.act <= now {
		return 0
	}
	return time.Duration(r.act - now)
}

// DelayFrom is how long after t the holder must wait before acting: 0 once that time
// has come, Never (x/time/rate's InfDuration, the same value) when not OK.
func (r *Reservation) DelayFrom(t time.Time) time.Duration {
	if !r.OK() {
		return Never
	}
	return untilOnTimeline(r.act, t)
}

// Cancel is CancelAt(time.Now()).
func (r *Reservation) Cancel() {
	r.CancelAt(time.Now())
}

// CancelAt says the holder will not act on the units, and gives them back by librate's
// refund, as far as no later request depends on them: the limiter (or the key) then
// decides as if the reserve had never been made. A reserve made after this one, which
// waits behind it, keeps them taken (never admitted twice), and so does a change of
// rule since (SetConfig). As x/time/rate's CancelAt, nothing is given back once t is
// past the time the holder could act (t maps onto librate's timeline as for AllowN),
// when not OK, or a second time.
func (r *Reservation) CancelAt(t time.Time) {
	if r.OK() && onTimeline(t) <= r.act {
		r.giveBack()
	}
}

// giveBack gives the units of an OK reservation back, once.
func (r *Reservation) giveBack() {
	if !r.spent.CompareAndSwap(false, true) {
		return
	}
	// A copy: C empties the reservation it gives back, and r.held is read concurrently.
	held := r.held
	r.cancel(&held)
}
