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
// Close unmaps the file and leaves it in place.
//
// A file made for another configuration, size or layout is refused with
// ErrIncompatible and left untouched; what the operating system refuses (a missing
// directory, a permission) is an *os.PathError wrapping the syscall.Errno, so
// errors.Is(err, fs.ErrNotExist) and the like work.
func Open(path string, config Config) (*Limiter, error) {
	cConfig, err := config.toC()
	if err != nil {
		return nil, err
	}
	cPath := C.CString(path)
	defer C.free(unsafe.Pointer(cPath))
	var ptr *C.rate_limiter
	status, errno := C.rate_limiter_open(cPath, &cConfig, &ptr)
	switch status {
	case C.RATE_OK:
		return wrapLimiter(ptr, config), nil
	case C.RATE_E_IO:
		return nil, refusedByOS(path, errno)
	default:
		return nil, rejected(status, func(reason *C.char, length C.size_t) C.int32_t {
			return C.rate_limiter_explain_config(&cConfig, reason, length)
		})
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
// A file made for another configuration, capacity, size or layout (a limiter's file
// from Open among them) is refused with ErrIncompatible and left untouched; what the
// operating system refuses (a missing directory, a permission) is an *os.PathError
// wrapping the syscall.Errno, so errors.Is(err, fs.ErrNotExist) and the like work. A
// config or capacity that NewKeyed would reject is the same *ConfigError.
func OpenKeyed(path string, config Config, capacity int) (*Keyed, error) {
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
	status, errno := C.rate_keyed_open(cPath, &cConfig, C.uint64_t(capacity), &ptr)
	switch status {
	case C.RATE_OK:
		return wrapKeyed(ptr, config, capacity), nil
	case C.RATE_E_IO:
		return nil, refusedByOS(path, errno)
	default:
		return nil, rejected(status, func(reason *C.char, length C.size_t) C.int32_t {
			return C.rate_keyed_explain_config(&cConfig, C.uint64_t(capacity), reason, length)
		})
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
