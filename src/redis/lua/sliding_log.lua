-- librate's Redis scripts, part 2 of 2: the sliding window log (DESIGN §4, §8), the same
-- decisions as src/algorithm/sliding_log.rs on the instants of time.lua.
--
-- Every admitted unit takes the next position 0, 1, 2, … and its timestamp is kept in
-- slot `position mod L` of a ring until position + L overwrites it. A request is decided
-- at `at = max(now, latest)` and logged there, so timestamps never decrease along
-- positions: n more units fit iff position h + n - 1 - L precedes the log or has expired
-- (one slot read), and the live entries are a suffix found by galloping (O(log L) reads
-- at worst, O(1) when the log is full or empty).
--
-- KEYS[1]: the key's ring, one string (absent: a fresh log), big-endian (struct):
--   bytes 0..12: h (I4), then the latest timestamp logged, seconds (I5) and nanoseconds
--     (I4): every u64 instant (seconds < 2^35), each part an integer struct packs exactly;
--   then slot i (0 <= i < L) at byte 13 + 9·i: a timestamp, seconds (I5), nanoseconds (I4).
-- So 13 + 9·min(head, L) bytes: slot reads and writes are GETRANGE and SETRANGE, O(1)
-- whatever L (a hash of decimal fields would take several times the memory once past its
-- small listpack encoding, and GET of the whole ring would copy O(L) bytes per call).
-- An admission to a live log is STRLEN, GETRANGE of the header and of the slot that must
-- be gone, a GETRANGE per probe of the search (one when the log is full), SETRANGE of the
-- new slots (twice if they wrap) and of the header, and PEXPIRE; to a fresh one, STRLEN,
-- EXISTS, SET and PEXPIRE. A denial or a query writes nothing.
-- h is the head (the next position, the units ever admitted) as far as it matters: the
-- head itself below L, else L + (head - L) mod L. A decision reads only head mod L and
-- whether head has reached L, and every position it names is within L of the head, so
-- positions relative to h are the in-process positions shifted by a multiple of L, and
-- stay below 3L <= 3·2^20 whatever the configuration (the in-process head may reach
-- L·(2^64/P)).
--
-- ARGV: now ('' for the server's clock), n (0..L), max_wait (always 0: the client refuses
-- a reserve on the log before calling), L (1..2^20), the period P (1..2^53 - 1).
-- Returns {allowed, limit, remaining, retry_after_ns, reset_after_ns, wait_ns}, the
-- durations as decimal strings.

local HEADER = 13
local SLOT = 9

local key = KEYS[1]
local now = now_from(ARGV[1])
local n = tonumber(ARGV[2])
local limit = tonumber(ARGV[4])
local period = span(tonumber(ARGV[5]))

local function no_log()
    return redis.error_reply('librate: ' .. key .. ' holds no sliding log state')
end

-- The instant of seconds `s` and nanoseconds `ns` as unpacked, or nil if it is no u64.
local function checked(s, ns)
    local t = {s, ns}
    if ns >= E9 or less(U64_MAX, t) then
        return nil
    end
    return t
end

local h, latest = 0, {0, 0}
local size = redis.call('STRLEN', key)
if size >= HEADER + SLOT then
    local head, s, ns = struct.unpack('>I4I5I4', redis.call('GETRANGE', key, 0, HEADER - 1))
    h, latest = head, checked(s, ns)
    if not latest or h < 1 or h >= 2 * limit or size ~= HEADER + SLOT * math.min(h, limit) then
        return no_log()
    end
elseif size > 0 or redis.call('EXISTS', key) == 1 then
    return no_log()
end

local at = later(now, latest)
-- An entry logged at or before at - P has left the window (at - P, at].
local horizon = nil
if not less(at, period) then
    horizon = minus(at, period)
end

local function expired(ts)
    return horizon ~= nil and not less(horizon, ts)
end

-- Nanoseconds from now until an entry logged at ts expires: ts + P - now, U64_MAX when
-- ts + P is past the end of the timeline (as `until` in process).
local function expiry(ts)
    local s, ns = ts[1] + period[1], ts[2] + period[2]
    if ns >= E9 then
        s, ns = s + 1, ns - E9
    end
    local due = {s, ns}
    if less(U64_MAX, due) then
        return U64_MAX
    end
    return minus(due, now)
end

-- The timestamp at a position within L of h (its slot holds it).
local function logged(position)
    local offset = HEADER + SLOT * math.fmod(position, limit)
    local bytes = redis.call('GETRANGE', key, offset, offset + SLOT - 1)
    local ts = checked(struct.unpack('>I5I4', bytes))
    if not ts then
        error(no_log())
    end
    return ts
end

-- The first position in [low, high) live at `at`, or high if all have expired: gallops up
-- from low, then bisects, probing the positions the in-process search probes.
local function first_live(low, high)
    local step = 1
    while low < high do
        local probe = low + math.min(step - 1, high - low - 1)
        if not expired(logged(probe)) then
            high = probe
            break
        end
        low = probe + 1
        step = step * 2
    end
    while low < high do
        local middle = low + math.floor((high - low) / 2)
        if not expired(logged(middle)) then
            high = middle
        else
            low = middle + 1
        end
    end
    return low
end

-- remaining and reset_after_ns of the log as it is, given a position that is live if any
-- is. The newest entry is at `latest` (the script logs every admission there).
local function standing(known_live)
    if expired(latest) then
        return limit, '0'
    end
    local first = first_live(math.max(h - limit, 0), known_live)
    return limit - (h - first), decimal(expiry(latest))
end

if n == 0 then
    local remaining, reset_after = limit, '0'
    if h > 0 then
        remaining, reset_after = standing(h - 1)
    end
    return {1, limit, remaining, '0', reset_after, '0'}
end

-- The newest position that must have expired for n more units to fit.
local gone = h + n - 1 - limit
if gone >= 0 then
    local ts = logged(gone)
    if not expired(ts) then
        local remaining, reset_after = standing(gone)
        return {0, limit, remaining, decimal(expiry(ts)), reset_after, '0'}
    end
end

-- Admitted: positions [h, h + n) logged at `at`. The new units are live (P >= 1); search
-- the older positions still kept.
local new_h = h + n
local remaining = limit - (new_h - first_live(math.max(new_h - limit, 0), h))
local reset_after = expiry(at)
if new_h >= 2 * limit then
    new_h = new_h - limit
end
local header = struct.pack('>I4I5I4', new_h, at[1], at[2])
local stamp = struct.pack('>I5I4', at[1], at[2])
if h == 0 then
    redis.call('SET', key, header .. string.rep(stamp, n))
else
    -- Slots h mod L onwards, wrapping to slot 0.
    local start = math.fmod(h, limit)
    local run = math.min(n, limit - start)
    redis.call('SETRANGE', key, HEADER + SLOT * start, string.rep(stamp, run))
    if run < n then
        redis.call('SETRANGE', key, HEADER, string.rep(stamp, n - run))
    end
    redis.call('SETRANGE', key, 0, header)
end
keep_for(key, reset_after)
return {1, limit, remaining, '0', decimal(reset_after), '0'}
