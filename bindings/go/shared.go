package librate

/*
#include <stdlib.h>
#include "rate.h"
*/
import "C"

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// Open opens the limiter whose state lives in the file at path, creating the file (mode
// 0600) if it does not exist: every process that opens the same file with the same
// Config shares one limit, exactly as goroutines sharing one *Limiter do. Put the file on
// a tmpfs such as /dev/shm; any file system works. The *Limiter is an ordinary one, and
// Close unmaps the file and leaves it in place. SetConfig on it changes the rule in the
// file, for every process attached.
//
// A file that exists must hold config's rule: the one it was made with, or the last one
// any process set in it. With the option ReplaceRule, a file holding another rule is
// given config's instead, as SetConfig would change it (the way to roll out a new limit
// by restarting the processes that share the file); see docs/shared.md, changing the
// rule.
//
// A file of another rule, kind, size or layout is refused with an *IncompatibleError
// (errors.Is(err, ErrIncompatible) holds), which says what the file holds, and left
// untouched; what the operating system refuses (a missing directory, a permission) is an
// *os.PathError wrapping the syscall.Errno, so errors.Is(err, fs.ErrNotExist) and the
// like work. With ReplaceRule, a rule the file's state cannot be carried over to
// (another algorithm, a sliding log's rule) is an error matching ErrInvalidConfig, and
// the file keeps its rule.
func Open(path string, config Config, options ...OpenOption) (*Limiter, error) {
	chosen := chosenOptions(options)
	cConfig, err := config.toC()
	if err != nil {
		return nil, err
	}
	cPath := C.CString(path)
	defer C.free(unsafe.Pointer(cPath))
	var ptr *C.rate_limiter
	var status C.int32_t
	var errno error
	if chosen.replaceRule {
		status, errno = C.rate_limiter_open_replacing(cPath, &cConfig, &ptr)
	} else {
		status, errno = C.rate_limiter_open(cPath, &cConfig, &ptr)
	}
	err = openError(path, status, errno, func(reason *C.char, length C.size_t) C.int32_t {
		return C.rate_limiter_explain_config(&cConfig, reason, length)
	})
	if err != nil {
		return nil, err
	}
	return wrapLimiter(ptr, config), nil
}

// OpenOption changes how Open, OpenKeyed and OpenKeyedPolicy open a file: ReplaceRule.
type OpenOption func(*openOptions)

// openOptions is what the OpenOptions given to an opener chose.
type openOptions struct {
	replaceRule bool
}

// chosenOptions is what options choose; a nil option chooses nothing.
func chosenOptions(options []OpenOption) openOptions {
	var chosen openOptions
	for _, option := range options {
		if option != nil {
			option(&chosen)
		}
	}
	return chosen
}

// ReplaceRule makes an opener give the file the opener's rule when it holds another,
// instead of refusing it with ErrIncompatible: the change is made in the file exactly as
// SetConfig (SetRules for a keyed policy) makes it, now, on the real clock, the state
// carried over (GCRA keeps its tokens, capped at the new burst; the windows their counts;
// in a keyed table each key's, a key whose state is fresh starting anew), and every
// process attached decides under the new rule from its next decision. A file that holds
// the opener's rule already, or a new file, is opened as without it. The way to roll out
// a new limit: restart the processes sharing the file with the new rule and this option,
// one by one, and none of them is refused.
//
// Open calls rate_limiter_open_replacing, OpenKeyed rate_keyed_open_replacing,
// OpenKeyedPolicy rate_keyed_policy_open_replacing. The file must still be of the
// opener's kind and capacity (a keyed policy's of as many rules, of the same scopes);
// another is refused with an *IncompatibleError as without the option.
func ReplaceRule() OpenOption {
	return func(options *openOptions) { options.replaceRule = true }
}

// IncompatibleError is the error of Open, OpenKeyed, OpenKeyedPolicy and OpenLeaseHolder
// for a file that is not a librate table of the opener's kind, rule, capacity and size
// (left untouched).
// It matches ErrIncompatible: errors.Is(err, ErrIncompatible) holds.
type IncompatibleError struct {
	// Path is the file the opener was given.
	Path string
	// Description is what the file holds, as DescribeFile words it: a sentence that
	// starts with the path, "/dev/shm/api: a librate limiter holding GCRA, limit 10,
	// period_ns 1000000000, burst 10".
	Description string
}

// Error is "librate: incompatible shared file: " and the description.
func (e *IncompatibleError) Error() string {
	return "librate: incompatible shared file: " + e.Description
}

// Unwrap returns ErrIncompatible.
func (e *IncompatibleError) Unwrap() error { return ErrIncompatible }

// incompatible is the error of an open of path refused with RATE_E_INCOMPATIBLE: an
// *IncompatibleError saying what the file holds, or ErrIncompatible itself should the
// file be gone or unreadable by now.
func incompatible(path string) error {
	description, err := DescribeFile(path)
	if err != nil {
		return ErrIncompatible
	}
	return &IncompatibleError{Path: path, Description: description}
}

// DescribeFile says what the table file at path holds, in one English sentence that
// starts with the path (rate_describe_file): the kind of table and the rule it holds (a
// limiter's or keyed table's rule in force, and how many times it changed), or why it is
// no table this librate reads, such as "/dev/shm/api: a librate limiter holding GCRA,
// limit 10, period_ns 1000000000, burst 10". It is the Description of the
// *IncompatibleError an open returns. The file is only read, never created or changed. A file that cannot be
// read is an *os.PathError wrapping the syscall.Errno (errors.Is(err, fs.ErrNotExist)
// for a missing one).
func DescribeFile(path string) (string, error) {
	cPath := C.CString(path)
	defer C.free(unsafe.Pointer(cPath))
	// The sentence grows with the path; one that fills the buffer may be cut, so it is
	// asked for again with a buffer twice as large.
	for size := C.RATE_REASON_LEN; ; size *= 2 {
		buffer := (*C.char)(C.malloc(C.size_t(size)))
		status, errno := C.rate_describe_file(cPath, buffer, C.size_t(size))
		text := C.GoString(buffer)
		C.free(unsafe.Pointer(buffer))
		switch {
		case status == C.RATE_E_IO:
			if errno == nil {
				errno = syscall.EIO
			}
			return "", &os.PathError{Op: "describe", Path: path, Err: errno}
		case status != C.RATE_OK:
			return "", statusError(status)
		case len(text) < size-1: // room to spare: the sentence is whole
			return text, nil
		}
	}
}

// OpenKeyed opens the keyed table whose state lives in the file at path, creating the
// file (mode 0600) if it does not exist: every process that opens the same file with
// the same Config and capacity shares one table, and each key's limit holds across the
// processes exactly as across goroutines sharing one *Keyed. The file also holds the
// table's secret hash key, so keep it as private as the traffic it limits. Put it on a
// tmpfs such as /dev/shm; any file system works. The *Keyed is an ordinary one, and
// Close unmaps the file and leaves it in place.
//
// A process killed at any point, even in the middle of inserting a key, leaves the
// table usable by the others: a slot it left claimed is put back once it is found dead.
// A slot that a live process keeps claimed (one stopped mid-insert) is waited on for
// about a second, after which a call that needs it returns ErrTableFull.
//
// A file that exists must hold config's rule (the one it was made with, or the last one
// any process set in it) and capacity. SetConfig on the *Keyed changes the rule in the
// file, for every process attached; with the option ReplaceRule, a file holding another
// rule is given config's instead, as SetConfig would change it (see docs/shared.md,
// changing the rule).
//
// A file of another rule, capacity, size or layout (a limiter's file from Open among
// them) is refused with an *IncompatibleError matching ErrIncompatible, which says what
// the file holds, and left untouched; what the operating system refuses (a missing
// directory, a permission) is an *os.PathError wrapping the syscall.Errno, so
// errors.Is(err, fs.ErrNotExist) and the like work. A config or capacity that NewKeyed
// would reject is the same *ConfigError. With ReplaceRule, a rule the file's state cannot
// be carried over to (another algorithm, a sliding log's rule) is an error matching
// ErrInvalidConfig, and the file keeps its rule.
func OpenKeyed(path string, config Config, capacity int, options ...OpenOption) (*Keyed, error) {
	chosen := chosenOptions(options)
	cConfig, err := config.toC()
	if err != nil {
		return nil, err
	}
	if capacity <= 0 {
		return nil, badCapacity(capacity)
	}
	cPath := C.CString(path)
	defer C.free(unsafe.Pointer(cPath))
	var ptr *C.rate_keyed
	var status C.int32_t
	var errno error
	if chosen.replaceRule {
		status, errno = C.rate_keyed_open_replacing(cPath, &cConfig, C.uint64_t(capacity), &ptr)
	} else {
		status, errno = C.rate_keyed_open(cPath, &cConfig, C.uint64_t(capacity), &ptr)
	}
	err = openError(path, status, errno, func(reason *C.char, length C.size_t) C.int32_t {
		return C.rate_keyed_explain_config(&cConfig, C.uint64_t(capacity), reason, length)
	})
	if err != nil {
		return nil, err
	}
	return wrapKeyed(ptr, config, capacity), nil
}

// openError is the error of an open of path that returned status, errno what cgo
// captured: nil for RATE_OK, what refusedByOS and incompatible say for RATE_E_IO and
// RATE_E_INCOMPATIBLE, and otherwise the refusal explain explains (rejected).
func openError(path string, status C.int32_t, errno error, explain func(reason *C.char, length C.size_t) C.int32_t) error {
	switch status {
	case C.RATE_OK:
		return nil
	case C.RATE_E_IO:
		return refusedByOS(path, errno)
	case C.RATE_E_INCOMPATIBLE:
		return incompatible(path)
	default:
		return rejected(status, explain)
	}
}

// refusedByOS is the error of an open of path that librate reports as RATE_E_IO: an
// *os.PathError wrapping the errno cgo captured (EIO should it capture none).
func refusedByOS(path string, errno error) error {
	if errno == nil {
		errno = syscall.EIO
	}
	return &os.PathError{Op: "open", Path: path, Err: errno}
}

// badCapacity is the *ConfigError of a capacity below 1, as librate words it.
func badCapacity(capacity int) error {
	return &ConfigError{Reason: fmt.Sprintf("capacity %d: must be at least 1", capacity)}
}
