-- librate's Redis scripts: what the window counters' decisions near now share (docs/decision.md,
-- docs/redis.md), in plain numbers, for fixed_window_near.lua and sliding_window_near.lua.
--
-- As gcra_near.lua does for GCRA, these decide the common requests without the helper
-- functions of time.lua and windows.lua, which Redis's Lua builds again on every call:
-- when now lies before 1.8e19 ns, the period P is below 2^52 ns and either a whole number
-- of seconds or a divisor of one (so now mod P is one or two exact operations), and the
-- stored window is now's or an earlier one less than 2^52 ns back, every duration a
-- decision handles (now mod P, 2P, the time until a window's end, the key's expiry) is
-- one exact number. Any other request, and a key holding anything but its algorithm's
-- state, they leave to the exact decision, which gives the same answer there.

-- The window of now (seconds, nanoseconds) for `key` of limit L and period P, stored in
-- `fields` words (2: start and count; 3: and prev), in plain numbers: the time elapsed in
-- now's window, its start (seconds, nanoseconds), and the counts of now's window and of
-- the one before it. Nil when the exact decision must decide; Redis's error reply for
-- another type at the key.
function window_near(key, fields, limit, period, now_s, now_ns)
    if now_s >= 18e9 or period >= 4503599627370496 then
        return nil
    end
    local elapsed
    local period_ns = math.fmod(period, 1e9)
    if period_ns == 0 then
        elapsed = math.fmod(now_s, period / 1e9) * 1e9 + now_ns
    elseif math.fmod(1e9, period) == 0 then
        elapsed = math.fmod(now_ns, period)
    else
        return nil
    end
    local elapsed_ns = math.fmod(elapsed, 1e9)
    local start_s, start_ns = now_s - (elapsed - elapsed_ns) / 1e9, now_ns - elapsed_ns
    if start_ns < 0 then
        start_s, start_ns = start_s - 1, start_ns + 1e9
    end
    local stored = redis.pcall('GET', key)
    if type(stored) == 'table' then
        return stored
    end
    if not stored then
        return elapsed, start_s, start_ns, 0, 0
    end
    local s, ns, count, prev = unpack_window(stored, fields)
    if not s then
        return nil
    end
    -- How long before now's window the stored one starts: in plain numbers only up to
    -- 2^52 ns back (4.5e6 s), where its alignment is checked exactly.
    if ns >= 1e9 or s > start_s or s <= start_s - 4.5e6 or count < 1 or count > limit
        or prev > limit then
        return nil
    end
    local back = (start_s - s) * 1e9 + (start_ns - ns)
    if back < 0 or math.fmod(back, period) ~= 0 then
        return nil
    end
    if back == 0 then
        return elapsed, start_s, start_ns, count, prev
    elseif back == period then
        return elapsed, start_s, start_ns, 0, count
    end
    return elapsed, start_s, start_ns, 0, 0
end

-- Stores an admission in now's window, starting at s, ns: `count` units and, given `prev`,
-- the previous window's count; kept until the start of the window after next, 2P − elapsed
-- from now (windows.lua's `store`).
function store_near(key, s, ns, count, prev, elapsed, period)
    -- In milliseconds rounded up, as time.lua's keep_ms counts them.
    local keep = 2 * period - elapsed
    local keep_ns = math.fmod(keep, 1e9)
    redis.call('SET', key, pack_window(s, ns, count, prev), 'PX', (keep - keep_ns) / 1e6 + math.ceil(keep_ns / 1e6))
end
