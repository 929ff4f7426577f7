-- librate's lease script for GCRA (docs/leases.md): grants, renews and hands back holders'
-- shares of one global rule, all in one hash, so one Cluster slot. It stands alone.
--
-- A share is a rate, in millionths of the rule's rate, and a burst, in units. The script
-- keeps, per holder, the leases it may still be deciding from (the last, and each before
-- it until it ends), and never grants a share that would make the rates of everything
-- still held exceed the rule's, or their bursts the rule's burst. Times are whole
-- microseconds (below 2^53 for 285 years, so exact).
--
-- Requests can also be decided here, one call each ('acquire': a keyed rule's keys that no
-- holder leases). They decide from what the leases leave, the rule less every share still
-- held, as one more bucket of tokens: its tokens never grow when a grant shrinks it, and
-- capacity it gains starts empty, so everything held plus it stays within the rule.
--
-- KEYS[1]: the rule's hash. Fields: 'rule' (interval_ns:burst:lease_us, what it was made
-- for), 'epoch' (when it was made), 'quiet_until' (no grant before it), per holder
-- 'h:' .. holder: its record of doubles (unpack_record, below), and 'direct': the
-- requests decided here (unpack_direct).
-- ARGV: op ('renew', 'release' or 'acquire'), now in microseconds ('' for the server's
-- TIME), the rule's emission interval in ns, its burst, the lease length in microseconds,
-- the holder's name ('' for 'acquire'), its demand (millionths of the rule's rate, 0 to
-- 1e6), or for 'acquire' the units asked for.
-- Reply to 'renew': {status, rate, burst, lease_us, epoch, held_rate, held_burst, holders, 0}
-- (the last, a fixed window's number in its script, as every lease script replies):
-- status 'granted' (the share, held lease_us from now) or 'quiet' (Redis made this rule
-- afresh lately, so a lease from before may still run: no share for lease_us); held_*
-- and holders count everything still held after this call. Reply to 'release': 1.
-- Reply to 'acquire': {allowed (1 or 0), limit, remaining, retry_after_us, reset_after_us}
-- of what the leases leave (docs/decision.md).

local SCALE = 1000000
local key = KEYS[1]
local op = ARGV[1]
local now = lease_now(ARGV[2])
local interval, burst, lease = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local demand = tonumber(ARGV[7])
if not (now and interval and burst and lease and demand)
        or (op ~= 'renew' and op ~= 'release' and op ~= 'acquire')
        or interval < 1 or burst < 1 or lease < 1 or demand < 0 or demand ~= math.floor(demand)
        or demand > (op == 'acquire' and 2 ^ 53 or SCALE) then
    return lease_arguments_refused(ARGV)
end
local rule = ARGV[3] .. ':' .. ARGV[4] .. ':' .. ARGV[5]
local mine = op ~= 'acquire' and 'h:' .. ARGV[6]

-- A rule this Redis has not seen, or has lost (restarted without persistence, a replica
-- that missed writes): a lease granted before may still run for one lease length, holding
-- the whole rule for all the script can tell, so none is granted until then.
--
-- The requests decided here start with the whole rule in their bucket when a request made
-- the hash, as a rule Redis decides alone does (a key nobody leased yet is the common
-- case): a loss of state then lets them admit beside leases still held on the key, for
-- one lease at most (docs/leases.md, keys). A renewal that made it leaves their bucket
-- empty until the quiet ends.
local made_direct
if op == 'acquire' then
    made_direct = struct.pack('>ddddddd', now, 0, interval, burst, now, 0, 0)
else
    made_direct = struct.pack('>ddddddd', now + lease, burst * interval, interval, burst, now, 0, 0)
end
local state, reply = lease_open(key, rule, 'interval_ns:burst:lease_us', op, now, now + lease,
    {direct = made_direct}, {'agg', 'direct', mine or 'direct'})
if not state then
    return reply
end
local epoch, quiet_until = tonumber(state.epoch), tonumber(state.quiet_until)
if not quiet_until or not epoch then
    return redis.error_reply('librate: ' .. key .. ' holds no lease state')
end

-- A holder's record: its last demand, then the leases it may still be deciding from (rate,
-- burst, end), oldest first: the share granted last, and each before it that is larger
-- in rate or burst than every later one (a response may have been lost, so any of them
-- may be the one in use until it ends). At most MOST_LEASES; nil for bytes that are not
-- one.
local MOST_LEASES = 64
local function unpack_record(packed)
    if #packed < 32 or (#packed - 8) % 24 ~= 0 or #packed > 8 + 24 * MOST_LEASES then
        return nil
    end
    local last_demand, pos = struct.unpack('>d', packed)
    local leases = {}
    while pos <= #packed do
        local rate, share_burst, ends
        rate, share_burst, ends, pos = struct.unpack('>ddd', packed, pos)
        leases[#leases + 1] = {rate, share_burst, ends}
    end
    return last_demand, leases
end

-- The largest rate and burst of `leases` that have not ended.
local function held_by(leases)
    local rate, share_burst = 0, 0
    for _, held in ipairs(leases) do
        if held[3] > now then
            rate, share_burst = math.max(rate, held[1]), math.max(share_burst, held[2])
        end
    end
    return rate, share_burst
end

-- Writes this holder's record: its demand, and the leases it may be deciding from from
-- now on, its unended ones (`leases`) and one of `rate` and `share_burst` to `ends`, less
-- each that a later one is as large as in both; returns those leases.
local function record(leases, rate, share_burst, ends)
    local unended = {}
    for _, held in ipairs(leases) do
        if held[3] > now then
            unended[#unended + 1] = held
        end
    end
    unended[#unended + 1] = {rate, share_burst, ends}
    local kept, later_rate, later_burst = {}, 0, 0
    for i = #unended, 1, -1 do
        local held = unended[i]
        if i == #unended or held[1] > later_rate or held[2] > later_burst then
            table.insert(kept, 1, held)
        end
        later_rate, later_burst = math.max(later_rate, held[1]), math.max(later_burst, held[2])
    end
    while #kept > MOST_LEASES do
        -- Past the bound (renewals far more often than a lease): the two oldest as one,
        -- as large as both and ending with the later.
        local first, second = table.remove(kept, 1), kept[1]
        kept[1] = {math.max(first[1], second[1]), math.max(first[2], second[2]), second[3]}
    end
    local packed = {struct.pack('>d', demand)}
    for _, held in ipairs(kept) do
        packed[#packed + 1] = struct.pack('>ddd', held[1], held[2], held[3])
    end
    redis.call('HSET', key, mine, table.concat(packed))
    return kept
end

-- When to read every record again for `leases`: when the first of them ends (what they
-- hold may drop then), but not within a sixteenth of a lease from now, so that every
-- record is read at most that often whatever the holders.
local function soonest(leases)
    local first = math.huge
    for _, held in ipairs(leases) do
        first = math.min(first, held[3])
    end
    return math.max(first, now + math.max(1, math.floor(lease / 16)))
end

-- What every holder may still be deciding from, kept between calls (the hash's 'agg'):
-- the sums of their held rates and bursts, their demands' sum and count, the division's
-- level (the share every demand above it gets; -1 when every demand fitted), the last
-- lease's end, when they were last written, and when to read every record again: when a
-- lease counted may end (a sum may drop then: at most once a sixteenth of a lease), a
-- quarter lease after the last reading, or at a time before the last write. Between readings a sum only changes by what a
-- holder's own call changes in its own record, so it never counts less than is held, and
-- a call reads one record instead of every holder's. A rule of few holders is read whole
-- at every call, its division exact.
local FEW = 16
local function unpack_agg(packed)
    if packed == nil or #packed ~= 64 then
        return nil
    end
    local a = {}
    a.rate, a.burst, a.total, a.count, a.level, a.latest, a.at, a.read_again =
        struct.unpack('>dddddddd', packed)
    return a
end

local function write_agg(a)
    redis.call('HSET', key, 'agg', struct.pack('>dddddddd', a.rate, a.burst, a.total, a.count,
        a.level, a.latest, a.at, a.read_again))
end

local agg = unpack_agg(state.agg)
if state.agg ~= nil and not agg then
    return redis.error_reply('librate: ' .. key .. ' holds no lease state at agg')
end

-- This holder's own record, if it has one: its leases and its last demand.
local own, own_demand = {}, nil
if mine and state[mine] then
    own_demand, own = unpack_record(state[mine])
    if not own then
        return redis.error_reply('librate: ' .. key .. ' holds no lease state at ' .. mine)
    end
end

if op == 'release' then
    -- The holder stopped deciding before it asked: nothing it held is in use. The sums
    -- count it until every record is read again, at the next call.
    redis.call('HDEL', key, mine)
    if agg then
        agg.read_again = math.min(agg.read_again, now)
        write_agg(agg)
    end
    return 1
end

-- Reads every record: drops those whose leases all ended, and sums the rest (this
-- holder's included) into a fresh 'agg'; returns it, this holder's record, and the other
-- holders' demands.
local function read_all()
    local fields = redis.call('HGETALL', key)
    local a = {rate = 0, burst = 0, total = 0, count = 0, level = -1, latest = quiet_until,
        at = now, read_again = now + math.max(1, math.floor(lease / 4))}
    local others, mine_leases, mine_demand = {}, {}, nil
    for i = 1, #fields, 2 do
        local name, packed = fields[i], fields[i + 1]
        if string.sub(name, 1, 2) == 'h:' then
            local last_demand, leases = unpack_record(packed)
            if not leases then
                return nil, redis.error_reply('librate: ' .. key .. ' holds no lease state at ' .. name)
            end
            local last_end = leases[#leases][3]
            if last_end <= now then
                -- Every lease it held has ended (the last ends last): it holds nothing.
                redis.call('HDEL', key, name)
            else
                local rate, share_burst = held_by(leases)
                a.rate, a.burst = a.rate + rate, a.burst + share_burst
                a.total, a.count = a.total + last_demand, a.count + 1
                a.latest = math.max(a.latest, last_end)
                a.read_again = math.min(a.read_again, soonest(leases))
                if name == mine then
                    mine_leases, mine_demand = leases, last_demand
                else
                    others[#others + 1] = last_demand
                end
            end
        end
    end
    return a, mine_leases, mine_demand, others
end

-- What the other holders may still be deciding from, and their demands' sum and count:
-- the sums less this holder's record, which holds what it held when last summed (none of
-- its leases has ended since: they are read again before). Every record is read if
-- `whole`, or when due; then the others' demands are known one by one. Returns the error
-- reply of a record that is not one.
local others_demands, others_rate, others_burst, others_total, others_count
local function sum_up(whole)
    if whole or agg == nil or now >= agg.read_again or now < agg.at or agg.count <= FEW then
        local read, leases, last_demand, others = read_all()
        if not read then
            return leases
        end
        agg, own, own_demand, others_demands = read, leases, last_demand, others
    end
    local own_rate, own_burst = held_by(own)
    others_rate, others_burst = agg.rate - own_rate, agg.burst - own_burst
    others_total = agg.total - (own_demand or 0)
    others_count = agg.count - (own_demand and 1 or 0)
end
local refused = sum_up(false)
if refused then
    return refused
end
local latest = agg.latest

-- The requests decided here: their bucket, where it stood at `at` (its
-- `debt`, ns until it is full again), under the share it held since (one unit every
-- `every` ns, a burst of `most`; every 0 for none), and their demand, the units asked for
-- since `asked_since` and in the lease before it. Nil for bytes that are not one.
local function unpack_direct(packed)
    if packed == nil or #packed ~= 56 then
        return nil
    end
    local d = {}
    d.at, d.debt, d.every, d.most, d.asked_since, d.asked, d.asked_before =
        struct.unpack('>ddddddd', packed)
    return d
end

local direct = unpack_direct(state.direct)
if not direct then
    return redis.error_reply('librate: ' .. key .. ' holds no lease state at direct')
end

-- Moves the bucket to now (its debt counted from `at`, so a time before it only adds to
-- the debt), under the share that `held_rate` and `held_burst`
-- leave from now on: the tokens it has, never more, within the new burst; capacity it
-- gains starts empty. A share whose full debt is not exact in a double is none.
local function direct_now(held_rate, held_burst)
    local rate, most = SCALE - held_rate, burst - held_burst
    local every = 0
    if rate == SCALE then
        every = interval
    elseif rate >= 1 then
        local whole = interval * SCALE
        every = math.floor(whole / rate)
        if whole >= 2 ^ 53 or every * rate < whole then
            every = every + 1
        end
    end
    if most < 1 or every < 1 or most * every >= 2 ^ 53 then
        every, most = 0, 0
    end
    local debt = math.max(0, direct.debt - (now - direct.at) * 1000)
    if every ~= direct.every or most ~= direct.most then
        local tokens = 0
        if direct.every > 0 then
            tokens = direct.most - math.ceil(debt / direct.every)
        end
        tokens = math.max(0, math.min(tokens, most))
        debt = (most - tokens) * every
    end
    direct.at, direct.debt, direct.every, direct.most = now, debt, every, most
end

-- The requests' demand in millionths of the rule's rate: the larger of the lease before
-- and this one so far.
local function direct_demand()
    if now >= direct.asked_since + lease then
        direct.asked_before = now < direct.asked_since + 2 * lease and direct.asked or 0
        direct.asked_since, direct.asked = now, 0
    end
    local asked = math.max(direct.asked, direct.asked_before)
    return math.min(SCALE, math.ceil(asked * interval * 1000 / lease))
end

local function write_direct()
    redis.call('HSET', key, 'direct', struct.pack('>ddddddd', direct.at, direct.debt, direct.every,
        direct.most, direct.asked_since, direct.asked, direct.asked_before))
end

if op == 'acquire' then
    local n = demand
    direct_demand()
    direct.asked = direct.asked + n
    local allowed, retry = n == 0, 0
    direct_now(others_rate, others_burst)
    local full, debt = direct.most * direct.every, direct.debt
    if n == 0 then
        -- A query: admitted, nothing taken.
    elseif n > direct.most then
        -- Held by leases: the rule is divided again within a lease.
        retry = lease
    elseif debt + n * direct.every <= full then
        allowed = true
        debt = debt + n * direct.every
        direct.debt = debt
    else
        retry = math.ceil((debt + n * direct.every - full) / 1000)
    end
    write_direct()
    write_agg(agg)
    -- Kept a lease past the bucket's being full again and the last lease's end.
    latest = math.max(latest, now + math.ceil(debt / 1000))
    redis.call('PEXPIRE', key, math.max(1, math.ceil((latest - now + lease) / 1000)))
    local remaining = 0
    if direct.every > 0 then
        remaining = math.max(0, math.floor((full - debt) / direct.every))
    end
    return {allowed and 1 or 0, direct.most, remaining, retry, math.ceil(debt / 1000)}
end

-- The requests decided here share in the division by their demand (not counted among
-- the holders).
local asked = direct_demand()
local function totals()
    if asked > 0 then
        return others_total + demand + asked, others_count + 2
    end
    return others_total + demand, others_count + 1
end
local total, count = totals()
if total > SCALE and not others_demands and agg.level < 0 then
    -- Every demand fitted when last divided, and no longer does: divide again.
    refused = sum_up(true)
    if refused then
        return refused
    end
    total, count = totals()
end

-- Writes this holder's record with a lease of `rate` and `share_burst` to `ends`, and the
-- sums with it; returns the sums of what every holder holds now.
local function keep(rate, share_burst, ends)
    local kept = record(own, rate, share_burst, ends)
    local kept_rate, kept_burst = held_by(kept)
    agg.rate, agg.burst = others_rate + kept_rate, others_burst + kept_burst
    agg.total, agg.count = others_total + demand, others_count + 1
    agg.latest = math.max(agg.latest, ends)
    agg.at = math.max(agg.at, now)
    agg.read_again = math.min(agg.read_again, soonest(kept))
    write_agg(agg)
    return agg.rate, agg.burst
end

if now < quiet_until then
    -- Nothing granted, but the demand kept: the first grant after quiet divides the rule
    -- among every holder that asked during it.
    local held_rate, held_burst = keep(0, 0, now + lease)
    redis.call('PEXPIRE', key, math.ceil((math.max(latest, now + lease) - now + lease) / 1000))
    return {'quiet', 0, 0, quiet_until - now, epoch, held_rate, held_burst, others_count + 1, 0}
end

-- This holder's fair share of the rate by demand, what no demand asks for split evenly:
-- a share can be taken back once its lease ends. Every record read: the division of
-- their demands and this one's; else the level of the last division, kept in 'agg'.
local target
if others_demands then
    if asked > 0 then
        others_demands[#others_demands + 1] = asked
    end
    others_demands[#others_demands + 1] = demand
    agg.level = fair_level(others_demands, total)
end
if total <= SCALE then
    target = demand + math.floor((SCALE - total) / count)
else
    target = math.min(demand, math.floor(agg.level))
end

-- The share: the target where what others hold leaves room, and a burst in proportion
-- (one unit at least), or nothing when either has no room.
local rate = math.min(target, SCALE - others_rate)
local share_burst = math.min(math.max(1, math.floor(burst * target / SCALE)), burst - others_burst)
if rate < 1 or share_burst < 1 then
    rate, share_burst = 0, 0
end

local ends = now + lease
local held_rate, held_burst = keep(rate, share_burst, ends)
-- What the requests decided here hold shrinks (or grows) to what is left.
direct_now(held_rate, held_burst)
write_direct()
-- Kept a lease length past the last lease's end, so that a rule whose holders all left
-- is made afresh (and quiet) only once nothing can be deciding from it.
latest = math.max(latest, ends)
redis.call('PEXPIRE', key, math.ceil((latest - now + lease) / 1000))
return {'granted', rate, share_burst, lease, epoch, held_rate, held_burst, others_count + 1, 0}
