package librate

/*
#include "rate.h"
#cgo noescape rate_status_str
#cgo nocallback rate_status_str
*/
import "C"

import (
	"fmt"
	"math"
	"time"
)

// Never is the Duration librate reports for "not within any representable time": C's
// UINT64_MAX nanoseconds, saturated to the largest time.Duration (about 292 years).
const Never = time.Duration(math.MaxInt64)

// Decision is the outcome of an acquire, a reserve or a query (docs/decision.md, the decision).
// Durations count from the decision's "now" and saturate at Never.
type Decision struct {
	// Allowed reports whether the units were admitted.
	Allowed bool
	// Limit is the most units this limiter can ever admit at once (GCRA: the burst;
	// windows: the limit).
	Limit uint64
	// Remaining is how many units could be admitted right after this decision.
	Remaining uint64
	// RetryAfter is 0 when admitted; otherwise the shortest wait after which the same
	// request, with no other traffic, would be admitted.
	RetryAfter time.Duration
	// ResetAfter is the shortest wait after which, with no other traffic, Remaining
	// would equal Limit.
	ResetAfter time.Duration
	// Wait is, for an admitted reserve, how long the caller must wait before acting;
	// otherwise 0.
	Wait time.Duration
}

// decisionOf converts a decision written by C.
func decisionOf(out *C.rate_decision) Decision {
	return Decision{
		Allowed:    out.allowed != 0,
		Limit:      uint64(out.limit),
		Remaining:  uint64(out.remaining),
		RetryAfter: durationOf(out.retry_after_ns),
		ResetAfter: durationOf(out.reset_after_ns),
		Wait:       durationOf(out.wait_ns),
	}
}

// durationOf converts C nanoseconds, saturating at Never.
func durationOf(ns C.uint64_t) time.Duration {
	if ns > math.MaxInt64 {
		return Never
	}
	return time.Duration(ns)
}

// result turns a C status and the decision it wrote into the Go result: RATE_OK and
// RATE_LIMITED carry a decision, anything else is an error (and C left `out` untouched).
func result(status C.int32_t, out *C.rate_decision) (Decision, error) {
	if status != C.RATE_OK && status != C.RATE_LIMITED {
		return Decision{}, statusError(status)
	}
	return decisionOf(out), nil
}

// Error is a librate status code. Compare with errors.Is against the Err* values; the
// codes are librate's stable C status numbers (rate.h), so they can be logged and
// matched by number.
type Error struct {
	// Code is the status number: one of rate.h's RATE_E_* values (below 0), or -1000
	// for a negative count, time or duration, which never reaches C.
	Code int32
}

// codeInvalidArgument is the one Go-side code: a negative count, time or duration that
// never reaches C (whose parameters are unsigned). It lies outside the C codes' range.
const codeInvalidArgument int32 = -1000

// Error is "librate: " and the code's text: librate's own for C codes.
func (e Error) Error() string {
	return "librate: " + e.text()
}

// text describes the code without the "librate: " prefix, which a message that wraps
// an Error (see detailed) gives once for both.
func (e Error) text() string {
	switch e.Code {
	case codeInvalidArgument:
		return "invalid argument"
	case C.RATE_E_NULL:
		// The binding passes C no NULL but a nil or closed handle's.
		return "closed or nil handle (status -1)"
	}
	return fmt.Sprintf("%s (status %d)", C.GoString(C.rate_status_str(C.int32_t(e.Code))), e.Code)
}

// The errors librate returns, for errors.Is. They are boxed once here, so returning one
// does not allocate.
var (
	// ErrClosed: the handle is closed (or nil). Its code is C's RATE_E_NULL: the only
	// NULL this package passes C is a closed handle's.
	ErrClosed error = Error{Code: C.RATE_E_NULL}
	// ErrNull is ErrClosed's old name.
	//
	// Deprecated: use ErrClosed; ErrNull goes in the next release.
	ErrNull = ErrClosed
	// ErrInvalidConfig: zero or negative limit, period or capacity, an unknown
	// algorithm, more than one unit per nanosecond, or a product that overflows
	// (RATE_E_INVALID_CONFIG). New and NewKeyed return it wrapped in a *ConfigError
	// that says which field and which bound.
	ErrInvalidConfig error = Error{Code: C.RATE_E_INVALID_CONFIG}
	// ErrInsufficientCapacity: the cost exceeds the limiter's burst (a window's
	// limit), so no amount of waiting admits it; this is an error, not a denial
	// (RATE_E_INSUFFICIENT_CAPACITY).
	ErrInsufficientCapacity error = Error{Code: C.RATE_E_INSUFFICIENT_CAPACITY}
	// ErrTableFull: a Keyed table is full of live keys and the key is new; nothing was
	// admitted. Fail open or closed as suits the caller (RATE_E_TABLE_FULL).
	ErrTableFull error = Error{Code: C.RATE_E_TABLE_FULL}
	// ErrUnsupported: the operation does not exist for this limiter: a reserve on a
	// window algorithm (RATE_E_UNSUPPORTED).
	ErrUnsupported error = Error{Code: C.RATE_E_UNSUPPORTED}
	// ErrInternal: a bug inside librate, caught at the C boundary (RATE_E_INTERNAL).
	ErrInternal error = Error{Code: C.RATE_E_INTERNAL}
	// ErrIncompatible: Open, OpenKeyed or OpenKeyedPolicy found a file that is not a
	// librate table of this kind, rule, capacity and size, and left it untouched
	// (RATE_E_INCOMPATIBLE). They return it wrapped in an *IncompatibleError that says
	// what the file holds (DescribeFile): open it with that rule, or use another path, or
	// replace the file's rule (the option ReplaceRule).
	ErrIncompatible error = Error{Code: C.RATE_E_INCOMPATIBLE}
	// ErrReply: an answer the lease script never gives, passed to LeaseHolder.Apply,
	// KeyedRound.Apply or KeyedLeaseHolder.Decision; nothing of it was applied
	// (RATE_E_REPLY). They return it wrapped, naming the answer.
	ErrReply error = Error{Code: C.RATE_E_REPLY}
	// ErrInvalidArgument: a negative count, time or duration, a nil context or limiter,
	// rejected before calling C. Its code, -1000, is the binding's own.
	ErrInvalidArgument error = Error{Code: codeInvalidArgument}
)

// ConfigError is the error of New and NewKeyed for a configuration or capacity librate
// rejects. Reason names the field, its value and the bound it broke, in librate's words
// (rate_limiter_explain_config, rate_keyed_explain_config): "limit 0: must be at least
// 1", "capacity 0: must be at least 1". It wraps ErrInvalidConfig: errors.Is(err, ErrInvalidConfig) holds, and errors.As
// finds its Error (code RATE_E_INVALID_CONFIG).
type ConfigError struct {
	// Reason names the field, its value and the bound it broke.
	Reason string
}

// Error is "librate: invalid configuration: " and the reason.
func (e *ConfigError) Error() string { return "librate: invalid configuration: " + e.Reason }

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// rejected is the error for a failed rate_*_new: for RATE_E_INVALID_CONFIG a
// *ConfigError with the reason explain writes (into a buffer of RATE_REASON_LEN bytes,
// returning its status), otherwise the status's error.
func rejected(status C.int32_t, explain func(reason *C.char, length C.size_t) C.int32_t) error {
	if status == C.RATE_E_INVALID_CONFIG {
		var reason [C.RATE_REASON_LEN]C.char
		if explain(&reason[0], C.size_t(len(reason))) == C.RATE_E_INVALID_CONFIG {
			return &ConfigError{Reason: C.GoString(&reason[0])}
		}
	}
	return statusError(status)
}

// statusError maps a C status to its error value, by number.
func statusError(status C.int32_t) error {
	switch status {
	case C.RATE_E_NULL:
		return ErrClosed
	case C.RATE_E_INVALID_CONFIG:
		return ErrInvalidConfig
	case C.RATE_E_INSUFFICIENT_CAPACITY:
		return ErrInsufficientCapacity
	case C.RATE_E_TABLE_FULL:
		return ErrTableFull
	case C.RATE_E_UNSUPPORTED:
		return ErrUnsupported
	case C.RATE_E_INTERNAL:
		return ErrInternal
	case C.RATE_E_INCOMPATIBLE:
		return ErrIncompatible
	case C.RATE_E_REPLY:
		return ErrReply
	default:
		return Error{Code: int32(status)}
	}
}

// negative reports a negative argument, naming it: "librate: n is -1: invalid argument".
func negative(what string, value int64) error {
	return detailed(ErrInvalidArgument, "%s is %d", what, value)
}

// detailed is one of the Err* values with what went wrong in this call: its message is
// "librate: ", the detail, ": " and the value's text (one prefix for both), and
// errors.Is finds the value.
func detailed(sentinel error, format string, args ...any) error {
	return &detailError{detail: fmt.Sprintf(format, args...), err: sentinel.(Error)}
}

// detailError is detailed's error.
type detailError struct {
	detail string
	err    Error
}

func (e *detailError) Error() string { return "librate: " + e.detail + ": " + e.err.text() }

func (e *detailError) Unwrap() error { return e.err }
