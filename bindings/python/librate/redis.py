"""Limits kept in Redis (or Valkey), so that one limit holds across hosts: librate's Lua
scripts decide each request inside the server, atomically, with the decisions of the
in-process limiters field for field for the same times.

The client is yours: a ``redis.Redis`` or ``redis.cluster.RedisCluster`` for
``RedisLimiter``, a ``redis.asyncio.Redis`` or ``redis.asyncio.cluster.RedisCluster`` for
``AsyncRedisLimiter``, with its pool, TLS, auth, retries and timeouts. Needs redis-py
(``pip install 'librate[redis]'``); ``import librate`` alone never imports it.

>>> import redis, librate.redis
>>> limiter = librate.redis.RedisLimiter(
...     redis.Redis(), limit=10, period=1, prefix="api:")   # doctest: +SKIP
>>> limiter.acquire("alice").allowed                       # doctest: +SKIP
True

Each key's state is one Redis key, ``prefix{key}`` (the braces make the key its Cluster
hash tag), which expires once the state is fresh again. ``RedisPolicy`` and
``AsyncRedisPolicy`` decide several rules per key at once, all or nothing, in one script
call: rule ``i`` of a key at ``prefix{=key}:i``, every rule of a key in one Cluster slot.
Time is the server's clock (``TIME``) unless a call passes ``now_ns``. A call Redis does
not decide (unreachable, past the client's timeout, an error reply) raises
``librate.RedisError`` with the redis-py exception as ``__cause__``: never an admission.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

from ._decision import Decision, PolicyDecision
from ._errors import RedisError
from ._limiter import Key
from ._redis_core import Call, PolicyCall, RedisBase, RedisPolicyBase

try:
    import redis.exceptions as _redis_exceptions
except ImportError as error:
    raise ImportError(
        "librate.redis needs redis-py: pip install 'librate[redis]' (or redis>=5)"
    ) from error

__all__ = ["AsyncRedisLimiter", "AsyncRedisPolicy", "RedisError", "RedisLimiter", "RedisPolicy"]

#: What redis-py raises when Redis gives no answer (Cluster routing errors included).
_FAILURES = (_redis_exceptions.RedisError, _redis_exceptions.RedisClusterException)

#: A batch's results: a decision per key, or the error of a key Redis did not decide.
Results = list[Decision | RedisError]

T = TypeVar("T")

#: A conversation with Redis, written once for both clients: it yields each redis-py
#: call to make (a function of no arguments), receives its result, and returns the
#: outcome. ``_block`` makes the calls; ``_pause`` awaits what they return.
Conversation = Generator[Callable[[], Any], Any, T]


def _failure(error: BaseException) -> RedisError:
    """The ``RedisError`` for a redis-py exception, which becomes its ``__cause__``."""
    failure = RedisError(f"redis: {error}")
    failure.__cause__ = error
    return failure


def _block(conversation: Conversation[T]) -> T:
    """Runs ``conversation`` on a sync client."""
    try:
        call = next(conversation)
        while True:
            call = conversation.send(call())
    except StopIteration as finished:
        return finished.value  # type: ignore[no-any-return]
    except _FAILURES as error:
        raise _failure(error) from error


async def _pause(conversation: Conversation[T]) -> T:
    """Runs ``conversation`` on an asyncio client."""
    try:
        call = next(conversation)
        while True:
            call = conversation.send(await call())
    except StopIteration as finished:
        return finished.value  # type: ignore[no-any-return]
    except _FAILURES as error:
        raise _failure(error) from error


def _pipeline(client: Any, sha: str, calls: list[Call], groups: list[list[int]]) -> Callable[[], Any]:
    """Sends a pipeline (no transaction) of one EVALSHA per group of calls (indices into
    ``calls``, which share their arguments); errors come back in place, as exceptions."""
    pipeline = client.pipeline(transaction=False)
    for group in groups:
        keys = [calls[index][0] for index in group]
        # Not pipeline.evalsha(), which redis-py's Cluster pipeline refuses to queue,
        # though it routes EVALSHA by its first key as it routes any command.
        pipeline.execute_command("EVALSHA", sha, len(keys), *keys, *calls[group[0]][1])
    return lambda: pipeline.execute(raise_on_error=False)


def _groups(client: Any, calls: list[Call]) -> list[list[int]]:
    """The calls (indices) one script call decides together: all of them on a client of
    one server; on a Cluster client (which has ``keyslot``), whose nodes refuse a script
    call naming keys of several hash slots, those of each slot."""
    keyslot = getattr(client, "keyslot", None)
    if keyslot is None:
        return [list(range(len(calls)))]
    by_slot: dict[int, list[int]] = {}
    for index, (key, _) in enumerate(calls):
        by_slot.setdefault(keyslot(key), []).append(index)
    return list(by_slot.values())


class _Limiter(RedisBase[T, Any]):
    """The conversations both clients have with Redis."""

    _run: Callable[[Conversation[Any]], Any]

    def _decide(self, call: Call) -> Any:
        return self._run(self._single(call))

    def _decide_batch(self, calls: list[Call]) -> Any:
        return self._run(self._batched(calls))

    def reset(self, key: Key) -> Any:
        """Deletes ``key``'s state (``DEL`` of its Redis key), so its next request finds
        the limit full, as a fresh key does; other keys keep theirs. Raises
        ``RedisError`` if Redis does not answer."""
        return self._run(_deleted(self._client, [self.redis_key(key)]))

    def _single(self, call: Call) -> Conversation[Decision]:
        """EVALSHA through redis-py's registered script, which loads it after NOSCRIPT
        (the asyncio client's path; the sync client calls Redis directly)."""
        key, args = call
        reply = yield lambda: self._script(keys=[key], args=args)
        return self._plan.decision(reply, args)

    def _batched(self, calls: list[Call]) -> Conversation[Results]:
        """One pipeline of one script call per group of keys (all of them, or a Cluster's
        slot's); after NOSCRIPT (a restart, ``SCRIPT FLUSH``, a Cluster node that never
        saw the script), the script loaded and only the calls that failed sent again: a
        call that failed with NOSCRIPT did nothing."""
        if not calls:
            return []
        groups = _groups(self._client, calls)
        replies = yield _pipeline(self._client, self._plan.sha, calls, groups)
        missing = [
            index
            for index, reply in enumerate(replies)
            if isinstance(reply, _redis_exceptions.NoScriptError)
        ]
        if missing:
            yield lambda: self._client.script_load(self._plan.source)
            again = yield _pipeline(
                self._client, self._plan.sha, calls, [groups[i] for i in missing]
            )
            for index, reply in zip(missing, again, strict=True):
                replies[index] = reply
        results: list[Decision | RedisError] = [None] * len(calls)  # type: ignore[list-item]
        for group, reply in zip(groups, replies, strict=True):
            # Every call of a batch has the same ARGV but the key's.
            results_of_group = self._group_results(reply, len(group), calls[group[0]][1])
            for index, result in zip(group, results_of_group, strict=True):
                results[index] = result
        return results

    def _group_results(self, reply: Any, keys: int, args: list[bytes]) -> Results:
        """One script call's results: one key's reply is its decision; several keys' the
        list of theirs, each a decision or that key's error; an error for the whole call
        (OOM, READONLY: the script wrote nothing) is each key's."""
        if keys == 1:
            return [self._result(reply, args)]
        if isinstance(reply, list) and len(reply) == keys:
            return [self._result(each, args) for each in reply]
        if isinstance(reply, _FAILURES):
            return [_failure(reply) for _ in range(keys)]
        return [RedisError(f"redis: unexpected reply {reply!r}") for _ in range(keys)]

    def _result(self, reply: Any, args: list[bytes]) -> Decision | RedisError:
        if isinstance(reply, _FAILURES):
            return _failure(reply)
        try:
            return self._plan.decision(reply, args)
        except RedisError as error:
            return error


class RedisLimiter(_Limiter[Decision]):
    """Independent limits per key, kept in Redis: the ``KeyedLimiter`` of many hosts.

    ``RedisLimiter(client, *, algorithm="gcra", limit, period, burst=None, prefix)``:
    ``client`` a ``redis.Redis`` or ``redis.cluster.RedisCluster``; the configuration as
    ``librate.Limiter`` takes it; ``prefix`` (str or bytes) starts every Redis key, so
    give each configuration its own. A configuration the in-process limiter rejects,
    or one with a duration of 2**53 ns (about 104 days) or more, which Lua's doubles do
    not hold exactly, raises ``InvalidConfig``.

    Thread-safety: as safe as the client (a ``redis.Redis``, with its connection pool,
    may be shared between threads).
    """

    _run = staticmethod(_block)

    def _decide(self, call: Call) -> Decision:
        return self._plan.decision(self._send(call), call[1])

    def _send(self, call: Call) -> Any:
        """One key's EVALSHA (the script loaded again after NOSCRIPT), called directly:
        the hot path, where a conversation's generator and redis-py's ``Script`` object
        would cost a fifth of the client's time, and ``execute_command`` rather than
        ``evalsha``, which only passes its arguments on to it."""
        key, args = call
        client = self._client
        try:
            try:
                return client.execute_command("EVALSHA", self._plan.sha, 1, key, *args)
            except _redis_exceptions.NoScriptError:
                client.script_load(self._plan.source)
                return client.execute_command("EVALSHA", self._plan.sha, 1, key, *args)
        except _FAILURES as error:
            raise _failure(error) from error

    def try_acquire(self, key: Key, n: int = 1) -> bool:
        """``acquire(key, n).allowed``: whether ``n`` units were admitted now (the same
        checks and errors), the script replying ``allowed`` alone."""
        redis_key, args = self._call(key, n, None, None)
        return self._plan.admitted(self._send((redis_key, self._plan.brief(args))), args)


class AsyncRedisLimiter(_Limiter[Awaitable[Decision]]):
    """``RedisLimiter`` for asyncio, over a ``redis.asyncio.Redis`` (or
    ``redis.asyncio.cluster.RedisCluster``): the same constructor and methods, each
    returning an awaitable (``acquire``, ``acquire_at``, ``reserve``, ``reserve_at``
    give a ``Decision``, ``try_acquire`` a bool, ``acquire_batch`` the list)."""

    asynchronous = True
    _run = staticmethod(_pause)

    async def try_acquire(self, key: Key, n: int = 1) -> bool:
        """``(await acquire(key, n)).allowed``."""
        decision = await self.acquire(key, n)
        return decision.allowed


def _deleted(client: Any, redis_keys: list[bytes]) -> Conversation[None]:
    """``DEL`` of ``redis_keys``: a key's state, gone, is a fresh state."""
    yield lambda: client.delete(*redis_keys)


class _Policy(RedisPolicyBase[T]):
    """The conversations both policy clients have with Redis."""

    _run: Callable[[Conversation[Any]], Any]

    def _decide(self, call: PolicyCall) -> Any:
        return self._run(self._one(call))

    def _reset(self, redis_keys: list[bytes]) -> Any:
        return self._run(_deleted(self._client, redis_keys))

    def _one(self, call: PolicyCall) -> Conversation[PolicyDecision]:
        """EVALSHA of every rule's key through redis-py's registered script, which loads
        it after NOSCRIPT; on a Cluster client it goes to the node of the keys' slot."""
        keys, args, shadow = call
        reply = yield lambda: self._script(keys=keys, args=args)
        return self._plan.decision(reply, args, shadow)


class RedisPolicy(_Policy[PolicyDecision]):
    """Several limits per key at once, kept in Redis: the ``Policy`` of many hosts, one
    per key. A request is admitted iff every rule admits it, and a denied request takes
    from no rule: one script call decides every rule at one time and writes their states
    only if all admit, so the decisions are exact, as ``Policy``'s from one thread.

    ``RedisPolicy(client, rules, *, prefix)``: ``client`` a ``redis.Redis`` or
    ``redis.cluster.RedisCluster``; ``rules`` 1 to 8 ``Config``s of any algorithms;
    ``prefix`` (str or bytes, without ``{`` or ``}``) starts every Redis key. A rule a
    ``RedisLimiter`` would refuse raises ``InvalidConfig``, as does a brace in the prefix.
    ``shadow=`` names rules (by index) to roll out in shadow: see ``set_shadow``.

    >>> import redis, librate, librate.redis
    >>> policy = librate.redis.RedisPolicy(redis.Redis(), [
    ...     librate.Config.gcra(10, 1),            # 10 a second
    ...     librate.Config.fixed_window(1000, 86400),  # and 1,000 a day
    ... ], prefix="api:")                                  # doctest: +SKIP
    >>> policy.acquire("customer-7").decision.allowed      # doctest: +SKIP
    True

    Thread-safety: as safe as the client.
    """

    _run = staticmethod(_block)


class AsyncRedisPolicy(_Policy[Awaitable[PolicyDecision]]):
    """``RedisPolicy`` for asyncio, over a ``redis.asyncio.Redis`` (or
    ``redis.asyncio.cluster.RedisCluster``): the same constructor and methods, each
    returning an awaitable."""

    asynchronous = True
    _run = staticmethod(_pause)
