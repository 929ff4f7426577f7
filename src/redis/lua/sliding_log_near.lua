-- librate's Redis scripts: the sliding window log's decision near now (docs/decision.md,
-- docs/redis.md), sliding_log.lua's in plain numbers, and the one a log's call takes almost always.
--
-- sliding_log.lua decides on instants with the helper functions of time.lua and its own,
-- which Redis's Lua builds again on every call. Its expiry test needs none of them: a
-- timestamp's distance back from the time of the decision is one number where it
-- matters. Its reply fields are durations from now: when now lies before 1.8e19 ns (so
-- nothing logged reaches the end of the timeline), the period P is below 2^52 ns and the
-- latest timestamp lies before now + 2^52 ns (4.5e6 s), every field (a live timestamp
-- plus P, less now) is one number below 2^53. sliding_log_near decides those requests in
-- one function, reading and writing the same slots as sliding_log in the same order;
-- any other request, and a ring that is no log (or a slot past the latest timestamp's
-- second, which no log holds), it leaves to sliding_log, which `exact()` builds
-- (src/redis/scripts.rs), and which gives the same decision here. It has written nothing
-- when it does.

-- The timestamp (seconds, nanoseconds) in the slot of `position` (within L of the head)
-- of the log at `key` of limit L, whose latest timestamp has the seconds `latest_s`;
-- nothing for one sliding_log_near leaves to sliding_log: no instant, or one after the
-- latest.
function slot_near(key, position, limit, latest_s)
    local offset = 13 + 9 * math.fmod(position, limit)
    local s, ns = struct.unpack('>I5I4', redis.call('GETRANGE', key, offset, offset + 8))
    if ns < 1e9 and s <= latest_s then
        return s, ns
    end
end

-- The decision of n units for `key` (see `sliding_log` in sliding_log.lua).
function sliding_log_near(key, n, limit, period, write, now_s, now_ns)
    if now_s >= 18e9 or period >= 4503599627370496 then
        return exact().sliding_log(key, n, limit, period, write, now_s, now_ns)
    end
    local size = redis.pcall('STRLEN', key)
    if type(size) == 'table' then
        return size
    end
    -- The header (sliding_log.lua's layout): h, the latest timestamp.
    local h, latest_s, latest_ns = 0, 0, 0
    if size >= 22 then
        h, latest_s, latest_ns = struct.unpack('>I4I5I4', redis.call('GETRANGE', key, 0, 12))
        if latest_ns >= 1e9 or latest_s - now_s >= 4.5e6 or h < 1 or h >= 2 * limit
            or size ~= 13 + 9 * math.min(h, limit) then
            return exact().sliding_log(key, n, limit, period, write, now_s, now_ns)
        end
    elseif size > 0 or ((n == 0 or not write) and redis.call('EXISTS', key) == 1) then
        -- Not a log (an empty string has no length either: an admission's write finds it).
        return exact().sliding_log(key, n, limit, period, write, now_s, now_ns)
    end

    -- Decided at `at`, the later of now and the latest timestamp: a timestamp t (at most
    -- `at`) at or before at − P has expired. One whose seconds lie 4.6e6 or more before
    -- at's has (P < 2^52 ns, less than 4.6e6 s less a second); a nearer one is live iff
    -- t − at > −P, one number below 2^53 (nothing has expired before P, where t − at > −P
    -- for every t from 0).
    local at_s, at_ns = now_s, now_ns
    if latest_s > now_s or (latest_s == now_s and latest_ns > now_ns) then
        at_s, at_ns = latest_s, latest_ns
    end
    local latest_live = latest_s - at_s > -4.6e6
        and (latest_s - at_s) * 1e9 + (latest_ns - at_ns) > -period

    -- The verdict, then the search for the first live position in [low, high) (high if
    -- none is) that `remaining` counts from `head`: sliding_log's `standing` for a query
    -- or a denial (no search when the newest entry has expired), its count of the live
    -- entries for an admission.
    local allowed, retry_after = 1, 0
    local head, low, high = h, math.max(h - limit, 0), h - 1
    local search = h > 0 and latest_live
    if n > 0 then
        -- The newest position that must have expired for n more units to fit.
        local gone = h + n - 1 - limit
        if gone >= 0 then
            local s, ns = slot_near(key, gone, limit, latest_s)
            if not s then
                return exact().sliding_log(key, n, limit, period, write, now_s, now_ns)
            end
            if s - at_s > -4.6e6 and (s - at_s) * 1e9 + (ns - at_ns) > -period then
                allowed, retry_after, high = 0, (s - now_s) * 1e9 + (ns - now_ns) + period, gone
            end
        end
        if allowed == 1 then
            head, high, search = h + n, h, true
            low = math.max(head - limit, 0)
        end
    end
    local remaining, reset_after = limit, 0
    if search then
        -- Gallops up from low, then bisects: the positions sliding_log's first_live probes.
        local step, galloping = 1, true
        while low < high do
            local probe
            if galloping then
                probe = low + math.min(step - 1, high - low - 1)
            else
                probe = low + math.floor((high - low) / 2)
            end
            local s, ns = slot_near(key, probe, limit, latest_s)
            if not s then
                return exact().sliding_log(key, n, limit, period, write, now_s, now_ns)
            end
            if s - at_s > -4.6e6 and (s - at_s) * 1e9 + (ns - at_ns) > -period then
                high, galloping = probe, false
            else
                low, step = probe + 1, step * 2
            end
        end
        remaining = limit - (head - low)
        if allowed == 1 and n > 0 then
            reset_after = (at_s - now_s) * 1e9 + (at_ns - now_ns) + period
        else
            reset_after = (latest_s - now_s) * 1e9 + (latest_ns - now_ns) + period
        end
    end
    if allowed == 1 and n > 0 and write then
        -- As sliding_log writes an admission: positions [h, h + n) logged at `at`, kept
        -- until it expires (reset_after, in milliseconds rounded up).
        local new_h = head
        if new_h >= 2 * limit then
            new_h = new_h - limit
        end
        local stamp = struct.pack('>I5I4', at_s, at_ns)
        local header = struct.pack('>I4I5I4', new_h, at_s, at_ns)
        local keep_ns = math.fmod(reset_after, 1e9)
        local keep = (reset_after - keep_ns) / 1e6 + math.ceil(keep_ns / 1e6)
        if h == 0 then
            -- Only where no key is: an empty string there is left to sliding_log, which
            -- refuses it, and nothing is written.
            if not redis.call('SET', key, header .. string.rep(stamp, n), 'NX', 'PX', keep) then
                return exact().sliding_log(key, n, limit, period, write, now_s, now_ns)
            end
        else
            local start = math.fmod(h, limit)
            local run = math.min(n, limit - start)
            redis.call('SETRANGE', key, 13 + 9 * start, string.rep(stamp, run))
            if run < n then
                redis.call('SETRANGE', key, 13, string.rep(stamp, n - run))
            end
            redis.call('SETRANGE', key, 0, header)
            redis.call('PEXPIRE', key, keep)
        end
    end
    return {allowed, limit, remaining, retry_after, reset_after, 0}
end
