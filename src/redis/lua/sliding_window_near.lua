-- librate's Redis scripts: the sliding window counter's decision near now (docs/decision.md,
-- docs/redis.md), sliding_window.lua's in plain numbers on the window of windows_near.lua, where
-- each product it divides stays below 2^53 (else the exact decision makes it).

-- ⌊a·b / c⌋ and the remainder, for a product below 2^53; nil otherwise.
function muldiv_near(a, b, c)
    local product = a * b
    if product >= 9007199254740992 then
        return nil
    end
    local rest = math.fmod(product, c)
    return (product - rest) / c, rest
end

-- The decision of n units for `key` (see `sliding_window` in sliding_window.lua).
function sliding_window_near(key, n, limit, period, write, now_s, now_ns)
    local elapsed, start_s, start_ns, cur, prev = window_near(key, 3, limit, period, now_s, now_ns)
    if elapsed and not start_s then
        return elapsed
    end
    local weight, rest
    if elapsed then
        weight, rest = muldiv_near(prev, period - elapsed, period)
    end
    if not weight then
        return exact().sliding_window(key, n, limit, period, write, now_s, now_ns)
    end
    if rest > 0 then
        weight = weight + 1
    end
    local room = limit - cur - n
    local allowed = n == 0 or room >= weight
    local retry_after = 0
    if not allowed then
        -- The first e with prev·(P − e) <= space·P (sliding_window.lua's `first_fit`), in
        -- this window, else in the next (counting this window's), else after it.
        local this_window = period
        if room >= 0 then
            local fit = muldiv_near(period, room, prev)
            if not fit then
                return exact().sliding_window(key, n, limit, period, write, now_s, now_ns)
            end
            this_window = period - fit
        end
        if this_window < period then
            retry_after = this_window - elapsed
        else
            local next_fit = 0
            if limit - n < cur then
                local fit = muldiv_near(period, limit - n, cur)
                if not fit then
                    return exact().sliding_window(key, n, limit, period, write, now_s, now_ns)
                end
                next_fit = period - fit
            end
            retry_after = period + next_fit - elapsed
        end
    else
        cur = cur + n
    end
    local remaining = math.max(0, limit - cur - weight)
    local reset_after = 0
    if cur > 0 then
        reset_after = 2 * period - elapsed
    elseif prev > 0 then
        reset_after = period - elapsed
    end
    if allowed and n > 0 and write then
        store_near(key, start_s, start_ns, cur, prev, elapsed, period)
    end
    return {allowed and 1 or 0, limit, remaining, retry_after, reset_after, 0}
end
