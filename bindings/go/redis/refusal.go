package librateredis

import (
	"fmt"
	"strings"
	"time"

	librate "librate/bindings/go"
)

// refusal is a request refused before anything is sent: its message is "librateredis: ",
// what was wrong, ": " and the librate error's text (without its own "librate: "
// prefix), and errors.Is finds that error.
type refusal struct {
	what string
	err  error
}

func (e *refusal) Error() string {
	return "librateredis: " + e.what + ": " + strings.TrimPrefix(e.err.Error(), "librate: ")
}

func (e *refusal) Unwrap() error { return e.err }

// invalid refuses an argument: an error matching librate.ErrInvalidArgument.
func invalid(format string, args ...any) error {
	return &refusal{what: fmt.Sprintf(format, args...), err: librate.ErrInvalidArgument}
}

// negativeNow refuses a time before the caller's timeline's origin.
func negativeNow(now time.Duration) error {
	return invalid("now is %v", now)
}
