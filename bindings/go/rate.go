// Package librate binds librate, a lock-free rate-limiter core written in Rust, through
// its C ABI (include/rate.h). A Limiter enforces one limit; a Keyed limiter enforces one
// limit per key (user, IP address, API key) in a fixed-size table; Middleware puts either
// in front of a net/http handler.
//
// Every Limiter and Keyed method is safe to call from many goroutines at once; the state
// is atomics inside librate, with no lock on any path. Close must not run concurrently
// with other calls on the same handle.
//
// Times on the "At" methods are offsets on a caller-chosen timeline (nanoseconds since
// its origin); the methods without "At" use librate's clock, CLOCK_MONOTONIC, whose
// reading Now returns. A fresh limiter is full at any time, 0 included. Use one timeline
// per limiter.
//
// The package links librate.a statically by default; build with -tags librate_dynamic
// to link librate.so instead (see docs/go.md).
package librate

/*
#include "rate.h"

// librate_go_reserve reserves on librate's clock in a single cgo crossing, and writes
// the time it read to *now (for a Reservation, which counts its delay from then) and
// what cancelling takes to *held.
static int32_t librate_go_reserve(rate_limiter *limiter, uint64_t n, uint64_t max_wait_ns,
                                  rate_decision *out, uint64_t *now, rate_reservation *held) {
	*now = rate_now_ns();
	return rate_limiter_reserve_cancellable_at(limiter, n, *now, max_wait_ns, out, held);
}

// librate_go_allow is rate_limiter_acquire without a decision, taking the handle as an
// integer: cgo checks every pointer argument at run time for Go memory, and a handle,
// which points to C memory, needs no such check (measured: Allow 40.9 -> 37.3 ns, of
// which the crossing is 24.8).
static int32_t librate_go_allow(uintptr_t limiter, uint64_t n) {
	return rate_limiter_acquire((rate_limiter *)limiter, n, NULL);
}

// librate never calls back into Go and keeps no pointer it is given past the call, so
// the Go arguments (a config, a decision, a handle slot on the stack) need not escape.
#cgo noescape rate_limiter_new
#cgo nocallback rate_limiter_new
#cgo noescape rate_limiter_free
#cgo nocallback rate_limiter_free
#cgo noescape rate_limiter_acquire
#cgo nocallback rate_limiter_acquire
#cgo noescape rate_limiter_acquire_at
#cgo nocallback rate_limiter_acquire_at
#cgo noescape rate_limiter_reserve_at
#cgo nocallback rate_limiter_reserve_at
#cgo noescape rate_limiter_reserve_cancellable_at
#cgo nocallback rate_limiter_reserve_cancellable_at
#cgo noescape rate_limiter_cancel
#cgo nocallback rate_limiter_cancel
#cgo noescape librate_go_reserve
#cgo nocallback librate_go_reserve
#cgo noescape librate_go_allow
#cgo nocallback librate_go_allow
#cgo noescape rate_now_ns
#cgo nocallback rate_now_ns
#cgo noescape rate_version
#cgo nocallback rate_version
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// Algorithm selects how a limiter counts (docs/decision.md, the algorithms). The values are
// rate.h's RATE_GCRA … RATE_SLIDING_LOG.
type Algorithm uint32

const (
	// GCRA is the generic cell rate algorithm: a token bucket of Burst units refilled
	// at Limit per Period, kept as one timestamp. The only algorithm with Reserve.
	GCRA Algorithm = 0
	// FixedWindow counts units in windows [k·Period, (k+1)·Period).
	FixedWindow Algorithm = 1
	// SlidingWindow weights the previous window's count by its overlap with the
	// sliding period.
	SlidingWindow Algorithm = 2
	// SlidingLog keeps the timestamps of the last Limit admitted units: an exact
	// rolling count.
	SlidingLog Algorithm = 3
)

// The constants above match rate.h: each array length is 0 only if they are equal, and
// any other length fails to compile.
var (
	_ [0]struct{} = [GCRA - C.RATE_GCRA]struct{}{}
	_ [0]struct{} = [FixedWindow - C.RATE_FIXED_WINDOW]struct{}{}
	_ [0]struct{} = [SlidingWindow - C.RATE_SLIDING_WINDOW]struct{}{}
	_ [0]struct{} = [SlidingLog - C.RATE_SLIDING_LOG]struct{}{}
)

// String names the algorithm.
func (a Algorithm) String() string {
	switch a {
	case GCRA:
		return "GCRA"
	case FixedWindow:
		return "FixedWindow"
	case SlidingWindow:
		return "SlidingWindow"
	case SlidingLog:
		return "SlidingLog"
	default:
		return fmt.Sprintf("Algorithm(%d)", uint32(a))
	}
}

// Forever is the Period that never ends: a rule that never refills, a rate of zero.
// GCRA admits Burst units (0: Limit), ever; the other algorithms Limit units, ever; a
// denial's RetryAfter is then Never, and so is ResetAfter once anything was admitted.
// It is C's RATE_FOREVER (2⁶⁴−1 ns), which no time.Duration holds: a Period of
// math.MaxInt64 (292 years, the same value as Never) stands for it.
const Forever = Never

// Config is what a limiter enforces: at most Limit units per Period.
type Config struct {
	// Algorithm is how the limiter counts; the zero value is GCRA.
	Algorithm Algorithm
	// Limit is L ≥ 1, the units admitted per Period.
	Limit uint64
	// Period is P > 0, or Forever.
	Period time.Duration
	// Burst is, for GCRA only, the most units admitted at once; 0 means Limit. The
	// window algorithms ignore it.
	Burst uint64
}

// toC checks what only Go can get wrong (a negative Period would wrap to a huge
// unsigned one) and converts; librate validates the rest.
func (c Config) toC() (C.rate_config, error) {
	if c.Period <= 0 {
		return C.rate_config{}, &ConfigError{Reason: fmt.Sprintf("period %v: must be at least 1ns", c.Period)}
	}
	periodNs := C.uint64_t(c.Period)
	if c.Period == Forever {
		periodNs = C.RATE_FOREVER
	}
	return C.rate_config{
		algorithm: C.uint32_t(c.Algorithm),
		limit:     C.uint64_t(c.Limit),
		period_ns: periodNs,
		burst:     C.uint64_t(c.Burst),
	}, nil
}

// configFromC is the Config librate reports as held, and whether a Config holds it: a
// period_ns of RATE_FOREVER is Forever, and one of 2⁶³−1 ns or more is no Config's
// (Forever's Period stands for RATE_FOREVER).
func configFromC(held C.rate_config) (Config, bool) {
	period := Forever
	if held.period_ns != C.RATE_FOREVER {
		if held.period_ns >= C.uint64_t(Never) { // no time.Duration but Forever's holds it
			return Config{}, false
		}
		period = time.Duration(held.period_ns)
	}
	return Config{
		Algorithm: Algorithm(held.algorithm),
		Limit:     uint64(held.limit),
		Period:    period,
		Burst:     uint64(held.burst),
	}, true
}

// Limiter enforces one Config. Its methods are safe for concurrent use and never
// block, except Wait and WaitN. A nil or closed Limiter answers every call with
// ErrClosed (and Allow with false).
type Limiter struct {
	ptr *C.rate_limiter
	// config is the rule last known in force: the one given to New, to the last
	// SetConfig, or last read by Config, which returns it once l is closed.
	config  atomic.Pointer[Config]
	cleanup runtime.Cleanup
}

// New creates a Limiter, full at any time. For a config librate rejects the error is a
// *ConfigError naming the field and its bound, which matches ErrInvalidConfig.
func New(config Config) (*Limiter, error) {
	cConfig, err := config.toC()
	if err != nil {
		return nil, err
	}
	var ptr *C.rate_limiter
	if status := C.rate_limiter_new(&cConfig, &ptr); status != C.RATE_OK {
		return nil, rejected(status, func(reason *C.char, length C.size_t) C.int32_t {
			return C.rate_limiter_explain_config(&cConfig, reason, length)
		})
	}
	return wrapLimiter(ptr, config), nil
}

// wrapLimiter gives a new C handle its Go owner.
func wrapLimiter(ptr *C.rate_limiter, config Config) *Limiter {
	l := &Limiter{ptr: ptr}
	l.config.Store(&config)
	// The backstop for a Limiter dropped without Close. The cleanup holds the C
	// pointer, not l, so it cannot keep l alive.
	l.cleanup = runtime.AddCleanup(l, freeLimiter, ptr)
	return l
}

func freeLimiter(ptr *C.rate_limiter) {
	C.rate_limiter_free(ptr)
	noteFreed()
}

// NewGCRA creates a GCRA limiter: limit units per period, at most burst at once (0
// means limit).
func NewGCRA(limit uint64, period time.Duration, burst uint64) (*Limiter, error) {
	return New(Config{Algorithm: GCRA, Limit: limit, Period: period, Burst: burst})
}

// NewFixedWindow creates a fixed-window limiter: limit units per window of period.
func NewFixedWindow(limit uint64, period time.Duration) (*Limiter, error) {
	return New(Config{Algorithm: FixedWindow, Limit: limit, Period: period})
}

// NewSlidingWindow creates a sliding-window-counter limiter: limit units per period.
func NewSlidingWindow(limit uint64, period time.Duration) (*Limiter, error) {
	return New(Config{Algorithm: SlidingWindow, Limit: limit, Period: period})
}

// NewSlidingLog creates a sliding-log limiter: limit units in any period.
func NewSlidingLog(limit uint64, period time.Duration) (*Limiter, error) {
	return New(Config{Algorithm: SlidingLog, Limit: limit, Period: period})
}

// Config returns the configuration in force: the one the limiter was created with, or
// the last SetConfig gave. For a limiter from Open, the file's rule in force, which
// SetConfig in any process attached may have changed. A closed Limiter returns the last
// one it knew; so does one whose file holds a period no time.Duration holds.
func (l *Limiter) Config() Config {
	if l == nil {
		return Config{}
	}
	var held C.rate_config
	status := C.rate_limiter_get_config(l.handle(), &held)
	runtime.KeepAlive(l)
	return inForce(status, held, &l.config)
}

// inForce is the configuration a get_config call that returned status wrote to held,
// kept in known as the last one known in force (for when the handle is closed; a read
// that finds it unchanged allocates nothing); or, if the call failed or held holds a
// period no time.Duration holds, the last one known.
func inForce(status C.int32_t, held C.rate_config, known *atomic.Pointer[Config]) Config {
	config, ok := configFromC(held)
	if status != C.RATE_OK || !ok {
		return *known.Load()
	}
	if *known.Load() != config {
		fresh := config
		known.Store(&fresh)
	}
	return config
}

// handle is the C handle for one call: NULL when l is nil or closed, which librate
// answers with RATE_E_NULL. Every caller follows its C call with runtime.KeepAlive(l),
// so the cleanup cannot free the handle mid-call.
func (l *Limiter) handle() *C.rate_limiter {
	if l == nil {
		return nil
	}
	ptr := l.ptr
	// Under -tags debug: collect now, when l is no longer needed to read the handle,
	// so a caller missing its KeepAlive has l freed before its C call.
	maybeGC()
	return ptr
}

// address passes a handle to C as an integer, for the C wrappers that take one (see
// librate_go_allow). A handle points to C memory, which Go's garbage collector neither
// moves nor frees, so the integer stands for it as long as the handle is open.
func address(handle unsafe.Pointer) C.uintptr_t {
	return C.uintptr_t(uintptr(handle))
}

// Allow reports whether one unit is admitted now, as x/time/rate's Allow: librate's
// fastest path, which decides on the coarse clock whenever that settles the outcome
// exactly. It returns false for a nil or closed Limiter; use Acquire to tell that apart
// from a denial.
func (l *Limiter) Allow() bool {
	return l.allowNow(1)
}

// AllowN reports whether n units are admitted at time t, and takes them if so, as
// x/time/rate's AllowN: AllowN(time.Now(), n) decides now. t maps onto librate's timeline
// through its monotonic reading (docs/go.md, time). It returns false for a negative n,
// an n above the burst, and a nil or closed Limiter; use Acquire to tell those apart
// from a denial.
func (l *Limiter) AllowN(t time.Time, n int) bool {
	if n < 0 {
		return false
	}
	status := C.rate_limiter_acquire_at(l.handle(), C.uint64_t(n), C.uint64_t(onTimeline(t)), nil)
	runtime.KeepAlive(l)
	return status == C.RATE_OK
}

// AllowNow is AllowN now on librate's fast path, as Allow is for one unit.
//
// Deprecated: use AllowN(time.Now(), n), x/time/rate's shape. AllowNow was AllowN's
// name and shape before 0.2 and goes in the next release.
func (l *Limiter) AllowNow(n int) bool {
	return l.allowNow(n)
}

// allowNow is Allow for n units.
func (l *Limiter) allowNow(n int) bool {
	if n < 0 {
		return false
	}
	status := C.librate_go_allow(address(unsafe.Pointer(l.handle())), C.uint64_t(n))
	runtime.KeepAlive(l)
	return status == C.RATE_OK
}

// Acquire takes n units now if the limit allows, and reports the decision. n == 0 is
// a query: admitted, changes nothing. A denial is a Decision with Allowed false and a
// nil error; errors are ErrInsufficientCapacity (n above Limit), ErrInvalidArgument (n
// negative) and ErrClosed (nil or closed).
func (l *Limiter) Acquire(n int) (Decision, error) {
	if n < 0 {
		return Decision{}, negative("n", int64(n))
	}
	var out C.rate_decision
	status := C.rate_limiter_acquire(l.handle(), C.uint64_t(n), &out)
	runtime.KeepAlive(l)
	return result(status, &out)
}

// AcquireAt is Acquire at time now on the caller's timeline. A now earlier than one
// already seen never admits more than the latest time seen would.
func (l *Limiter) AcquireAt(n int, now time.Duration) (Decision, error) {
	if n < 0 || now < 0 {
		return Decision{}, negativeArgument(n, now, 0)
	}
	var out C.rate_decision
	status := C.rate_limiter_acquire_at(l.handle(), C.uint64_t(n), C.uint64_t(now), &out)
	runtime.KeepAlive(l)
	return result(status, &out)
}

// ReserveWithin takes n units now if the caller would have to wait at most maxWait
// before acting on them (the leaky bucket as a queue, a traffic shaper); Decision.Wait
// says how long. With maxWait 0 it is Acquire. GCRA only: the window algorithms return
// ErrUnsupported. A denied reserve's RetryAfter is for the same reserve, same maxWait.
// ReserveN is the same with no bound on the wait, in x/time/rate's shape.
func (l *Limiter) ReserveWithin(n int, maxWait time.Duration) (Decision, error) {
	r := l.reserveNow(n, maxWait)
	return r.decision, r.err
}

// reserveNow is ReserveWithin as a Reservation, from the time on librate's clock it
// decided at; its units are the holder's, OK or not, if the decision admitted them.
func (l *Limiter) reserveNow(n int, maxWait time.Duration) *Reservation {
	if n < 0 || maxWait < 0 {
		return refused(negativeArgument(n, 0, maxWait))
	}
	var out C.rate_decision
	var now C.uint64_t
	r := &Reservation{}
	status := C.librate_go_reserve(l.handle(), C.uint64_t(n), C.uint64_t(maxWait), &out, &now, &r.held)
	runtime.KeepAlive(l)
	decision, err := result(status, &out)
	return r.decided(decision, uint64(now), err, l.cancel)
}

// cancel gives back a reservation of this limiter's (Reservation.CancelAt).
func (l *Limiter) cancel(held *C.rate_reservation) {
	C.rate_limiter_cancel(l.handle(), held)
	runtime.KeepAlive(l)
}

// ReserveAt is Reserve at time now on the caller's timeline.
func (l *Limiter) ReserveAt(n int, now, maxWait time.Duration) (Decision, error) {
	if n < 0 || now < 0 || maxWait < 0 {
		return Decision{}, negativeArgument(n, now, maxWait)
	}
	var out C.rate_decision
	status := C.rate_limiter_reserve_at(l.handle(), C.uint64_t(n), C.uint64_t(now), C.uint64_t(maxWait), &out)
	runtime.KeepAlive(l)
	return result(status, &out)
}

// Wait is WaitN(ctx, 1).
func (l *Limiter) Wait(ctx context.Context) error {
	return l.WaitN(ctx, 1)
}

// WaitN blocks until n units are admitted, ctx is done, or it is clear that admission
// would come after ctx's deadline, as x/time/rate's WaitN; in that last case it returns
// at once with an error wrapping context.DeadlineExceeded, having taken nothing. An n
// above the burst is ErrInsufficientCapacity at once. A GCRA limiter reserves the units
// first and then sleeps out Decision.Wait, so waiters are served in order; if ctx ends
// during that sleep the reservation is cancelled, giving the units back as far as no
// later request depends on them (docs/go.md, cancelling). The window algorithms retry
// after each RetryAfter instead, holding nothing while they sleep.
func (l *Limiter) WaitN(ctx context.Context, n int) error {
	reserve := l.reserveNow
	if l.Config().Algorithm != GCRA {
		reserve = nil
	}
	return wait(ctx, n, reserve, l.Acquire)
}

// Close frees the limiter. It is idempotent and always returns nil; afterwards every
// call returns ErrClosed. It must not run concurrently with other calls on l. A Limiter
// dropped without Close is freed when the garbage collector finds it unreachable.
func (l *Limiter) Close() error {
	if l != nil {
		release(&l.ptr, l.cleanup, func(ptr *C.rate_limiter) { C.rate_limiter_free(ptr) })
	}
	return nil
}

// release is Close for a Limiter or a Keyed: it frees the handle in *ptr unless it is
// already closed, after stopping the garbage collector's backstop, so the handle is
// freed exactly once, and leaves *ptr nil.
// (P is the handle's pointer type: Go takes no incomplete C type as a type argument.)
func release[P comparable](ptr *P, cleanup runtime.Cleanup, free func(P)) {
	var closed P
	if *ptr == closed {
		return
	}
	cleanup.Stop()
	free(*ptr)
	*ptr = closed
}

// Now reads librate's clock (CLOCK_MONOTONIC) as an offset from its origin: the
// timeline the methods without "At" use, to pass to the "At" methods.
func Now() time.Duration {
	return time.Duration(C.rate_now_ns())
}

// Version is the linked librate's version, "MAJOR.MINOR.PATCH".
func Version() string {
	return C.GoString(C.rate_version())
}

// negativeArgument names the first negative one of a count, a time and a duration.
func negativeArgument(n int, now, maxWait time.Duration) error {
	switch {
	case n < 0:
		return negative("n", int64(n))
	case now < 0:
		return negative("now (ns)", int64(now))
	default:
		return negative("maxWait (ns)", int64(maxWait))
	}
}
