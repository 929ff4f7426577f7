package librateredis

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	librate "github.com/librate/librate/bindings/go"
)

// Result is one key's outcome in a batch: its Decision, or Err (an *Error) when Redis
// gave none.
type Result struct {
	// Decision is Redis's decision for the key, the zero Decision when Err is set.
	Decision librate.Decision
	// Err is nil, or an *Error: the key's call got no decision.
	Err error
}

// AcquireMany takes n units now, by the server's clock, for each key in turn, in one
// round trip and one script call, and returns one Result per key in the order of keys:
// each key is decided as Acquire would decide it, all at one server time, a key given
// twice twice. On a *redis.ClusterClient, whose nodes refuse a script call naming keys
// of several hash slots, it is one script call per slot, pipelined (one round trip per
// node); on any other client that shards by key (a Ring), one script call per key,
// pipelined. The error is the request's refusal (as Acquire's, with no results), or else
// the first key's error of any, so that err == nil means every key was decided.
//
// The script is sent with EVALSHA; the calls that get NOSCRIPT (after a restart or
// SCRIPT FLUSH) are sent again with EVAL in a second round trip, after the others.
func (l *Limiter) AcquireMany(ctx context.Context, keys []string, n int) ([]Result, error) {
	return l.decideMany(ctx, keys, request{n: n})
}

// AcquireManyAt is AcquireMany at now on the caller's timeline, as AcquireAt takes it.
func (l *Limiter) AcquireManyAt(ctx context.Context, keys []string, n int, now time.Duration) ([]Result, error) {
	if now < 0 {
		return nil, negativeNow(now)
	}
	return l.acquireManyAtNs(ctx, keys, n, uint64(now))
}

// acquireManyAtNs is AcquireManyAt anywhere on the script's uint64 timeline.
func (l *Limiter) acquireManyAtNs(ctx context.Context, keys []string, n int, now uint64) ([]Result, error) {
	return l.decideMany(ctx, keys, request{n: n, now: strconv.FormatUint(now, 10)})
}

func (l *Limiter) decideMany(ctx context.Context, keys []string, r request) ([]Result, error) {
	if err := l.check(ctx, r); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return []Result{}, nil
	}
	args := l.args(r)
	redisKeys := make([]string, len(keys))
	for i, key := range keys {
		redisKeys[i] = l.Key(key)
	}
	groups := l.groups(redisKeys)
	every := make([]int, len(groups))
	for i := range every {
		every[i] = i
	}
	cmds := make([]*redis.Cmd, len(groups))
	l.pipeline(ctx, cmds, redisKeys, groups, every, args, l.script.EvalSha)
	var missing []int
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		l.pipeline(ctx, cmds, redisKeys, groups, missing, args, l.script.Eval)
	}
	results := make([]Result, len(keys))
	for i, group := range groups {
		groupResults(results, redisKeys, group, cmds[i])
	}
	var failed error
	for _, result := range results {
		if result.Err != nil {
			failed = cmp.Or(failed, result.Err)
			continue
		}
		l.counts.count(r.n, deniedBy(result.Decision), 0)
	}
	return results, failed
}

// groups are the indices of redisKeys that one script call decides together: every key
// at once on a client of one server (or of one primary and its replicas), one group per
// hash slot on a Cluster, one key a group on any other client, which may shard by key.
func (l *Limiter) groups(redisKeys []string) [][]int {
	switch l.client.(type) {
	case *redis.Client:
		every := make([]int, len(redisKeys))
		for i := range every {
			every[i] = i
		}
		return [][]int{every}
	case *redis.ClusterClient:
		var groups [][]int
		// The group of each slot, by its index in groups, in the order keys first name
		// the slots.
		bySlot := make(map[uint16]int)
		for i, redisKey := range redisKeys {
			slot := librate.RedisSlot(redisKey)
			group, seen := bySlot[slot]
			if !seen {
				group = len(groups)
				bySlot[slot] = group
				groups = append(groups, nil)
			}
			groups[group] = append(groups[group], i)
		}
		return groups
	default:
		groups := make([][]int, len(redisKeys))
		for i := range groups {
			groups[i] = []int{i}
		}
		return groups
	}
}

// pipeline sends the script, by send (EvalSha or Eval), for the keys of each group
// groups[i] of i in which, all in one round trip, and puts each command in cmds[i]. Each
// command carries its own reply or error, so Exec's error, the first of them, adds
// nothing.
func (l *Limiter) pipeline(ctx context.Context, cmds []*redis.Cmd, redisKeys []string, groups [][]int,
	which []int, args []any, send func(context.Context, redis.Scripter, []string, ...any) *redis.Cmd) {
	pipe := l.client.Pipeline()
	for _, i := range which {
		callKeys := make([]string, len(groups[i]))
		for j, index := range groups[i] {
			callKeys[j] = redisKeys[index]
		}
		cmds[i] = send(ctx, pipe, callKeys, args...)
	}
	_, _ = pipe.Exec(ctx)
}

// groupResults puts the outcome of the script call cmd, which decided the keys of group,
// in results: one key's reply is its decision; several keys' is the array of theirs,
// each a decision or that key's error; an error for the whole call (Redis unreachable,
// OOM, READONLY: the script wrote nothing) is each of its keys' error.
func groupResults(results []Result, redisKeys []string, group []int, cmd *redis.Cmd) {
	if len(group) == 1 {
		i := group[0]
		results[i].Decision, results[i].Err = decisionOf(redisKeys[i], cmd.Val(), cmd.Err())
		return
	}
	replies, ok := cmd.Val().([]any)
	for j, i := range group {
		switch {
		case cmd.Err() != nil:
			results[i].Err = &Error{Key: redisKeys[i], Err: cmd.Err()}
		case !ok || len(replies) != len(group):
			results[i].Err = &Error{Key: redisKeys[i], Err: fmt.Errorf("%w %v", ErrReply, cmd.Val())}
		default:
			// A key's own error comes back in its place as a value.
			err, _ := replies[j].(error)
			results[i].Decision, results[i].Err = decisionOf(redisKeys[i], replies[j], err)
		}
	}
}
