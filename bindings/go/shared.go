package librate

/*
#include <stdlib.h>
#include "rate.h"
*/
import "C"

import (
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
		if errno == nil {
			errno = syscall.EIO
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: errno}
	default:
		return nil, rejected(status, func(reason *C.char, length C.size_t) C.int32_t {
			return C.rate_limiter_explain_config(&cConfig, reason, length)
		})
	}
}
