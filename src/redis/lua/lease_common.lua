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

-- The state of the rule at `key` (its hash's fields, as a table: every field, or 'rule',
-- 'epoch', 'quiet_until' and those named in `wanted`), or nil and the reply to give
-- instead: Redis's own error for another type at the key, the error for a hash made for
-- another `rule` (whose form, such as 'interval_ns:burst:lease_us', the error names), or 1
-- for a hand-back of a rule Redis holds nothing of. A rule Redis has not seen, or has
-- lost, is made afresh at `now`: its epoch, no grant before `quiet_until`, and the fields
-- `more` beside.
function lease_open(key, rule, form, op, now, quiet_until, more, wanted)
    local state = {}
    if wanted then
        local names = {'rule', 'epoch', 'quiet_until'}
        for _, name in ipairs(wanted) do
            names[#names + 1] = name
        end
        local values = redis.pcall('HMGET', key, unpack(names))
        if values.err then
            return nil, values
        end
        for i, name in ipairs(names) do
            if values[i] then
                state[name] = values[i]
            end
        end
    else
        local fields = redis.pcall('HGETALL', key)
        if fields.err then
            return nil, fields
        end
        for i = 1, #fields, 2 do
            state[fields[i]] = fields[i + 1]
        end
    end
    if state.rule == rule then
        return state
    elseif state.rule ~= nil then
        return nil, redis.error_reply('librate: ' .. key .. ' holds the lease rule ' .. state.rule
            .. ' (' .. form .. '), not ' .. rule)
    elseif op == 'release' then
        return nil, 1
    end
    state = {rule = rule, epoch = string.format('%.0f', now),
        quiet_until = string.format('%.0f', quiet_until)}
    local made = {'rule', state.rule, 'epoch', state.epoch, 'quiet_until', state.quiet_until}
    for name, value in pairs(more) do
        state[name] = value
        made[#made + 1] = name
        made[#made + 1] = value
    end
    redis.call('HSET', key, unpack(made))
    return state
end

-- The max-min fair level of `demands` (every live holder's, summing to `total`) over the
-- whole (1e6 millionths): every demand above it gets the level, every other is met; -1
-- when they all fit.
function fair_level(demands, total)
    if total <= 1000000 then
        return -1
    end
    table.sort(demands)
    local left = 1000000
    for i = 1, #demands do
        local level = left / (#demands - i + 1)
        if demands[i] > level then
            return level
        end
        left = left - demands[i]
    end
    return -1
end
