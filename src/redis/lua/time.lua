-- librate's Redis scripts: exact u64 nanosecond instants in Lua (docs/redis.md), for
-- every algorithm's exact decision.
--
-- Lua numbers are doubles, exact only up to 2^53, and a time in nanoseconds since the
-- epoch (or any u64 the caller passes to an `_at` call) is larger. So an instant is two
-- numbers, always passed and returned side by side: whole seconds and the nanoseconds
-- after them (0 <= ns < 1e9), each exact, together able to hold every u64. Two locals
-- rather than a table, because a script runs per request and a table per instant costs
-- more than the rest of the arithmetic. A duration that the configuration bounds (an
-- emission interval, a tolerance, a period: all below 2^53, which the clients check) is a
-- plain number. Every value these functions compute stays below 2^53.

-- The constants are literals in the functions below rather than named locals: a script's
-- functions are built again on every call, and each outer local a function refers to
-- costs about as much to capture as the arithmetic of a decision. They are 1e9 (the
-- nanoseconds of a second); 2^53 = 9007199254740992 (every integer below it is a double,
-- exactly); the largest u64, 2^64 - 1, where every time saturates: 18446744073 s and
-- 709551615 ns, '18446744073709551615' as a reply field; the largest state a limiter
-- stores, 2^64 - 257 (docs/clock.md; src/algorithm/mod.rs): 18446744073 s and 709551359 ns.

-- The instant a decimal u64 names: its last nine digits are the nanoseconds, the others
-- (if any) the seconds, as request.lua reads now.
function instant(text)
    return tonumber(string.sub(text, 1, -10)) or 0, tonumber(string.sub(text, -9))
end

-- Whether instant a is before instant b.
function less(a_s, a_ns, b_s, b_ns)
    return a_s < b_s or (a_s == b_s and a_ns < b_ns)
end

-- Whether the instant s, ns lies past the largest u64: no u64 time reaches it.
function past_end(s, ns)
    return s > 18446744073 or (s == 18446744073 and ns > 709551615)
end

-- Whether the instant s, ns lies past the largest state.
function past_state(s, ns)
    return s > 18446744073 or (s == 18446744073 and ns > 709551359)
end

-- Whether seconds and nanoseconds read back from a state name a u64 instant.
function is_instant(s, ns)
    return ns < 1e9 and not past_end(s, ns)
end

-- a + b, which may lie past the end of the u64 timeline (the seconds of any sum of a u64
-- and durations below 2^53 stay far below 2^53).
function add(a_s, a_ns, b_s, b_ns)
    local ns = a_ns + b_ns
    if ns >= 1e9 then
        return a_s + b_s + 1, ns - 1e9
    end
    return a_s + b_s, ns
end

-- a - b, or 0 when b is not before a.
function sub(a_s, a_ns, b_s, b_ns)
    if b_s > a_s or (b_s == a_s and b_ns >= a_ns) then
        return 0, 0
    end
    local ns = a_ns - b_ns
    if ns < 0 then
        return a_s - b_s - 1, ns + 1e9
    end
    return a_s - b_s, ns
end

-- The instant `d` nanoseconds after 0, for a duration below 2^53.
function split(d)
    local ns = math.fmod(d, 1e9)
    return (d - ns) / 1e9, ns
end

-- A duration as a reply field: the number itself below 2^53 (a product at or above 2^53
-- rounds to at least 2^53, so the test is exact), else its decimal string, saturated at
-- the largest u64.
function field(s, ns)
    local d = s * 1e9 + ns
    if d < 9007199254740992 then
        return d
    end
    if past_end(s, ns) then
        return '18446744073709551615'
    end
    return string.format('%d%09d', s, ns)
end

-- The milliseconds a key is kept for a state live for the duration s, ns: rounded up, so
-- it expires only once it is fresh.
function keep_ms(s, ns)
    return s * 1000 + math.ceil(ns / 1000000)
end

-- ⌊t / divisor⌋ for a quotient below 2^53 and a divisor below 2^53 (math.fmod is exact),
-- of a duration t below 2^53.
function quotient(t, divisor)
    return (t - math.fmod(t, divisor)) / divisor
end

-- The error a key that holds another algorithm's state (or anything else) gives.
function not_state(key, algorithm)
    return redis.error_reply('librate: ' .. key .. ' holds no ' .. algorithm .. ' state')
end
