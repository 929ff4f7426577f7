package librateredis

import (
	"context"
	"fmt"
	"time"

	librate "librate/bindings/go"
)

// ForMiddleware returns l as a librate.ContextLimiter for librate.NewMiddleware. The
// middleware then decides each request with the request's context, by the Redis
// server's clock (or, when MiddlewareOptions.Now is set, at the time it gives), and
// answers what Redis does not decide as MiddlewareOptions.FailOpen says: the request
// served unlimited, or 503.
func (l *Limiter) ForMiddleware() librate.ContextLimiter { return requests{l} }

// requests is ForMiddleware's adapter.
type requests struct{ limiter *Limiter }

// AcquireAt is AcquireAtContext without a deadline of its own (the client's timeouts
// still apply).
func (r requests) AcquireAt(key string, n int, now time.Duration) (librate.Decision, error) {
	return r.AcquireAtContext(context.Background(), key, n, now)
}

func (r requests) AcquireAtContext(ctx context.Context, key string, n int, now time.Duration) (librate.Decision, error) {
	if now < 0 {
		return librate.Decision{}, fmt.Errorf("librateredis: now is %v: %w", now, librate.ErrInvalidArgument)
	}
	return r.limiter.AcquireAt(ctx, key, n, uint64(now))
}

func (r requests) AcquireContext(ctx context.Context, key string, n int) (librate.Decision, error) {
	return r.limiter.Acquire(ctx, key, n)
}

func (r requests) Config() librate.Config { return r.limiter.Config() }
