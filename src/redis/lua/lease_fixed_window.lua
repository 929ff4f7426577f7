-- librate's lease script for fixed windows (docs/leases.md): grants holders counts of the
-- current window of one global rule, all in one hash, so one Cluster slot. It stands
-- alone.
--
-- Windows are [k·P, (k+1)·P) on the script's timeline, P in whole microseconds. A grant
-- is a count of the current window, held until the window ends; a holder's count only
-- grows within a window (the holder may have used all of it), and all the counts granted
-- in a window never sum past the rule's limit L. Times are whole microseconds (exact
-- below 2^53).
--
-- Requests can also be decided here, one call each ('acquire': a keyed rule's keys that no
-- holder leases): they count in the window's total beside the counts granted.
--
-- KEYS[1]: the rule's hash. Fields: 'rule' (fw:limit:period_us:lease_us, what it was made
-- for), 'epoch' (when it was made), 'quiet_until' (no grant before it), 'window' and
-- 'granted' (the current window's number and the counts granted in it), and per holder
-- 'h:' .. holder: four doubles, the window of its count, the count, its last demand, and
-- when it last asked; 'direct': four doubles, when requests may first be decided here,
-- the window they last asked in, the units asked in it, and in the window before.
-- ARGV: op ('renew', 'release' or 'acquire'), now in microseconds ('' for the server's TIME), L, P in
-- microseconds, the lease length in microseconds (a holder that has not asked within it
-- no longer shares in the division), the holder's name, and its demand (millionths of L
-- a window, 0 to 1e6) for 'renew', its count left unused for 'release', or the units asked
-- for by 'acquire'.
-- Reply to 'renew': {status, 0, count, lease_us, epoch, 0, granted, holders, window}:
-- status 'granted' (the holder's count of window `window`, held lease_us from now, to the
-- window's end) or 'quiet' (Redis made this rule afresh within the window, whose counts
-- it cannot know: no grant for lease_us); granted is the window's total so far and
-- holders those that asked within a lease. Reply to 'release': 1. Reply to 'acquire':
-- {allowed (1 or 0), limit, remaining, retry_after_us, reset_after_us} (docs/decision.md),
-- remaining what the window has left beside every count granted.

local SCALE = 1000000
local key = KEYS[1]
local op = ARGV[1]
local now = lease_now(ARGV[2])
local limit, period, lease, demand = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[7])
if not (now and limit and period and lease and demand)
        or (op ~= 'renew' and op ~= 'release' and op ~= 'acquire')
        or limit < 1 or period < 1 or lease < 1 or demand < 0 or demand ~= math.floor(demand)
        or (op == 'renew' and demand > SCALE) or demand > 2 ^ 53 then
    return lease_arguments_refused(ARGV)
end
local rule = 'fw:' .. ARGV[3] .. ':' .. ARGV[4] .. ':' .. ARGV[5]
local mine = op ~= 'acquire' and 'h:' .. ARGV[6]
local window = math.floor(now / period)
local window_end = (window + 1) * period

-- A rule this Redis has not seen, or has lost: the counts granted in this window may all be
-- in use, for all the script can tell, so none is granted until it ends. Requests decided
-- here count from the window's start when a request made the hash, as a rule Redis
-- decides alone does (docs/leases.md, keys), and wait for the quiet's end when a renewal
-- did.
local direct_from = op == 'acquire' and now or window_end
local state, reply = lease_open(key, rule, 'fw:limit:period_us:lease_us', op, now, window_end,
    {window = string.format('%.0f', window), granted = '0',
        direct = struct.pack('>dddd', direct_from, window, 0, 0)})
if not state then
    return reply
end
local epoch, quiet_until = tonumber(state.epoch), tonumber(state.quiet_until)
local stored_window, granted = tonumber(state.window), tonumber(state.granted)
if not (epoch and quiet_until and stored_window and granted) then
    return redis.error_reply('librate: ' .. key .. ' holds no lease state')
end
if state.direct == nil or #state.direct ~= 32 then
    return redis.error_reply('librate: ' .. key .. ' holds no lease state at direct')
end
local direct = {struct.unpack('>dddd', state.direct)}
if window < stored_window then
    -- A time before a window already granted in: nothing for it, and nothing written.
    if op == 'release' then
        return 1
    elseif op == 'acquire' then
        return {demand == 0 and 1 or 0, limit, 0, demand == 0 and 0 or stored_window * period - now,
            window_end - now}
    end
    return {'granted', 0, 0, window_end - now, epoch, 0, limit, 0, window}
elseif window > stored_window then
    granted = 0
end

-- The units requests asked for here in this window and the one before.
if direct[2] < window then
    direct[4] = direct[2] == window - 1 and direct[3] or 0
    direct[2], direct[3] = window, 0
end

if op == 'acquire' then
    local n = demand
    direct[3] = direct[3] + n
    local allowed, retry = n == 0, 0
    if n == 0 then
        -- A query: admitted, nothing taken.
    elseif now < direct[1] then
        -- The counts of a window from before a loss may all be in use.
        retry = direct[1] - now
    elseif granted + n <= limit then
        allowed = true
        granted = granted + n
    else
        retry = window_end - now
    end
    redis.call('HSET', key, 'window', string.format('%.0f', window), 'granted', string.format('%.0f', granted),
        'direct', struct.pack('>dddd', direct[1], direct[2], direct[3], direct[4]))
    redis.call('PEXPIRE', key, math.ceil((window_end - now + lease) / 1000))
    return {allowed and 1 or 0, limit, limit - granted, retry, window_end - now}
end

-- The holders that asked within a lease, their demands, and this holder's record.
local demands, total, own = {}, 0, nil
for name, packed in pairs(state) do
    if string.sub(name, 1, 2) == 'h:' then
        if #packed ~= 32 then
            return redis.error_reply('librate: ' .. key .. ' holds no lease state at ' .. name)
        end
        local r = {struct.unpack('>dddd', packed)}
        if name == mine then
            own = r
        elseif r[4] + lease <= now and r[1] ~= window then
            redis.call('HDEL', key, name)
        elseif r[4] + lease > now then
            demands[#demands + 1] = r[3]
            total = total + r[3]
        end
    end
end
local count = 0
if own and own[1] == window then
    count = own[2]
end

if op == 'release' then
    -- The holder stopped deciding before it asked: what it left unused returns.
    if own and own[1] == window and stored_window == window then
        granted = math.max(0, granted - math.min(demand, count))
        redis.call('HSET', key, 'granted', string.format('%.0f', granted))
    end
    redis.call('HDEL', key, mine)
    return 1
end

if now < quiet_until then
    -- Nothing granted, but the demand kept: the first grant after quiet divides the
    -- window among every holder that asked during it.
    redis.call('HSET', key, mine, struct.pack('>dddd', window, count, demand, now))
    redis.call('PEXPIRE', key, math.ceil((window_end - now + lease) / 1000))
    return {'quiet', 0, 0, quiet_until - now, epoch, 0, 0, #demands + 1, window}
end

-- This holder's fair share of the limit by demand, in units of this window. Unlike a
-- rate, a count cannot be taken back within its window, so what no demand asks for is not
-- handed out: it stays for the top-ups of the holders whose demand grows, and for the
-- requests decided here, which share in the division by their demand (not counted among
-- the holders).
local holders = #demands
local asked = math.min(SCALE, math.ceil(math.max(direct[3], direct[4]) * SCALE / limit))
if asked > 0 then
    demands[#demands + 1] = asked
    total = total + asked
end
demands[#demands + 1] = demand
local level = fair_level(demands, total + demand)
local target = level < 0 and demand or math.min(demand, math.floor(level))
local units = math.floor(limit * target / SCALE)

-- A count only grows within a window, and the window's counts stay within L.
local more = math.max(0, math.min(units - count, limit - granted))
count = count + more
granted = granted + more
redis.call('HSET', key, 'window', string.format('%.0f', window), 'granted', string.format('%.0f', granted),
    mine, struct.pack('>dddd', window, count, demand, now))
-- Kept a lease past the window, so that a window's counts outlive every grant of it.
redis.call('PEXPIRE', key, math.ceil((window_end - now + lease) / 1000))
return {'granted', 0, count, window_end - now, epoch, 0, granted, holders + 1, window}
