-- librate's Redis scripts, the prelude of every one: exact u64 nanosecond times in Lua
-- (DESIGN §8).
--
-- Lua numbers are doubles, exact only up to 2^53, and a time in nanoseconds since the
-- epoch (or any u64 the caller passes to an `_at` call) is larger. So an instant is a
-- pair {s, ns}: whole seconds and the nanoseconds after them (0 <= ns < 1e9), each exact,
-- able to hold every u64. A duration that the configuration bounds (an emission interval,
-- a tolerance, a period: all below 2^53, which the clients check) is a plain number.
-- Every value these functions compute stays below 2^53.
--
-- Each algorithm's script is this file followed by the algorithm's own file (the window
-- algorithms' by windows.lua, which they share, first). Every script takes KEYS[1], the
-- key's state, and ARGV: now ('' for the server's clock), n, max_wait, then its
-- configuration; every script returns {allowed, limit, remaining, retry_after_ns,
-- reset_after_ns, wait_ns}, the last three as decimal strings.

local E9 = 1000000000
-- 2^53: every integer below it is a double, exactly.
local EXACT = 9007199254740992
-- 2^64 - 1, the largest u64: where every sum saturates.
local U64_MAX = {18446744073, 709551615}
-- 2^64 - 257, the largest state a limiter stores (DESIGN §2; src/algorithm/mod.rs).
local MAX_STATE = {18446744073, 709551359}

-- The instant a decimal u64 string names.
local function instant(text)
    local digits = #text
    if digits <= 9 then
        return {0, tonumber(text)}
    end
    return {tonumber(string.sub(text, 1, digits - 9)), tonumber(string.sub(text, digits - 8))}
end

-- The decimal string of an instant, as the clients parse it back into a u64.
local function decimal(t)
    if t[1] == 0 then
        return string.format('%d', t[2])
    end
    return string.format('%d%09d', t[1], t[2])
end

-- The instant `d` nanoseconds after 0, for a duration below 2^53.
local function span(d)
    local ns = math.fmod(d, E9)
    return {(d - ns) / E9, ns}
end

-- A duration below 2^53 as a plain number (only for values known to be that small).
local function number(t)
    return t[1] * E9 + t[2]
end

local function less(a, b)
    return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2])
end

local function later(a, b)
    if less(a, b) then
        return b
    end
    return a
end

local function earlier(a, b)
    if less(a, b) then
        return a
    end
    return b
end

-- a + b, which may lie past U64_MAX (the seconds of any sum of a u64 and durations below
-- 2^53 stay far below 2^53).
local function shifted(a, b)
    local s, ns = a[1] + b[1], a[2] + b[2]
    if ns >= E9 then
        s, ns = s + 1, ns - E9
    end
    return {s, ns}
end

-- a + b, saturating at U64_MAX.
local function plus(a, b)
    return earlier(shifted(a, b), U64_MAX)
end

-- a - b, or 0 when b is later.
local function minus(a, b)
    if not less(b, a) then
        return {0, 0}
    end
    local s, ns = a[1] - b[1], a[2] - b[2]
    if ns < 0 then
        s, ns = s - 1, ns + E9
    end
    return {s, ns}
end

-- ⌊t / divisor⌋ for a quotient below 2^53 and a divisor below 2^53 (math.fmod is exact).
local function quotient(t, divisor)
    local whole = number(t)
    return (whole - math.fmod(whole, divisor)) / divisor
end

-- (x + y) mod m, and whether it wrapped (1 or 0), for x and y below m: nothing held
-- reaches m, so no sum is ever above 2^53 for a modulus below it.
local function add_mod(x, y, m)
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
local function muldiv(a, b, c)
    local product = a * b
    if product < EXACT then
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

-- t mod m for a modulus below 2^53, exactly: (s·1e9 + ns) mod m.
local function modulo(t, m)
    -- The periods people configure are whole seconds or divide one: then the seconds
    -- reduce alone, or drop out (a multiple of 1e9 is one of m), without muldiv's loop.
    if math.fmod(m, E9) == 0 then
        return math.fmod(t[1], m / E9) * E9 + t[2]
    end
    if math.fmod(E9, m) == 0 then
        return math.fmod(t[2], m)
    end
    local _, r = muldiv(E9, math.fmod(t[1], m), m)
    return (add_mod(r, math.fmod(t[2], m), m))
end

-- This call's now: the caller's explicit time, or the server's clock (TIME: seconds and
-- microseconds since the epoch).
local function now_from(arg)
    if arg ~= '' then
        return instant(arg)
    end
    local clock = redis.call('TIME')
    return {tonumber(clock[1]), tonumber(clock[2]) * 1000}
end

-- Keeps `key` while its state is live: it expires `lead` after now, rounded up to a
-- millisecond, and at once when there is no lead.
local function keep_for(key, lead)
    local ms = lead[1] * 1000 + math.ceil(lead[2] / 1000000)
    if ms > 0 then
        redis.call('PEXPIRE', key, ms)
    else
        redis.call('DEL', key)
    end
end
