package librate

/*
#include "rate.h"

// librate_go_keyed_reserve reserves on librate's clock in a single cgo crossing, and
// writes the time it read to *now, as librate_go_reserve in rate.go.
static int32_t librate_go_keyed_reserve(rate_keyed *keyed, const uint8_t *key, size_t key_len,
                                        uint64_t n, uint64_t max_wait_ns, rate_decision *out,
                                        uint64_t *now, rate_reservation *held) {
	*now = rate_now_ns();
	return rate_keyed_reserve_cancellable_at(keyed, key, key_len, n, *now, max_wait_ns, out, held);
}

// librate_go_keyed_allow is rate_keyed_acquire without a decision, with the handle as an
// integer, as librate_go_allow in rate.go.
static int32_t librate_go_keyed_allow(uintptr_t keyed, const uint8_t *key, size_t key_len,
                                      uint64_t n) {
	return rate_keyed_acquire((rate_keyed *)keyed, key, key_len, n, NULL);
}

// As in rate.go: librate keeps no pointer past a call (keys included) and never calls
// back into Go, so keys and decisions on the Go stack stay there.
#cgo noescape rate_keyed_new
#cgo nocallback rate_keyed_new
#cgo noescape rate_keyed_free
#cgo nocallback rate_keyed_free
#cgo noescape rate_keyed_acquire
#cgo nocallback rate_keyed_acquire
#cgo noescape rate_keyed_acquire_at
#cgo nocallback rate_keyed_acquire_at
#cgo noescape rate_keyed_reserve_at
#cgo nocallback rate_keyed_reserve_at
#cgo noescape rate_keyed_reserve_cancellable_at
#cgo nocallback rate_keyed_reserve_cancellable_at
#cgo noescape rate_keyed_cancel
#cgo nocallback rate_keyed_cancel
#cgo noescape librate_go_keyed_reserve
#cgo nocallback librate_go_keyed_reserve
#cgo noescape librate_go_keyed_allow
#cgo nocallback librate_go_keyed_allow
#cgo noescape rate_keyed_acquire_packed
#cgo nocallback rate_keyed_acquire_packed
#cgo noescape rate_keyed_get_config
#cgo nocallback rate_keyed_get_config
*/
import "C"

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Keyed enforces one Config per key, for any number of keys up to a fixed capacity,
// in one table allocated up front. A key is any byte string, the empty one included; a
// string key and a []byte key with the same bytes are the same key. Keys are told
// apart in full or by a seeded fingerprint of 64 bits or more (docs/keyed.md, fingerprints), so
// keys an attacker chooses cannot be made to collide. A key whose state equals a fresh one is
// reclaimed silently; once the table is full of live keys, a new key gets ErrTableFull.
//
// Methods are safe for concurrent use and take string keys without copying them. A nil
// or closed Keyed answers every call with ErrClosed (and Allow with false). NewKeyed
// makes a table private to this process; OpenKeyed one in a file that every process
// opening it shares.
type Keyed struct {
	ptr *C.rate_keyed
	// config is the per-key rule last known in force: the one given to NewKeyed or
	// OpenKeyed, to the last SetConfig, or last read by Config, which returns it once k
	// is closed.
	config   atomic.Pointer[Config]
	capacity int
	cleanup  runtime.Cleanup
}

// NewKeyed creates a keyed limiter that holds at least capacity live keys. For a config
// librate rejects, a capacity of 0 or less, or a table that cannot be allocated, the
// error is a *ConfigError naming the field and its bound, which matches ErrInvalidConfig.
func NewKeyed(config Config, capacity int) (*Keyed, error) {
	cConfig, err := config.toC()
	if err != nil {
		return nil, err
	}
	if capacity <= 0 {
		return nil, badCapacity(capacity)
	}
	var ptr *C.rate_keyed
	if status := C.rate_keyed_new(&cConfig, C.uint64_t(capacity), &ptr); status != C.RATE_OK {
		return nil, rejected(status, func(reason *C.char, length C.size_t) C.int32_t {
			return C.rate_keyed_explain_config(&cConfig, C.uint64_t(capacity), reason, length)
		})
	}
	return wrapKeyed(ptr, config, capacity), nil
}

func wrapKeyed(ptr *C.rate_keyed, config Config, capacity int) *Keyed {
	k := &Keyed{ptr: ptr, capacity: capacity}
	k.config.Store(&config)
	// As for Limiter: the cleanup holds the C pointer, never k.
	k.cleanup = runtime.AddCleanup(k, freeKeyed, ptr)
	return k
}

func freeKeyed(ptr *C.rate_keyed) {
	C.rate_keyed_free(ptr)
	noteFreed()
}

// Config returns the per-key configuration in force: the one the table was created
// with, or the last SetConfig gave. For a table from OpenKeyed, the file's rule in force,
// which SetConfig in any process attached, or an opener's ReplaceRule, may have changed.
// A closed Keyed returns the last one it knew; so does one whose file holds a period no
// time.Duration holds.
func (k *Keyed) Config() Config {
	if k == nil {
		return Config{}
	}
	var held C.rate_config
	status := C.rate_keyed_get_config(k.handle(), &held)
	runtime.KeepAlive(k)
	return inForce(status, held, &k.config)
}

// Capacity returns the number of live keys the table was sized for.
func (k *Keyed) Capacity() int {
	if k == nil {
		return 0
	}
	return k.capacity
}

// handle is the C handle for one call (NULL when nil or closed; librate answers
// RATE_E_NULL). Every caller follows its C call with runtime.KeepAlive(k).
func (k *Keyed) handle() *C.rate_keyed {
	if k == nil {
		return nil
	}
	ptr := k.ptr
	maybeGC() // as in Limiter.handle
	return ptr
}

// A key as C sees it: a pointer and a length.
type cKey struct {
	ptr *C.uint8_t
	len C.size_t
}

// stringKey passes a string's bytes to C without copying. librate reads them only
// during the call and keeps no pointer, and bytes hold no Go pointers,
// so this follows cgo's pointer-passing rules. An empty key is passed as NULL, which
// librate accepts with length 0.
func stringKey(key string) cKey {
	if len(key) == 0 {
		return cKey{}
	}
	return cKey{(*C.uint8_t)(unsafe.Pointer(unsafe.StringData(key))), C.size_t(len(key))}
}

// bytesKey is stringKey for a []byte key.
func bytesKey(key []byte) cKey {
	if len(key) == 0 {
		return cKey{}
	}
	return cKey{(*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(key))), C.size_t(len(key))}
}

func (k *Keyed) allowN(key cKey, n int) bool {
	if n < 0 {
		return false
	}
	status := C.librate_go_keyed_allow(address(unsafe.Pointer(k.handle())), key.ptr, key.len, C.uint64_t(n))
	runtime.KeepAlive(k)
	return status == C.RATE_OK
}

func (k *Keyed) acquire(key cKey, n int) (Decision, error) {
	if n < 0 {
		return Decision{}, negative("n", int64(n))
	}
	var out C.rate_decision
	status := C.rate_keyed_acquire(k.handle(), key.ptr, key.len, C.uint64_t(n), &out)
	runtime.KeepAlive(k)
	return result(status, &out)
}

func (k *Keyed) acquireAt(key cKey, n int, now time.Duration) (Decision, error) {
	if n < 0 || now < 0 {
		return Decision{}, negativeArgument(n, now, 0)
	}
	var out C.rate_decision
	status := C.rate_keyed_acquire_at(k.handle(), key.ptr, key.len, C.uint64_t(n), C.uint64_t(now), &out)
	runtime.KeepAlive(k)
	return result(status, &out)
}

// reserve is ReserveWithin for key as a Reservation, as Limiter.reserveNow.
func (k *Keyed) reserve(key cKey, n int, maxWait time.Duration) *Reservation {
	if n < 0 || maxWait < 0 {
		return refused(negativeArgument(n, 0, maxWait))
	}
	var out C.rate_decision
	var now C.uint64_t
	r := &Reservation{}
	status := C.librate_go_keyed_reserve(k.handle(), key.ptr, key.len, C.uint64_t(n), C.uint64_t(maxWait), &out, &now, &r.held)
	runtime.KeepAlive(k)
	decision, err := result(status, &out)
	return r.decided(decision, uint64(now), err, k.cancel)
}

// reserveN is ReserveN for key.
func (k *Keyed) reserveN(key cKey, t time.Time, n int) *Reservation {
	if n < 0 {
		return refused(negative("n", int64(n)))
	}
	now := onTimeline(t)
	var out C.rate_decision
	r := &Reservation{}
	status := C.rate_keyed_reserve_cancellable_at(k.handle(), key.ptr, key.len, C.uint64_t(n), C.uint64_t(now), unbounded, &out, &r.held)
	runtime.KeepAlive(k)
	decision, err := result(status, &out)
	return r.decided(decision, now, err, k.cancel)
}

// cancel gives back a reservation of this table's (Reservation.CancelAt).
func (k *Keyed) cancel(held *C.rate_reservation) {
	C.rate_keyed_cancel(k.handle(), held)
	runtime.KeepAlive(k)
}

// allowAt is AllowN for key.
func (k *Keyed) allowAt(key cKey, t time.Time, n int) bool {
	if n < 0 {
		return false
	}
	status := C.rate_keyed_acquire_at(k.handle(), key.ptr, key.len, C.uint64_t(n), C.uint64_t(onTimeline(t)), nil)
	runtime.KeepAlive(k)
	return status == C.RATE_OK
}

func (k *Keyed) reserveAt(key cKey, n int, now, maxWait time.Duration) (Decision, error) {
	if n < 0 || now < 0 || maxWait < 0 {
		return Decision{}, negativeArgument(n, now, maxWait)
	}
	var out C.rate_decision
	status := C.rate_keyed_reserve_at(k.handle(), key.ptr, key.len, C.uint64_t(n), C.uint64_t(now), C.uint64_t(maxWait), &out)
	runtime.KeepAlive(k)
	return result(status, &out)
}

func (k *Keyed) wait(ctx context.Context, key cKey, n int) error {
	reserve := func(n int, maxWait time.Duration) *Reservation { return k.reserve(key, n, maxWait) }
	if k.Config().Algorithm != GCRA {
		reserve = nil
	}
	return wait(ctx, n, reserve, func(n int) (Decision, error) { return k.acquire(key, n) })
}

// Allow reports whether one unit is admitted now for key, on librate's fastest path, as
// Limiter.Allow.
func (k *Keyed) Allow(key string) bool { return k.allowN(stringKey(key), 1) }

// AllowMany reports, for each key in turn, whether n units are admitted now, as
// AllowN(key, time.Now(), n) would key after key (a key given twice is decided twice),
// appending one bool per key to dst and returning the extended slice. A new key refused
// because the table is full of live keys gets false, as from AllowN.
//
// It crosses into C once for all the keys, so per key it costs a fraction of an Allow
// call, whose largest part is cgo's crossing; librate then hashes the keys and fetches
// their slots 16 at a time, and reads the clock once per 16. It allocates nothing once
// its pooled scratch buffers have grown to the batch size.
//
// The error is ErrInsufficientCapacity for an n above the limit, ErrClosed for a nil or
// closed Keyed, or an error for a negative n; on an error no key is decided and dst is
// returned as it was.
func (k *Keyed) AllowMany(dst []bool, keys []string, n int) ([]bool, error) {
	if n < 0 {
		return dst, negative("n", int64(n))
	}
	scratch := batchScratches.Get().(*batchScratch)
	defer batchScratches.Put(scratch)
	packed, lens := scratch.packed[:0], scratch.lens[:0]
	for _, key := range keys {
		packed = append(packed, key...)
		lens = append(lens, C.size_t(len(key)))
	}
	statuses := scratch.statuses
	if cap(statuses) < len(keys) {
		statuses = make([]C.int32_t, len(keys))
	}
	statuses = statuses[:len(keys)]
	scratch.packed, scratch.lens, scratch.statuses = packed, lens, statuses
	// Go memory holding no Go pointers, which librate reads (and writes, the statuses)
	// only during the call: cgo's pointer rules allow passing it.
	// (SliceData of an empty slice may be nil, which librate accepts with no elements.)
	status := C.rate_keyed_acquire_packed(k.handle(), (*C.uint8_t)(unsafe.SliceData(packed)),
		unsafe.SliceData(lens), C.size_t(len(keys)), C.uint64_t(n), unsafe.SliceData(statuses))
	runtime.KeepAlive(k)
	if status != C.RATE_OK {
		return dst, statusError(status)
	}
	for _, decided := range statuses {
		dst = append(dst, decided == C.RATE_OK)
	}
	return dst, nil
}

// batchScratch holds AllowMany's buffers between calls.
type batchScratch struct {
	packed   []byte
	lens     []C.size_t
	statuses []C.int32_t
}

var batchScratches = sync.Pool{New: func() any { return new(batchScratch) }}

// AllowN reports whether n units are admitted for key at time t, and takes them if so,
// as Limiter.AllowN. It returns false for a negative n, an n above the burst, a full
// table, and a nil or closed Keyed; use Acquire to tell those apart from a denial.
func (k *Keyed) AllowN(key string, t time.Time, n int) bool {
	return k.allowAt(stringKey(key), t, n)
}

// AllowNow is AllowN now, on librate's fastest path.
//
// Deprecated: use AllowN(key, time.Now(), n); AllowNow was AllowN's shape before 0.2
// and goes in the next release.
func (k *Keyed) AllowNow(key string, n int) bool { return k.allowN(stringKey(key), n) }

// Acquire takes n units now for key if its limit allows, as Limiter.Acquire; a new key
// in a table full of live keys gets ErrTableFull. n == 0 is a query and never inserts
// the key.
func (k *Keyed) Acquire(key string, n int) (Decision, error) {
	return k.acquire(stringKey(key), n)
}

// AcquireAt is Acquire at time now on the caller's timeline (one timeline per Keyed).
func (k *Keyed) AcquireAt(key string, n int, now time.Duration) (Decision, error) {
	return k.acquireAt(stringKey(key), n, now)
}

// Reserve is ReserveN(key, time.Now(), 1), with the time read on librate's clock.
func (k *Keyed) Reserve(key string) *Reservation {
	return k.reserve(stringKey(key), 1, Never)
}

// ReserveN is Limiter.ReserveN for key (GCRA only: a window algorithm's Reservation is
// not OK, with ErrUnsupported).
func (k *Keyed) ReserveN(key string, t time.Time, n int) *Reservation {
	return k.reserveN(stringKey(key), t, n)
}

// ReserveWithin is Limiter.ReserveWithin for key.
func (k *Keyed) ReserveWithin(key string, n int, maxWait time.Duration) (Decision, error) {
	r := k.reserve(stringKey(key), n, maxWait)
	return r.decision, r.err
}

// ReserveAt is ReserveWithin at time now on the caller's timeline.
func (k *Keyed) ReserveAt(key string, n int, now, maxWait time.Duration) (Decision, error) {
	return k.reserveAt(stringKey(key), n, now, maxWait)
}

// Wait is WaitN(ctx, key, 1).
func (k *Keyed) Wait(ctx context.Context, key string) error {
	return k.wait(ctx, stringKey(key), 1)
}

// WaitN is Limiter.WaitN for key.
func (k *Keyed) WaitN(ctx context.Context, key string, n int) error {
	return k.wait(ctx, stringKey(key), n)
}

// AllowBytes is Allow with a []byte key.
func (k *Keyed) AllowBytes(key []byte) bool { return k.allowN(bytesKey(key), 1) }

// AllowNBytes is AllowN with a []byte key.
func (k *Keyed) AllowNBytes(key []byte, t time.Time, n int) bool {
	return k.allowAt(bytesKey(key), t, n)
}

// AcquireBytes is Acquire with a []byte key.
func (k *Keyed) AcquireBytes(key []byte, n int) (Decision, error) {
	return k.acquire(bytesKey(key), n)
}

// AcquireAtBytes is AcquireAt with a []byte key.
func (k *Keyed) AcquireAtBytes(key []byte, n int, now time.Duration) (Decision, error) {
	return k.acquireAt(bytesKey(key), n, now)
}

// ReserveNBytes is ReserveN with a []byte key.
func (k *Keyed) ReserveNBytes(key []byte, t time.Time, n int) *Reservation {
	return k.reserveN(bytesKey(key), t, n)
}

// ReserveWithinBytes is ReserveWithin with a []byte key.
func (k *Keyed) ReserveWithinBytes(key []byte, n int, maxWait time.Duration) (Decision, error) {
	r := k.reserve(bytesKey(key), n, maxWait)
	return r.decision, r.err
}

// ReserveAtBytes is ReserveAt with a []byte key.
func (k *Keyed) ReserveAtBytes(key []byte, n int, now, maxWait time.Duration) (Decision, error) {
	return k.reserveAt(bytesKey(key), n, now, maxWait)
}

// WaitNBytes is WaitN with a []byte key. The key must not change until WaitNBytes
// returns.
func (k *Keyed) WaitNBytes(ctx context.Context, key []byte, n int) error {
	return k.wait(ctx, bytesKey(key), n)
}

// Close frees the table (for one from OpenKeyed: unmaps the file and leaves it in
// place). It is idempotent and always returns nil; afterwards every call returns ErrClosed. It must not run concurrently with other calls on k. A Keyed
// dropped without Close is freed when the garbage collector finds it unreachable.
func (k *Keyed) Close() error {
	if k != nil {
		release(&k.ptr, k.cleanup, func(ptr *C.rate_keyed) { C.rate_keyed_free(ptr) })
	}
	return nil
}
