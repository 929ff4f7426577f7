package librateredis

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// renewer is what a leased limiter (LeasedLimiter, KeyedLeasedLimiter) keeps beside its
// holder: a goroutine that renews at once and then every renewal interval, each round
// bounded by the interval, until Close or its context's end, then hands back; the
// calls Redis did not answer, counted and the last kept; and Close's one run. Without the
// goroutine (the Manual constructors), Close hands back itself.
type renewer struct {
	failures atomic.Uint64
	// lastErr is the last failure, nil once a renewal succeeds.
	lastErr atomic.Pointer[error]
	// stop ends the goroutine, which closes stopped once it has handed back; both nil
	// without a goroutine.
	stop, stopped chan struct{}
	closeOnce     sync.Once
	closeErr      error
}

// start runs round every interval in a goroutine, and handBack once it stops.
func (r *renewer) start(ctx context.Context, every time.Duration, round func(context.Context), handBack func(context.Context) error) {
	r.stop, r.stopped = make(chan struct{}), make(chan struct{})
	go r.run(ctx, every, round, handBack)
}

func (r *renewer) run(ctx context.Context, every time.Duration, round func(context.Context), handBack func(context.Context) error) {
	defer close(r.stopped)
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		call, cancel := context.WithTimeout(ctx, every)
		// A failure is counted and kept for Err: the holder decides on regardless.
		round(call)
		cancel()
		select {
		case <-ticker.C:
		case <-r.stop:
			r.closeErr = handBack(context.WithoutCancel(ctx))
			return
		case <-ctx.Done():
			r.closeErr = handBack(context.WithoutCancel(ctx))
			return
		}
	}
}

// background reports whether a goroutine renews: the At forms, on a timeline of the
// caller's, then refuse (one rule, two timelines).
func (r *renewer) background() bool { return r.stop != nil }

// close stops the goroutine (which hands back) or hands back, then frees, once; it
// returns the hand-back's failure.
func (r *renewer) close(handBack func(context.Context) error, free func()) error {
	r.closeOnce.Do(func() {
		if r.stop != nil {
			close(r.stop)
			<-r.stopped
		} else {
			r.closeErr = handBack(context.Background())
		}
		free()
	})
	return r.closeErr
}

// failed counts and keeps err, a call's failure at redisKey, as an *Error.
func (r *renewer) failed(redisKey string, err error) error {
	err = &Error{Key: redisKey, Err: err}
	r.failures.Add(1)
	r.lastErr.Store(&err)
	return err
}

// succeeded forgets the last failure.
func (r *renewer) succeeded() { r.lastErr.Store(nil) }

// err is the last failure, or nil.
func (r *renewer) err() error {
	if err := r.lastErr.Load(); err != nil {
		return *err
	}
	return nil
}
