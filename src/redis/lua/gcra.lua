-- librate's Redis scripts, part 2 of 2: GCRA acquire and reserve (DESIGN §4, §8), the same
-- arithmetic as src/algorithm/gcra.rs on the instants of time.lua.
--
-- KEYS[1]: the key's TAT, a decimal u64 (absent: 0, a fresh bucket).
-- ARGV: now ('' for the server's clock), n (1..burst, or 0 for a query), max_wait (a
-- decimal u64; 0 for an acquire), the emission interval T, the burst B (B·T below 2^53).
-- Returns {allowed, limit, remaining, retry_after_ns, reset_after_ns, wait_ns}, the
-- durations as decimal strings.

local key = KEYS[1]
local now = now_from(ARGV[1])
local n = tonumber(ARGV[2])
local max_wait = instant(ARGV[3])
local interval = tonumber(ARGV[4])
local burst = tonumber(ARGV[5])
local tolerance = span(burst * interval)

local tat = {0, 0}
local stored = redis.call('GET', key)
if stored then
    if not string.match(stored, '^%d+$') or #stored > 20 or less(U64_MAX, instant(stored)) then
        return redis.error_reply('librate: ' .. key .. ' holds no GCRA state')
    end
    tat = instant(stored)
end

-- remaining and reset_after_ns for the TAT `after` a decision.
local function report(after)
    local debt = minus(after, now)
    local remaining = 0
    if less(debt, tolerance) then
        remaining = quotient(minus(tolerance, debt), interval)
    end
    local reset_after = debt
    local start = later(after, now)
    if less(MAX_STATE, plus(start, tolerance)) then
        -- The end of the timeline: only the units that fit below MAX_STATE.
        remaining = math.min(remaining, quotient(minus(MAX_STATE, start), interval))
        reset_after = U64_MAX
    end
    return remaining, decimal(reset_after)
end

if n == 0 then
    local remaining, reset_after = report(tat)
    return {1, burst, remaining, '0', reset_after, '0'}
end

-- max(TAT, now) + n·T, if it is storable.
local new_tat = plus(later(tat, now), span(n * interval))
if less(MAX_STATE, new_tat) then
    new_tat = nil
end
if new_tat and not less(plus(now, plus(tolerance, max_wait)), new_tat) then
    local wait = minus(minus(new_tat, now), tolerance)
    local remaining, reset_after = report(new_tat)
    redis.call('SET', key, decimal(new_tat))
    keep_for(key, minus(new_tat, now))
    return {1, burst, remaining, '0', reset_after, decimal(wait)}
end
local retry_after = U64_MAX
if new_tat then
    retry_after = minus(minus(minus(new_tat, now), tolerance), max_wait)
end
local remaining, reset_after = report(tat)
return {0, burst, remaining, decimal(retry_after), reset_after, '0'}
