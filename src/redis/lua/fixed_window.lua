-- librate's Redis scripts: the fixed window counter (DESIGN §4, §8), the decision of
-- src/algorithm/fixed_window.rs on the windows of windows.lua: at most L units in each
-- window [k·P, (k+1)·P). State '<start> <count>' (windows.lua).
-- Returns {allowed, limit, remaining, retry_after_ns, reset_after_ns, wait_ns}, the
-- durations as decimal strings.

local state = stored_state(2)
if not state then
    return not_state('fixed window')
end
local seen = view(state)
local allowed = seen.cur + n <= limit
local counted = seen.cur
if allowed then
    counted = counted + n
end
-- Window k + 1, where the count is 0 and any n <= L fits.
local next_window = decimal(time_until(window_after(seen.start, 1)))
local retry_after, reset_after = '0', '0'
if not allowed then
    retry_after = next_window
end
if counted > 0 then
    reset_after = next_window
end
if allowed and n > 0 then
    store(seen.start, counted)
end
return {allowed and 1 or 0, limit, limit - counted, retry_after, reset_after, '0'}
