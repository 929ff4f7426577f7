-- librate's Redis scripts: the sliding window counter (docs/decision.md, docs/redis.md), the
-- decision of src/algorithm/sliding_window.rs on the windows of windows.lua. A request of n units
-- at e into window k is admitted iff prev·(P − e) + (cur + n)·P <= L·P, exactly: as
-- cur + n + ⌈prev·(P − e)/P⌉ <= L, the same test, since (L − cur − n)·P is a multiple of P.
-- State: start, count, prev (windows.lua).

-- The smallest e in [0, P] with prev·(P − e) <= space·P, for 0 <= space and the period P
-- (sliding_window.rs `first_fit`).
function first_fit(prev, space, period)
    if space >= prev then
        return 0
    end
    -- space < prev, so ⌊space·P / prev⌋ < P.
    return period - muldiv(period, space, prev)
end

-- The decision of n units (0..L) for `key` with limit L and period P at now (see `gcra`
-- in gcra.lua), the state written only if `write`.
function sliding_window(key, n, limit, period, write, now_s, now_ns)
    local ok, s, ns, count, stored_prev = read(key, 3, 'sliding window', limit, period)
    if not ok then
        return s
    end
    local start_s, start_ns, elapsed, cur, prev = view(now_s, now_ns, period, s, ns, count, stored_prev)

    -- ⌈prev·(P − e)/P⌉: what the previous window still weighs (at most prev).
    local weight, rest = muldiv(prev, period - elapsed, period)
    if rest > 0 then
        weight = weight + 1
    end
    -- What is left for this request once it is counted: negative if it does not fit.
    local room = limit - cur - n
    local allowed = n == 0 or room >= weight
    if allowed then
        cur = cur + n
    end
    local remaining = math.max(0, limit - cur - weight)

    local retry_after = 0
    if not allowed then
        -- Admission only gets easier as time passes: the first instant it holds, in this
        -- window, else in the next (where prev is this window's count and cur 0), else at
        -- the start of the one after (first_fit returns P).
        local this_window = period
        if room >= 0 then
            this_window = first_fit(prev, room, period)
        end
        local at_s, at_ns
        if this_window < period then
            at_s, at_ns = add(start_s, start_ns, split(this_window))
        else
            at_s, at_ns = window_after(start_s, start_ns, period, 1)
            at_s, at_ns = add(at_s, at_ns, split(first_fit(cur, limit - n, period)))
        end
        retry_after = until_field(now_s, now_ns, at_s, at_ns)
    end

    -- remaining == L needs both counts at 0 (the weight P − e is never 0).
    local reset_after = 0
    if cur > 0 then
        reset_after = until_field(now_s, now_ns, window_after(start_s, start_ns, period, 2))
    elseif prev > 0 then
        reset_after = until_field(now_s, now_ns, window_after(start_s, start_ns, period, 1))
    end

    if allowed and n > 0 and write then
        store(key, now_s, now_ns, period, start_s, start_ns, cur, prev)
    end
    return {allowed and 1 or 0, limit, remaining, retry_after, reset_after, 0}
end
