package librate

/*
#include "rate.h"
#cgo noescape rate_lease_renew
#cgo nocallback rate_lease_renew
#cgo noescape rate_lease_renew_at
#cgo nocallback rate_lease_renew_at
#cgo noescape rate_lease_release
#cgo nocallback rate_lease_release
#cgo noescape rate_lease_apply_at
#cgo nocallback rate_lease_apply_at
#cgo noescape rate_lease_last_grant
#cgo nocallback rate_lease_last_grant
#cgo noescape rate_lease_script
#cgo nocallback rate_lease_script
*/
import "C"

import (
	"runtime"
	"time"
	"unsafe"
)

// Renewal is one call of the lease script a holder asks for: send Args as the script's
// arguments (ARGV, in order) with the rule's Redis key, a hash, as its one key, then
// pass the Renewal back to Apply with the answer.
type Renewal struct {
	// SentAt is when the holder asked, on its timeline: librate's clock (Now), or the
	// caller's for RenewalAt, floored to the microsecond the script decides at.
	SentAt time.Duration
	// Args are the script's arguments: op ("renew", "release", or "acquire" for a
	// request decided in Redis, KeyedLeaseHolder.InRedis), now in microseconds ("" for
	// the server's clock), the rule's two numbers (GCRA: its emission interval in ns and
	// its burst; a fixed window: its limit and its period in microseconds), the lease in
	// microseconds, the holder's name ("" for "acquire") and its demand (millionths of
	// the rule's rate; a window's hand-back: its count left unused; "acquire": the units
	// asked for).
	Args [C.RATE_LEASE_ARGS]string
}

// Grant is the lease script's last grant to a holder, with what every holder held then.
type Grant struct {
	// Rate is the share's rate, in millionths of the rule's (0: no share).
	Rate uint64
	// Burst is the share's burst, in units (0: no share).
	Burst uint64
	// Lease is how long the share is held from the script's time.
	Lease time.Duration
	// Epoch is when Redis made the rule's state, in microseconds on the script's
	// timeline: it changes when Redis loses the state.
	Epoch uint64
	// HeldRate and HeldBurst are everything every holder may still be deciding from,
	// this one's included.
	HeldRate, HeldBurst uint64
	// Holders is the number of holders that asked within a lease, this one included.
	Holders uint64
	// Window is a fixed window's number (its start over its period), 0 for GCRA. A
	// window's share is a count: Rate and HeldRate are 0, Burst is the count and
	// HeldBurst the counts granted in the window.
	Window uint64
}

// LeaseFields is the number of integers in the lease script's reply, after its status:
// what Apply takes.
const LeaseFields = C.RATE_LEASE_FIELDS

// Script is the lease script of the holder's rule (GCRA's or the fixed window's),
// librate's own, the same bytes for every language: send it with EVALSHA (loading it
// after NOSCRIPT), the rule's Redis key as its one key (on a Cluster, the rule's slot),
// and a Renewal's Args. It replies {status, rate, burst, lease_us, epoch, held_rate,
// held_burst, holders, window} to a renewal ("granted" or "quiet", then integers: what
// Apply takes) and 1 to a hand-back.
func (h *LeaseHolder) Script() string {
	script := C.rate_lease_script(h.handle())
	runtime.KeepAlive(h)
	// Static in librate, NULL only for a closed holder.
	return C.GoString(script)
}

// Renewal returns the renewal to send now, the script reading the server's clock
// (Args[1] is ""); it reports the demand counted since the last one.
func (h *LeaseHolder) Renewal() (Renewal, error) {
	return h.renewal(func(ptr *C.rate_lease_holder, out *C.rate_lease_renewal) C.int32_t {
		return C.rate_lease_renew(ptr, out)
	})
}

// RenewalAt is Renewal at now on the caller's timeline, which the script decides at
// (simulations, tests; every holder of a rule on one timeline).
func (h *LeaseHolder) RenewalAt(now time.Duration) (Renewal, error) {
	if now < 0 {
		return Renewal{}, negative("now (ns)", int64(now))
	}
	return h.renewal(func(ptr *C.rate_lease_holder, out *C.rate_lease_renewal) C.int32_t {
		return C.rate_lease_renew_at(ptr, C.uint64_t(now), out)
	})
}

// Release stops the holder deciding from its share (from now on it decides by its
// fallback) and returns the call that hands the share back; its answer needs no Apply.
func (h *LeaseHolder) Release() (Renewal, error) {
	return h.renewal(func(ptr *C.rate_lease_holder, out *C.rate_lease_renewal) C.int32_t {
		return C.rate_lease_release(ptr, out)
	})
}

// renewal runs one of the calls that fill a rate_lease_renewal, in turn with the others.
func (h *LeaseHolder) renewal(call func(*C.rate_lease_holder, *C.rate_lease_renewal) C.int32_t) (Renewal, error) {
	if h == nil {
		return Renewal{}, ErrClosed
	}
	var out C.rate_lease_renewal
	h.renewing.Lock()
	status := call(h.handle(), &out)
	h.renewing.Unlock()
	runtime.KeepAlive(h)
	if status != C.RATE_OK {
		return Renewal{}, statusError(status)
	}
	return renewalOf(&out), nil
}

// renewalOf is a call librate wrote.
func renewalOf(out *C.rate_lease_renewal) Renewal {
	r := Renewal{SentAt: durationOf(out.sent_at_ns)}
	for i := range r.Args {
		r.Args[i] = C.GoString(&out.args[i][0])
	}
	return r
}

// Apply applies the lease script's answer to r now: status ("granted" or "quiet") and
// its LeaseFields integers in order (rate, burst, lease_us, epoch, held_rate, held_burst,
// holders, window). It returns where decisions come from afterwards. An answer the script never
// gives is ErrReply, naming it, and nothing of it is applied.
func (h *LeaseHolder) Apply(r Renewal, status string, fields [LeaseFields]uint64) (HolderState, error) {
	return h.apply(r, status, fields, uint64(Now()))
}

// ApplyAt is Apply at now on the caller's timeline. The lease counts from r.SentAt, and
// ends a margin (a thousandth of the lease) before Redis's end of it: only the rates of
// the clocks matter, never their offsets.
func (h *LeaseHolder) ApplyAt(r Renewal, status string, fields [LeaseFields]uint64, now time.Duration) (HolderState, error) {
	if now < 0 {
		return InFallback, negative("now (ns)", int64(now))
	}
	return h.apply(r, status, fields, uint64(now))
}

func (h *LeaseHolder) apply(r Renewal, status string, fields [LeaseFields]uint64, now uint64) (HolderState, error) {
	if h == nil {
		return InFallback, ErrClosed
	}
	if r.SentAt < 0 {
		return InFallback, negative("the renewal's SentAt (ns)", int64(r.SentAt))
	}
	cRenewal := r.toC()
	answer := answerOf(status, fields)
	h.renewing.Lock()
	code := C.rate_lease_apply_at(h.handle(), &cRenewal, answer.status(), answer.statusLen(), &answer.fields[0], C.uint64_t(now))
	h.renewing.Unlock()
	runtime.KeepAlive(h)
	return answer.applied(code)
}

// leaseAnswer is the lease script's answer to a renewal as librate takes it.
type leaseAnswer struct {
	// text is the status and a byte more: an empty status is a pointer, not NULL.
	text   []byte
	fields [LeaseFields]C.uint64_t
	// given are the integers as the caller gave them, for the error naming the answer.
	given [LeaseFields]uint64
}

func answerOf(status string, fields [LeaseFields]uint64) *leaseAnswer {
	a := &leaseAnswer{text: append([]byte(status), 0), given: fields}
	for i, field := range fields {
		a.fields[i] = C.uint64_t(field)
	}
	return a
}

func (a *leaseAnswer) status() *C.uint8_t { return (*C.uint8_t)(unsafe.Pointer(&a.text[0])) }

func (a *leaseAnswer) statusLen() C.size_t { return C.size_t(len(a.text) - 1) }

// applied is the result of applying a: the state afterwards, or ErrReply naming a when
// librate refused it (nothing of it applied).
func (a *leaseAnswer) applied(code C.int32_t) (HolderState, error) {
	switch {
	case code == C.RATE_E_REPLY:
		return InFallback, detailed(ErrReply, "the lease script's reply %q %v", a.text[:len(a.text)-1], a.given)
	case code < 0:
		return InFallback, statusError(code)
	}
	return HolderState(code), nil
}

// toC is r as C takes it: its arguments copied back (each cut to fit with its NUL; only
// a name could be long, and a holder's is at most RATE_LEASE_NAME_MAX bytes).
func (r Renewal) toC() C.rate_lease_renewal {
	out := C.rate_lease_renewal{sent_at_ns: C.uint64_t(r.SentAt)}
	for i, arg := range r.Args {
		for j := 0; j < len(arg) && j < C.RATE_LEASE_ARG_BYTES-1; j++ {
			out.args[i][j] = C.char(arg[j])
		}
	}
	return out
}

// LastGrant returns the holder's last grant: the zero Grant before the first.
func (h *LeaseHolder) LastGrant() (Grant, error) {
	var out C.rate_lease_grant
	status := C.rate_lease_last_grant(h.handle(), &out)
	runtime.KeepAlive(h)
	if status != C.RATE_OK {
		return Grant{}, statusError(status)
	}
	return Grant{
		Rate:      uint64(out.rate),
		Burst:     uint64(out.burst),
		Lease:     time.Duration(out.lease_us) * time.Microsecond,
		Epoch:     uint64(out.epoch),
		HeldRate:  uint64(out.held_rate),
		HeldBurst: uint64(out.held_burst),
		Holders:   uint64(out.holders),
		Window:    uint64(out.window),
	}, nil
}
