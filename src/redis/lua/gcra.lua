-- librate's Redis scripts: GCRA acquire and reserve (docs/decision.md, docs/redis.md), the same
-- arithmetic as src/algorithm/gcra.rs on the instants of time.lua.
--
-- KEYS: each key's TAT, 9 bytes big-endian: seconds (5 bytes), then nanoseconds (4), so
-- every u64 instant, packed and unpacked in one call each (absent: 0, a fresh bucket).
-- Configuration: the emission interval T, the burst B (B·T below 2^53). `max_wait`
-- (request.lua) is a decimal u64: '0' for an acquire and for every rule of a policy.

-- The decision of n units (1..B, or 0 for a query) for `key` at now (seconds,
-- nanoseconds) with a reserve's longest wait `max_wait`: its reply, {allowed, limit,
-- remaining, retry_after_ns, reset_after_ns, wait_ns}, or its error; the new TAT written
-- only if `write`. Every algorithm's decision takes these arguments (request.lua), the
-- two of its configuration after n.
function gcra(key, n, interval, burst, write, now_s, now_ns, max_wait)
    local stored = redis.pcall('GET', key)
    if type(stored) == 'table' then
        -- Redis's own error: another type at the key.
        return stored
    end
    local tat_s, tat_ns = 0, 0
    if stored then
        if #stored ~= 9 then
            return not_state(key, 'GCRA')
        end
        tat_s, tat_ns = struct.unpack('>I5I4', stored)
        if not is_instant(tat_s, tat_ns) then
            return not_state(key, 'GCRA')
        end
    end
    local tolerance = burst * interval
    local tolerance_s, tolerance_ns = split(tolerance)
    local allowed, retry_after, wait = 1, 0, 0
    if n > 0 then
        -- max(TAT, now) + n·T, if it is storable, is the TAT an admission leaves.
        local new_s, new_ns = tat_s, tat_ns
        if less(tat_s, tat_ns, now_s, now_ns) then
            new_s, new_ns = now_s, now_ns
        end
        local cost_s, cost_ns = split(n * interval)
        new_s, new_ns = add(new_s, new_ns, cost_s, cost_ns)
        -- now + τ + max_wait: the latest TAT an admission may leave (past the end of the
        -- timeline for a long enough wait, which no storable TAT reaches).
        local bound_s, bound_ns = add(now_s, now_ns, tolerance_s, tolerance_ns)
        bound_s, bound_ns = add(bound_s, bound_ns, instant(max_wait))
        if past_state(new_s, new_ns) then
            allowed, retry_after = 0, '18446744073709551615'
        elseif less(bound_s, bound_ns, new_s, new_ns) then
            allowed, retry_after = 0, field(sub(new_s, new_ns, bound_s, bound_ns))
        else
            local ahead_s, ahead_ns = sub(new_s, new_ns, now_s, now_ns)
            if write then
                -- Kept until the TAT has passed: then the bucket is fresh again.
                redis.call('SET', key, struct.pack('>I5I4', new_s, new_ns), 'PX', keep_ms(ahead_s, ahead_ns))
            end
            wait = field(sub(ahead_s, ahead_ns, tolerance_s, tolerance_ns))
            tat_s, tat_ns = new_s, new_ns
        end
    end

    -- remaining and reset_after_ns for the TAT the decision leaves.
    local debt_s, debt_ns = sub(tat_s, tat_ns, now_s, now_ns)
    -- Exact below 2^53, and at least 2^53 (past τ) otherwise.
    local debt = debt_s * 1e9 + debt_ns
    local remaining = 0
    if debt < tolerance then
        remaining = quotient(tolerance - debt, interval)
    end
    local reset_after = field(debt_s, debt_ns)
    local start_s, start_ns = tat_s, tat_ns
    if less(tat_s, tat_ns, now_s, now_ns) then
        start_s, start_ns = now_s, now_ns
    end
    -- Near the end of the timeline (the seconds alone rule it out almost always), only
    -- the units that fit below the largest state (fewer than τ's), and never full again.
    if start_s + tolerance_s + 1 >= 18446744073 and past_state(add(start_s, start_ns, tolerance_s, tolerance_ns)) then
        local room_s, room_ns = sub(18446744073, 709551359, start_s, start_ns)
        remaining = math.min(remaining, quotient(room_s * 1e9 + room_ns, interval))
        reset_after = '18446744073709551615'
    end
    return {allowed, burst, remaining, retry_after, reset_after, wait}
end
