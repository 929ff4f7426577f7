-- librate's lease script for GCRA (docs/leases.md): grants, renews and hands back holders'
-- shares of one global rule, all in one hash, so one Cluster slot. It stands alone.
--
-- A share is a rate, in millionths of the rule's rate, and a burst, in units. The script
-- keeps, per holder, the leases it may still be deciding from (the last, and each before
-- it until it ends), and never grants a share that would make the rates of everything
-- still held exceed the rule's, or their bursts the rule's burst. Times are whole
-- microseconds (below 2^53 for 285 years, so exact).
--
-- KEYS[1]: the rule's hash. Fields: 'rule' (interval_ns:burst:lease_us, what it was made
-- for), 'epoch' (when it was made), 'quiet_until' (no grant before it), and per holder
-- 'h:' .. holder: its record of doubles (unpack_record, below).
-- ARGV: op ('renew' or 'release'), now in microseconds ('' for the server's TIME), the
-- rule's emission interval in ns, its burst, the lease length in microseconds, the
-- holder's name, its demand (millionths of the rule's rate, 0 to 1e6).
-- Reply to 'renew': {status, rate, burst, lease_us, epoch, held_rate, held_burst, holders, 0}
-- (the last, a fixed window's number in its script, as every lease script replies):
-- status 'granted' (the share, held lease_us from now) or 'quiet' (Redis made this rule
-- afresh lately, so a lease from before may still run: no share for lease_us); held_*
-- and holders count everything still held after this call. Reply to 'release': 1.

local SCALE = 1000000
local key = KEYS[1]
local op = ARGV[1]
local now = lease_now(ARGV[2])
local burst, lease, demand = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[7])
if not (now and burst and lease and demand) or (op ~= 'renew' and op ~= 'release')
        or burst < 1 or lease < 1 or demand < 0 or demand > SCALE then
    return lease_arguments_refused(ARGV)
end
local rule = ARGV[3] .. ':' .. ARGV[4] .. ':' .. ARGV[5]
local mine = 'h:' .. ARGV[6]

-- A rule this Redis has not seen, or has lost (restarted without persistence, a replica
-- that missed writes): a lease granted before may still run for one lease length, holding
-- the whole rule for all the script can tell, so none is granted until then.
local state, reply = lease_open(key, rule, 'interval_ns:burst:lease_us', op, now, now + lease, {})
if not state then
    return reply
end
local epoch, quiet_until = tonumber(state.epoch), tonumber(state.quiet_until)
if not quiet_until or not epoch then
    return redis.error_reply('librate: ' .. key .. ' holds no lease state')
end

if op == 'release' then
    -- The holder stopped deciding before it asked: nothing it held is in use.
    redis.call('HDEL', key, mine)
    return 1
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

-- Everything other holders may still be deciding from, their demands, and this holder's
-- own leases.
local others_rate, others_burst, demands, total, own = 0, 0, {}, 0, {}
local latest = quiet_until
for name, packed in pairs(state) do
    if string.sub(name, 1, 2) == 'h:' then
        local last_demand, leases = unpack_record(packed)
        if not leases then
            return redis.error_reply('librate: ' .. key .. ' holds no lease state at ' .. name)
        end
        local last_end = leases[#leases][3]
        if last_end <= now then
            -- Every lease it held has ended (the last ends last): it holds nothing.
            redis.call('HDEL', key, name)
        elseif name == mine then
            own = leases
        else
            local rate, share_burst = held_by(leases)
            others_rate, others_burst = others_rate + rate, others_burst + share_burst
            demands[#demands + 1] = last_demand
            total = total + last_demand
            latest = math.max(latest, last_end)
        end
    end
end

if now < quiet_until then
    -- Nothing granted, but the demand kept: the first grant after quiet divides the rule
    -- among every holder that asked during it.
    local kept = record(own, 0, 0, now + lease)
    local own_rate, own_burst = held_by(kept)
    redis.call('PEXPIRE', key, math.ceil((math.max(latest, now + lease) - now + lease) / 1000))
    return {'quiet', 0, 0, quiet_until - now, epoch, others_rate + own_rate, others_burst + own_burst,
        #demands + 1, 0}
end

-- This holder's fair share of the rate by demand, what no demand asks for split evenly:
-- a share can be taken back once its lease ends.
demands[#demands + 1] = demand
local target = fair_share(demands, total + demand, demand, true)

-- The share: the target where what others hold leaves room, and a burst in proportion
-- (one unit at least), or nothing when either has no room.
local rate = math.min(target, SCALE - others_rate)
local share_burst = math.min(math.max(1, math.floor(burst * target / SCALE)), burst - others_burst)
if rate < 1 or share_burst < 1 then
    rate, share_burst = 0, 0
end

local ends = now + lease
local kept = record(own, rate, share_burst, ends)
local own_rate, own_burst = held_by(kept)
-- Kept a lease length past the last lease's end, so that a rule whose holders all left
-- is made afresh (and quiet) only once nothing can be deciding from it.
latest = math.max(latest, ends)
redis.call('PEXPIRE', key, math.ceil((latest - now + lease) / 1000))
return {'granted', rate, share_burst, lease, epoch, others_rate + own_rate,
    others_burst + own_burst, #demands, 0}
