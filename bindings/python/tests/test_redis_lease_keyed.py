"""``librate.lease.KeyedLeasedLimiter`` on a real ``redis-server`` (docs/leases.md, keys):
requests decided in Redis take what the key's leases leave, a hot key is leased and
decided in process with no call to Redis, Redis stopped leaves the fallback, ``close()``
hands every share back, bad input is refused; and holders on virtual time never admit
more for a key than its rule alone would.

Every expected value is worked out by hand from the contract. A request decided in Redis
decides from a bucket of what the key's leases leave, the rule less every share still
held, made full by the request that first asks for the key. A key is leased at a round
once it asked for ``hot`` units since the last; its first renewal asks for the whole rule,
and a key Redis made is quiet for a lease (no grant) from then. The requests in Redis
share in the division by their demand, the units asked over the lease before, as
millionths of the rule's rate (units * T / lease); max-min meets every demand that fits
and splits what is left evenly. A share decides as a GCRA of one unit every
ceil(T * 10^6 / rate) ns, bursts of its ``burst``, and a fresh one starts empty.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

import librate
from helpers import MS, SECOND
from librate import Config, Decision, LeaseRule
from librate.lease import KeyedLeasedLimiter
from redis_server import RedisCluster, RedisServer

US = 1000
#: GCRA, T = 100 ms, B = 10; leased 2 s at a time, renewed every 500 ms.
GCRA = LeaseRule(Config.gcra(10, 1), lease=2)
#: 10 a window of 1 s; leased 2 s at a time.
WINDOW = LeaseRule(Config.fixed_window(10, 1), lease=2)


class Counts:
    """Counts the lease script calls a client sends, by their op (ARGV[1]): a base of a
    redis-py client, sync or asyncio, before it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent: dict[bytes, int] = {b"acquire": 0, b"renew": 0, b"release": 0}

    def register_script(self, script: Any) -> Any:
        registered = super().register_script(script)  # type: ignore[misc]

        def call(keys: list[bytes], args: list[bytes]) -> Any:
            self.sent[args[0]] += 1
            return registered(keys=keys, args=args)

        return call


class Counting(Counts, redis.Redis):
    """A sync client that counts its lease script calls."""


def counting(server: RedisServer, kind: type[Any] = Counting, **options: Any) -> Any:
    """A client of ``kind`` (a counting one) of ``server``."""
    return kind(host="127.0.0.1", port=server.port, socket_timeout=5, **options)


def keyed(client: Any, prefix: str, rule: LeaseRule, **options: Any) -> Any:
    """A limiter on the test's timeline (no thread or task renews it), of ``kind``
    (``KeyedLeasedLimiter`` unless given), leasing every key asked for, one at most."""
    kind = options.pop("kind", KeyedLeasedLimiter)
    options.setdefault("hot", 0)
    options.setdefault("capacity", 1)
    return kind(client, prefix, rule, background=False, **options)


def holders_in(fields: Any) -> list[bytes]:
    """The holders' fields of a key's hash (``HKEYS``)."""
    return [field for field in fields if field.startswith(b"h:")]


def eventually(condition: Callable[[], bool], what: str) -> None:
    """Waits for ``condition``, however slow the machine."""
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.01)


def test_gcra_requests_in_redis_take_what_the_leases_leave(redis_server: RedisServer) -> None:
    client = counting(redis_server)
    # Requests only: a holder that never leases (no key asks for 10**6 units a round).
    requests = keyed(client, "kg:", GCRA, hot=10**6, name="r")
    # The first request made the hash: the whole rule, full. 4 taken: TAT 400 ms.
    assert requests.acquire_at("a", 4, 0) == Decision(True, 10, 6, 0, 400 * MS)
    # 7 more would need TAT 1.1 s, past tau = 1 s by 100 ms.
    assert requests.acquire_at("a", 7, 0) == Decision(False, 10, 6, 100 * MS, 400 * MS)
    assert requests.acquire_at("a", 0, 0) == Decision(True, 10, 6, 0, 400 * MS)
    # More than the rule's burst: the caller's error, never sent.
    with pytest.raises(librate.InsufficientCapacity, match="n=11"):
        requests.acquire_at("a", 11, 0)
    with pytest.raises(librate.InsufficientCapacity):
        requests.try_acquire_at("a", 11, 0)
    assert client.sent[b"acquire"] == 3

    # A holder leasing every key asked for: its query at 100 ms, decided in Redis,
    # makes "a" hot, and the round leases it. Redis made the key at 0: quiet to 2 s.
    holder = keyed(client, "kg:", GCRA, name="h")
    assert holder.try_acquire_at("a", 0, 100 * MS)
    assert not holder.is_leased("a")
    assert holder.renew_at(100 * MS) == 1
    assert holder.is_leased("a") and not holder.is_leased("b")
    assert b"h:h" in client.hkeys("kg:a")
    # Leased without a share: decided in Redis, full again at 2.1 s.
    assert requests.acquire_at("a", 1, 2100 * MS) == Decision(True, 10, 9, 0, 100 * MS)

    # The holder's second renewal at 2.1 s asks for nothing. The requests here asked for
    # 11 units (4, 7 denied) in the lease before: 11 * 100 ms / 2 s = 55% of the rule.
    # Their 55% is met and the 45% left split evenly: the holder gets 22.5% and a burst
    # of floor(10 * 0.225) = 2.
    assert holder.renew_at(2100 * MS) == 1
    # What is left for the requests: 77.5%, one unit every ceil(100 ms / 0.775) =
    # 129,032,259 ns, a burst of 8. Their 9 tokens are cut to 8.
    every = 129_032_259
    full_us = -(-8 * every // US)  # ceil, whole microseconds
    assert requests.acquire_at("a", 8, 2100 * MS) == Decision(True, 8, 0, 0, full_us * US)
    retry_us = -(-every // US)
    assert requests.acquire_at("a", 1, 2100 * MS) == Decision(
        False, 8, 0, retry_us * US, full_us * US
    )
    # 9 units is more than what is left ever holds: ask again after a lease.
    assert requests.acquire_at("a", 9, 2100 * MS).retry_after_ns == 2 * SECOND

    # The holder's share, 225,000 millionths: one unit every ceil(100 ms * 10^6 /
    # 225,000) = 444,444,445 ns, from empty at 2.1 s; decided in process.
    sent = dict(client.sent)
    share_every = 444_444_445
    assert not holder.try_acquire_at("a", 1, 2100 * MS + share_every - 1)
    assert holder.try_acquire_at("a", 1, 2100 * MS + share_every)
    assert not holder.try_acquire_at("a", 1, 2100 * MS + share_every)
    # acquire decides in process too, with the share's fields: at two units' time, one
    # more admitted, none left, the share full again two units' time later.
    assert holder.acquire_at("a", 1, 2100 * MS + 2 * share_every) == Decision(
        True, 2, 0, 0, 2 * share_every
    )
    # Its burst is 2: 3 units are more than the share ever holds, so Redis decides
    # them, where the bucket left is full again 8 units' time after 2.1 s.
    assert client.sent == sent
    assert holder.try_acquire_at("a", 3, 2100 * MS + 8 * every)
    assert client.sent[b"acquire"] == sent[b"acquire"] + 1

    # Closing hands the share back: the key's hash no longer lists the holder.
    holder.close()
    assert holder.closed and b"h:h" not in client.hkeys("kg:a")
    assert client.sent[b"release"] == 1
    with pytest.raises(librate.ClosedError):
        holder.try_acquire("a")
    with pytest.raises(librate.ClosedError):
        holder.is_leased("a")
    holder.close()  # idempotent
    requests.close()
    assert client.sent[b"release"] == 1  # it leased nothing
    client.close()


def test_window_requests_in_redis_count_beside_the_counts_granted(
    redis_server: RedisServer,
) -> None:
    client = counting(redis_server)
    requests = keyed(client, "kw:", WINDOW, hot=10**6, name="r")
    # Window 0 is [0, 1 s): 4 of 10, then 7 more are past the limit until its end.
    assert requests.acquire_at("a", 4, 0) == Decision(True, 10, 6, 0, SECOND)
    assert requests.acquire_at("a", 7, 100 * US) == Decision(
        False, 10, 6, 999_900 * US, 999_900 * US
    )
    assert requests.acquire_at("a", 6, 100 * US) == Decision(True, 10, 0, 0, 999_900 * US)

    # The holder's query makes "a" hot; the window a request made is quiet for grants
    # to its end. The holder then asks for 10 units (its demand): leased without a
    # share, they are decided in Redis, where window 0 is spent.
    holder = keyed(client, "kw:", WINDOW, name="h")
    assert holder.try_acquire_at("a", 0, 200 * MS)
    assert holder.renew_at(200 * MS) == 1
    assert not holder.try_acquire_at("a", 10, 500 * MS)
    # Window 1: the requests here asked for 27 units in the window before, more than
    # the limit, so their demand is the whole window, as the holder's is: each gets
    # half, 5.
    assert holder.renew_at(SECOND) == 1
    assert requests.acquire_at("a", 5, SECOND + US) == Decision(True, 10, 0, 0, 999_999 * US)
    assert requests.acquire_at("a", 1, SECOND + US) == Decision(
        False, 10, 0, 999_999 * US, 999_999 * US
    )
    # The holder's count of 5 is decided in process.
    sent = dict(client.sent)
    assert holder.try_acquire_at("a", 5, 1500 * MS)
    assert not holder.try_acquire_at("a", 1, 1500 * MS)
    assert client.sent == sent
    holder.close()
    requests.close()
    assert b"h:h" not in client.hkeys("kw:a")
    client.close()


def test_the_renewer_leases_a_hot_key_and_decides_it_in_process(
    redis_server: RedisServer,
) -> None:
    # On the server's clock: renewed every 50 ms, quiet for 200 ms after Redis made the
    # key. A key asking for 2 units a round is leased; every request asks for 1.
    client = counting(redis_server)
    rule = LeaseRule(Config.gcra(1000, 1), lease=0.2)
    with KeyedLeasedLimiter(client, "kr:", rule, hot=2, capacity=1) as limiter:
        assert limiter.try_acquire("hot")  # decided in Redis: the whole rule, full
        assert client.sent[b"acquire"] == 1

        def in_process() -> bool:
            sent = client.sent[b"acquire"]
            limiter.try_acquire("hot")
            return bool(client.sent[b"acquire"] == sent)

        eventually(in_process, "a request for the hot key decided in process")
        assert limiter.is_leased("hot") and not limiter.is_leased("cold")
        assert limiter.try_acquire("cold") and limiter.errors == 0
        assert client.sent[b"renew"] >= 2
    assert limiter.closed and client.hkeys("kr:hot") and not holders_in(client.hkeys("kr:hot"))
    client.close()


@pytest.mark.parametrize("local", [None, Config.gcra(1, 1, burst=1)])
def test_redis_stopped_leaves_leased_keys_their_leases_then_the_fallback(
    own_redis_server: RedisServer, local: Config | None
) -> None:
    # T = 1 ms, B = 1,000; leased 2 s at a time, a margin of 2 ms.
    rule = LeaseRule(Config.gcra(1000, 1), lease=2)
    client = counting(own_redis_server, retry=Retry(NoBackoff(), 0), socket_connect_timeout=1)
    limiter = keyed(client, "kd:", rule, fallback=local, name="h")
    assert limiter.fallback == local
    assert limiter.try_acquire_at("a", 0, 0)
    assert limiter.renew_at(0) == 1  # quiet
    # Alone, asking nothing, and no request in Redis asked anything: the whole rule.
    assert limiter.renew_at(2 * SECOND) == 1
    own_redis_server.stop()
    with pytest.raises(librate.RedisError) as raised:
        limiter.renew_at(2500 * MS)
    assert isinstance(raised.value.__cause__, redis.ConnectionError)
    assert (limiter.errors, limiter.last_error) == (1, raised.value)
    # The share, empty at 2 s, one unit a ms, decides in process until 3.998 s.
    assert limiter.try_acquire_at("a", 1, 2 * SECOND + MS)
    assert limiter.try_acquire_at("a", 999, 3997 * MS)
    assert limiter.errors == 1
    # Then the fallback, as for a key never leased: a call that fails, counted.
    first = limiter.acquire_at("b", 1, 3998 * MS)
    if local is None:
        # Denied, retry after the renewal interval; a query is admitted.
        assert first == Decision(False, 0, 0, 500 * MS, 0)
        assert not limiter.try_acquire_at("a", 1, 3998 * MS)
        assert limiter.acquire_at("a", 0, 3998 * MS) == Decision(True, 0, 0, 0, 0)
    else:
        # One a second per key, bursts of 1.
        assert first == Decision(True, 1, 0, 0, SECOND)
        assert limiter.acquire_at("b", 1, 3998 * MS) == Decision(False, 1, 0, SECOND, SECOND)
        assert limiter.try_acquire_at("a", 1, 3998 * MS)
        assert not limiter.try_acquire_at("a", 1, 3998 * MS)
        assert limiter.acquire_at("a", 0, 3998 * MS) == Decision(True, 1, 0, 0, SECOND)
    # The renewal and each request decided by the fallback.
    errors = 4 if local is None else 6
    assert limiter.errors == errors
    assert isinstance(limiter.last_error, librate.RedisError)
    limiter.close()  # the hand-back of "a" fails too: counted, not raised
    assert limiter.closed and limiter.errors == errors + 1
    client.close()


class Garbled(redis.Redis):
    """A client whose lease script's answers to requests are passed through ``garble``."""

    garble: Callable[[Any], Any] = staticmethod(lambda reply: reply)

    def register_script(self, script: Any) -> Any:
        registered = super().register_script(script)

        def call(keys: list[bytes], args: list[bytes]) -> Any:
            reply = registered(keys=keys, args=args)
            return self.garble(reply) if args[0] == b"acquire" else reply

        return call


@pytest.mark.parametrize(
    "garble",
    [
        lambda reply: [2, *reply[1:]],  # neither admitted nor denied
        lambda reply: [reply[0], 11, *reply[2:]],  # a limit above the rule's burst
        lambda reply: [1, reply[1], reply[1] + 1, 0, 0],  # more left than the limit
        lambda reply: [1, 10, 9, 5, 0],  # admitted, yet told to wait
        lambda reply: reply[:4],
        lambda reply: [reply[0], b"10", *reply[2:]],
        lambda reply: [reply[0], 2**63, *reply[2:]],
        lambda reply: b"OK",
    ],
)
def test_answers_the_script_never_gives_are_the_fallbacks(
    redis_server: RedisServer, garble: Callable[[Any], Any], request: pytest.FixtureRequest
) -> None:
    client = Garbled(host="127.0.0.1", port=redis_server.port)
    client.garble = garble
    limiter = keyed(client, f"{request.node.name}:", GCRA)
    assert limiter.acquire_at("a", 1, 0) == Decision(False, 0, 0, 500 * MS, 0)
    assert limiter.errors == 1 and isinstance(limiter.last_error, librate.ReplyError)
    assert limiter.last_error.code == librate._ffi.RATE_E_REPLY
    limiter.close()
    client.close()


def test_bad_input_is_refused_by_name(redis_client: redis.Redis) -> None:
    with pytest.raises(librate.InvalidConfig, match="capacity 0: must be at least 1"):
        KeyedLeasedLimiter(redis_client, "kb:", GCRA, hot=1, capacity=0, background=False)
    with pytest.raises(ValueError, match="hot -1: must be at least 0"):
        KeyedLeasedLimiter(redis_client, "kb:", GCRA, hot=-1, capacity=1, background=False)
    with pytest.raises(TypeError, match="capacity must be an int, not float"):
        KeyedLeasedLimiter(redis_client, "kb:", GCRA, hot=1, capacity=1.5, background=False)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="prefix must be str or bytes, not int"):
        KeyedLeasedLimiter(redis_client, 7, GCRA, hot=1, capacity=1, background=False)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="rule must be a LeaseRule, not Config"):
        KeyedLeasedLimiter(redis_client, "kb:", Config.gcra(10, 1), hot=1, capacity=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fallback must be a Config or None, not int"):
        keyed(redis_client, "kb:", GCRA, fallback=1)
    with pytest.raises(librate.InvalidConfig, match="name"):
        keyed(redis_client, "kb:", GCRA, name="x" * 65)
    with pytest.raises(TypeError, match="KeyedLeasedLimiter takes a sync client"):
        keyed(redis.asyncio.Redis(), "kb:", GCRA)
    limiter: KeyedLeasedLimiter = keyed(redis_client, "kb:", GCRA)
    with pytest.raises(TypeError, match="key must be str or bytes, not int"):
        limiter.try_acquire(7)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="key must be str or bytes, not NoneType"):
        limiter.acquire(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="key must be str or bytes, not list"):
        limiter.is_leased([])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n -1: must be at least 0"):
        limiter.try_acquire("a", -1)
    with pytest.raises(TypeError, match="n must be an int, not bool"):
        limiter.acquire("a", True)
    with pytest.raises(ValueError, match="now_ns -1: must be at least 0"):
        limiter.try_acquire_at("a", 1, -1)
    # n past the burst, for a key not leased and for one leased with a share.
    with pytest.raises(librate.InsufficientCapacity, match="n=11"):
        limiter.try_acquire("a", 11)
    assert limiter.try_acquire_at("a", 0, 0)
    limiter.renew_at(0)
    limiter.renew_at(2 * SECOND)
    assert limiter.is_leased("a")
    with pytest.raises(librate.InsufficientCapacity):
        limiter.try_acquire_at("a", 11, 2 * SECOND)
    # The empty key, and a str and its UTF-8 bytes, are keys like any other.
    assert limiter.is_leased(b"a") and not limiter.is_leased("")
    assert limiter.try_acquire_at("", 1, 2 * SECOND)
    assert limiter.errors == 0
    limiter.close()


def test_the_example_in_the_docs(redis_server: RedisServer) -> None:
    # docs/python.md's and docs/leases.md's example, on the test's server.
    client = redis_server.client(socket_timeout=0.2)
    # 100 requests a second per user across every host; a user is leased here once it
    # asks for 20 units between two renewals, at most 1,000 users at once.
    rule = librate.LeaseRule(librate.Config.gcra(100, 1), lease=2)
    with KeyedLeasedLimiter(client, "api:user:", rule, hot=20, capacity=1000) as limiter:
        if not limiter.try_acquire("7"):
            print("429 Too Many Requests")
        decision = limiter.acquire("7")
    # A user Redis never saw: the whole rule, full, as the Redis tier decides it.
    assert (decision.allowed, decision.limit) == (True, 100)
    assert limiter.closed and limiter.errors == 0
    client.close()


def test_each_key_lives_in_its_slot_on_a_cluster() -> None:
    # "kc:a", "kc:b" and "kc:c" hash to slots 4911, 9036 and 13165: one on each master.
    cluster = RedisCluster()
    try:
        client: Any = cluster.client()
        limiter = keyed(client, "kc:", GCRA, capacity=3, name="h")
        for key in "abc":
            assert limiter.try_acquire_at(key, 1, 0)
        assert limiter.renew_at(0) == 3  # quiet: Redis made the keys just now
        masters = [client.get_node_from_key(f"kc:{key}") for key in "abc"]
        assert len({master.name for master in masters}) == 3
        # Each key's requests asked for 1 unit in the lease before 2 s: 5% of the rule,
        # met, and the 95% left split evenly: the holder's share is 47.5%, one unit every
        # ceil(100 ms * 10^6 / 475,000) = 210,526,316 ns from empty at 2 s.
        assert limiter.renew_at(2 * SECOND) == 3
        for key in "abc":
            assert not limiter.try_acquire_at(key, 1, 2 * SECOND + 210_526_315)
            assert limiter.try_acquire_at(key, 1, 2 * SECOND + 210_526_316)
        for key, master in zip("abc", masters, strict=True):
            with redis.Redis(host=master.host, port=master.port) as node:
                assert holders_in(node.hkeys(f"kc:{key}")) == [b"h:h"]
        limiter.close()
        for key, master in zip("abc", masters, strict=True):
            with redis.Redis(host=master.host, port=master.port) as node:
                assert node.hkeys(f"kc:{key}") and not holders_in(node.hkeys(f"kc:{key}"))
        assert limiter.errors == 0
        client.close()
    finally:
        cluster.close()


def never_past_the_rule(log: list[tuple[int, int]], interval_ns: int, burst: int) -> None:
    """Checks that over every interval [t_i, t_j] of ``log`` (times in order, and units
    admitted at each), the units admitted are at most B + floor((t_j - t_i) / T)."""
    for i, (start, _) in enumerate(log):
        units = 0
        for end, admitted in log[i:]:
            units += admitted
            most = burst + (end - start) // interval_ns
            assert units <= most, f"{units} units in [{start}, {end}] ns, past {most}"


def never_past_the_window(log: list[tuple[int, int]], period_ns: int, limit: int) -> None:
    """Checks that in every window of ``period_ns``, ``log`` admitted at most ``limit``."""
    windows: dict[int, int] = {}
    for at, admitted in log:
        windows[at // period_ns] = windows.get(at // period_ns, 0) + admitted
    for window, units in windows.items():
        assert units <= limit, f"{units} units in window {window}, past {limit}"


@pytest.mark.parametrize(
    ("config", "check"),
    [
        # 200 a second: T = 5 ms, B = 20; or 200 a window of 1 s.
        (Config.gcra(20, 0.1), lambda log: never_past_the_rule(log, 5 * MS, 20)),
        (Config.fixed_window(200, 1), lambda log: never_past_the_window(log, SECOND, 200)),
    ],
    ids=["gcra", "fixed_window"],
)
def test_holders_of_hot_keys_and_requests_in_redis_never_pass_a_keys_rule(
    redis_server: RedisServer, config: Config, check: Callable[[list[tuple[int, int]]], None]
) -> None:
    # Per key: leases of 1 s renewed every 200 ms; a key is leased at a holder once it
    # asks for 60 units between two rounds.
    rule = LeaseRule(config, lease=1, renew_every=0.2)
    client = counting(redis_server)
    prefix = f"ks-{config.algorithm}:"
    holders = [keyed(client, prefix, rule, hot=60, capacity=8, name=f"h{i}") for i in range(3)]
    keys = ["hot", "warm", "cold"]
    logs: dict[str, list[tuple[int, int]]] = {key: [] for key in keys}
    decided = 0
    rng = random.Random(7)
    # 4 s of virtual time in steps of 1 ms.
    for ms in range(4000):
        at = ms * MS
        for index, holder in enumerate(holders):
            # Holder 1 stops for good at 3 s, its leases left to lapse.
            if index == 1 and ms >= 3000:
                continue
            if ms % 200 == 0:
                holder.renew_at(at)
            # "hot": 0.6 requests a ms at holders 0 and 1 (about 180 units a round:
            # leased there), 0.1 at holder 2 (30 a round: decided in Redis), all together
            # ten times its rule; "warm": one in 20 ms at each; "cold": one in 400 ms.
            chances = {"hot": 0.6 if index < 2 else 0.1, "warm": 0.05, "cold": 0.0025}
            for key in keys:
                if rng.random() >= chances[key]:
                    continue
                units = rng.randint(1, 2)
                decided += 1
                if holder.try_acquire_at(key, units, at):
                    logs[key].append((at, units))
    for key in keys:
        assert logs[key], f"{key} admitted nothing"
        check(logs[key])
    # The hot key was leased where it is hot, and decided there in process.
    assert holders[0].is_leased("hot") and not holders[2].is_leased("hot")
    assert not holders[0].is_leased("warm") and not holders[0].is_leased("cold")
    in_redis = client.sent[b"acquire"]
    assert decided - in_redis > in_redis, f"{decided - in_redis} in process, {in_redis} in Redis"
    for holder in holders:
        holder.close()
    client.close()
