package librate

/*
#include "rate.h"

// librate_go_lease_allow is rate_lease_acquire without a decision, with the handle as an
// integer, as librate_go_allow in rate.go.
static int32_t librate_go_lease_allow(uintptr_t holder, uint64_t n) {
	return rate_lease_acquire((rate_lease_holder *)holder, n, NULL);
}

// As in rate.go: librate keeps no pointer past a call and never calls back into Go.
#cgo noescape rate_lease_holder_new
#cgo nocallback rate_lease_holder_new
#cgo noescape rate_lease_explain
#cgo nocallback rate_lease_explain
#cgo noescape rate_lease_holder_free
#cgo nocallback rate_lease_holder_free
#cgo noescape rate_lease_step_down
#cgo nocallback rate_lease_step_down
#cgo noescape rate_lease_acquire
#cgo nocallback rate_lease_acquire
#cgo noescape rate_lease_acquire_at
#cgo nocallback rate_lease_acquire_at
#cgo noescape rate_lease_state
#cgo nocallback rate_lease_state
#cgo noescape rate_lease_state_at
#cgo nocallback rate_lease_state_at
#cgo noescape librate_go_lease_allow
#cgo nocallback librate_go_lease_allow
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// LeaseRule is a global rule kept in Redis that holders lease shares of (docs/leases.md):
// each holder decides in process from its share, and renews it in the background.
type LeaseRule struct {
	// Config is the global rule: GCRA, one Redis can hold exactly (PrepareRedis).
	Config Config
	// Lease is how long a lease lasts, by Redis's clock: 1 ms to below 2^53 µs.
	Lease time.Duration
	// RenewEvery is how often a holder renews: 0 means a quarter of Lease; otherwise
	// at least 1 ms and below Lease less its margin (a thousandth of Lease).
	RenewEvery time.Duration
}

// LeaseOptions are a holder's own choices.
type LeaseOptions struct {
	// Name is the holder's name in the rule's Redis hash: at most 64 bytes of UTF-8
	// without NUL; "" for a random one. Two holders of one name are one holder to
	// Redis, and could decide from one share twice: a name must be unique among a
	// rule's holders.
	Name string
	// Fallback is the local rule the holder decides by when it holds no lease and
	// Redis does not answer (such as the global rule divided by the expected number of
	// holders: the caller's choice, which the global rule's promise does not cover);
	// nil denies every request then.
	Fallback *Config
}

// HolderState is where a holder's decisions come from at an instant. The values are
// rate.h's RATE_LEASE_LEASED, RATE_LEASE_UNSHARED and RATE_LEASE_FALLBACK.
type HolderState int32

const (
	// Leased: from its share, under a lease.
	Leased HolderState = 0
	// Unshared: Redis answered that the holder holds no share (the rule is taken, or
	// new to Redis and quiet for a lease): denied until the next answer.
	Unshared HolderState = 1
	// InFallback: no lease and no answer: from LeaseOptions.Fallback.
	InFallback HolderState = 2
)

// The constants above match rate.h, as the Algorithm constants do.
var (
	_ [0]struct{} = [Leased - C.RATE_LEASE_LEASED]struct{}{}
	_ [0]struct{} = [Unshared - C.RATE_LEASE_UNSHARED]struct{}{}
	_ [0]struct{} = [InFallback - C.RATE_LEASE_FALLBACK]struct{}{}
)

// String names the state.
func (s HolderState) String() string {
	switch s {
	case Leased:
		return "Leased"
	case Unshared:
		return "Unshared"
	case InFallback:
		return "InFallback"
	default:
		return fmt.Sprintf("HolderState(%d)", int32(s))
	}
}

// LeaseHolder holds a share of a LeaseRule and decides from it in process, with
// atomics alone: it never talks to Redis. A client sends what Renewal gives to the lease
// script (Script) and passes the answer to Apply; package
// github.com/librate/librate/bindings/go/redis does so in a goroutine (LeasedLimiter).
// OpenLeaseHolder opens the one holder of every process of a host, in a file.
//
// Its decisions are safe for concurrent use and never block; its renewals (Renewal,
// Apply, Release) take turns under a lock of their own. A nil or closed LeaseHolder
// answers every call with ErrClosed (Allow with false, State with InFallback).
type LeaseHolder struct {
	ptr  *C.rate_lease_holder
	rule LeaseRule
	// path is a host's holder's file (OpenLeaseHolder), "" for a holder of its own.
	path string
	// renewing serializes the renewals, which librate takes one caller at a time.
	renewing sync.Mutex
	cleanup  runtime.Cleanup
}

// NewLeaseHolder creates a holder of rule, deciding by options.Fallback until its first
// lease. For a rule, a fallback or a name librate rejects the error is a *ConfigError
// naming it, which matches ErrInvalidConfig.
func NewLeaseHolder(rule LeaseRule, options LeaseOptions) (*LeaseHolder, error) {
	cRule, fallback, err := rule.toC(options.Fallback)
	if err != nil {
		return nil, err
	}
	var name *C.uint8_t
	if options.Name != "" {
		name = (*C.uint8_t)(unsafe.Pointer(unsafe.StringData(options.Name)))
	}
	var ptr *C.rate_lease_holder
	nameLen := C.size_t(len(options.Name))
	status := C.rate_lease_holder_new(&cRule, fallback, name, nameLen, &ptr)
	if status != C.RATE_OK {
		err := rejected(status, func(reason *C.char, length C.size_t) C.int32_t {
			return C.rate_lease_explain(&cRule, fallback, name, nameLen, reason, length)
		})
		runtime.KeepAlive(options.Name)
		return nil, err
	}
	runtime.KeepAlive(options.Name)
	return wrapLeaseHolder(ptr, rule, ""), nil
}

// wrapLeaseHolder is the LeaseHolder of ptr, a holder of rule (in the file at path, if
// not ""), freed by the garbage collector if never closed.
func wrapLeaseHolder(ptr *C.rate_lease_holder, rule LeaseRule, path string) *LeaseHolder {
	if rule.RenewEvery == 0 {
		rule.RenewEvery = rule.Lease / 4
	}
	h := &LeaseHolder{ptr: ptr, rule: rule, path: path}
	// As for Limiter: the cleanup holds the C pointer, never h.
	h.cleanup = runtime.AddCleanup(h, freeLeaseHolder, ptr)
	return h
}

func freeLeaseHolder(ptr *C.rate_lease_holder) {
	dropLeaseHolder(ptr)
	noteFreed()
}

// dropLeaseHolder frees a holder. A host's holder, closed or collected, first gives up
// renewing, so that another process takes it over; for a holder of its own stepping down
// does nothing.
func dropLeaseHolder(ptr *C.rate_lease_holder) {
	C.rate_lease_step_down(ptr)
	C.rate_lease_holder_free(ptr)
}

// toC converts the rule and the fallback (nil for none), refusing what only Go can get
// wrong (negative durations, which would wrap to huge unsigned ones).
func (r LeaseRule) toC(fallback *Config) (C.rate_lease_rule, *C.rate_config, error) {
	config, err := r.Config.toC()
	if err != nil {
		return C.rate_lease_rule{}, nil, err
	}
	if r.Lease <= 0 || r.RenewEvery < 0 {
		return C.rate_lease_rule{}, nil, leaseTiming(r)
	}
	var local *C.rate_config
	if fallback != nil {
		converted, err := fallback.toC()
		if err != nil {
			return C.rate_lease_rule{}, nil, &ConfigError{Reason: "fallback: " + err.(*ConfigError).Reason}
		}
		local = &converted
	}
	cRule := C.rate_lease_rule{config: config, lease_ns: C.uint64_t(r.Lease), renew_every_ns: C.uint64_t(r.RenewEvery)}
	return cRule, local, nil
}

// leaseTiming is the error of a lease or renewal interval out of bounds.
func leaseTiming(rule LeaseRule) error {
	return &ConfigError{Reason: fmt.Sprintf("lease %v renewed every %v: the lease must be at least 1ms and below 2^53µs, "+
		"the renewal interval 0 (a quarter of the lease) or at least 1ms and below the lease less a thousandth of it",
		rule.Lease, rule.RenewEvery)}
}

// Rule returns the rule held, RenewEvery filled in.
func (h *LeaseHolder) Rule() LeaseRule {
	if h == nil {
		return LeaseRule{}
	}
	return h.rule
}

// handle is the C handle for one call (NULL when nil or closed; librate answers
// RATE_E_NULL). Every caller follows its C call with runtime.KeepAlive(h).
func (h *LeaseHolder) handle() *C.rate_lease_holder {
	if h == nil {
		return nil
	}
	ptr := h.ptr
	maybeGC()
	return ptr
}

// Allow reports whether one unit is admitted now, from the share (or, without a lease,
// as the state says). It returns false for a nil or closed holder.
func (h *LeaseHolder) Allow() bool {
	status := C.librate_go_lease_allow(address(unsafe.Pointer(h.handle())), 1)
	runtime.KeepAlive(h)
	return status == C.RATE_OK
}

// AllowN reports whether n units are admitted at time t, and takes them if so, as
// Limiter.AllowN. It returns false for a negative n, an n above the global rule's burst,
// and a nil or closed holder.
func (h *LeaseHolder) AllowN(t time.Time, n int) bool {
	if n < 0 {
		return false
	}
	status := C.rate_lease_acquire_at(h.handle(), C.uint64_t(n), C.uint64_t(onTimeline(t)), nil)
	runtime.KeepAlive(h)
	return status == C.RATE_OK
}

// Acquire takes n units now if the share allows, and reports the decision, whose fields
// are the share's: exact for it, conservative for the global rule. Without a lease it is
// the fallback's decision, or a denial whose RetryAfter is the renewal interval (a query,
// n == 0, is admitted). Every call counts towards the demand the next renewal reports.
// Errors: ErrInsufficientCapacity (n above the global rule's burst), ErrInvalidArgument
// (n negative), ErrClosed.
func (h *LeaseHolder) Acquire(n int) (Decision, error) {
	if n < 0 {
		return Decision{}, negative("n", int64(n))
	}
	var out C.rate_decision
	status := C.rate_lease_acquire(h.handle(), C.uint64_t(n), &out)
	runtime.KeepAlive(h)
	return result(status, &out)
}

// AcquireAt is Acquire at now on the caller's timeline: one timeline for every holder of
// a rule and their renewals (RenewalAt, ApplyAt).
func (h *LeaseHolder) AcquireAt(n int, now time.Duration) (Decision, error) {
	if n < 0 || now < 0 {
		return Decision{}, negativeArgument(n, now, 0)
	}
	var out C.rate_decision
	status := C.rate_lease_acquire_at(h.handle(), C.uint64_t(n), C.uint64_t(now), &out)
	runtime.KeepAlive(h)
	return result(status, &out)
}

// State reports where decisions come from now: InFallback for a nil or closed holder.
func (h *LeaseHolder) State() HolderState {
	status := C.rate_lease_state(h.handle())
	runtime.KeepAlive(h)
	return stateOf(status)
}

// StateAt is State at now on the caller's timeline; a negative now is its origin.
func (h *LeaseHolder) StateAt(now time.Duration) HolderState {
	status := C.rate_lease_state_at(h.handle(), C.uint64_t(max(now, 0)))
	runtime.KeepAlive(h)
	return stateOf(status)
}

// stateOf is a RATE_LEASE_* state, or InFallback for an error (a closed handle).
func stateOf(status C.int32_t) HolderState {
	if status < 0 {
		return InFallback
	}
	return HolderState(status)
}

// Close frees the holder. It does not hand its share back: send Release's renewal first,
// or the share returns to the rule when its lease ends. A host's holder gives up renewing
// (StepDown) instead. It is idempotent and always returns nil; afterwards every call
// returns ErrClosed. It must not run concurrently with other calls on h. A LeaseHolder
// dropped without Close is freed (a host's stepping down) when the garbage collector
// finds it unreachable.
func (h *LeaseHolder) Close() error {
	if h != nil {
		release(&h.ptr, h.cleanup, dropLeaseHolder)
	}
	return nil
}
