-- librate's Redis scripts: GCRA acquire and reserve (DESIGN §4, §8), the same arithmetic
-- as src/algorithm/gcra.rs on the instants of time.lua.
--
-- KEYS: each key's TAT, 9 bytes big-endian: seconds (5 bytes), then nanoseconds (4), so
-- every u64 instant, packed and unpacked in one call each (absent: 0, a fresh bucket).
-- ARGV: now, n (1..burst, or 0 for a query), max_wait (a decimal u64; 0 for an acquire),
-- the emission interval T, the burst B (B·T below 2^53).

local max_wait_s, max_wait_ns = instant(ARGV[3])
local interval = tonumber(ARGV[4])
local burst = tonumber(ARGV[5])
local tolerance = burst * interval
local tolerance_s, tolerance_ns = split(tolerance)
local cost_s, cost_ns = split(n * interval)
-- now + τ + max_wait: the latest TAT an admission may leave (past the end of the
-- timeline for a long enough wait, which no storable TAT reaches).
local bound_s, bound_ns = add(now_s, now_ns, tolerance_s, tolerance_ns)
bound_s, bound_ns = add(bound_s, bound_ns, max_wait_s, max_wait_ns)

-- remaining and reset_after_ns (a reply field) for the TAT a decision leaves.
local function report(tat_s, tat_ns)
    local debt_s, debt_ns = sub(tat_s, tat_ns, now_s, now_ns)
    -- Exact below 2^53, and at least 2^53 (past τ) otherwise.
    local debt = debt_s * E9 + debt_ns
    local remaining = 0
    if debt < tolerance then
        remaining = quotient(tolerance - debt, interval)
    end
    local start_s, start_ns = tat_s, tat_ns
    if less(tat_s, tat_ns, now_s, now_ns) then
        start_s, start_ns = now_s, now_ns
    end
    -- Far from the end of the timeline (the seconds alone tell), or not past the largest
    -- state when full.
    if start_s + tolerance_s + 1 < STATE_S then
        return remaining, field(debt_s, debt_ns)
    end
    local full_s, full_ns = add(start_s, start_ns, tolerance_s, tolerance_ns)
    if not less(STATE_S, STATE_NS, full_s, full_ns) then
        return remaining, field(debt_s, debt_ns)
    end
    -- The end of the timeline: only the units that fit below the largest state (fewer
    -- than τ's), and never full again.
    local room_s, room_ns = sub(STATE_S, STATE_NS, start_s, start_ns)
    return math.min(remaining, quotient(room_s * E9 + room_ns, interval)), field(END_S, END_NS)
end

local function decide(key)
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
    if n == 0 then
        local remaining, reset_after = report(tat_s, tat_ns)
        return {1, burst, remaining, 0, reset_after, 0}
    end
    -- max(TAT, now) + n·T, if it is storable.
    local new_s, new_ns = tat_s, tat_ns
    if less(tat_s, tat_ns, now_s, now_ns) then
        new_s, new_ns = now_s, now_ns
    end
    new_s, new_ns = add(new_s, new_ns, cost_s, cost_ns)
    local storable = not less(STATE_S, STATE_NS, new_s, new_ns)
    if storable and not less(bound_s, bound_ns, new_s, new_ns) then
        local ahead_s, ahead_ns = sub(new_s, new_ns, now_s, now_ns)
        local remaining, reset_after = report(new_s, new_ns)
        -- Kept until the TAT has passed: then the bucket is fresh again.
        redis.call('SET', key, struct.pack('>I5I4', new_s, new_ns), 'PX', keep_ms(ahead_s, ahead_ns))
        return {1, burst, remaining, 0, reset_after, field(sub(ahead_s, ahead_ns, tolerance_s, tolerance_ns))}
    end
    local retry_after = field(END_S, END_NS)
    if storable then
        retry_after = field(sub(new_s, new_ns, bound_s, bound_ns))
    end
    local remaining, reset_after = report(tat_s, tat_ns)
    return {0, burst, remaining, retry_after, reset_after, 0}
end
