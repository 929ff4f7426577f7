-- librate's Redis scripts, the first part of every one: the request's now and n.
--
-- Each algorithm's file defines one function, named after it, deciding one key:
-- (key, n, its two configuration arguments, whether to write). A single limiter's script
-- is this file, time.lua, the algorithm's own file (the window algorithms' preceded by
-- windows.lua, which they share), a line naming that function `decide`, and keys.lua,
-- which decides every key the call names; each puts time.lua and its exact files inside
-- a function built only when its decision near now (the *_near.lua files) cannot decide
-- (src/redis/mod.rs). A policy's script is this file, time.lua, every algorithm's, and
-- policy.lua. Every script takes KEYS, the keys' states (one or more), and ARGV: now (''
-- for the server's clock), n, max_wait, then its configuration. Every key's decision is
-- {allowed, limit, remaining, retry_after_ns, reset_after_ns, wait_ns}, each an integer,
-- a duration at or above 2^53 as its decimal string; a single limiter's call with
-- max_wait '' is an acquire whose caller reads `allowed` alone (try_acquire, Allow), and
-- each key's reply is then that integer (keys.lua): turning a table of six into Redis's
-- reply costs the server more than the arithmetic of a decision.

-- This call's now, read once for every key: the caller's explicit time, or the server's
-- clock (TIME: seconds and microseconds since the epoch).
local now_s, now_ns
if ARGV[1] ~= '' then
    -- A decimal u64: its last nine digits are the nanoseconds, the others (if any) the
    -- seconds. Read here rather than by time.lua's `instant`, which is built only for an
    -- exact decision: a function the decisions near now name costs on every call.
    now_s, now_ns = tonumber(string.sub(ARGV[1], 1, -10)) or 0, tonumber(string.sub(ARGV[1], -9))
else
    local clock = redis.call('TIME')
    now_s, now_ns = tonumber(clock[1]), tonumber(clock[2]) * 1000
end
-- The commonest cost, one unit, without a conversion, which costs as much as a decision's
-- arithmetic.
local n = 1
if ARGV[2] ~= '1' then
    n = tonumber(ARGV[2])
end
-- A reserve's longest wait (a decimal u64; '0' for an acquire), and whether the caller
-- reads `allowed` alone: '' is an acquire's brief form.
local max_wait = ARGV[3]
local brief = max_wait == ''
if brief then
    max_wait = '0'
end
