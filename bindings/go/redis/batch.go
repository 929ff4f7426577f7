package librateredis

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"

	librate "librate/bindings/go"
)

// Result is one key's outcome in a batch: its Decision, or Err (an *Error) when Redis
// gave none.
type Result struct {
	Decision librate.Decision
	Err      error
}

// AcquireMany takes n units now, by the server's clock, for each key in turn, in one
// round trip (a pipeline; a Cluster client sends one per node), and returns one Result
// per key in the order of keys: each key is decided as Acquire would decide it, a key
// given twice twice. The error is the request's refusal (as Acquire's, with no
// results), or else the first key's error of any, so that err == nil means every key was
// decided.
//
// The script is sent with EVALSHA; the keys that get NOSCRIPT (after a restart or
// SCRIPT FLUSH) are sent again with EVAL in a second round trip, after the others.
func (l *Limiter) AcquireMany(ctx context.Context, keys []string, n int) ([]Result, error) {
	return l.decideMany(ctx, keys, request{n: n})
}

// AcquireManyAt is AcquireMany at now, in nanoseconds on the caller's timeline.
func (l *Limiter) AcquireManyAt(ctx context.Context, keys []string, n int, now uint64) ([]Result, error) {
	return l.decideMany(ctx, keys, request{n: n, now: strconv.FormatUint(now, 10)})
}

func (l *Limiter) decideMany(ctx context.Context, keys []string, r request) ([]Result, error) {
	if err := l.check(ctx, r); err != nil {
		return nil, err
	}
	args := l.args(r)
	redisKeys := make([]string, len(keys))
	for i, key := range keys {
		redisKeys[i] = l.Key(key)
	}
	all := make([]int, len(keys))
	for i := range all {
		all[i] = i
	}
	cmds := make([]*redis.Cmd, len(keys))
	l.pipeline(ctx, cmds, redisKeys, all, args, l.script.EvalSha)
	var missing []int
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		l.pipeline(ctx, cmds, redisKeys, missing, args, l.script.Eval)
	}
	results := make([]Result, len(keys))
	var first error
	for i, cmd := range cmds {
		results[i].Decision, results[i].Err = decisionOf(redisKeys[i], cmd)
		if first == nil {
			first = results[i].Err
		}
	}
	return results, first
}

// pipeline sends the script, by send (EvalSha or Eval), for the key redisKeys[i] of each
// i in which, all in one round trip, and puts each command in cmds[i]. Each command
// carries its own reply or error, so Exec's error, the first of them, adds nothing.
func (l *Limiter) pipeline(ctx context.Context, cmds []*redis.Cmd, redisKeys []string, which []int, args []any,
	send func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd) {
	pipe := l.client.Pipeline()
	for _, i := range which {
		cmds[i] = send(ctx, pipe, []string{redisKeys[i]}, args...)
	}
	_, _ = pipe.Exec(ctx)
}
