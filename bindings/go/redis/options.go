package librateredis

import (
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
)

// Option configures New and NewPolicy.
type Option func(*options)

type options struct {
	goRedisLog bool
}

// GoRedisLog leaves go-redis's own logger as it is. Without it, New and NewPolicy
// silence that logger, which go-redis shares across the process (redis.SetLogger), so
// that a refused connection, already an *Error for the caller to log or not
// (librate.MiddlewareOptions.Logger does), prints no line of go-redis's on stderr. Pass
// it to every New and NewPolicy of a process that wants go-redis's lines, or call
// redis.SetLogger with a logger of your own after them.
func GoRedisLog() Option {
	return func(o *options) { o.goRedisLog = true }
}

// quiet is go-redis's logger silenced, once per process.
var quiet sync.Once

// apply applies chosen and, unless GoRedisLog is among them, silences go-redis's logger.
func apply(chosen []Option) {
	var o options
	for _, option := range chosen {
		option(&o)
	}
	if !o.goRedisLog {
		quiet.Do(func() { redis.SetLogger(&logging.VoidLogger{}) })
	}
}
