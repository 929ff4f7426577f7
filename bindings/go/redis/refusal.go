package librateredis

import (
	"fmt"
	"strings"
	"time"

	librate "github.com/librate/librate/bindings/go"
)

// refusal is a request refused before anything is sent: its message is "librateredis: ",
// what was wrong, ": " and text, or the librate error's text (without its own "librate: "
// prefix) when text is empty; errors.Is finds that error.
type refusal struct {
	what, text string
	err        error
}

func (e *refusal) Error() string {
	text := e.text
	if text == "" {
		text = strings.TrimPrefix(e.err.Error(), "librate: ")
	}
	return "librateredis: " + e.what + ": " + text
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
