-- librate's Redis scripts, the last part of a policy's (docs/policies.md): the rules of one
-- subject decided together, all or nothing, by every algorithm's decision near now.
--
-- KEYS: each rule's state, in the order of the rules (each as its algorithm's file says).
-- ARGV: now, n (0..the least limit), max_wait (always 0: a policy has no reserve), the
-- rule count R (1..8), then for each rule its algorithm (0 GCRA, 1 fixed window,
-- 2 sliding window, 3 sliding log) and its two configuration arguments; then, optionally,
-- the shadow mask (bit i-1 for rule i; absent or 0: every rule enforced).
--
-- Every rule is decided at the one now without writing; only if all the enforced rules
-- admit are their states written (each decided again, writing: the same decision, since
-- nothing changed in between), so a denied request takes from no rule. A shadow rule
-- (docs/policies.md, Shadow rules) never denies: it is written, alone, when it and the
-- enforced rules admit, and only decided otherwise. The reply is the array of the rules'
-- decisions in their order, shadow rules' included. On a denial, a rule that would have
-- admitted reports its state as it is (remaining and reset_after_ns of a query) with the
-- request's allowed and retry_after_ns, as the in-process policy reports it. A key
-- holding something else is the reply's error, and nothing is written.

local now_s, now_ns, n, max_wait = request(ARGV)
local algorithms = {[0] = gcra_near, fixed_window_near, sliding_window_near, sliding_log_near}
local rules = tonumber(ARGV[4])
local deciders, firsts, seconds = {}, {}, {}
for i = 1, rules do
    local at = 2 + 3 * i
    deciders[i] = algorithms[tonumber(ARGV[at])]
    firsts[i], seconds[i] = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])
end

local mask, shadow = tonumber(ARGV[5 + 3 * rules]) or 0, {}
for i = 1, rules do
    shadow[i] = math.floor(mask / 2 ^ (i - 1)) % 2 == 1
end

local decisions, admitted = {}, true
for i = 1, rules do
    local decision = deciders[i](KEYS[i], n, firsts[i], seconds[i], false, now_s, now_ns, max_wait)
    if decision.err then
        return decision
    end
    decisions[i] = decision
    admitted = admitted and (shadow[i] or decision[1] == 1)
end
if admitted then
    if n > 0 then
        for i = 1, rules do
            -- Every enforced rule admitted; a shadow rule that would deny takes nothing.
            if decisions[i][1] == 1 then
                deciders[i](KEYS[i], n, firsts[i], seconds[i], true, now_s, now_ns, max_wait)
            end
        end
    end
    return decisions
end
for i = 1, rules do
    local decision = decisions[i]
    if decision[1] == 1 then
        local state = deciders[i](KEYS[i], 0, firsts[i], seconds[i], false, now_s, now_ns, max_wait)
        decision[3], decision[5] = state[3], state[5]
    end
end
return decisions
