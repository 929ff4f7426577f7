-- librate's Redis scripts: the fixed window counter's decision near now (docs/decision.md,
-- docs/redis.md), fixed_window.lua's in plain numbers on the window of windows_near.lua.

-- The decision of n units for `key` (see `fixed_window` in fixed_window.lua).
function fixed_window_near(key, n, limit, period, write, now_s, now_ns)
    local elapsed, start_s, start_ns, count_now = window_near(key, 2, limit, period, now_s, now_ns)
    if not elapsed then
        return exact().fixed_window(key, n, limit, period, write, now_s, now_ns)
    elseif not start_s then
        return elapsed
    end
    local allowed, counted, retry_after, reset_after = fixed_verdict(n, limit, count_now, period - elapsed)
    if allowed and n > 0 and write then
        store_near(key, start_s, start_ns, counted, nil, elapsed, period)
    end
    return {allowed and 1 or 0, limit, limit - counted, retry_after, reset_after, 0}
end
