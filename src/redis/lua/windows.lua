-- librate's Redis scripts: what the fixed window and the sliding window counter share
-- (docs/decision.md, docs/redis.md; src/algorithm/windows.rs), on the instants of time.lua.
--
-- KEYS: each key's state (absent: a fresh one, nothing counted).
-- Configuration: the limit L, the period P (below 2^53, so L is below 2^52: the window
-- bound of src/algorithm/windows.rs; the clients check both). ARGV[3], max_wait, is
-- always 0: the clients refuse a reserve on a window algorithm.
--
-- The windows are [k·P, (k+1)·P) on the u64 timeline. A window is named by its start, an
-- instant, so no window index is needed. The state is the latest window anything was
-- admitted in, its count (1..L) and, for the sliding window only, the final count of the
-- window before it (0..L), big-endian: the start's seconds (5 bytes) and nanoseconds (4),
-- then each count in 7 bytes (every count below 2^52):
--   fixed window   16 bytes: start, count
--   sliding window 23 bytes: start, count, prev
-- The state changes only on an admission, to the window the request was decided in.

-- (x + y) mod m, and whether it wrapped (1 or 0), for x and y below m: nothing held
-- reaches m, so no sum is ever above 2^53 for a modulus below it.
function add_mod(x, y, m)
    if x >= m - y then
        return x - (m - y), 1
    end
    return x + y, 0
end

-- q and r with a·b = q·c + r and 0 <= r < c, exactly, for a below 2^53 and b <= c below
-- 2^53 (so q <= a). A product below 2^53 is one exact division (a product at or above
-- 2^53 rounds to at least 2^53, so the test is exact, and such a product is not used); a
-- larger one is built from a's bits, highest first, doubling and adding modulo c, with
-- every value below c or q.
function muldiv(a, b, c)
    local product = a * b
    if product < 9007199254740992 then
        local r = math.fmod(product, c)
        return (product - r) / c, r
    end
    local bit = 1
    while bit <= a - bit do
        bit = bit * 2
    end
    local q, r, carry = 0, 0, 0
    while bit >= 1 do
        r, carry = add_mod(r, r, c)
        q = q * 2 + carry
        if a >= bit then
            a = a - bit
            r, carry = add_mod(r, b, c)
            q = q + carry
        end
        bit = bit / 2
    end
    return q, r
end

-- The instant s, ns modulo the period P, exactly: (s·1e9 + ns) mod P.
function modulo(s, ns, period)
    -- The periods people configure are whole seconds or divide one: then the seconds
    -- reduce alone, or drop out (a multiple of 1e9 is one of P), without muldiv's loop.
    if math.fmod(period, 1e9) == 0 then
        return math.fmod(s, period / 1e9) * 1e9 + ns
    end
    if math.fmod(1e9, period) == 0 then
        return math.fmod(ns, period)
    end
    local _, r = muldiv(1e9, math.fmod(s, period), period)
    return (add_mod(r, math.fmod(ns, period), period))
end

-- The stored state of `key` as its window's start (seconds, nanoseconds), count and prev
-- (0 without the field): window 0 with nothing counted when the key is absent (a fresh
-- state, which nothing clamps to). Returns false and the error reply when the key holds
-- anything the `algorithm` of `fields` (2 or 3), limit L and period P does not write.
function read(key, fields, algorithm, limit, period)
    local stored = redis.pcall('GET', key)
    if type(stored) == 'table' then
        return false, stored
    end
    if not stored then
        return true, 0, 0, 0, 0
    end
    local start_s, start_ns, count, prev = unpack_window(stored, fields)
    if not count or not is_instant(start_s, start_ns) or modulo(start_s, start_ns, period) ~= 0
        or count < 1 or count > limit or prev > limit then
        return false, not_state(key, algorithm)
    end
    return true, start_s, start_ns, count, prev
end

-- Where a request at now is decided (windows.rs `locate`, sliding_window.rs `view`) for the
-- period P, for the stored window starting at s, ns with `count` and `prev`: the window
-- of now, or, if
-- now lies in an older window than the stored one (time went backwards), the start of
-- the stored window, the strictest instant in it. Returns the window's start, the time
-- elapsed in it, its count and the previous window's count.
function view(now_s, now_ns, period, s, ns, count, prev)
    local elapsed = modulo(now_s, now_ns, period)
    local start_s, start_ns = sub(now_s, now_ns, split(elapsed))
    if less(start_s, start_ns, s, ns) then
        return s, ns, 0, count, prev
    end
    if not less(s, ns, start_s, start_ns) then
        return start_s, start_ns, elapsed, count, prev
    end
    local next_s, next_ns = window_after(s, ns, period, 1)
    if next_s == start_s and next_ns == start_ns then
        return start_s, start_ns, elapsed, 0, count
    end
    return start_s, start_ns, elapsed, 0, 0
end

-- The start of the window `later` windows of period P after the one starting at s, ns,
-- which may lie past the end of the u64 timeline.
function window_after(s, ns, period, later)
    local period_s, period_ns = split(period)
    for _ = 1, later do
        s, ns = add(s, ns, period_s, period_ns)
    end
    return s, ns
end

-- The reply field of the time from now until the instant s, ns (not before now): past
-- the end of the u64 timeline, where no now + d reaches it, the largest u64 ("never", as
-- windows.rs `until`).
function until_field(now_s, now_ns, s, ns)
    if past_end(s, ns) then
        return '18446744073709551615'
    end
    return field(sub(s, ns, now_s, now_ns))
end

-- Stores an admission at now: `count` units in the window of period P starting at s, ns
-- and, given `prev`, that count for the window before it. The key is kept until the state
-- is fresh (docs/keyed.md, reclaim: nothing counted in the window of now or the one
-- before), the start of the window after next.
function store(key, now_s, now_ns, period, s, ns, count, prev)
    local fresh_s, fresh_ns = window_after(s, ns, period, 2)
    redis.call('SET', key, pack_window(s, ns, count, prev), 'PX', keep_ms(sub(fresh_s, fresh_ns, now_s, now_ns)))
end
