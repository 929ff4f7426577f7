"""``librate.redis`` against a real ``redis-server`` the tests start on a loopback port
(redis_server.py): decisions by hand, the server's clock, script reloads, batches, keys,
refusals, and every failure an error. Tests taking ``clients`` run with each client,
``RedisLimiter`` and ``AsyncRedisLimiter``. The replays against the in-process limiters
are in test_redis_model.py, processes and a Redis Cluster in test_redis_cluster.py, what
only asyncio has in test_redis_async.py, the middleware in test_redis_middleware.py."""

from __future__ import annotations

import itertools
import socket
import subprocess
import sys
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

import librate
from helpers import MS, SECOND
from librate import Decision
from librate.redis import RedisLimiter
from redis_server import Clients, RedisServer

ALGORITHMS = ["gcra", "fixed_window", "sliding_window", "sliding_log"]
#: 2**53 ns: the Redis tier's bound on a window's period and on GCRA's burst x T.
EXACT = 2**53
_prefixes = itertools.count()


def prefix(what: str) -> str:
    """A prefix no other test's limiter uses on the shared server."""
    return f"{what}:{next(_prefixes)}:"


def test_seed_scenario(clients: Clients, redis_server: RedisServer) -> None:
    # L = 1, P = 2 s, B = 1: Bob admitted at 0 ms, denied at 999 and 1000 ms, admitted
    # at 2001 ms; Alice is independent.
    limiter = clients.limiter(redis_server.port, limit=1, period=2, prefix=prefix("seed"))
    assert limiter.acquire("bob", now_ns=0) == Decision(True, 1, 0, 0, 2 * SECOND, 0)
    # TAT 2 s: at 999 ms the request is due at 2 s + T - tau = 2 s.
    assert limiter.acquire("bob", now_ns=999 * MS) == Decision(False, 1, 0, 1001 * MS, 1001 * MS)
    assert limiter.acquire_at("bob", 1, 1000 * MS) == Decision(False, 1, 0, SECOND, SECOND)
    assert limiter.acquire("alice", now_ns=1000 * MS).allowed
    assert limiter.acquire("bob", now_ns=2001 * MS) == Decision(True, 1, 0, 0, 2 * SECOND)


def test_reserve(clients: Clients, redis_server: RedisServer) -> None:
    # 1 per second, bursts of 2: a reserve books a place in the queue and says the wait.
    limiter = clients.limiter(
        redis_server.port, limit=1, period=1, burst=2, prefix=prefix("reserve")
    )
    assert limiter.reserve("k", 2, max_wait=0, now_ns=0) == Decision(True, 2, 0, 0, 2 * SECOND)
    queued = limiter.reserve_at("k", 1, 0, max_wait=1.5)
    assert queued == Decision(True, 2, 0, 0, 3 * SECOND, wait_ns=SECOND)
    # Two more would wait 3 s: more than 2.5 s, so not admitted until 0.5 s from now.
    assert limiter.reserve("k", 2, max_wait=2.5, now_ns=0) == Decision(
        False, 2, 0, 500 * MS, 3 * SECOND
    )
    assert limiter.reserve("k", 1, max_wait=float("inf"), now_ns=0).wait_ns == 2 * SECOND


def test_window_edges_by_hand(redis_client: redis.Redis) -> None:
    # The windows' hand scenarios of test_windows.py, on Redis.
    fixed = RedisLimiter(
        redis_client, algorithm="fixed_window", limit=3, period=1000, prefix=prefix("fixed")
    )
    assert [fixed.acquire("k", now_ns=500 * SECOND).remaining for _ in range(3)] == [2, 1, 0]
    assert fixed.acquire("k", now_ns=500 * SECOND) == Decision(
        False, 3, 0, 500 * SECOND, 500 * SECOND
    )
    log = RedisLimiter(
        redis_client, algorithm="sliding_log", limit=2, period=1000, prefix=prefix("log")
    )
    assert log.acquire("k", now_ns=0).allowed
    assert log.acquire("k", now_ns=500 * SECOND).allowed
    assert log.acquire("k", now_ns=900 * SECOND) == Decision(
        False, 2, 0, 100 * SECOND, 600 * SECOND
    )


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_the_servers_clock_decides(
    clients: Clients, redis_server: RedisServer, redis_client: redis.Redis, algorithm: str
) -> None:
    # Without now_ns, Redis's TIME decides: 3 admitted at once, the 4th denied until
    # within a period (GCRA: a third of one), and the key kept until fresh again. Window
    # periods of 2**53 - 1 ns (104 days), so no window edge passes during the test.
    period = 1 if algorithm == "gcra" else Fraction(EXACT - 1, SECOND)
    limiter = clients.limiter(
        redis_server.port, algorithm=algorithm, limit=3, period=period, prefix=prefix("clock")
    )
    assert [limiter.try_acquire("k") for _ in range(4)] == [True, True, True, False]
    denied = limiter.acquire("k")
    bound = SECOND // 3 if algorithm == "gcra" else 2 * (EXACT - 1)
    assert not denied.allowed and 0 < denied.retry_after_ns <= bound
    ttl_bound = 1000 if algorithm == "gcra" else 2 * (EXACT - 1) // MS + 1
    assert 0 < redis_client.pttl(limiter.redis_key("k")) <= ttl_bound
    # A query writes nothing.
    assert limiter.acquire("query", 0) == Decision(True, 3, 3, 0, 0, 0)
    assert redis_client.exists(limiter.redis_key("query")) == 0


def test_the_servers_time_is_redis_time(
    clients: Clients, redis_server: RedisServer, redis_client: redis.Redis
) -> None:
    # A bucket full until 2**62 ns + 1 s on the timeline; a call by the server's clock
    # then waits exactly until then from the server's TIME (read around the call, to the
    # microsecond TIME gives).
    limiter = clients.limiter(redis_server.port, limit=1, period=1, prefix=prefix("time"))
    limiter.acquire("k", now_ns=2**62)
    before = _server_ns(redis_client)
    denied = limiter.acquire("k")
    after = _server_ns(redis_client)
    assert 2**62 + SECOND - after <= denied.retry_after_ns <= 2**62 + SECOND - before


def _server_ns(client: redis.Redis) -> int:
    seconds, microseconds = client.time()
    return (seconds * 1_000_000 + microseconds) * 1000


def test_keys_expire_when_fresh(redis_client: redis.Redis) -> None:
    # At an explicit time, a GCRA key lives exactly until its TAT: T = 1/3 s.
    limiter = RedisLimiter(redis_client, limit=3, period=1, prefix=prefix("expiry"))
    limiter.acquire("k", now_ns=1000 * SECOND)
    assert 300 < redis_client.pttl(limiter.redis_key("k")) <= 334


def test_a_flushed_script_is_loaded_again(
    clients: Clients, redis_server: RedisServer, redis_client: redis.Redis
) -> None:
    limiter = clients.limiter(redis_server.port, limit=2, period=1, prefix=prefix("flush"))
    assert limiter.acquire("k", now_ns=0).allowed
    redis_client.script_flush()
    assert limiter.acquire("k", now_ns=0) == Decision(True, 2, 0, 0, SECOND)
    redis_client.script_flush()
    assert limiter.acquire_batch(["k", "j"], now_ns=0) == [
        Decision(False, 2, 0, 500 * MS, SECOND),
        Decision(True, 2, 1, 0, 500 * MS),
    ]


def test_a_batch_decides_as_single_calls(
    clients: Clients, redis_server: RedisServer, redis_client: redis.Redis
) -> None:
    # In one round trip, each key as a single call on the same state decides it (a key
    # given twice decided twice); the script flushed before one round.
    batched = clients.limiter(redis_server.port, limit=3, period=1, prefix=prefix("batch"))
    single = clients.limiter(redis_server.port, limit=3, period=1, prefix=prefix("single"))
    keys = [bytes([ord("k"), k % 7]) for k in range(20)]
    for round_, now in enumerate([0, 0, SECOND // 10, 5 * SECOND]):
        if round_ == 2:
            redis_client.script_flush()
        decisions = batched.acquire_batch(keys, now_ns=now)
        assert decisions == [single.acquire(key, now_ns=now) for key in keys], round_
    assert batched.acquire_batch([]) == []
    # One script call for the whole batch: a key that holds something else fails alone.
    redis_client.rpush(batched.redis_key("list"), "x")
    redis_client.config_resetstat()
    fresh, listed = batched.acquire_batch(["fresh", "list"], now_ns=0)
    assert redis_client.info("commandstats")["cmdstat_evalsha"]["calls"] == 1
    assert fresh == Decision(True, 3, 2, 0, SECOND // 3)
    assert isinstance(listed, librate.RedisError) and "WRONGTYPE" in str(listed)
    assert isinstance(listed.__cause__, redis.ResponseError)
    with pytest.raises(librate.InsufficientCapacity):
        batched.acquire_batch(keys, 4, now_ns=0)
    # By the server's clock too.
    assert [d.allowed for d in batched.acquire_batch(["clock"] * 4)] == [True] * 3 + [False]


def test_keys_are_the_keyed_limiters(
    clients: Clients, redis_server: RedisServer, redis_client: redis.Redis
) -> None:
    # str keys are their UTF-8 (a lone surrogate its three bytes, as KeyedLimiter sends
    # it), bytes keys themselves; the Redis key is prefix{key}, whatever the key holds.
    start = prefix("keys").encode() + b"\xff"
    limiter = clients.limiter(redis_server.port, limit=1, period=3600, prefix=start)
    assert limiter.redis_key("\u00e5") == start + b"{\xc3\xa5}"
    assert limiter.redis_key("\udc80") == start + b"{\xed\xb2\x80}"
    assert limiter.redis_key(b"") == start + b"{}"
    assert limiter.acquire("\u00e5lice", now_ns=0).allowed
    assert not limiter.acquire("\u00e5lice".encode(), now_ns=0).allowed
    for key in (b"", b"\x00{}\x00", "\udc80", "x" * 10_000):
        assert limiter.acquire(key, now_ns=0).allowed
        assert not limiter.acquire(key, now_ns=0).allowed
    assert redis_client.exists(start + b"{\x00{}\x00}") == 1
    with pytest.raises(TypeError):
        limiter.acquire(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        clients.limiter(redis_server.port, limit=1, period=1, prefix=1)  # type: ignore[arg-type]


def test_refusals_are_decided_before_sending(clients: Clients) -> None:
    # As in process, and nothing is sent: these clients' server does not exist.
    port, options = _closed_port(), {"retry": Retry(NoBackoff(), 0)}
    gcra = clients.limiter(port, options, limit=2, period=1, prefix="x")
    with pytest.raises(librate.InsufficientCapacity) as refused:
        gcra.acquire("k", 3)
    assert refused.value.code == -3
    with pytest.raises(librate.InsufficientCapacity):
        gcra.reserve("k", 3, max_wait=1)
    for algorithm in ALGORITHMS[1:]:
        windows = clients.limiter(port, options, algorithm=algorithm, limit=2, period=1, prefix="x")
        # A reserve, even one that would not wait, or one too large, is unsupported.
        for n in (1, 3):
            with pytest.raises(librate.Unsupported):
                windows.reserve("k", n, max_wait=0)
        with pytest.raises(librate.InsufficientCapacity):
            windows.acquire_batch(["k"], 3)
    with pytest.raises(ValueError):
        gcra.acquire("k", -1)
    with pytest.raises(TypeError):
        gcra.acquire("k", now_ns=1.5)  # type: ignore[arg-type]
    # One unit now is sent unchecked, but only an int 1 is one unit.
    for call in (gcra.acquire, gcra.try_acquire):
        with pytest.raises(TypeError):
            call("k", True)
        with pytest.raises(TypeError):
            call(1)  # type: ignore[arg-type]
    with pytest.raises(librate.RedisError):
        gcra.acquire("k")  # a request that passes the checks does go out
    with pytest.raises(librate.RedisError):
        gcra.try_acquire("k")


def test_invalid_configurations(redis_client: redis.Redis) -> None:
    # Lua's doubles hold durations below 2**53 ns exactly: GCRA's burst x T, a window's
    # or the log's period. Everything the in-process limiter refuses, Redis refuses.
    for algorithm in ALGORITHMS:
        below = Fraction(EXACT - 1, SECOND)
        ok = RedisLimiter(redis_client, algorithm=algorithm, limit=1, period=below, prefix="x")
        assert ok.config.period_ns == EXACT - 1
        with pytest.raises(librate.InvalidConfig, match="2\\*\\*53"):
            RedisLimiter(
                redis_client,
                algorithm=algorithm,
                limit=1,
                period=Fraction(EXACT, SECOND),
                prefix="x",
            )
    # A period below 2**53 ns, but a tolerance of 3 x (2**52 - 1) ns.
    long_burst = {"limit": 2, "period": Fraction(EXACT - 2, SECOND), "burst": 3, "prefix": "x"}
    with pytest.raises(librate.InvalidConfig, match="2\\*\\*53"):
        RedisLimiter(redis_client, **long_burst)
    assert RedisLimiter(redis_client, **{**long_burst, "burst": 2}).config.max_n == 2
    with pytest.raises(librate.InvalidConfig, match="^limit 0: must be at least 1$"):
        RedisLimiter(redis_client, limit=0, period=1, prefix="x")
    with pytest.raises(librate.InvalidConfig, match="burst"):
        RedisLimiter(redis_client, algorithm="fixed_window", limit=1, period=1, burst=2, prefix="x")
    with pytest.raises(TypeError, match="redis-py client"):
        RedisLimiter(object(), limit=1, period=1, prefix="x")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_brief_call_replies_allowed_alone(redis_client: redis.Redis, algorithm: str) -> None:
    # max_wait "" asks for `allowed` alone; the state changes as a full acquire's does.
    # 3 a period at explicit times: 2 units at 0, 1 more, then 1 denied (the limit is
    # full), a query admitted; a second key, asked in full, decides the same. A period
    # of 2**53 - 1 ns, so no window edge passes during the calls by the server's clock.
    limiter = RedisLimiter(
        redis_client,
        algorithm=algorithm,
        limit=3,
        period=Fraction(EXACT - 1, SECOND),
        prefix=prefix("brief"),
    )
    brief, full = limiter.redis_key("brief"), limiter.redis_key("full")
    sha = redis_client.script_load(limiter._plan.source)
    config = limiter._plan.config_args
    for n, allowed in [(2, 1), (1, 1), (1, 0), (0, 1)]:
        args = [b"0", str(n).encode()]
        assert redis_client.evalsha(sha, 1, brief, *args, b"", *config) == allowed
        assert redis_client.evalsha(sha, 1, full, *args, b"0", *config)[0] == allowed
    assert redis_client.get(brief) == redis_client.get(full)
    # Several keys: one integer each, and a key of another type its error alone.
    redis_client.rpush(limiter.redis_key("list"), "x")
    keys = [limiter.redis_key("fresh"), brief, limiter.redis_key("list")]
    replies = redis_client.execute_command(
        "EVALSHA", sha, 3, *keys, b"0", b"1", b"", *config
    )
    assert replies[:2] == [1, 0]
    assert isinstance(replies[2], redis.ResponseError) and "WRONGTYPE" in str(replies[2])
    # try_acquire takes that form: the same answers as acquire's `allowed`.
    assert [limiter.try_acquire("now", n) for n in (2, 1, 1, 0)] == [True, True, False, True]
    with pytest.raises(librate.RedisError, match="WRONGTYPE"):
        limiter.try_acquire("list")


@pytest.mark.parametrize(
    ("algorithm", "garbage", "message"),
    [
        ("gcra", b"12ab", "holds no GCRA state"),
        ("fixed_window", b"1 2 3 4", "holds no fixed window state"),
        ("sliding_window", b"nope", "holds no sliding window state"),
        ("sliding_log", b"short", "holds no sliding log state"),
    ],
)
def test_foreign_values_are_errors(
    clients: Clients,
    redis_server: RedisServer,
    redis_client: redis.Redis,
    algorithm: str,
    garbage: bytes,
    message: str,
) -> None:
    limiter = clients.limiter(
        redis_server.port, algorithm=algorithm, limit=2, period=1, prefix=prefix("foreign")
    )
    redis_client.set(limiter.redis_key("text"), garbage)
    redis_client.rpush(limiter.redis_key("list"), "x")
    with pytest.raises(librate.RedisError, match=message) as text:
        limiter.acquire("text", now_ns=0)
    assert isinstance(text.value.__cause__, redis.ResponseError)
    with pytest.raises(librate.RedisError, match="WRONGTYPE"):
        limiter.acquire("list")
    assert redis_client.get(limiter.redis_key("text")) == garbage


def test_a_stopped_server_is_an_error_and_a_restarted_one_is_used_again(
    clients: Clients, own_redis_server: RedisServer
) -> None:
    options = {"retry": Retry(NoBackoff(), 0)}
    limiter = clients.limiter(own_redis_server.port, options, limit=1, period=1, prefix="r:")
    assert limiter.acquire("k", now_ns=0).allowed
    own_redis_server.stop()
    for _ in range(3):
        with pytest.raises(librate.RedisError) as down:
            limiter.acquire("k", now_ns=0)
        assert isinstance(down.value.__cause__, redis.ConnectionError)
    with pytest.raises(librate.RedisError):
        limiter.acquire_batch(["k", "j"], now_ns=0)
    # Back, empty, its scripts gone: the same client decides again, a full bucket.
    own_redis_server.start()
    assert limiter.acquire("k", now_ns=0) == Decision(True, 1, 0, 0, SECOND)
    assert not limiter.acquire("k", now_ns=0).allowed


def test_server_errors_are_errors(clients: Clients, own_redis_server: RedisServer) -> None:
    # OOM (no memory left for the write) and READONLY (a replica): errors, nothing admitted.
    limiter = clients.limiter(own_redis_server.port, limit=1, period=3600, prefix="server:")
    with own_redis_server.client() as client:
        client.config_set("maxmemory", 1)
        with pytest.raises(librate.RedisError) as oom:
            limiter.acquire("k")
        assert isinstance(oom.value.__cause__, redis.exceptions.OutOfMemoryError)
        client.config_set("maxmemory", 0)
        client.replicaof("127.0.0.1", _closed_port())
        with pytest.raises(librate.RedisError) as readonly:
            limiter.acquire("k")
        assert isinstance(readonly.value.__cause__, redis.exceptions.ReadOnlyError)
        client.replicaof("NO", "ONE")
    assert limiter.acquire("k").allowed


def test_a_silent_server_times_out(clients: Clients, silent_port: int) -> None:
    # A server that accepts and never answers: the client's socket timeout, an error.
    options = {"socket_timeout": 0.2, "retry": Retry(NoBackoff(), 0)}
    limiter = clients.limiter(silent_port, options, limit=1, period=1, prefix="silent:")
    for call in (lambda: limiter.acquire("k"), lambda: limiter.acquire_batch(["k"])):
        with pytest.raises(librate.RedisError) as silent:
            call()
        assert isinstance(silent.value.__cause__, redis.TimeoutError)


def test_unexpected_replies_are_errors() -> None:
    # What the scripts never return is an error, never a decision.
    replying = _Replying()
    limiter = RedisLimiter(replying, limit=2, period=1, prefix="reply:")
    good = [1, 2, b"1", b"0", b"500000000", "0"]
    replying.reply = good
    assert limiter.acquire("k") == Decision(True, 2, 1, 0, 500 * MS)
    replying.reply = [0, 2, 0, 1, 2, 0]
    assert limiter.acquire("k") == Decision(False, 2, 0, 1, 2)
    # try_acquire asks for the brief reply, `allowed` alone.
    replying.reply = 1
    assert limiter.try_acquire("k") is True
    replying.reply = 0
    assert limiter.try_acquire("k") is False
    for bad in (None, b"OK", b"1", 2, -1, True, good, [1]):
        replying.reply = bad
        with pytest.raises(librate.RedisError, match="unexpected reply"):
            limiter.try_acquire("k")
    for bad in (
        None,
        b"OK",
        good[:5],
        [*good, 0],
        [2, *good[1:]],
        [*good[:2], -1, *good[3:]],
        [*good[:2], 2**64, *good[3:]],
        [*good[:2], b"+1", *good[3:]],
        [*good[:2], b" 1", *good[3:]],
        [*good[:2], b"1.0", *good[3:]],
        [*good[:2], True, *good[3:]],
    ):
        replying.reply = bad
        with pytest.raises(librate.RedisError, match="unexpected reply"):
            limiter.acquire("k")


class _Replying:
    """A client whose script returns ``reply``."""

    reply: Any = None

    def register_script(self, source: bytes) -> Any:
        return lambda keys, args: self.reply

    def execute_command(self, *args: Any) -> Any:
        return self.reply


def test_a_decoding_client(clients: Clients, redis_server: RedisServer) -> None:
    # decode_responses=True: the replies are str, the decisions the same.
    options = {"decode_responses": True}
    limiter = clients.limiter(redis_server.port, options, limit=1, period=2, prefix=prefix("dec"))
    assert limiter.acquire("k", now_ns=0) == Decision(True, 1, 0, 0, 2 * SECOND)
    assert limiter.acquire_batch(["k"], now_ns=999 * MS) == [
        Decision(False, 1, 0, 1001 * MS, 1001 * MS)
    ]


def test_the_limiter_describes_itself(redis_client: redis.Redis) -> None:
    limiter = RedisLimiter(redis_client, algorithm="sliding_log", limit=5, period=60, prefix="api:")
    assert limiter.config == librate.Config("sliding_log", 5, 60 * SECOND)
    assert (limiter.prefix, limiter.client) == (b"api:", redis_client)
    assert repr(limiter).startswith("<RedisLimiter b'api:' Config(algorithm='sliding_log'")


def test_import_librate_needs_no_redis_py() -> None:
    # librate (and its middleware) never import redis-py; librate.redis says what it needs.
    code = (
        "import sys; sys.modules['redis'] = None\n"
        "import librate, librate.middleware\n"
        "try:\n    import librate.redis\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert "librate.redis needs redis-py: pip install 'librate[redis]'" in out


def _closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield int(listener.getsockname()[1])
