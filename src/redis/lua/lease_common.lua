-- librate's lease scripts, the functions both algorithms' share (docs/leases.md). Each
-- takes everything it needs as arguments; src/lease/mod.rs declares their names local
-- before the file, so the entry that follows finds them whatever their order.

-- The call's time in whole microseconds: `given` (ARGV[2]), or the server's clock for ''.
function lease_now(given)
    if given == '' then
        local time = redis.call('TIME')
        return tonumber(time[1]) * 1000000 + tonumber(time[2])
    end
    return tonumber(given)
end

-- The error for arguments no holder sends.
function lease_arguments_refused(args)
    return redis.error_reply('librate: lease script called with ' .. table.concat(args, ' '))
end

-- The fields of the hash at `key`, as a table; nil and Redis's own error for another
-- type at the key.
function lease_state(key)
    local fields = redis.pcall('HGETALL', key)
    if fields.err then
        return nil, fields
    end
    local state = {}
    for i = 1, #fields, 2 do
        state[fields[i]] = fields[i + 1]
    end
    return state
end

-- A rule's state made afresh at `now` (Redis had not seen the rule, or lost it): its
-- `rule`, its epoch, and no grant before `quiet_until`, with `more` fields beside.
function lease_made(key, rule, now, quiet_until, more)
    local state = {rule = rule, epoch = string.format('%.0f', now),
        quiet_until = string.format('%.0f', quiet_until)}
    local fields = {'rule', state.rule, 'epoch', state.epoch, 'quiet_until', state.quiet_until}
    for name, value in pairs(more) do
        state[name] = value
        fields[#fields + 1] = name
        fields[#fields + 1] = value
    end
    redis.call('HSET', key, unpack(fields))
    return state
end

-- The error for a rule's hash made for another rule.
function lease_other_rule(key, held, asked, form)
    return redis.error_reply('librate: ' .. key .. ' holds the lease rule ' .. held
        .. ' (' .. form .. '), not ' .. asked)
end

-- A holder's max-min fair share of the whole (1e6 millionths) by demand, given every live
-- holder's `demands` (its own among them) and their `total`: a demand that fits is met;
-- otherwise every demand above the level that uses the whole gets that level. What no
-- demand asks for is split evenly on top if `spare`.
function fair_share(demands, total, demand, spare)
    if total <= 1000000 then
        if spare then
            return demand + math.floor((1000000 - total) / #demands)
        end
        return demand
    end
    table.sort(demands)
    local left = 1000000
    for i = 1, #demands do
        local level = left / (#demands - i + 1)
        if demands[i] > level then
            return math.min(demand, math.floor(level))
        end
        left = left - demands[i]
    end
    return demand
end
