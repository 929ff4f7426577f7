-- librate's Redis scripts: GCRA's decision where everything lies near now (docs/decision.md,
-- docs/redis.md), the decision of gcra.lua in plain numbers, and the one a GCRA call takes almost
-- always.
--
-- gcra.lua decides on instants, pairs of numbers, with helper functions that Redis's Lua
-- builds again on every call. Near now, every duration the decision handles is one exact
-- number: when now lies before 1.8e19 ns (some 13 years before the end of the u64
-- timeline, so no TAT reached from it passes the largest state), the stored TAT lies
-- before now + 2^52 ns, and the tolerance τ = B·T and max_wait together stay below 2^52
-- ns (52 days), then the debt max(TAT − now, 0), the cost n·T (n <= B), their sum and
-- every field stay below 2^53. gcra_near decides those requests with no function of its
-- own to call; any other, and a key holding anything but a TAT, it leaves to gcra.lua's
-- `gcra`, which `exact()` builds (src/redis/scripts.rs), and which gives the same
-- decision here.

-- The decision of n units for `key` (see `gcra` in gcra.lua).
function gcra_near(key, n, interval, burst, write, now_s, now_ns, max_wait)
    local tolerance = burst * interval
    local wait_limit = tolerance
    if max_wait ~= '0' and #max_wait <= 15 then
        -- Below 1e15, so exact; the sum is exact below 2^53, and at least 2^53 otherwise.
        -- An acquire's 0 is not read: a conversion costs as much as the arithmetic here.
        wait_limit = tolerance + tonumber(max_wait)
    end
    local stored = redis.pcall('GET', key)
    if now_s < 18e9 and #max_wait <= 15 and wait_limit < 4503599627370496
        and type(stored) ~= 'table' and (not stored or #stored == 9) then
        local debt = 0
        local fits = true
        if stored then
            local tat_s, tat_ns = struct.unpack('>I5I4', stored)
            -- Seconds apart below 4.5e6 keeps the debt below 2^52.
            fits = tat_ns < 1e9 and tat_s - now_s < 4.5e6
            if fits and tat_s >= now_s then
                debt = math.max(0, (tat_s - now_s) * 1e9 + (tat_ns - now_ns))
            end
        end
        if fits then
            local allowed, retry_after, wait = 1, 0, 0
            if n > 0 then
                local ahead = debt + n * interval
                if ahead > wait_limit then
                    allowed, retry_after = 0, ahead - wait_limit
                else
                    if write then
                        -- The TAT now + ahead, kept until it has passed (gcra.lua).
                        local ns = math.fmod(ahead, 1e9)
                        local s, tat_ns = (ahead - ns) / 1e9, now_ns + ns
                        local tat_s = now_s + s
                        if tat_ns >= 1e9 then
                            tat_s, tat_ns = tat_s + 1, tat_ns - 1e9
                        end
                        redis.call('SET', key, struct.pack('>I5I4', tat_s, tat_ns), 'PX', s * 1000 + math.ceil(ns / 1000000))
                    end
                    wait = math.max(0, ahead - tolerance)
                    debt = ahead
                end
            end
            local remaining = 0
            if debt < tolerance then
                local room = tolerance - debt
                remaining = (room - math.fmod(room, interval)) / interval
            end
            return {allowed, burst, remaining, retry_after, debt, wait}
        end
    end
    return exact().gcra(key, n, interval, burst, write, now_s, now_ns, max_wait)
end
