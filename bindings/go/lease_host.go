package librate

/*
#include <stdlib.h>
#include "rate.h"
#cgo noescape rate_lease_lead
#cgo nocallback rate_lease_lead
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// OpenLeaseHolder opens the holder of rule for this host (docs/leases.md, one share for
// a host), in the file at path, creating it (mode 0600) if it does not exist, as Open
// opens a shared limiter's: every process that opens it decides from one share, under
// the one name the file holds (drawn at random by the process that creates it), and one
// of them renews it at a time (Lead). Put the file on a tmpfs such as /dev/shm. Each
// process decides by its own options.Fallback, and opens the file once: holders of one
// process are one renewer. The holder is an ordinary *LeaseHolder; Close leaves the file
// in place.
//
// A file that is no host's holder of this rule and lease is refused with an
// *IncompatibleError (errors.Is(err, ErrIncompatible) holds), which says what the file
// holds, and left untouched; what the operating system refuses (a missing directory, a
// permission) is an *os.PathError wrapping the syscall.Errno. A rule or fallback librate
// rejects, or an options.Name (the file names the holder), is a *ConfigError, which
// matches ErrInvalidConfig.
func OpenLeaseHolder(path string, rule LeaseRule, options LeaseOptions) (*LeaseHolder, error) {
	if options.Name != "" {
		return nil, &ConfigError{Reason: fmt.Sprintf("LeaseOptions.Name %q: a host's holder has the name its file holds", options.Name)}
	}
	cRule, fallback, err := rule.toC(options.Fallback)
	if err != nil {
		return nil, err
	}
	cPath := C.CString(path)
	defer C.free(unsafe.Pointer(cPath))
	var ptr *C.rate_lease_holder
	status, errno := C.rate_lease_holder_open(cPath, &cRule, fallback, &ptr)
	err = openError(path, status, errno, func(reason *C.char, length C.size_t) C.int32_t {
		return C.rate_lease_explain(&cRule, fallback, nil, 0, reason, length)
	})
	if err != nil {
		return nil, err
	}
	return wrapLeaseHolder(ptr, rule, path), nil
}

// Path returns the file of a host's holder (OpenLeaseHolder), or "" for a holder of its
// own.
func (h *LeaseHolder) Path() string {
	if h == nil {
		return ""
	}
	return h.path
}

// Lead reports whether this process renews the holder's share: always for a holder of
// its own; for a host's, if no live process of the host does, this one claims it (one
// of those that ask at once), and keeps it until it steps down or dies (a process is
// checked as a shared file's are: by its pid and start time). A client sends renewals
// only while it says so. It returns false for a nil or closed holder.
func (h *LeaseHolder) Lead() bool {
	status := C.rate_lease_lead(h.handle())
	runtime.KeepAlive(h)
	return status == 1
}

// StepDown gives up renewing a host's share, if this process did, so that another
// process may claim it: what a process that stops renewing does instead of sending
// Release's renewal, which would hand back the share every process of the host decides
// from. Close does it too. It does nothing for a holder of its own, or a nil or closed
// one.
func (h *LeaseHolder) StepDown() {
	C.rate_lease_step_down(h.handle())
	runtime.KeepAlive(h)
}
