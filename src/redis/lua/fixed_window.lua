-- librate's Redis scripts: the fixed window counter (docs/decision.md, docs/redis.md), the decision
-- of src/algorithm/fixed_window.rs on the windows of windows.lua: at most L units in each
-- window [k·P, (k+1)·P). State: start, count (windows.lua).

-- The decision of n units (0..L) for `key` with limit L and period P at now (see `gcra`
-- in gcra.lua), the state written only if `write`.
function fixed_window(key, n, limit, period, write, now_s, now_ns)
    local ok, s, ns, count = read(key, 2, 'fixed window', limit, period)
    if not ok then
        return s
    end
    local start_s, start_ns, _, count_now = view(now_s, now_ns, period, s, ns, count, 0)
    -- Window k + 1's start.
    local next_window = until_field(now_s, now_ns, window_after(start_s, start_ns, period, 1))
    local allowed, counted, retry_after, reset_after = fixed_verdict(n, limit, count_now, next_window)
    if allowed and n > 0 and write then
        store(key, now_s, now_ns, period, start_s, start_ns, counted)
    end
    return {allowed and 1 or 0, limit, limit - counted, retry_after, reset_after, 0}
end
