package librate

/*
#include "rate.h"
#cgo noescape rate_redis_prepare
#cgo nocallback rate_redis_prepare
#cgo noescape rate_redis_slot
#cgo nocallback rate_redis_slot
#cgo noescape rate_redis_policy_prepare
#cgo nocallback rate_redis_policy_prepare
*/
import "C"

import (
	"runtime"

	"github.com/librate/librate/bindings/go/internal/hook"
)

// RedisScript is the Lua script that decides a Config on Redis (or Valkey), with the
// arguments it takes: what package github.com/librate/librate/bindings/go/redis sends through go-redis, and
// what a client over another Redis library sends to get the same decisions. The scripts
// are librate's own, the same bytes for every language.
//
// A script takes the keys to decide (their states; on a Redis Cluster, all in one hash
// slot: see RedisSlot) and the arguments now (a decimal uint64 of nanoseconds, or "" for
// the server's clock), n, maxWait (nanoseconds; 0 but for a GCRA reserve), then
// ConfigArgs in order, and decides every key at the one now. For one key it replies its
// decision, {allowed, limit, remaining, retry_after_ns, reset_after_ns, wait_ns},
// integers or decimal strings, each a uint64; for several, the array of their decisions
// in the order of the keys, where a key holding something else is that key's error.
// Check a request before sending it: an n above Limit is ErrInsufficientCapacity, and
// only GCRA has a reserve.
type RedisScript struct {
	// Source is the Lua source.
	Source string
	// ConfigArgs are the configuration's arguments, sent after now, n and maxWait.
	ConfigArgs []uint64
	// Limit is the most units one request may take (GCRA: the burst; windows: the
	// limit).
	Limit uint64
}

// PrepareRedis returns the script deciding config on Redis. The error is a *ConfigError
// (matching ErrInvalidConfig) for a configuration New rejects or one with a duration of
// 2^53 ns (about 104 days) or more, which Redis's Lua numbers, doubles, do not hold
// exactly; ErrUnsupported for an algorithm whose script this librate does not have.
func PrepareRedis(config Config) (RedisScript, error) {
	cConfig, err := config.toC()
	if err != nil {
		return RedisScript{}, err
	}
	var out C.rate_redis_script
	status := C.rate_redis_prepare(&cConfig, &out)
	if status == C.RATE_E_INVALID_CONFIG {
		inProcess := rejected(status, func(reason *C.char, length C.size_t) C.int32_t {
			return C.rate_limiter_explain_config(&cConfig, reason, length)
		})
		if _, explained := inProcess.(*ConfigError); explained {
			return RedisScript{}, inProcess
		}
		// A configuration valid in process: too long for Redis.
		return RedisScript{}, &ConfigError{Reason: "on Redis, burst x (period_ns / limit) and period_ns must be below 2^53 ns (about 104 days)"}
	}
	if status != C.RATE_OK {
		return RedisScript{}, statusError(status)
	}
	return redisScript(out.source, out.config_args[:out.config_args_len], out.limit), nil
}

// redisScript is a prepared script in Go memory (the source is static in librate: copied
// once here).
func redisScript(source *C.char, configArgs []C.uint64_t, limit C.uint64_t) RedisScript {
	args := make([]uint64, len(configArgs))
	for i, arg := range configArgs {
		args[i] = uint64(arg)
	}
	return RedisScript{Source: C.GoString(source), ConfigArgs: args, Limit: uint64(limit)}
}

// PrepareRedisPolicy returns the script deciding a policy of rules (1 to MaxRules, any
// algorithms) on Redis: one call decides every rule of one key at one now and writes
// their states only if all admit, so a denied request takes from no rule. Send it as a
// RedisScript with the rules' keys in rule order (rule i of key under prefix at
// prefix + "{=" + key + "}:" + i, all in one Cluster hash slot for a prefix without "{"
// or "}") and the arguments now, n, "0", then ConfigArgs. The reply is the array of the
// rules' decisions in rule order (on a denial, a rule that would admit reports Remaining
// and ResetAfter of its state as it is, as Policy does); Limit is the least of the
// rules'; the combined decision is the caller's, as PolicyDecision documents. The error
// is a *ConfigError for a wrong number of rules or the first rule PrepareRedis rejects.
func PrepareRedisPolicy(rules ...Config) (RedisScript, error) {
	if err := ruleCountError(len(rules)); err != nil {
		return RedisScript{}, err
	}
	var cRules [MaxRules]C.rate_config
	for i, rule := range rules {
		if _, err := PrepareRedis(rule); err != nil {
			return RedisScript{}, ruleError(i, err)
		}
		// Cannot fail: PrepareRedis converted it.
		cRules[i], _ = rule.toC()
	}
	var out C.rate_redis_policy_script
	if status := C.rate_redis_policy_prepare(&cRules[0], C.size_t(len(rules)), &out); status != C.RATE_OK {
		return RedisScript{}, statusError(status)
	}
	return redisScript(out.source, out.config_args[:out.config_args_len], out.limit), nil
}

func init() {
	hook.LimiterAt = limiterAt
}

// limiterAt is hook.LimiterAt: AcquireAt or ReserveAt with times as C takes them.
func limiterAt(l *Limiter, n int, nowNs, maxWaitNs uint64, reserve bool) (Decision, error) {
	if n < 0 {
		return Decision{}, negative("n", int64(n))
	}
	var out C.rate_decision
	var status C.int32_t
	if reserve {
		status = C.rate_limiter_reserve_at(l.handle(), C.uint64_t(n), C.uint64_t(nowNs), C.uint64_t(maxWaitNs), &out)
	} else {
		status = C.rate_limiter_acquire_at(l.handle(), C.uint64_t(n), C.uint64_t(nowNs), &out)
	}
	runtime.KeepAlive(l)
	return result(status, &out)
}

// RedisSlot is the Redis Cluster hash slot (0 to 16383) of the Redis key redisKey: CRC16
// of its hash tag, or of the whole key without one, as every Cluster node computes it.
// The keys of one request share a slot: a limiter's "prefix{key}" is one key, and a
// policy's rules' "prefix{=key}:i" (see PrepareRedisPolicy) all hash the tag "=key".
func RedisSlot(redisKey string) uint16 {
	var slot C.uint16_t
	key := stringKey(redisKey)
	// Cannot fail: the key is never NULL with a non-zero length, and out is non-NULL.
	C.rate_redis_slot(key.ptr, key.len, &slot)
	runtime.KeepAlive(redisKey)
	return uint16(slot)
}
