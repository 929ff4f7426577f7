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
-- a duration at or above 2^53 as its decimal string.

-- The instant (seconds, nanoseconds: see time.lua) a decimal u64 names.
local function instant(text)
    local digits = #text
    if digits <= 9 then
        return 0, tonumber(text)
    end
    return tonumber(string.sub(text, 1, digits - 9)), tonumber(string.sub(text, digits - 8))
end

-- This call's now, read once for every key: the caller's explicit time, or the server's
-- clock (TIME: seconds and microseconds since the epoch).
local now_s, now_ns
if ARGV[1] ~= '' then
    now_s, now_ns = instant(ARGV[1])
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
