"""Keyed leases over redis-py (docs/leases.md, keys): ``KeyedLeasedLimiter`` renews the
keys hot at this process on a thread of its own and decides them in process; every other
request is one call of the lease script, decided in Redis against what the key's leases
leave. ``AsyncKeyedLeasedLimiter`` is the same on an asyncio task.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from fractions import Fraction
from typing import Any, cast

from ._convert import NS_PER_SECOND, key_bytes, u64
from ._decision import Decision
from ._errors import LibrateError, RedisError
from ._keyed_lease import Call, KeyedHolder
from ._lease import LeaseRule
from ._limiter import _CLOSED, Config, Key, KeyedLimiter
from ._redis_core import _check_client
from ._renewer import Tasked, Threaded, _Renewed
from .redis import Conversation, _block, _pause

#: Where rounds of renewals and hand-backs that failed are reported (a warning each):
#: ``librate.lease``'s logger.
logger = logging.getLogger("librate.lease")


class _KeyedLeased(KeyedHolder, _Renewed[int]):
    """What both limiters share: the prefix, the client and the lease script, the
    conversations of a round, of a request in Redis and of the hand-back, the fallback,
    and the count of failures."""

    asynchronous = False

    def __init__(
        self,
        client: Any,
        prefix: Key,
        rule: LeaseRule,
        *,
        hot: int,
        capacity: int,
        fallback: Config | None = None,
        name: str | bytes | None = None,
        background: bool = True,
    ) -> None:
        _check_client(client, self.asynchronous, type(self).__name__)
        if fallback is not None and not isinstance(fallback, Config):
            raise TypeError(f"fallback must be a Config or None, not {type(fallback).__name__}")
        if not isinstance(prefix, (str, bytes)):
            raise TypeError(f"prefix must be str or bytes, not {type(prefix).__name__}")
        self._hold_keys(key_bytes(prefix), rule, hot, capacity, name)
        self._local = None if fallback is None else _local_rule(fallback, self.counted)
        self._fallback = fallback
        self._client = client
        self._script_call = client.register_script(self._script())
        self._errors = 0
        self._last_error: RedisError | None = None
        # Requests decided by the fallback count from any thread.
        self._counting = threading.Lock()
        self._start(background)

    @property
    def client(self) -> Any:
        """The redis-py client every call goes through."""
        return self._client

    @property
    def fallback(self) -> Config | None:
        """What decides a request Redis did not answer, per key: a local rule, or None,
        which denies."""
        return self._fallback

    @property
    def errors(self) -> int:
        """How many calls failed (Redis unreachable, an error reply, a reply the script
        never gives): rounds of renewals, hand-backs, and requests then decided by the
        fallback."""
        return self._errors

    @property
    def last_error(self) -> RedisError | None:
        """The last of those failures (a ``RedisError``, or its ``ReplyError``), or None."""
        return self._last_error

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<{type(self).__name__} {state} {self._prefix!r} {self._rule}>"

    def _renewing(self, now_ns: int | None) -> Conversation[int]:
        """A round: each key's renewal, and its answer applied; how many keys it
        renewed. The first failure ends it: the keys after it decide from the leases
        they hold until they end."""
        round_ = self._round(now_ns)
        for index, call in enumerate(round_.calls()):
            reply = yield self._send(call)
            round_.apply(index, reply, now_ns)
        return len(round_)

    def _handing_back(self) -> Conversation[None]:
        """Stops leasing every key and hands each share back; the first failure leaves
        the shares after it to return to their rules when their leases end."""
        for call in self._release_all().calls():
            yield self._send(call)

    def _closing(self) -> None:
        self._handle = _CLOSED
        if self._local is not None:
            self._local.close()

    def _deciding(self, call: Call, n: int) -> Conversation[Decision]:
        """A request decided in Redis: the script call, and the decision of its answer."""
        reply = yield self._send(call)
        return self._decision(n, reply)

    def _send(self, call: Call) -> Callable[[], Any]:
        """EVALSHA of the lease script on the key's Redis key, through redis-py's
        registered script, which loads it after NOSCRIPT; a Cluster client sends it to
        the key's slot."""
        key, args = call
        return lambda: self._script_call(keys=[key], args=args)

    def _failed(self, error: RedisError) -> None:
        self._count(error)
        logger.warning("librate keyed lease %r: %s", self._prefix, error)

    def _count(self, error: RedisError) -> None:
        with self._counting:
            self._errors += 1
            self._last_error = error

    def _refused(self, error: RedisError, key: bytes, n: int, now_ns: int | None) -> Decision:
        """The decision of a request Redis did not answer: counted (not logged: there may
        be one a request), and decided by the fallback, the local rule's for the key, or
        a denial whose ``retry_after`` is the renewal interval (a query is admitted)."""
        self._count(error)
        if self._local is not None:
            try:
                return self._local.acquire(key, n, now_ns=now_ns)
            except LibrateError:
                pass  # its table full of live keys, or n past its burst: denied
        return Decision(n == 0, 0, 0, 0 if n == 0 else self._rule.renew_every_ns, 0)


def _local_rule(config: Config, keys: int) -> KeyedLimiter:
    """A local keyed limiter of ``config`` for up to ``keys`` keys."""
    return KeyedLimiter(
        algorithm=config.algorithm,
        limit=config.limit,
        # A Fraction of seconds scales to the exact nanoseconds (duration_ns).
        period=cast(float, Fraction(config.period_ns, NS_PER_SECOND)),
        burst=config.burst,
        capacity=keys,
    )


def _request(key: Key, n: object, now_ns: int | None) -> tuple[bytes, int, int | None]:
    """A request's key as bytes, its units and its time, checked."""
    data = key if key.__class__ is bytes else key_bytes(key)
    at = None if now_ns is None else u64(now_ns, "now_ns")
    return data, u64(n, "n"), at


class KeyedLeasedLimiter(_KeyedLeased, Threaded[int]):
    """A keyed rule kept in Redis, each key a global rule of its own at the Redis key
    ``prefix`` + key: the keys hot at this process are leased, renewed by a daemon thread
    of its own, and decided in process; every other request is one call of the lease
    script, decided in Redis against what the key's leases leave (docs/leases.md, keys).

    ``KeyedLeasedLimiter(client, prefix, rule, *, hot, capacity, fallback=None,
    name=None, background=True)``: ``client`` a ``redis.Redis`` or
    ``redis.cluster.RedisCluster``; ``prefix`` (str or bytes) what every key's Redis key
    starts with; ``rule`` a ``LeaseRule``, every key's; a key not leased is leased at the
    next round once its requests asked for ``hot`` units since the last one (0: every key
    asked for), at most ``capacity`` keys at once, and stops when it asks for less than
    half of ``hot`` in a round. ``fallback`` decides a request Redis does not answer: a
    local ``Config`` kept per key (for up to four times ``capacity`` keys; a new key past
    them is denied), or None, which denies; ``name`` the holder's name in every key's hash
    (1 to 64 bytes of UTF-8, unique among the rule's holders; None: a random one). With
    ``background=False`` no thread renews: ``renew()`` or ``renew_at(now_ns)`` do
    (simulations on a timeline of your own).

    ``try_acquire(key, n)`` decides a key leased here, holding a share, in process; any
    other request (a key not leased, or leased with no share yet) is one script call on
    the client, whose failure is counted (``errors``, ``last_error``) and decided by the
    fallback. ``acquire(key, n)`` returns the ``Decision`` of a script call, its fields
    those of what the key's leases leave (exact for it, conservative for the rule): the
    C library gives an in-process decision's admission alone, so ``acquire`` always asks
    Redis, and does not count towards making a key hot. A failed round is counted and
    logged to the ``librate.lease`` logger: its keys decide from their leases until they
    end. ``close()`` (or ``with``) stops the thread and hands every share back.

    Raises ``InvalidConfig`` for a ``capacity`` of 0 or a rule or ``fallback`` librate
    rejects, ``TypeError`` for a key, prefix or name neither str nor bytes.

    Thread-safety: decisions from any number of threads at once; rounds are taken one at
    a time. Close it once every decision has returned.
    """

    def try_acquire(self, key: Key, n: int = 1) -> bool:
        """Acquires ``n`` units for ``key`` now and says whether they were admitted: in
        process if the key is leased here with a share, else in Redis, else by the
        fallback.

        Raises ``InsufficientCapacity`` if ``n`` exceeds the rule's burst (a window's
        limit)."""
        return self._try(*_request(key, n, None))

    def try_acquire_at(self, key: Key, n: int, now_ns: int) -> bool:
        """``try_acquire`` at ``now_ns`` on your own timeline, which Redis decides at too
        (every holder of a rule, its decisions and rounds on one timeline)."""
        return self._try(*_request(key, n, now_ns))

    def acquire(self, key: Key, n: int = 1, *, now_ns: int | None = None) -> Decision:
        """Acquires ``n`` units for ``key`` as ``try_acquire`` does and returns the
        decision: a leased key's share's (exact for the share, conservative for the
        rule), else that of what the key's leases leave in Redis, else the fallback's;
        at ``now_ns`` on your own timeline if given, else now (by the server's clock in
        Redis).

        Raises ``InsufficientCapacity`` if ``n`` exceeds the rule's burst."""
        request = _request(key, n, now_ns)
        decided = self._decision_in_process(*request)
        if decided is not None:
            return decided
        return self._in_redis_decision(*request)

    def acquire_at(self, key: Key, n: int, now_ns: int) -> Decision:
        """``acquire(key, n, now_ns=now_ns)``."""
        return self.acquire(key, n, now_ns=now_ns)

    def _try(self, key: bytes, n: int, now_ns: int | None) -> bool:
        decided = self._decide(key, n, now_ns)
        if decided is not None:
            return decided
        return self._in_redis_decision(key, n, now_ns).allowed

    def _in_redis_decision(self, key: bytes, n: int, now_ns: int | None) -> Decision:
        call = self._in_redis(key, n, now_ns)
        try:
            return _block(self._deciding(call, n))
        except RedisError as error:
            return self._refused(error, key, n, now_ns)

    def renew(self) -> int:
        """A round of renewals now, by the Redis server's clock: the keys hot since the
        last round are leased and every leased key renewed; returns how many. Raises
        ``RedisError`` (``ReplyError`` for a reply the script never gives), counted in
        ``errors``: the keys from the failed one on are not renewed this round."""
        return self._renew(None)

    def renew_at(self, now_ns: int) -> int:
        """``renew()`` at ``now_ns`` on your own timeline, which the script decides at."""
        return self._renew(u64(now_ns, "now_ns"))

    def close(self) -> None:
        """Stops renewing and hands every share back (a failure is counted and logged,
        and the shares not handed back return to their rules when their leases end).
        Idempotent; afterwards decisions raise ``ClosedError``."""
        self._close()

    def __enter__(self) -> KeyedLeasedLimiter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncKeyedLeasedLimiter(_KeyedLeased, Tasked[int]):
    """``KeyedLeasedLimiter`` for asyncio: renewed by a task on the running event loop
    (made inside one when ``background``), over a ``redis.asyncio.Redis`` (or
    ``redis.asyncio.cluster.RedisCluster``). The same constructor and properties;
    ``is_leased`` is synchronous; ``await try_acquire(key, n)`` (a leased key decided in
    process without a pause), ``await acquire(key, n)``, their ``_at`` forms,
    ``await renew()``, ``await renew_at(now_ns)``, ``await aclose()`` and ``async
    with``."""

    asynchronous = True

    async def try_acquire(self, key: Key, n: int = 1) -> bool:
        """``KeyedLeasedLimiter.try_acquire``."""
        return await self._try(*_request(key, n, None))

    async def try_acquire_at(self, key: Key, n: int, now_ns: int) -> bool:
        """``KeyedLeasedLimiter.try_acquire_at``."""
        return await self._try(*_request(key, n, now_ns))

    async def acquire(self, key: Key, n: int = 1, *, now_ns: int | None = None) -> Decision:
        """``KeyedLeasedLimiter.acquire``."""
        request = _request(key, n, now_ns)
        decided = self._decision_in_process(*request)
        if decided is not None:
            return decided
        return await self._in_redis_decision(*request)

    async def acquire_at(self, key: Key, n: int, now_ns: int) -> Decision:
        """``KeyedLeasedLimiter.acquire_at``."""
        return await self.acquire(key, n, now_ns=now_ns)

    async def _try(self, key: bytes, n: int, now_ns: int | None) -> bool:
        decided = self._decide(key, n, now_ns)
        if decided is not None:
            return decided
        return (await self._in_redis_decision(key, n, now_ns)).allowed

    async def _in_redis_decision(self, key: bytes, n: int, now_ns: int | None) -> Decision:
        call = self._in_redis(key, n, now_ns)
        try:
            return await _pause(self._deciding(call, n))
        except RedisError as error:
            return self._refused(error, key, n, now_ns)

    async def renew(self) -> int:
        """``KeyedLeasedLimiter.renew``."""
        return await self._renew(None)

    async def renew_at(self, now_ns: int) -> int:
        """``KeyedLeasedLimiter.renew_at``."""
        return await self._renew(u64(now_ns, "now_ns"))

    async def aclose(self) -> None:
        """``KeyedLeasedLimiter.close``: cancels the task and hands every share back."""
        await self._close()

    async def __aenter__(self) -> AsyncKeyedLeasedLimiter:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
