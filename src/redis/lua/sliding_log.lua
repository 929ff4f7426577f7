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
--
-- One decision's functions share its `log`, a table: the key, L, P (as an instant), now,
-- the horizon of the decision (an entry logged at or before it has left the window
-- (at - P, at]; while at < P nothing has, and the horizon is the instant one second
-- before 0), and whether the ring proved to be no log. The header is 13 bytes (h, then
-- the latest timestamp), a slot 9.

-- Stops the decision of `log`, whose ring is not one: sliding_log answers its error.
function no_log(log)
    log.corrupt = true
    error('librate: no sliding log')
end

-- Whether an entry logged at s, ns has left `log`'s window.
function expired(log, s, ns)
    return not less(log.horizon_s, log.horizon_ns, s, ns)
end

-- The time from now until an entry of `log` logged at s, ns expires: s, ns + P - now, or
-- the end of the timeline when s, ns + P is past it (as `until` in process).
function expiry(log, s, ns)
    s, ns = add(s, ns, log.period_s, log.period_ns)
    if past_end(s, ns) then
        return 18446744073, 709551615
    end
    return sub(s, ns, log.now_s, log.now_ns)
end

-- The timestamp at a position within L of h (its slot holds it).
function logged(log, position)
    local offset = 13 + 9 * math.fmod(position, log.limit)
    local s, ns = struct.unpack('>I5I4', redis.call('GETRANGE', log.key, offset, offset + 8))
    if not is_instant(s, ns) then
        no_log(log)
    end
    return s, ns
end

-- The first position in [low, high) live at `at`, or high if all have expired: gallops up
-- from low, then bisects, probing the positions the in-process search probes.
function first_live(log, low, high)
    local step = 1
    while low < high do
        local probe = low + math.min(step - 1, high - low - 1)
        if not expired(log, logged(log, probe)) then
            high = probe
            break
        end
        low = probe + 1
        step = step * 2
    end
    while low < high do
        local middle = low + math.floor((high - low) / 2)
        if not expired(log, logged(log, middle)) then
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
function standing(log, h, latest_s, latest_ns, known_live)
    if expired(log, latest_s, latest_ns) then
        return log.limit, 0
    end
    local first = first_live(log, math.max(h - log.limit, 0), known_live)
    return log.limit - (h - first), field(expiry(log, latest_s, latest_ns))
end

-- The decision of n units for `log`'s key, or its error reply for another type at the
-- key; the log written only if `write`.
function decide_log(log, n, write)
    local key, limit = log.key, log.limit
    local h, latest_s, latest_ns = 0, 0, 0
    local size = redis.pcall('STRLEN', key)
    if type(size) == 'table' then
        -- Redis's own error: another type at the key.
        return size
    end
    if size >= 13 + 9 then
        h, latest_s, latest_ns = struct.unpack('>I4I5I4', redis.call('GETRANGE', key, 0, 12))
        if not is_instant(latest_s, latest_ns) or h < 1 or h >= 2 * limit
            or size ~= 13 + 9 * math.min(h, limit) then
            no_log(log)
        end
    elseif size > 0 or redis.call('EXISTS', key) == 1 then
        no_log(log)
    end

    local at_s, at_ns = log.now_s, log.now_ns
    if less(at_s, at_ns, latest_s, latest_ns) then
        at_s, at_ns = latest_s, latest_ns
    end
    if less(at_s, at_ns, log.period_s, log.period_ns) then
        log.horizon_s, log.horizon_ns = -1, 0
    else
        log.horizon_s, log.horizon_ns = sub(at_s, at_ns, log.period_s, log.period_ns)
    end

    if n == 0 then
        local remaining, reset_after = limit, 0
        if h > 0 then
            remaining, reset_after = standing(log, h, latest_s, latest_ns, h - 1)
        end
        return {1, limit, remaining, 0, reset_after, 0}
    end

    -- The newest position that must have expired for n more units to fit.
    local gone = h + n - 1 - limit
    if gone >= 0 then
        local s, ns = logged(log, gone)
        if not expired(log, s, ns) then
            local remaining, reset_after = standing(log, h, latest_s, latest_ns, gone)
            return {0, limit, remaining, field(expiry(log, s, ns)), reset_after, 0}
        end
    end

    -- Admitted: positions [h, h + n) logged at `at`. The new units are live (P >= 1);
    -- search the older positions still kept.
    local new_h = h + n
    local remaining = limit - (new_h - first_live(log, math.max(new_h - limit, 0), h))
    local reset_s, reset_ns = expiry(log, at_s, at_ns)
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
        redis.call('SETRANGE', key, 13 + 9 * start, string.rep(stamp, run))
        if run < n then
            redis.call('SETRANGE', key, 13, string.rep(stamp, n - run))
        end
        redis.call('SETRANGE', key, 0, header)
        redis.call('PEXPIRE', key, keep_ms(reset_s, reset_ns))
    end
    return admitted
end

-- The decision of n units (0..L) for `key` with limit L and period P at now (see `gcra`
-- in gcra.lua), or its error reply, for this key alone: a ring that is no log, or another
-- type at the key. Any other error (a write Redis refused) fails the whole call.
function sliding_log(key, n, limit, period, write, now_s, now_ns)
    local period_s, period_ns = split(period)
    local log = {key = key, limit = limit, period_s = period_s, period_ns = period_ns,
        now_s = now_s, now_ns = now_ns, corrupt = false}
    local ok, reply = pcall(decide_log, log, n, write)
    if ok then
        return reply
    end
    if log.corrupt then
        return not_state(key, 'sliding log')
    end
    error(reply)
end
