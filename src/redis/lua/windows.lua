-- librate's Redis scripts: what the fixed window and the sliding window counter share
-- (DESIGN §4, §8; src/algorithm/windows.rs), after time.lua and before either's own file.
--
-- KEYS[1]: the key's state (absent: a fresh one, nothing counted).
-- ARGV: now ('' for the server's clock), n (0..L), max_wait (always 0: the clients refuse
-- a reserve on a window algorithm), the limit L, the period P (below 2^53, so L is below
-- 2^52: the window bound of src/algorithm/windows.rs; the clients check both).
--
-- The windows are [k·P, (k+1)·P) on the u64 timeline. A window is named by its start, an
-- instant, so no window index is needed. The state is one string of decimals, the latest
-- window anything was admitted in, its count (1..L) and, for the sliding window only, the
-- final count of the window before it (0..L):
--   fixed window   '<start> <count>'
--   sliding window '<start> <count> <prev>'
-- The state changes only on an admission, to the window the request was decided in.

local key = KEYS[1]
local now = now_from(ARGV[1])
local n = tonumber(ARGV[2])
local limit = tonumber(ARGV[4])
local period = tonumber(ARGV[5])
local PERIOD = span(period)

-- The stored state as {start, count, prev} (prev 0 without the field): window 0 with
-- nothing counted when the key is absent (a fresh state, which nothing clamps to), nil
-- when the key holds anything the script for `fields` (2 or 3) does not write.
local function stored_state(fields)
    local stored = redis.call('GET', key)
    if not stored then
        return {start = {0, 0}, count = 0, prev = 0}
    end
    local pattern = '^(%d+) (%d+)$'
    if fields == 3 then
        pattern = '^(%d+) (%d+) (%d+)$'
    end
    local start, count, prev = string.match(stored, pattern)
    prev = prev or '0'
    -- At most 16 digits: a larger count is not an exact double; one of 16 digits above
    -- 2^53 still rounds to above L.
    if not start or #start > 20 or #count > 16 or #prev > 16 then
        return nil
    end
    start, count, prev = instant(start), tonumber(count), tonumber(prev)
    if less(U64_MAX, start) or modulo(start, period) ~= 0 or count < 1 or count > limit
        or prev > limit then
        return nil
    end
    return {start = start, count = count, prev = prev}
end

-- Where a request at now is decided (windows.rs `locate`, sliding_window.rs `view`): the
-- window of now, or, if now lies in an older window than the stored one (time went
-- backwards), the start of the stored window, the strictest instant in it. Returns the
-- window's start, the time elapsed in it, its count and the previous window's count.
local function view(state)
    local elapsed = modulo(now, period)
    local start = minus(now, span(elapsed))
    if less(start, state.start) then
        return {start = state.start, elapsed = 0, cur = state.count, prev = state.prev}
    end
    if not less(state.start, start) then
        return {start = start, elapsed = elapsed, cur = state.count, prev = state.prev}
    end
    local next_start = shifted(state.start, PERIOD)
    if next_start[1] == start[1] and next_start[2] == start[2] then
        return {start = start, elapsed = elapsed, cur = 0, prev = state.count}
    end
    return {start = start, elapsed = elapsed, cur = 0, prev = 0}
end

-- The start of the window `windows_later` windows after the one starting at `start`,
-- which may lie past U64_MAX.
local function window_after(start, windows_later)
    for _ = 1, windows_later do
        start = shifted(start, PERIOD)
    end
    return start
end

-- Nanoseconds from now until the instant `at` (not before now), or U64_MAX ("never") if
-- `at` lies past the end of the u64 timeline, where no now + d reaches it (windows.rs
-- `until`).
local function time_until(at)
    if less(U64_MAX, at) then
        return U64_MAX
    end
    return minus(at, now)
end

-- Stores an admission: `count` units in the window starting at `start` and, given
-- `prev`, that count for the window before it. The key is kept until the state is fresh
-- (DESIGN §5: nothing counted in the window of now or the one before), the start of the
-- window after next.
local function store(start, count, prev)
    local value = decimal(start) .. string.format(' %d', count)
    if prev then
        value = value .. string.format(' %d', prev)
    end
    redis.call('SET', key, value)
    keep_for(key, minus(window_after(start, 2), now))
end

-- The error a state that is not this algorithm's gives.
local function not_state(algorithm)
    return redis.error_reply('librate: ' .. key .. ' holds no ' .. algorithm .. ' state')
end
