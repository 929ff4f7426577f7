package librate

/*
#include "rate.h"

// As in rate.go: librate keeps no pointer past a call (keys and names included) and never
// calls back into Go.
#cgo noescape rate_keyed_lease_holder_new
#cgo nocallback rate_keyed_lease_holder_new
#cgo noescape rate_keyed_lease_holder_free
#cgo nocallback rate_keyed_lease_holder_free
#cgo noescape rate_keyed_lease_acquire
#cgo nocallback rate_keyed_lease_acquire
#cgo noescape rate_keyed_lease_acquire_at
#cgo nocallback rate_keyed_lease_acquire_at
#cgo noescape rate_keyed_lease_in_redis
#cgo nocallback rate_keyed_lease_in_redis
#cgo noescape rate_keyed_lease_in_redis_at
#cgo nocallback rate_keyed_lease_in_redis_at
#cgo noescape rate_keyed_lease_decision
#cgo nocallback rate_keyed_lease_decision
#cgo noescape rate_keyed_lease_leased
#cgo nocallback rate_keyed_lease_leased
#cgo noescape rate_keyed_lease_script
#cgo nocallback rate_keyed_lease_script
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// KeyedLeaseHolder holds leases on the keys of a keyed rule that are hot at it
// (docs/leases.md, keys): every key is a LeaseRule of its own, in its own Redis hash (a
// prefix and the key). A key leased here is decided in process, with atomics alone; every
// other request is the caller's to decide in Redis, one lease script call against what
// the key's leases leave. It never talks to Redis: a client sends InRedis's call for a
// request not decided here and reads the answer with Decision, and once every renewal
// interval sends a round of renewals (Renewals) and applies the answers; package
// github.com/librate/librate/bindings/go/redis does so (KeyedLeasedLimiter).
//
// Its decisions are safe for concurrent use and never block; its rounds (Renewals,
// ReleaseAll, KeyedRound.Apply) take turns under a lock of their own. A nil or closed
// KeyedLeaseHolder answers every call with ErrClosed (IsLeased with false).
type KeyedLeaseHolder struct {
	ptr      *C.rate_keyed_lease_holder
	rule     LeaseRule
	hot      uint64
	capacity int
	// renewing serializes the rounds and their answers, which librate takes one caller
	// at a time.
	renewing sync.Mutex
	cleanup  runtime.Cleanup
}

// KeyedLeaseFields is the number of integers in the lease script's answer to a request
// decided in Redis: allowed, limit, remaining, retry_after_us, reset_after_us (what
// Decision takes).
const KeyedLeaseFields = C.RATE_KEYED_LEASE_FIELDS

// NewKeyedLeaseHolder creates a holder of rule for every key, which leases a key once
// its requests ask for hot units between two rounds of renewals (0: every key asked
// for), at most capacity keys at once, under options.Name (a random name for ""), unique
// among the holders of the rule's keys. For a rule or name librate rejects, a capacity
// below 1, or an options.Fallback (the holder decides nothing without Redis; its client
// does, as librateredis.KeyedLeaseOptions.Fallback), the error is a *ConfigError naming
// it, which matches ErrInvalidConfig; a sliding window or log is ErrUnsupported.
func NewKeyedLeaseHolder(rule LeaseRule, hot uint64, capacity int, options LeaseOptions) (*KeyedLeaseHolder, error) {
	if capacity < 1 {
		return nil, &ConfigError{Reason: fmt.Sprintf("capacity %d: must be at least 1", capacity)}
	}
	if options.Fallback != nil {
		return nil, &ConfigError{Reason: "LeaseOptions.Fallback: a keyed holder decides nothing without Redis; its client decides by a fallback"}
	}
	cRule, _, err := rule.toC(nil)
	if err != nil {
		return nil, err
	}
	var name *C.uint8_t
	if options.Name != "" {
		name = (*C.uint8_t)(unsafe.Pointer(unsafe.StringData(options.Name)))
	}
	nameLen := C.size_t(len(options.Name))
	var ptr *C.rate_keyed_lease_holder
	status := C.rate_keyed_lease_holder_new(&cRule, C.uint64_t(hot), C.uint64_t(capacity), name, nameLen, &ptr)
	if status != C.RATE_OK {
		// The capacity is checked above: librate explains the rest as for one rule.
		err := rejected(status, func(reason *C.char, length C.size_t) C.int32_t {
			return C.rate_lease_explain(&cRule, nil, name, nameLen, reason, length)
		})
		runtime.KeepAlive(options.Name)
		return nil, err
	}
	runtime.KeepAlive(options.Name)
	if rule.RenewEvery == 0 {
		rule.RenewEvery = rule.Lease / 4
	}
	h := &KeyedLeaseHolder{ptr: ptr, rule: rule, hot: hot, capacity: capacity}
	// As for Limiter: the cleanup holds the C pointer, never h.
	h.cleanup = runtime.AddCleanup(h, freeKeyedLeaseHolder, ptr)
	return h, nil
}

func freeKeyedLeaseHolder(ptr *C.rate_keyed_lease_holder) {
	C.rate_keyed_lease_holder_free(ptr)
	noteFreed()
}

// Rule returns every key's rule, RenewEvery filled in.
func (h *KeyedLeaseHolder) Rule() LeaseRule {
	if h == nil {
		return LeaseRule{}
	}
	return h.rule
}

// Hot returns the units a key asks for between two rounds to be leased.
func (h *KeyedLeaseHolder) Hot() uint64 {
	if h == nil {
		return 0
	}
	return h.hot
}

// Capacity returns the most keys leased at once.
func (h *KeyedLeaseHolder) Capacity() int {
	if h == nil {
		return 0
	}
	return h.capacity
}

// handle is the C handle for one call (NULL when nil or closed; librate answers
// RATE_E_NULL). Every caller follows its C call with runtime.KeepAlive(h).
func (h *KeyedLeaseHolder) handle() *C.rate_keyed_lease_holder {
	if h == nil {
		return nil
	}
	ptr := h.ptr
	maybeGC()
	return ptr
}

// Acquire decides n units for key now if the holder leases key and holds a share for it:
// decided is true, and d is the share's decision (exact for the share, conservative for
// the key's rule). Otherwise decided is false: the request counts towards making key hot
// here, and the caller decides it in Redis (InRedis, then Decision). Errors:
// ErrInsufficientCapacity (n above the rule's burst, a window's limit, wherever it would
// be decided), ErrInvalidArgument (n negative), ErrClosed.
func (h *KeyedLeaseHolder) Acquire(key string, n int) (d Decision, decided bool, err error) {
	if n < 0 {
		return Decision{}, false, negative("n", int64(n))
	}
	k := stringKey(key)
	var out C.rate_decision
	status := C.rate_keyed_lease_acquire(h.handle(), k.ptr, k.len, C.uint64_t(n), &out)
	runtime.KeepAlive(h)
	return keyedOutcome(status, n, &out)
}

// AcquireAt is Acquire at now on the caller's timeline: one timeline for the holder's
// decisions, its rounds (RenewalsAt, KeyedRound.ApplyAt) and its requests in Redis
// (InRedisAt).
func (h *KeyedLeaseHolder) AcquireAt(key string, n int, now time.Duration) (d Decision, decided bool, err error) {
	if n < 0 || now < 0 {
		return Decision{}, false, negativeArgument(n, now, 0)
	}
	k := stringKey(key)
	var out C.rate_decision
	status := C.rate_keyed_lease_acquire_at(h.handle(), k.ptr, k.len, C.uint64_t(n), C.uint64_t(now), &out)
	runtime.KeepAlive(h)
	return keyedOutcome(status, n, &out)
}

// keyedOutcome reads rate_keyed_lease_acquire's status and decision for n units.
func keyedOutcome(status C.int32_t, n int, out *C.rate_decision) (d Decision, decided bool, err error) {
	switch status {
	case C.RATE_OK, C.RATE_LIMITED:
		return decisionOf(out), true, nil
	case C.RATE_KEYED_LEASE_IN_REDIS:
		return Decision{}, false, nil
	}
	return Decision{}, false, unitsError(status, n)
}

// unitsError is the error of status for a request of n units, naming n when it is above
// the rule's burst.
func unitsError(status C.int32_t, n int) error {
	if status == C.RATE_E_INSUFFICIENT_CAPACITY {
		return detailed(ErrInsufficientCapacity, "%d units, above the rule's burst (a window's limit)", n)
	}
	return statusError(status)
}

// InRedis returns the lease script call that decides n units in Redis, against what the
// key's leases leave, by the server's clock (Args[1] is ""): send its Args with the key's
// Redis key (the client's prefix and the key) as the script's one key, then pass the
// answer to Decision. Errors: ErrInsufficientCapacity (n above the rule's burst, never
// to be sent), ErrInvalidArgument (n negative), ErrClosed.
func (h *KeyedLeaseHolder) InRedis(n int) (Renewal, error) {
	if n < 0 {
		return Renewal{}, negative("n", int64(n))
	}
	return h.inRedis(n, func(ptr *C.rate_keyed_lease_holder, out *C.rate_lease_renewal) C.int32_t {
		return C.rate_keyed_lease_in_redis(ptr, C.uint64_t(n), out)
	})
}

// InRedisAt is InRedis at now on the caller's timeline, which the script decides at.
func (h *KeyedLeaseHolder) InRedisAt(n int, now time.Duration) (Renewal, error) {
	if n < 0 || now < 0 {
		return Renewal{}, negativeArgument(n, now, 0)
	}
	return h.inRedis(n, func(ptr *C.rate_keyed_lease_holder, out *C.rate_lease_renewal) C.int32_t {
		return C.rate_keyed_lease_in_redis_at(ptr, C.uint64_t(n), C.uint64_t(now), out)
	})
}

// inRedis is the call for n units that call writes.
func (h *KeyedLeaseHolder) inRedis(n int, call func(*C.rate_keyed_lease_holder, *C.rate_lease_renewal) C.int32_t) (Renewal, error) {
	var out C.rate_lease_renewal
	status := call(h.handle(), &out)
	runtime.KeepAlive(h)
	if status != C.RATE_OK {
		return Renewal{}, unitsError(status, n)
	}
	return renewalOf(&out), nil
}

// Decision reads the lease script's answer to InRedis's call for n units: its
// KeyedLeaseFields integers in order (allowed, limit, remaining, retry_after_us,
// reset_after_us), the fields of what the key's leases leave. An answer the script never
// gives is ErrReply, naming it.
func (h *KeyedLeaseHolder) Decision(n int, fields [KeyedLeaseFields]int64) (Decision, error) {
	if n < 0 {
		return Decision{}, negative("n", int64(n))
	}
	var cFields [KeyedLeaseFields]C.int64_t
	for i, field := range fields {
		cFields[i] = C.int64_t(field)
	}
	var out C.rate_decision
	status := C.rate_keyed_lease_decision(h.handle(), C.uint64_t(n), &cFields[0], &out)
	runtime.KeepAlive(h)
	if status == C.RATE_E_REPLY {
		return Decision{}, detailed(ErrReply, "the lease script's reply %v to a request of %d units", fields, n)
	}
	return result(status, &out)
}

// IsLeased reports whether the holder leases key now (perhaps without a share yet: its
// first renewal on its way, or Redis said none). It returns false for a nil or closed
// holder.
func (h *KeyedLeaseHolder) IsLeased(key string) bool {
	k := stringKey(key)
	status := C.rate_keyed_lease_leased(h.handle(), k.ptr, k.len)
	runtime.KeepAlive(h)
	return status == 1
}

// Script is the lease script of the rule's algorithm (LeaseHolder.Script's, the same
// bytes for every language), which renews the keys' leases and decides the requests in
// Redis: send it with EVALSHA (loading it after NOSCRIPT), a key's Redis key as its one
// key. It is "" for a nil or closed holder.
func (h *KeyedLeaseHolder) Script() string {
	script := C.rate_keyed_lease_script(h.handle())
	runtime.KeepAlive(h)
	// Static in librate, NULL only for a closed holder.
	return C.GoString(script)
}

// Close frees the holder. It hands nothing back: send ReleaseAll's round first, or each
// share returns to its key's rule when its lease ends. It is idempotent and always
// returns nil; afterwards every call returns ErrClosed. It must not run concurrently with
// other calls on h. A KeyedLeaseHolder dropped without Close is freed when the garbage
// collector finds it unreachable.
func (h *KeyedLeaseHolder) Close() error {
	if h != nil {
		release(&h.ptr, h.cleanup, func(ptr *C.rate_keyed_lease_holder) { C.rate_keyed_lease_holder_free(ptr) })
	}
	return nil
}
