-- librate's Redis scripts: the sliding window counter (DESIGN §4, §8), the decision of
-- src/algorithm/sliding_window.rs on the windows of windows.lua. A request of n units at
-- e into window k is admitted iff prev·(P − e) + (cur + n)·P <= L·P, exactly: as
-- cur + n + ⌈prev·(P − e)/P⌉ <= L, the same test, since (L − cur − n)·P is a multiple of P.
-- State '<start> <count> <prev>' (windows.lua).
-- Returns {allowed, limit, remaining, retry_after_ns, reset_after_ns, wait_ns}, the
-- durations as decimal strings.

local state = stored_state(3)
if not state then
    return not_state('sliding window')
end
local seen = view(state)

-- ⌈prev·(P − e)/P⌉: what the previous window still weighs (at most prev).
local weight, rest = muldiv(seen.prev, period - seen.elapsed, period)
if rest > 0 then
    weight = weight + 1
end
-- What is left for this request once it is counted: negative if it does not fit.
local room = limit - seen.cur - n
local allowed = n == 0 or room >= weight
local cur = seen.cur
if allowed then
    cur = cur + n
end
local remaining = math.max(0, limit - cur - weight)

-- The smallest e in [0, P] with prev·(P − e) <= room·P, for 0 <= room
-- (sliding_window.rs `first_fit`).
local function first_fit(prev, space)
    if space >= prev then
        return 0
    end
    -- space < prev, so ⌊space·P / prev⌋ < P.
    return period - muldiv(period, space, prev)
end

local retry_after = '0'
if not allowed then
    -- Admission only gets easier as time passes: the first instant it holds, in this
    -- window, else in the next (where prev is this window's count and cur 0), else at the
    -- start of the one after (first_fit returns P).
    local at
    local this_window = period
    if room >= 0 then
        this_window = first_fit(seen.prev, room)
    end
    if this_window < period then
        at = shifted(seen.start, span(this_window))
    else
        at = shifted(window_after(seen.start, 1), span(first_fit(seen.cur, limit - n)))
    end
    retry_after = decimal(time_until(at))
end

-- remaining == L needs both counts at 0 (the weight P − e is never 0).
local reset_after = '0'
if cur > 0 then
    reset_after = decimal(time_until(window_after(seen.start, 2)))
elseif seen.prev > 0 then
    reset_after = decimal(time_until(window_after(seen.start, 1)))
end

if allowed and n > 0 then
    store(seen.start, cur, seen.prev)
end
return {allowed and 1 or 0, limit, remaining, retry_after, reset_after, '0'}
