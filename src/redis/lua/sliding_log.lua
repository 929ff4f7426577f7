-- librate's Redis scripts: the sliding window log (docs/decision.md, docs/redis.md), the same
-- decisions as src/algorithm/sliding_log.rs on the instants of time.lua.
--
-- Every admitted unit takes the next position 0, 1, 2, … and its timestamp is kept in
-- slot `position mod L` of a ring until position + L overwrites it. A request is decided
-- at `at = max(now, latest)` and logged there, so timestamps never decrease along
-- positions: n more units fit iff position h + n - 1 - L precedes the log or has expired
-- (one slot read), and the live entries are a suffix found by galloping (O(log L) reads
-- at worst, O(1) when the log is full or empty).
--
-- KEYS: each key's ring, one string (absent: a fresh log), big-endian (struct):
--   bytes 0..12: h (I4), then the latest timestamp logged, seconds (I5) and nanoseconds
--     (I4): every u64 instant (seconds < 2^35), each part an integer struct packs exactly;
--   then slot i (0 <= i < L) at byte 13 + 9·i: a timestamp, seconds (I5), nanoseconds (I4).
-- So 13 + 9·min(head, L) bytes: slot reads and writes are GETRANGE and SETRANGE, O(1)
-- whatever L (a hash of decimal fields would take several times the memory once past its
-- small listpack encoding, and GET of the whole ring would copy O(L) bytes per call).
-- An admission to a live log is STRLEN, GETRANGE of the header and of the slot that must
-- be gone, a GETRANGE per probe of the search (one when the log is full), SETRANGE of the
-- new slots (twice if they wrap) and of the header, and PEXPIRE; to a fresh one, STRLEN,
-- EXISTS and SET. A denial or a query writes nothing.
-- h is the head (the next position, the units ever admitted) as far as it matters: the
-- head itself below L, else L + (head - L) mod L. A decision reads only head mod L and
-- whether head has reached L, and every position it names is within L of the head, so
-- positions relative to h are the in-process positions shifted by a multiple of L, and
-- stay below 3L <= 3·2^20 whatever the configuration (the in-process head may reach
-- L·(2^64/P)).
--
-- Configuration: L (1..2^20), the period P (1..2^53 - 1). ARGV[3], max_wait, is always
-- 0: the clients refuse a reserve on the log before calling.

local HEADER = 13
local SLOT = 9

-- The key being decided, its configuration, and the horizon of its decision: an entry
-- logged at or before it has left the window (at - P, at] (no horizon while at < P). Set
-- by sliding_log for the functions below, which a script would otherwise rebuild as
-- closures for every key.
local key, limit, period, period_s, period_ns
local has_horizon, horizon_s, horizon_ns
-- Whether the decision stopped at a ring that is not one (see no_log).
local corrupt

-- Stops the decision of a key whose ring is not one: decide answers its error.
local function no_log()
    corrupt = true
    error('librate: no sliding log')
end

local function expired(s, ns)
    return has_horizon and not less(horizon_s, horizon_ns, s, ns)
end

-- The time from now until an entry logged at s, ns expires: s, ns + P - now, or the end
-- of the timeline when s, ns + P is past it (as `until` in process).
local function expiry(s, ns)
    s, ns = add(s, ns, period_s, period_ns)
    if past_end(s, ns) then
        return 18446744073, 709551615
    end
    return sub(s, ns, now_s, now_ns)
end

-- The timestamp at a position within L of h (its slot holds it).
local function logged(position)
    local offset = HEADER + SLOT * math.fmod(position, limit)
    local s, ns = struct.unpack('>I5I4', redis.call('GETRANGE', key, offset, offset + SLOT - 1))
    if not is_instant(s, ns) then
        no_log()
    end
    return s, ns
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

-- remaining and reset_after_ns (a reply field) of the log as it is, given its head h,
-- its newest entry (the script logs every admission at the latest time) and a position
-- that is live if any is.
local function standing(h, latest_s, latest_ns, known_live)
    if expired(latest_s, latest_ns) then
        return limit, 0
    end
    local first = first_live(math.max(h - limit, 0), known_live)
    return limit - (h - first), field(expiry(latest_s, latest_ns))
end

-- The decision of n units for `key`, or its error reply for another type at the key;
-- the log written only if `write`.
local function decide_log(n, write)
    local h, latest_s, latest_ns = 0, 0, 0
    local size = redis.pcall('STRLEN', key)
    if type(size) == 'table' then
        -- Redis's own error: another type at the key.
        return size
    end
    if size >= HEADER + SLOT then
        h, latest_s, latest_ns = struct.unpack('>I4I5I4', redis.call('GETRANGE', key, 0, HEADER - 1))
        if not is_instant(latest_s, latest_ns) or h < 1 or h >= 2 * limit
            or size ~= HEADER + SLOT * math.min(h, limit) then
            no_log()
        end
    elseif size > 0 or redis.call('EXISTS', key) == 1 then
        no_log()
    end

    local at_s, at_ns = now_s, now_ns
    if less(now_s, now_ns, latest_s, latest_ns) then
        at_s, at_ns = latest_s, latest_ns
    end
    has_horizon = not less(at_s, at_ns, period_s, period_ns)
    horizon_s, horizon_ns = sub(at_s, at_ns, period_s, period_ns)

    if n == 0 then
        local remaining, reset_after = limit, 0
        if h > 0 then
            remaining, reset_after = standing(h, latest_s, latest_ns, h - 1)
        end
        return {1, limit, remaining, 0, reset_after, 0}
    end

    -- The newest position that must have expired for n more units to fit.
    local gone = h + n - 1 - limit
    if gone >= 0 then
        local s, ns = logged(gone)
        if not expired(s, ns) then
            local remaining, reset_after = standing(h, latest_s, latest_ns, gone)
            return {0, limit, remaining, field(expiry(s, ns)), reset_after, 0}
        end
    end

    -- Admitted: positions [h, h + n) logged at `at`. The new units are live (P >= 1);
    -- search the older positions still kept.
    local new_h = h + n
    local remaining = limit - (new_h - first_live(math.max(new_h - limit, 0), h))
    local reset_s, reset_ns = expiry(at_s, at_ns)
    local admitted = {1, limit, remaining, 0, field(reset_s, reset_ns), 0}
    if not write then
        return admitted
    end
    if new_h >= 2 * limit then
        new_h = new_h - limit
    end
    local stamp = struct.pack('>I5I4', at_s, at_ns)
    local header = struct.pack('>I4I5I4', new_h, at_s, at_ns)
    if h == 0 then
        redis.call('SET', key, header .. string.rep(stamp, n), 'PX', keep_ms(reset_s, reset_ns))
    else
        -- Slots h mod L onwards, wrapping to slot 0.
        local start = math.fmod(h, limit)
        local run = math.min(n, limit - start)
        redis.call('SETRANGE', key, HEADER + SLOT * start, string.rep(stamp, run))
        if run < n then
            redis.call('SETRANGE', key, HEADER, string.rep(stamp, n - run))
        end
        redis.call('SETRANGE', key, 0, header)
        redis.call('PEXPIRE', key, keep_ms(reset_s, reset_ns))
    end
    return admitted
end

-- The decision of n units (0..L) for the key `name` with limit L and period P (see `gcra`
-- in gcra.lua), or its error reply, for this key alone: a ring that is no log, or another
-- type at the key. Any other error (a write Redis refused) fails the whole call.
local function sliding_log(name, n, rule_limit, rule_period, write)
    key, corrupt, limit, period = name, false, rule_limit, rule_period
    period_s, period_ns = split(rule_period)
    local ok, reply = pcall(decide_log, n, write)
    if ok then
        return reply
    end
    if corrupt then
        return not_state(key, 'sliding log')
    end
    error(reply)
end
