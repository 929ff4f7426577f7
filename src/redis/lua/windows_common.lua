-- librate's Redis scripts: what the window counters' exact decisions (windows.lua and
-- each algorithm's file) and their decisions near now (windows_near.lua and the *_near
-- files) share: the state's bytes both ways, and the fixed window's verdict.

-- The start (seconds, nanoseconds), count and prev (0 without the field) a string of the
-- window state of `fields` words (2 or 3) holds, as windows.lua lays it out; nothing for
-- a string of another length.
function unpack_window(stored, fields)
    if fields == 2 and #stored == 16 then
        local s, ns, count = struct.unpack('>I5I4I7', stored)
        return s, ns, count, 0
    elseif fields == 3 and #stored == 23 then
        local s, ns, count, prev = struct.unpack('>I5I4I7I7', stored)
        return s, ns, count, prev
    end
end

-- The string of a window state starting at s, ns with `count` and, given `prev`, the
-- count of the window before it (unpack_window's inverse).
function pack_window(s, ns, count, prev)
    if prev then
        return struct.pack('>I5I4I7I7', s, ns, count, prev)
    end
    return struct.pack('>I5I4I7', s, ns, count)
end

-- The fixed window's verdict on n units with `counted` in now's window: whether they are
-- admitted, the count then, retry_after and reset_after, where `next_window` is the reply
-- field of the time until the next window (where the count is 0 and any n <= L fits).
function fixed_verdict(n, limit, counted, next_window)
    local allowed = counted + n <= limit
    if allowed then
        counted = counted + n
    end
    local retry_after, reset_after = 0, 0
    if not allowed then
        retry_after = next_window
    end
    if counted > 0 then
        reset_after = next_window
    end
    return allowed, counted, retry_after, reset_after
end
