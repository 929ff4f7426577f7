package librate

import (
	"context"
	"fmt"
	"time"
)

// wait is Wait for a Limiter or one key of a Keyed. reserve (GCRA) is nil for the
// window algorithms, which have no reserve: they acquire and sleep out RetryAfter until
// admitted. A reservation whose sleep ctx ends is cancelled: its units go back.
func wait(
	ctx context.Context,
	n int,
	reserve func(n int, maxWait time.Duration) *Reservation,
	acquire func(n int) (Decision, error),
) error {
	if n < 0 {
		return negative("n", int64(n))
	}
	if ctx == nil {
		return detailed(ErrInvalidArgument, "WaitN with a nil context")
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// The longest the caller may wait: until the deadline, or for ever.
		maxWait := Never
		deadline, hasDeadline := ctx.Deadline()
		if hasDeadline {
			maxWait = time.Until(deadline)
			if maxWait <= 0 {
				return context.DeadlineExceeded
			}
		}
		if reserve != nil {
			r := reserve(n, maxWait)
			if r.err != nil {
				return r.err
			}
			if !r.decision.Allowed {
				// Only a deadline can deny a reserve: the wait would outlast it.
				return pastDeadline(n)
			}
			err := sleep(ctx, r.decision.Wait)
			if err != nil {
				// Ended before the time to act: the units go back.
				r.giveBack()
			}
			return err
		}
		decision, err := acquire(n)
		if err != nil || decision.Allowed {
			return err
		}
		if decision.RetryAfter >= maxWait {
			return pastDeadline(n)
		}
		if err := sleep(ctx, decision.RetryAfter); err != nil {
			return err
		}
	}
}

// pastDeadline is Wait's early answer when admission would come after the deadline.
func pastDeadline(n int) error {
	return fmt.Errorf("librate: WaitN(n=%d) would outlast the context deadline: %w", n, context.DeadlineExceeded)
}

// sleep waits for d or until ctx is done, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
