"""``librate.LeaseRule`` and ``librate.lease.LeasedLimiter`` without Redis: a stand-in
client records what the holder sends and answers what the lease script would, so the
arguments, the decisions from a share, the states, the fallback, the hand-back and every
bad input are checked by hand, as tests/c/test_lease.c checks them through the C ABI.

The rule is GCRA, 1,000 a second (T = 1 ms, B = 1,000), leased 2 s at a time (renewed
every 500 ms, a margin of 2 ms); see test_redis_lease.py for how a share decides.
"""

from __future__ import annotations

import doctest
import pickle
from datetime import timedelta
from fractions import Fraction
from typing import Any

import pytest

import librate
from helpers import MS, SECOND
from librate import Config, Decision, LeaseRule, _lease
from librate.lease import Grant, HolderState, LeasedLimiter

RULE = LeaseRule(Config.gcra(1000, 1), lease=2)
LEASED, UNSHARED, FALLBACK = HolderState.LEASED, HolderState.UNSHARED, HolderState.FALLBACK


def answer(status: bytes, rate: int, burst: int) -> list[Any]:
    """The script's answer to a renewal: a share of ``rate`` and ``burst`` for 2 s."""
    return [status, rate, burst, 2_000_000, 7, rate, burst, 1, 0]


class Scripted:
    """A stand-in for a redis-py client: its registered script records each call's keys
    and arguments and answers the next of ``answers``."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[list[bytes], list[bytes]]] = []
        self.source = b""

    def register_script(self, source: bytes) -> Any:
        self.source = source
        return self.call

    def call(self, keys: list[bytes], args: list[bytes]) -> object:
        self.calls.append((keys, args))
        return self.answers.pop(0)


def holder(client: Scripted, fallback: Config | None = None) -> LeasedLimiter:
    return LeasedLimiter(
        client, "lease:{a}", RULE, name="host-a", fallback=fallback, background=False
    )


def test_the_rule_and_its_timing() -> None:
    assert (RULE.lease_ns, RULE.renew_every_ns) == (2 * SECOND, 500 * MS)
    assert (RULE.lease, RULE.renew_every, RULE.margin) == (2.0, 0.5, 0.002)
    rule = LeaseRule(Config.gcra(1000, 1), timedelta(seconds=2), renew_every=0.25)
    assert rule.renew_every_ns == 250 * MS and rule != RULE
    again = LeaseRule(Config.gcra(1000, 1), 2)
    assert again == RULE and hash(again) == hash(RULE)
    with pytest.raises(AttributeError):
        RULE.lease_ns = 1  # type: ignore[misc]
    # The last renewal interval below the lease less its margin, and the shortest lease
    # renewed every quarter of it (1 ms).
    LeaseRule(Config.gcra(1000, 1), 2, renew_every=Fraction(1_997_999_999, 10**9))
    assert LeaseRule(Config.gcra(1000, 1), 0.004).renew_every_ns == MS


@pytest.mark.parametrize(
    ("config", "lease", "renew_every", "message"),
    [
        (Config("fixed_window", 1000, 10**9 + 1), 2, None, "a leased window's period"),
        (Config.fixed_window(2**48, 2**48 // 10**8), 2, None, "its limit below 2\\^48"),
        (Config.gcra(1000, 1), 0.000999, None, "lease_ns 999000 renewed every 249750 ns: a lease lasts"),
        (Config.gcra(1000, 1), Fraction(2**53, 10**6), None, "below 2\\^53 us"),
        (Config.gcra(1000, 1), 2, 1.998, "renewed at least 1 ms apart and before the last thousandth"),
        (Config.gcra(1000, 1), 2, 0.000999, "renewed every 999000 ns: a lease lasts"),
        (Config.gcra(1000, 1), 0.003999, None, "renewed every 999750 ns: a lease lasts"),
        (Config.gcra(1000, 1), 0, None, "lease_ns 0 renewed every 0 ns: a lease lasts from 1 ms"),
        # The Redis tier's bound: a burst of 2**53 ns or more.
        (Config("gcra", 1, 2**53), 2, None, "must be below 2\\^53 ns"),
    ],
)
def test_rules_the_library_refuses(
    config: Config, lease: float, renew_every: float | None, message: str
) -> None:
    with pytest.raises(librate.InvalidConfig, match=message):
        LeaseRule(config, lease, renew_every)


def test_leases_divide_gcra_and_fixed_windows() -> None:
    with pytest.raises(librate.Unsupported, match="not the sliding window"):
        LeaseRule(Config.sliding_window(1000, 1), 2)
    with pytest.raises(librate.Unsupported, match="not the sliding log"):
        LeaseRule(Config.sliding_log(1000, 1), 2)
    assert LeaseRule(Config.fixed_window(1000, 60), 2).config.algorithm == "fixed_window"


def test_the_renewal_names_the_rule_and_the_demand() -> None:
    client = Scripted(answer(b"quiet", 0, 0), answer(b"quiet", 0, 0), answer(b"quiet", 0, 0))
    limiter = holder(client)
    assert b"\n-- librate's lease script for GCRA" in client.source
    assert limiter.renew_at(10 * SECOND) is UNSHARED
    assert client.calls[0] == (
        [b"lease:{a}"],
        [b"renew", b"10000000", b"1000000", b"1000", b"2000000", b"host-a", b"1000000"],
    )
    # Three units in the next 500 ms: 3 * T / 500 ms = 6,000 millionths.
    assert not limiter.acquire_at(1, 10 * SECOND).allowed
    assert not limiter.acquire_at(2, 10 * SECOND).allowed
    limiter.renew_at(10 * SECOND + 500 * MS)
    assert client.calls[1][1][6] == b"6000"
    # By the server's clock: no time is sent.
    limiter.renew()
    assert client.calls[2][1][1] == b""


def test_a_share_decides_and_carries_over() -> None:
    client = Scripted(answer(b"granted", 500_000, 500), answer(b"granted", 1_000_000, 1000))
    limiter = holder(client)
    # No answer yet: the fallback, a denial until the next renewal.
    assert limiter.state_at(10 * SECOND) is FALLBACK
    assert limiter.acquire_at(1, 10 * SECOND) == Decision(False, 0, 0, 500 * MS, 0)
    # Half the rate, bursts of 500: one unit every 2 ms, tau = 1 s, held to 11.998 s.
    assert limiter.renew_at(10 * SECOND) is LEASED
    assert limiter.acquire_at(1, 10 * SECOND) == Decision(False, 500, 0, 2 * MS, SECOND)
    assert limiter.acquire_at(1, 10 * SECOND + 2 * MS) == Decision(True, 500, 0, 0, SECOND)
    assert limiter.state_at(11 * SECOND + 998 * MS - 1) is LEASED
    assert limiter.state_at(11 * SECOND + 998 * MS) is FALLBACK
    # At 10.5 s the share holds (1 s - (11.002 s - 10.5 s)) / 2 ms = 249 tokens; renewed
    # to the whole rule (T = 1 ms, tau = 1 s) they are kept: 249 more, then none.
    assert limiter.renew_at(10 * SECOND + 500 * MS) is LEASED
    assert limiter.acquire_at(249, 10 * SECOND + 500 * MS) == Decision(True, 1000, 0, 0, SECOND)
    assert limiter.acquire_at(1, 10 * SECOND + 500 * MS) == Decision(False, 1000, 0, MS, SECOND)
    assert limiter.last_grant == Grant(1_000_000, 1000, 2_000_000, 7, 1_000_000, 1000, 1)


def test_no_share_quiet_and_the_hand_back() -> None:
    client = Scripted(
        answer(b"granted", 1_000_000, 1000),
        answer(b"granted", 0, 0),
        answer(b"quiet", 0, 0),
        answer(b"granted", 1_000_000, 1000),
        1,
    )
    limiter = holder(client)
    assert limiter.renew_at(10 * SECOND) is LEASED
    # Nothing granted: denied (not the fallback) for the lease, tokens gone.
    assert limiter.renew_at(11 * SECOND) is UNSHARED
    assert limiter.acquire_at(1, 11 * SECOND) == Decision(False, 0, 0, 500 * MS, 0)
    assert limiter.acquire_at(0, 11 * SECOND).allowed
    # Quiet: nothing new, denied until 13.498 s (11.5 s + 2 s - 2 ms), then the fallback.
    assert limiter.renew_at(11 * SECOND + 500 * MS) is UNSHARED
    assert limiter.state_at(13 * SECOND + 498 * MS - 1) is UNSHARED
    assert limiter.state_at(13 * SECOND + 498 * MS) is FALLBACK
    # After the gap the next lease starts empty: one unit after T.
    assert limiter.renew_at(14 * SECOND) is LEASED
    assert not limiter.acquire_at(1, 14 * SECOND).allowed
    assert limiter.acquire_at(1, 14 * SECOND + MS).allowed
    limiter.close()
    assert client.calls[-1][1][0] == b"release" and client.calls[-1][1][5] == b"host-a"
    with pytest.raises(librate.ClosedError, match="LeasedLimiter is closed"):
        limiter.acquire_at(1, 15 * SECOND)
    with pytest.raises(librate.ClosedError):
        limiter.renew_at(15 * SECOND)
    assert repr(limiter).startswith("<LeasedLimiter closed b'lease:{a}' LeaseRule(")


def test_a_window_count() -> None:
    # A fixed window of 100 a second (P = 1,000,000 µs), leased 2 s at a time: a count of
    # the window, held from when it arrived to the window's end less a thousandth of the
    # time held.
    rule = LeaseRule(Config.fixed_window(100, 1), lease=2)
    client = Scripted(
        [b"granted", 0, 30, 750_000, 7, 0, 30, 1, 10],
        [b"granted", 0, 50, 500_000, 7, 0, 50, 1, 10],
        [b"granted", 0, 40, 1_000_000, 7, 0, 40, 1, 11],
        1,
    )
    limiter = LeasedLimiter(client, "lease:{w}", rule, name="w", background=False)
    assert b"\n-- librate's lease script for fixed windows" in client.source
    # 30 of window 10, to 11 s: held to 10.25 s + 750 ms - 750 µs = 10.99925 s.
    assert limiter.renew_at(10 * SECOND + 250 * MS) is LEASED
    assert client.calls[0][1][2:4] == [b"100", b"1000000"]
    assert limiter.acquire_at(30, 10 * SECOND + 250 * MS) == Decision(True, 30, 0, 0, 749_250_000)
    assert limiter.acquire_at(1, 10 * SECOND + 500 * MS) == Decision(
        False, 30, 0, 499_250_000, 499_250_000
    )
    # More of the same window: 50 in all, to the sooner end.
    assert limiter.renew_at(10 * SECOND + 500 * MS) is LEASED
    assert limiter.acquire_at(20, 10 * SECOND + 500 * MS) == Decision(True, 50, 0, 0, 499_250_000)
    assert limiter.state_at(10 * SECOND + 999_250_000 - 1) is LEASED
    assert limiter.state_at(10 * SECOND + 999_250_000) is FALLBACK
    # Window 11: a count of its own, from when it arrived, to 12 s less 1 ms.
    assert limiter.renew_at(11 * SECOND) is LEASED
    assert limiter.acquire_at(1, 11 * SECOND) == Decision(True, 40, 39, 0, 999 * MS)
    assert limiter.last_grant == Grant(0, 40, 1_000_000, 7, 0, 40, 1, 11)
    # The hand-back returns the 39 left, and the holder stops deciding first.
    limiter.close()
    assert client.calls[-1][1][0] == b"release" and client.calls[-1][1][6] == b"39"


def test_the_local_fallback() -> None:
    limiter = holder(Scripted(), fallback=Config.gcra(1, 1, burst=1))
    assert limiter.acquire_at(1, 0) == Decision(True, 1, 0, 0, SECOND)
    assert not limiter.acquire_at(1, 0).allowed
    assert limiter.state_at(0) is FALLBACK and limiter.in_fallback
    # Now, on the library's clock: one an hour.
    limiter = holder(Scripted(), fallback=Config.gcra(1, 3600, burst=1))
    assert limiter.try_acquire() and not limiter.try_acquire()


def test_counts_from_the_share_and_the_fallback() -> None:
    # Off until enable_counts, as a limiter's (docs/metrics.md); then the fallback's
    # admission and denial, and the share's denial and admission, each counted once.
    limiter = holder(Scripted(answer(b"granted", 500_000, 500)), fallback=Config.gcra(1, 1))
    assert limiter.counts() is None
    limiter.enable_counts()
    assert limiter.acquire_at(1, 10 * SECOND).allowed  # the fallback's one a second
    assert not limiter.acquire_at(1, 10 * SECOND).allowed
    assert limiter.renew_at(10 * SECOND) is LEASED
    # The share: one unit every 2 ms, its first at 10.002 s.
    assert not limiter.acquire_at(1, 10 * SECOND).allowed
    assert limiter.acquire_at(1, 10 * SECOND + 2 * MS).allowed
    assert limiter.counts() == librate.Counts(admitted=2, denied=2, table_full=0)


def test_stats_of_a_share_and_its_end() -> None:
    # One renewal answered at 10 s: half the rate, bursts of 500, held to 11.998 s (the
    # lease of 2 s less the 2 ms margin). No answer since: at 13 s decisions have come
    # from the fallback for 13 s - 11.998 s = 1.002 s.
    limiter = holder(Scripted(answer(b"granted", 500_000, 500)))
    assert limiter.renew_at(10 * SECOND) is LEASED
    assert limiter.stats(now_ns=11 * SECOND) == _lease.LeaseStats(1, 0, 500_000, 500, LEASED)
    stats = limiter.stats(now_ns=13 * SECOND)
    assert stats == _lease.LeaseStats(1, 1002 * MS, 500_000, 500, FALLBACK)
    assert stats.fallback == 1.002


@pytest.mark.parametrize(
    "reply",
    [
        [b"nope", 1_000_000, 1000, 2_000_000, 7, 1_000_000, 1000, 1, 0],
        answer(b"granted", 1_000_001, 1000),
        answer(b"granted", 1_000_000, 1001),
        answer(b"granted", 5, 0),
        answer(b"granted", 1_000_000, 1000)[:8],
        [b"granted", -1, 1000, 2_000_000, 7, 1_000_000, 1000, 1, 0],
        [b"granted", b"1e6", 1000, 2_000_000, 7, 1_000_000, 1000, 1, 0],
        b"OK",
        None,
    ],
)
def test_answers_the_script_never_gives(reply: object) -> None:
    limiter = holder(Scripted(reply))
    with pytest.raises(librate.ReplyError, match="nothing was applied") as raised:
        limiter.renew_at(0)
    assert raised.value.code == -9 and isinstance(raised.value, librate.RedisError)
    assert (limiter.errors, limiter.last_error) == (1, raised.value)
    assert limiter.state_at(0) is FALLBACK and limiter.last_grant is None


def test_decoded_replies_are_read_too() -> None:
    # A client made with decode_responses answers str.
    limiter = holder(Scripted(["granted", 1_000_000, 1000, 2_000_000, 7, 1_000_000, 1000, 1, 0]))
    assert limiter.renew_at(0) is LEASED


def test_bad_input() -> None:
    client = Scripted()
    with pytest.raises(TypeError, match="redis-py client"):
        LeasedLimiter(object(), "k", RULE)
    with pytest.raises(TypeError, match="LeaseRule"):
        LeasedLimiter(client, "k", Config.gcra(1000, 1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="fallback"):
        LeasedLimiter(client, "k", RULE, fallback=1, background=False)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="key"):
        LeasedLimiter(client, 7, RULE, background=False)  # type: ignore[arg-type]
    for name in ("a\0b", "x" * 65, b"\xff"):
        with pytest.raises(librate.InvalidConfig, match="1 to 64 bytes of UTF-8 without NUL"):
            LeasedLimiter(client, "k", RULE, name=name, background=False)
    LeasedLimiter(client, "k", RULE, name="é" * 32, background=False)
    fallback = Config.gcra(10, 1, burst=2**63)
    with pytest.raises(librate.InvalidConfig, match="fallback: "):
        LeasedLimiter(client, "k", RULE, fallback=fallback, background=False)
    limiter = holder(client)
    with pytest.raises(librate.InsufficientCapacity, match="n=1001"):
        limiter.acquire_at(1001, 0)
    with pytest.raises(librate.InsufficientCapacity):
        limiter.try_acquire(1001)
    for bad, error in [(-1, ValueError), (1.0, TypeError), (True, TypeError)]:
        with pytest.raises(error):
            limiter.acquire_at(bad, 0)  # type: ignore[arg-type]
        with pytest.raises(error):
            limiter.renew_at(bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pickled"):
        pickle.dumps(limiter)


def test_the_examples_in_the_docstrings() -> None:
    assert doctest.testmod(_lease).failed == 0
