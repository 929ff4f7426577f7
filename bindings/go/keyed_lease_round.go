package librate

/*
#include "rate.h"
#cgo noescape rate_keyed_lease_renewals
#cgo nocallback rate_keyed_lease_renewals
#cgo noescape rate_keyed_lease_renewals_at
#cgo nocallback rate_keyed_lease_renewals_at
#cgo noescape rate_keyed_lease_release_all
#cgo nocallback rate_keyed_lease_release_all
#cgo noescape rate_keyed_lease_round_len
#cgo nocallback rate_keyed_lease_round_len
#cgo noescape rate_keyed_lease_round_key
#cgo nocallback rate_keyed_lease_round_key
#cgo noescape rate_keyed_lease_round_renewal
#cgo nocallback rate_keyed_lease_round_renewal
#cgo noescape rate_keyed_lease_round_apply_at
#cgo nocallback rate_keyed_lease_round_apply_at
#cgo noescape rate_keyed_lease_round_free
#cgo nocallback rate_keyed_lease_round_free
*/
import "C"

import (
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// KeyedRound is a round of a KeyedLeaseHolder's renewals (Renewals, RenewalsAt) or its
// hand-backs (ReleaseAll): one lease script call a key. Send each with the key's Redis
// key (the client's prefix and the key) as the script's one key, and pass a renewal's
// answer to Apply with its index; a hand-back's answer needs no Apply. Then Close it. Its
// answers take turns with its holder's rounds.
type KeyedRound struct {
	// Renewals are the round's calls: for a round of renewals, one for each key leased
	// from now on (the keys hot since the last round among them).
	Renewals []KeyRenewal
	ptr      *C.rate_keyed_lease_round
	// turn is the holder's lock: librate takes a round's answers one caller at a time,
	// in turn with the holder's next round.
	turn    *sync.Mutex
	cleanup runtime.Cleanup
}

// KeyRenewal is one call of a KeyedRound.
type KeyRenewal struct {
	// Key is the key, whose Redis key the call goes to.
	Key string
	// Renewal is the call: its Args are the script's arguments (ARGV).
	Renewal Renewal
}

// Renewals starts a round of renewals, the script reading the server's clock: the keys
// hot since the last round are leased from now on (the hottest first, up to the
// capacity), and a leased key whose units fell below half of hot stops being leased (its
// share not handed back: a decision may still be deciding from it). Call it once every
// renewal interval (Rule().RenewEvery).
func (h *KeyedLeaseHolder) Renewals() (*KeyedRound, error) {
	return h.round(func(ptr *C.rate_keyed_lease_holder, out **C.rate_keyed_lease_round) C.int32_t {
		return C.rate_keyed_lease_renewals(ptr, out)
	})
}

// RenewalsAt is Renewals at now on the caller's timeline, which the script decides at
// (simulations, tests: every holder of the rule's keys on one timeline).
func (h *KeyedLeaseHolder) RenewalsAt(now time.Duration) (*KeyedRound, error) {
	if now < 0 {
		return nil, negative("now (ns)", int64(now))
	}
	return h.round(func(ptr *C.rate_keyed_lease_holder, out **C.rate_keyed_lease_round) C.int32_t {
		return C.rate_keyed_lease_renewals_at(ptr, C.uint64_t(now), out)
	})
}

// ReleaseAll stops leasing every key and returns the round that hands each share back:
// from now on every request is the caller's to decide in Redis. For a holder being
// closed, after its last decision from a share.
func (h *KeyedLeaseHolder) ReleaseAll() (*KeyedRound, error) {
	return h.round(func(ptr *C.rate_keyed_lease_holder, out **C.rate_keyed_lease_round) C.int32_t {
		return C.rate_keyed_lease_release_all(ptr, out)
	})
}

// round makes one of the holder's rounds, in turn with the others and their answers.
func (h *KeyedLeaseHolder) round(start func(*C.rate_keyed_lease_holder, **C.rate_keyed_lease_round) C.int32_t) (*KeyedRound, error) {
	if h == nil {
		return nil, ErrClosed
	}
	var ptr *C.rate_keyed_lease_round
	h.renewing.Lock()
	defer h.renewing.Unlock()
	status := start(h.handle(), &ptr)
	runtime.KeepAlive(h)
	if status != C.RATE_OK {
		return nil, statusError(status)
	}
	r := &KeyedRound{Renewals: make([]KeyRenewal, C.rate_keyed_lease_round_len(ptr)), ptr: ptr, turn: &h.renewing}
	for i := range r.Renewals {
		var key *C.uint8_t
		var keyLen C.size_t
		var out C.rate_lease_renewal
		index := C.size_t(i)
		// Both RATE_OK: i is within the round librate just made.
		C.rate_keyed_lease_round_key(ptr, index, &key, &keyLen)
		C.rate_keyed_lease_round_renewal(ptr, index, &out)
		r.Renewals[i] = KeyRenewal{Key: C.GoStringN((*C.char)(unsafe.Pointer(key)), C.int(keyLen)), Renewal: renewalOf(&out)}
	}
	// As for Limiter: the cleanup holds the C pointer, never r.
	r.cleanup = runtime.AddCleanup(r, freeKeyedRound, ptr)
	return r, nil
}

func freeKeyedRound(ptr *C.rate_keyed_lease_round) {
	C.rate_keyed_lease_round_free(ptr)
	noteFreed()
}

// Apply applies the lease script's answer to call i of the round now, as
// LeaseHolder.Apply does for one holder: status ("granted" or "quiet") and its
// LeaseFields integers. It returns where the key's decisions come from afterwards. An
// answer the script never gives is ErrReply, naming it, and nothing of it is applied;
// an i outside the round is ErrInvalidArgument, a closed round ErrClosed.
func (r *KeyedRound) Apply(i int, status string, fields [LeaseFields]uint64) (HolderState, error) {
	return r.apply(i, status, fields, uint64(Now()))
}

// ApplyAt is Apply at now on the caller's timeline. The lease counts from the renewal's
// SentAt, and ends a margin (a thousandth of the lease) before Redis's end of it.
func (r *KeyedRound) ApplyAt(i int, status string, fields [LeaseFields]uint64, now time.Duration) (HolderState, error) {
	if now < 0 {
		return InFallback, negative("now (ns)", int64(now))
	}
	return r.apply(i, status, fields, uint64(now))
}

func (r *KeyedRound) apply(i int, status string, fields [LeaseFields]uint64, now uint64) (HolderState, error) {
	switch {
	case r == nil:
		return InFallback, ErrClosed
	case i < 0 || i >= len(r.Renewals):
		return InFallback, detailed(ErrInvalidArgument, "call %d of a round of %d", i, len(r.Renewals))
	}
	answer := answerOf(status, fields)
	r.turn.Lock()
	ptr := r.ptr
	maybeGC()
	code := C.rate_keyed_lease_round_apply_at(ptr, C.size_t(i), answer.status(), answer.statusLen(), &answer.fields[0], C.uint64_t(now))
	r.turn.Unlock()
	runtime.KeepAlive(r)
	return answer.applied(code)
}

// Close frees the round; its Renewals stay readable. It is idempotent and always
// returns nil; afterwards Apply returns ErrClosed. It must not run concurrently with
// Apply. A round dropped without Close is freed when the garbage collector finds it
// unreachable.
func (r *KeyedRound) Close() error {
	if r != nil {
		release(&r.ptr, r.cleanup, func(ptr *C.rate_keyed_lease_round) { C.rate_keyed_lease_round_free(ptr) })
	}
	return nil
}
