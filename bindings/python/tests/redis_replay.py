"""The differential model of ``librate.redis``: random requests replayed through an
in-process ``librate.Limiter`` and through Redis, every decision and refusal compared
field for field, and every admission's expiry checked; and ``Unexpiring``, the client
under it, on which Redis's own clock never expires a key.
"""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction
from typing import Any

import redis
from redis.commands.core import Script

import librate
from helpers import MS, SECOND
from librate import Config
from librate.redis import RedisLimiter

U64_MAX = 2**64 - 1
#: The largest state a limiter stores: 2**64 - 257.
MAX_STATE = U64_MAX - 256
#: Numbers the replays' prefixes: keys outlive a replay (nothing expires them).
_replays = itertools.count()


class Unexpiring:
    """A redis-py client, as far as ``RedisLimiter`` uses one, on which no key expires
    by Redis's clock, which runs unrelated to the times a test passes (a period of
    microseconds would end in Redis long before the test's time reaches it): each
    script call runs in a transaction with ``DUMP``, ``PTTL`` and ``PERSIST`` of its
    key, so the expiry the script set is read (``ttl``), then cleared.

    Redis 7.0 does not stop its clock during a transaction, so a key that a script left
    to live 1 ms can still expire before ``PERSIST`` if Redis is descheduled that long:
    then the key is restored from its ``DUMP`` and the call made again.
    """

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        #: The key's PTTL right after the last call (-2: it does not exist).
        self.ttl = -2

    def register_script(self, source: bytes) -> Script:
        return Script(self, source)

    def script_load(self, source: bytes) -> Any:
        return self.client.script_load(source)

    def execute_command(
        self, command: str, sha: str, numkeys: int, key: bytes, *args: bytes
    ) -> Any:
        """``EVALSHA``, the one command the sync ``RedisLimiter`` sends this way (as
        redis-py's ``evalsha`` passes its arguments on)."""
        assert command == "EVALSHA"
        return self.evalsha(sha, numkeys, key, *args)

    def evalsha(self, sha: str, numkeys: int, key: bytes, *args: bytes) -> Any:
        n = int(args[1])
        while True:
            transaction = self.client.pipeline(transaction=True)
            transaction.dump(key).evalsha(sha, numkeys, key, *args).pttl(key).persist(key)
            before, reply, self.ttl, _ = transaction.execute(raise_on_error=False)
            if isinstance(reply, Exception):
                raise reply
            if not (reply[0] == 1 and n > 0 and self.ttl == -2):
                return reply
            # Admitted, yet expired before PERSIST: undo, and again.
            if before is None:
                self.client.delete(key)
            else:
                self.client.restore(key, 0, before, replace=True)


def keywords(config: Config) -> dict[str, Any]:
    """``config`` as ``Limiter``'s keywords, the period exact."""
    return {
        "algorithm": config.algorithm,
        "limit": config.limit,
        "period": Fraction(config.period_ns, SECOND),
        "burst": config.burst,
    }


def _time(rng: random.Random, step: int, now: int, base: int, period: int) -> int:
    """The next request's time: back, near the start, the timeline's last instants (late
    in a replay: past them every request is decided in the last window), near 0, a
    window edge ±2 ns, or forward."""
    roll = rng.randrange(100)
    if roll < 15:
        return max(now - rng.randrange(min(2 * period, U64_MAX)), 0)
    if roll < 25:
        return min(base + rng.randrange(min(4 * period, U64_MAX)), U64_MAX)
    if 25 <= roll <= 29 and step >= 80:
        return U64_MAX - rng.randrange(3)
    if 28 <= roll <= 30:
        return rng.randrange(3)
    if 31 <= roll <= 55:
        edge = (now // period + rng.randrange(3)) * period
        return now if edge > U64_MAX else min(max(edge + rng.randrange(5) - 2, 0), U64_MAX)
    return min(now + rng.randrange(period), U64_MAX)


def _expiry_ms(config: Config, admitted: librate.Decision) -> int | None:
    """How long after an admission its key must live, in whole ms rounded up: until the
    state is fresh again. GCRA until its TAT, which ``reset_after_ns`` reaches; the
    windows until nothing is counted in the window of now or the one before, the start
    of the window after next, which the sliding window's reset reaches once something is
    counted and the fixed window's comes a period before. None where the reset lies past
    the end of the timeline."""
    if admitted.reset_after_ns == U64_MAX:
        return None
    lead = admitted.reset_after_ns
    if config.algorithm == "fixed_window":
        lead += config.period_ns
    return math.ceil(Fraction(lead, MS))


def replay(client: redis.Redis, config: Config, case: int, rng: random.Random) -> None:
    """Replays 100 random requests on one key through ``config``'s in-process limiter and
    through Redis, asserting equal every decision and every refusal, and after each
    admission the expiry the script set. Times start near 0, below 2**40, near the end
    of the timeline or anywhere; costs include 0, 1, max_n and one past it; half
    the GCRA requests are reserves (a few on a window, all refused) waiting 0, anything,
    or forever."""
    local = librate.Limiter(**keywords(config))
    unexpiring = Unexpiring(client)
    remote = RedisLimiter(unexpiring, **keywords(config), prefix=f"replay:{next(_replays)}:")
    period, max_n = config.period_ns, config.max_n
    now = base = [
        0,
        rng.randrange(2**40),
        max(MAX_STATE - rng.randrange(min(20 * period, U64_MAX)), 0),
        rng.getrandbits(64),
    ][case % 4]
    for step in range(100):
        now = _time(rng, step, now, base, period)
        n = [0, rng.randint(1, 3), max_n, max_n + 1, rng.randrange(max_n + 2)][
            min(rng.randrange(6), 4)
        ]
        reserves = 50 if config.algorithm == "gcra" else 10
        max_wait = None
        if rng.randrange(100) < reserves:
            wait_ns = [0, U64_MAX - rng.randrange(2), rng.randrange(min(3 * period, U64_MAX))][
                min(rng.randrange(4), 2)
            ]
            max_wait = Fraction(wait_ns, SECOND)
        context = f"{config} step {step}: n {n} at {now}, max_wait {max_wait}"
        want = _outcome(local, None, n, now, max_wait)
        got = _outcome(remote, b"k", n, now, max_wait)
        assert got == want, f"{context}: {got} against {want}"
        if isinstance(want, librate.Decision) and want.allowed and n > 0:
            lead = _expiry_ms(config, want)
            if lead is not None:
                assert lead - 50 <= unexpiring.ttl <= lead, f"{context}: PTTL {unexpiring.ttl}"


def _outcome(limiter: Any, key: bytes | None, n: int, now: int, max_wait: Any) -> Any:
    """The decision, or the refusal as (class, code)."""
    target = () if key is None else (key,)
    try:
        if max_wait is None:
            return limiter.acquire(*target, n, now_ns=now)
        return limiter.reserve(*target, n, max_wait=max_wait, now_ns=now)
    except librate.LibrateError as error:
        return type(error), error.code
