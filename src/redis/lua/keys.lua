-- librate's Redis scripts, the last part of a single limiter's, its entry: decides each
-- key of KEYS in turn with `decide` (the algorithm's decision near now, which
-- src/redis/scripts.rs names so), all at the one now. ARGV[4] and ARGV[5] are the
-- algorithm's configuration. One key's reply is its decision (its `allowed` alone when
-- the call is brief: request.lua); several keys' is the array of their replies, each in
-- the position of its key, where a key that holds another algorithm's state or another
-- type is that key's error alone (an error has no `allowed`, so it stays whole).

local now_s, now_ns, n, max_wait, brief = request(ARGV)
local first, second = tonumber(ARGV[4]), tonumber(ARGV[5])
if #KEYS == 1 then
    local decision = decide(KEYS[1], n, first, second, true, now_s, now_ns, max_wait)
    if brief and decision[1] then
        return decision[1]
    end
    return decision
end
local decisions = {}
for i = 1, #KEYS do
    local decision = decide(KEYS[i], n, first, second, true, now_s, now_ns, max_wait)
    if brief and decision[1] then
        decision = decision[1]
    end
    decisions[i] = decision
end
return decisions
