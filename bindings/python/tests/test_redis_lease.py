"""``librate.lease.LeasedLimiter`` on a real ``redis-server``: the lease script's answers
applied on a timeline of the test's own (``renew_at``, ``acquire_at``), and the renewer
thread on the server's clock.

Every expected value is worked out by hand from the contract (docs/leases.md): the rule
is GCRA, 1,000 a second (T = 1 ms, B = 1,000), leased 2 s at a time (renewed every
500 ms, a margin of 2 ms). A holder reports as its demand the units it asked for since
its last renewal, in millionths of the rule's rate (its first renewal: the whole rule);
the script divides the rule by demand (max-min), never granting what an unended lease may
still hold. A share of ``rate`` millionths decides as a GCRA of one unit every
ceil(T * 10^6 / rate) ns, bursts of its ``burst``; a fresh lease starts empty, a lease
that follows one still held keeps its tokens, capped at the new burst.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

import librate
from helpers import MS, SECOND
from librate import Config, Decision, LeaseRule
from librate.lease import Grant, HolderState, LeasedLimiter
from redis_server import RedisServer

RULE = LeaseRule(Config.gcra(1000, 1), lease=2)
#: The whole rule's rate, in millionths.
WHOLE = 1_000_000
LEASED, UNSHARED, FALLBACK = HolderState.LEASED, HolderState.UNSHARED, HolderState.FALLBACK


def holder(client: Any, key: str, name: str, **options: Any) -> LeasedLimiter:
    """A holder on the test's timeline: no thread renews it."""
    return LeasedLimiter(client, key, RULE, name=name, background=False, **options)


def eventually(condition: Callable[[], bool], what: str) -> None:
    """Waits for ``condition``, however slow the machine (the outcome never depends on
    how long it takes, only that it comes)."""
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.01)


def test_a_new_rule_is_quiet_for_a_lease_then_granted(redis_client: redis.Redis) -> None:
    limiter = holder(redis_client, "lease:{quiet}", "host-a")
    assert limiter.state_at(10 * SECOND) is FALLBACK
    # Redis made the rule afresh: a lease from before may still run, so nothing is
    # granted for a lease length, and the holder is denied (not the fallback) meanwhile.
    assert limiter.renew_at(10 * SECOND) is UNSHARED
    assert limiter.last_grant is None
    assert limiter.acquire_at(1, 10 * SECOND) == Decision(False, 0, 0, 500 * MS, 0)
    assert limiter.state_at(11 * SECOND + 998 * MS - 1) is UNSHARED
    assert limiter.state_at(11 * SECOND + 998 * MS) is FALLBACK
    # A lease after it was made: the whole rule, under the epoch of 10 s (in µs).
    assert limiter.renew_at(12 * SECOND) is LEASED
    assert limiter.last_grant == Grant(WHOLE, 1000, 2_000_000, 10_000_000, WHOLE, 1000, 1)
    # A fresh lease starts empty: one unit after T.
    assert limiter.acquire_at(1, 12 * SECOND) == Decision(False, 1000, 0, MS, SECOND)
    assert limiter.acquire_at(1, 12 * SECOND + MS) == Decision(True, 1000, 0, 0, SECOND)
    assert limiter.state_at(13 * SECOND + 998 * MS - 1) is LEASED
    assert limiter.state_at(13 * SECOND + 998 * MS) is FALLBACK
    limiter.close()


def two_holders_at_4_s(client: redis.Redis, key: str) -> tuple[LeasedLimiter, LeasedLimiter]:
    """h1 and h2 on one rule, their demands set by the units they ask for, up to 4 s,
    checking every answer on the way (the numbers of redis-tests/tests/lease_script.rs)."""
    h1, h2 = holder(client, key, "h1"), holder(client, key, "h2")
    assert h1.renew_at(0) is UNSHARED
    # 1,200 units asked for in 2 s: 1,200 * T / 2 s = 600,000 millionths. Alone, h1
    # meets it and takes the rest too.
    h1.acquire_at(600, SECOND)
    h1.acquire_at(600, SECOND)
    assert h1.renew_at(2 * SECOND) is LEASED
    assert h1.last_grant == Grant(WHOLE, 1000, 2_000_000, 0, WHOLE, 1000, 1)
    # h2's first renewal asks for the whole rule: its fair half, but h1 holds it all.
    assert h2.renew_at(2500 * MS) is UNSHARED
    assert h2.last_grant == Grant(0, 0, 2_000_000, 0, WHOLE, 1000, 2)
    assert h2.acquire_at(1, 2500 * MS) == Decision(False, 0, 0, 500 * MS, 0)
    # h1 decides from its share, empty at 2 s: 500 tokens by 2.5 s.
    assert h1.acquire_at(200, 2500 * MS) == Decision(True, 1000, 300, 0, 700 * MS)
    # h1 asked for 200 units in 1 s (200,000) and h2 for the whole rule: max-min meets
    # h1's demand. Its lease of the whole rule still runs to 4 s: held.
    assert h1.renew_at(3 * SECOND) is LEASED
    assert h1.last_grant == Grant(200_000, 200, 2_000_000, 0, WHOLE, 1000, 2)
    # h2 asked for 1 + 299 units in 1 s: 300,000, its target 30% + half the 50% left,
    # but h1 may hold everything until 4 s.
    h2.acquire_at(299, 3 * SECOND)
    assert h2.renew_at(3500 * MS) is UNSHARED
    assert h2.last_grant == Grant(0, 0, 2_000_000, 0, WHOLE, 1000, 2)
    # From 4 s h1 holds 20%: h2, asking for 100 units in 500 ms (200,000), gets 20%
    # and half the 60% left, a burst of 500.
    h2.acquire_at(100, 3750 * MS)
    assert h2.renew_at(4 * SECOND) is LEASED
    assert h2.last_grant == Grant(500_000, 500, 2_000_000, 0, 700_000, 700, 2)
    return h1, h2


def test_two_holders_split_the_rule_by_demand(redis_client: redis.Redis) -> None:
    h1, h2 = two_holders_at_4_s(redis_client, "lease:{split}")
    # h2's fresh share: one unit every 2 ms, bursts of 500, starting empty.
    assert h2.acquire_at(1, 4 * SECOND) == Decision(False, 500, 0, 2 * MS, SECOND)
    assert h2.acquire_at(1, 4 * SECOND + 2 * MS) == Decision(True, 500, 0, 0, SECOND)
    h1.close()
    h2.close()


def test_close_hands_the_share_back(redis_client: redis.Redis) -> None:
    key = "lease:{hand-back}"
    h1, h2 = two_holders_at_4_s(redis_client, key)
    assert h2.acquire_at(1, 4 * SECOND + 2 * MS).allowed
    h1.close()
    assert h1.closed and redis_client.hkeys(key) and b"h:h1" not in redis_client.hkeys(key)
    with pytest.raises(librate.ClosedError):
        h1.acquire_at(1, 4 * SECOND)
    h1.close()  # idempotent
    # Alone, h2 gets the whole rule at its next renewal, keeping its tokens: at 4.5 s its
    # share (TAT 5.002 s, tau 1 s, 2 ms a unit) holds 249, and no more after them.
    assert h2.renew_at(4500 * MS) is LEASED
    assert h2.last_grant == Grant(WHOLE, 1000, 2_000_000, 0, WHOLE, 1000, 1)
    assert h2.acquire_at(249, 4500 * MS) == Decision(True, 1000, 0, 0, SECOND)
    assert h2.acquire_at(1, 4500 * MS) == Decision(False, 1000, 0, MS, SECOND)
    h2.close()
    assert redis_client.hkeys(key) and not any(
        field.startswith(b"h:") for field in redis_client.hkeys(key)
    )


def test_a_share_given_up_is_free_once_its_lease_ends(redis_client: redis.Redis) -> None:
    # Two idle holders renewing every 500 ms, on the rule's default timing. h1 alone takes
    # the whole rule at 2 s; from 2.5 s it is granted half, but may decide from the whole
    # rule until 4 s. After that it may hold half: h2's renewal at 4.25 s gets the other.
    key = "lease:{given-up}"
    h1, h2 = holder(redis_client, key, "h1"), holder(redis_client, key, "h2")
    h1.renew_at(0)
    h2.renew_at(250 * MS)
    for step in range(4, 9):
        h1.renew_at(step * 500 * MS)
        h2.renew_at(step * 500 * MS + 250 * MS)
    assert h1.last_grant is not None and h1.last_grant.rate == WHOLE // 2
    assert h2.last_grant is not None
    assert (h2.last_grant.rate, h2.last_grant.burst) == (WHOLE // 2, 500)
    h1.close()
    h2.close()


def test_redis_stopped_past_the_lease_is_the_fallback(own_redis_server: RedisServer) -> None:
    client = own_redis_server.client(retry=Retry(NoBackoff(), 0), socket_connect_timeout=1)
    local = Config.gcra(1, 1, burst=1)
    limiter = holder(client, "lease:{down}", "host-b", fallback=local)
    assert limiter.fallback == local
    assert limiter.renew_at(0) is UNSHARED
    assert limiter.renew_at(2 * SECOND) is LEASED
    grant = limiter.last_grant
    own_redis_server.stop()
    with pytest.raises(librate.RedisError) as raised:
        limiter.renew_at(2500 * MS)
    assert isinstance(raised.value.__cause__, redis.ConnectionError)
    assert (limiter.errors, limiter.last_error) == (1, raised.value)
    # The lease holds to 2 s + 2 s - 2 ms: the share decides (full since 3 s) until then.
    assert limiter.last_grant == grant
    assert limiter.acquire_at(1, 3997 * MS) == Decision(True, 1000, 999, 0, MS)
    # Then the local rule: one a second, bursts of 1.
    assert limiter.state_at(3998 * MS) is FALLBACK
    assert limiter.acquire_at(1, 3998 * MS) == Decision(True, 1, 0, 0, SECOND)
    assert limiter.acquire_at(1, 3998 * MS) == Decision(False, 1, 0, SECOND, SECOND)
    limiter.close()  # the hand-back fails too: counted, not raised
    assert limiter.closed and limiter.errors == 2


def test_the_renewer_falls_back_while_redis_is_down(own_redis_server: RedisServer) -> None:
    # On the server's clock, renewed by the thread every 250 ms, each call timing out
    # before the next is due.
    client = own_redis_server.client(
        retry=Retry(NoBackoff(), 0), socket_timeout=0.2, socket_connect_timeout=0.2
    )
    rule = LeaseRule(Config.gcra(1000, 1), lease=1)
    fallback = Config.gcra(1, 3600, burst=1)
    with LeasedLimiter(client, "lease:{renewer}", rule, fallback=fallback) as limiter:
        eventually(lambda: limiter.state is LEASED, "a lease after the quiet one")
        assert limiter.last_grant is not None
        epoch = limiter.last_grant.epoch
        assert limiter.acquire(0).limit == 1000  # the share's burst: the whole rule
        assert limiter.errors == 0 and not limiter.in_fallback
        own_redis_server.stop()
        eventually(lambda: limiter.in_fallback, "the fallback once the lease ended")
        assert limiter.errors >= 1 and isinstance(limiter.last_error, librate.RedisError)
        first = limiter.acquire()
        assert (first.allowed, first.limit) == (True, 1)
        assert not limiter.try_acquire()
        # Back, empty: Redis lost the rule, so it is quiet for a lease under a new epoch.
        own_redis_server.start()
        eventually(lambda: limiter.state is LEASED, "a lease after Redis came back")
        assert limiter.last_grant is not None and limiter.last_grant.epoch > epoch
    assert limiter.closed


class Garbled(redis.Redis):
    """A client whose lease script's replies to renewals (lists) are passed through
    ``garble``; those to hand-backs are left as they are."""

    garble: Callable[[Any], Any] = staticmethod(lambda reply: reply)

    def register_script(self, script: Any) -> Any:
        registered = super().register_script(script)

        def call(keys: list[bytes], args: list[bytes]) -> Any:
            reply = registered(keys=keys, args=args)
            return self.garble(reply) if isinstance(reply, list) else reply

        return call


@pytest.mark.parametrize(
    "garble",
    [
        lambda reply: [reply[0], WHOLE + 1, *reply[2:]],  # more than the rule
        lambda reply: [reply[0], reply[1], 1001, *reply[3:]],  # a burst above the rule's
        lambda reply: [b"nope", *reply[1:]],
        lambda reply: reply[:8],
        lambda reply: [reply[0], -1, *reply[2:]],
        lambda reply: b"OK",
    ],
)
def test_replies_the_script_never_gives_are_never_applied(
    redis_server: RedisServer, garble: Callable[[Any], Any], request: pytest.FixtureRequest
) -> None:
    key = f"lease:{{{request.node.name}}}"
    with redis_server.client() as plain:
        holder(plain, key, "h").renew_at(0)  # the quiet first call
    client = Garbled(host="127.0.0.1", port=redis_server.port)
    client.garble = garble
    limiter = holder(client, key, "h")
    with pytest.raises(librate.ReplyError) as raised:
        limiter.renew_at(2 * SECOND)
    assert raised.value.code == librate._ffi.RATE_E_REPLY
    assert (limiter.errors, limiter.last_error) == (1, raised.value)
    assert limiter.state_at(2 * SECOND) is FALLBACK and limiter.last_grant is None
    limiter.close()
    client.close()


def test_the_renewer_counts_garbled_replies(redis_server: RedisServer) -> None:
    client = Garbled(host="127.0.0.1", port=redis_server.port)
    client.garble = lambda reply: [b"granted", WHOLE, 2000, *reply[3:]]
    rule = LeaseRule(Config.gcra(1000, 1), lease=1)
    with LeasedLimiter(client, "lease:{garbled-renewer}", rule) as limiter:
        eventually(lambda: limiter.errors >= 2, "two renewals refused")
        assert isinstance(limiter.last_error, librate.ReplyError)
        assert limiter.in_fallback and limiter.last_grant is None
    client.close()


def test_what_redis_holds_at_the_key_is_an_error(redis_client: redis.Redis) -> None:
    key = "lease:{garbage}"
    limiter = holder(redis_client, key, "h")
    assert limiter.renew_at(0) is UNSHARED
    assert limiter.renew_at(2 * SECOND) is LEASED
    grant = limiter.last_grant
    # Another rule at the key, a record no script wrote, another type: each an error
    # reply, counted, the holder as it was.
    other = LeasedLimiter(
        redis_client, key, LeaseRule(Config.gcra(1000, 1, burst=999), lease=2), background=False
    )
    with pytest.raises(librate.RedisError, match="holds the lease rule 1000000:1000:2000000"):
        other.renew_at(2 * SECOND)
    redis_client.hset(key, "h:x", "short")
    with pytest.raises(librate.RedisError, match="holds no lease state at h:x"):
        limiter.renew_at(2500 * MS)
    redis_client.set(key, "a string")
    with pytest.raises(librate.RedisError, match="WRONGTYPE"):
        limiter.renew_at(3 * SECOND)
    assert limiter.errors == 2 and other.errors == 1
    assert not isinstance(limiter.last_error, librate.ReplyError)
    assert limiter.last_grant == grant
    assert limiter.state_at(3 * SECOND) is LEASED
    assert limiter.state_at(3998 * MS) is FALLBACK
    other.close()
    limiter.close()


def test_the_script_is_loaded_again_after_a_flush(redis_client: redis.Redis) -> None:
    limiter = holder(redis_client, "lease:{flush}", "h")
    assert limiter.renew_at(0) is UNSHARED
    redis_client.script_flush()
    assert limiter.renew_at(2 * SECOND) is LEASED
    assert limiter.errors == 0
    limiter.close()


def test_the_example_in_the_docs(redis_server: RedisServer) -> None:
    # docs/python.md's example, on the test's server.
    client = redis_server.client(socket_timeout=0.2)
    rule = librate.LeaseRule(librate.Config.gcra(10_000, 1), lease=2)  # 10,000 a second in all
    local = librate.Config.gcra(2_500, 1)  # while Redis is down: a quarter, for 4 hosts
    with LeasedLimiter(client, "api:{global}", rule, fallback=local) as limiter:
        if not limiter.try_acquire():
            print("429 Too Many Requests")
        print(limiter.state, limiter.last_grant)
    assert limiter.closed and limiter.errors == 0
    # A simulation: holders on a timeline of their own, renewed when it says.
    h1 = LeasedLimiter(client, "sim:{rule}", rule, name="host-1", background=False)
    h1.renew_at(0)  # quiet: Redis made the rule just now
    h1.renew_at(2 * SECOND)
    decision = h1.acquire_at(1, 2 * SECOND + 100 * MS)
    # T = 100 µs, tau = 1 s; the share, empty at 2 s, holds 1,000 units at 2.1 s.
    assert decision == Decision(True, 10_000, 999, 0, 900 * MS + 100_000)
    assert h1.last_grant == Grant(WHOLE, 10_000, 2_000_000, 0, WHOLE, 10_000, 1)
    h1.close()
    client.close()
