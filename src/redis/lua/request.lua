-- librate's Redis scripts: the request every script reads from ARGV, its now and n.
--
-- Every script takes KEYS, the keys' states (one or more), and ARGV: now ('' for the
-- server's clock), n, max_wait, then its configuration. Each algorithm's decision is a
-- function deciding one key: (key, n, its two configuration arguments, whether to write,
-- now's seconds, now's nanoseconds, max_wait). Every key's decision is
-- {allowed, limit, remaining, retry_after_ns, reset_after_ns, wait_ns}, each an integer,
-- a duration at or above 2^53 as its decimal string; a single limiter's call with
-- max_wait '' is an acquire whose caller reads `allowed` alone (try_acquire, Allow), and
-- each key's reply is then that integer (keys.lua): turning a table of six into Redis's
-- reply costs the server more than the arithmetic of a decision. How src/redis/scripts.rs
-- puts the files together is said there and in docs/redis.md.

-- The request `argv` (ARGV) names: now as seconds and nanoseconds, n, max_wait (a decimal
-- u64: '0' for an acquire) and whether the caller reads `allowed` alone ('' is an
-- acquire's brief form). Now is read once for every key: the caller's explicit time, or
-- the server's clock (TIME: seconds and microseconds since the epoch).
function request(argv)
    local now_s, now_ns
    if argv[1] ~= '' then
        -- A decimal u64: its last nine digits are the nanoseconds, the others (if any)
        -- the seconds. Read here rather than by time.lua's `instant`, which is built only
        -- for an exact decision: a function the decisions near now name costs on every
        -- call.
        now_s, now_ns = tonumber(string.sub(argv[1], 1, -10)) or 0, tonumber(string.sub(argv[1], -9))
    else
        local clock = redis.call('TIME')
        now_s, now_ns = tonumber(clock[1]), tonumber(clock[2]) * 1000
    end
    -- The commonest cost, one unit, without a conversion, which costs as much as a
    -- decision's arithmetic.
    local n = 1
    if argv[2] ~= '1' then
        n = tonumber(argv[2])
    end
    local max_wait = argv[3]
    local brief = max_wait == ''
    if brief then
        max_wait = '0'
    end
    return now_s, now_ns, n, max_wait, brief
end
