"""Leases (docs/leases.md): one limit across hosts, decided in process. A global rule is
kept in Redis and divided into shares by demand; each holder decides from its share with
atomics alone, as fast as a ``Limiter``, and renews it in the background with one call of
librate's lease script, so a decision never waits on Redis. Over any interval, all the
holders together never admit more than the global rule alone would.

``LeasedLimiter`` renews on a daemon thread over a ``redis.Redis`` (or
``redis.cluster.RedisCluster``) client; ``AsyncLeasedLimiter`` on an asyncio task over a
``redis.asyncio`` one. ``open_host`` of either opens one share for every worker process of
a host, in a file they all map, renewed by one of them at a time. The client is yours,
with its pool, TLS, auth and timeouts: give it a ``socket_timeout`` below the renewal
interval. Needs redis-py (``pip install 'librate[redis]'``).

>>> import redis, librate
>>> from librate.lease import LeasedLimiter
>>> rule = librate.LeaseRule(librate.Config.gcra(10_000, 1), lease=2)
>>> with LeasedLimiter(redis.Redis(), "api:global", rule) as limiter:  # doctest: +SKIP
...     limiter.try_acquire()
True

The rule's Redis key is the script's one key: a hash holding every holder's share, so a
rule lives in one Cluster slot.

For a keyed rule (the same rule for every key: per user, per IP), ``KeyedLeasedLimiter``
and ``AsyncKeyedLeasedLimiter`` lease only the keys hot at this process, at the Redis key
``prefix`` + key, and decide every other request with one call of the script in Redis.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any, TypeVar

from ._convert import key_bytes, u64
from ._errors import RedisError, ReplyError
from ._ffi import lib
from ._keyed_leased import AsyncKeyedLeasedLimiter, KeyedLeasedLimiter
from ._lease import Grant, Holder, HolderState, LeaseRule, LeaseStats, arguments
from ._limiter import Config, Key
from ._redis_core import _check_client
from ._renewer import Tasked, Threaded, _Renewed
from .redis import Conversation

__all__ = [
    "AsyncKeyedLeasedLimiter",
    "AsyncLeasedLimiter",
    "Grant",
    "HolderState",
    "KeyedLeasedLimiter",
    "LeaseRule",
    "LeaseStats",
    "LeasedLimiter",
    "RedisError",
    "ReplyError",
]

#: Where renewals that failed are reported (a warning each).
logger = logging.getLogger("librate.lease")

_L = TypeVar("_L", bound="_Leased")


class _Leased(Holder, _Renewed[HolderState]):
    """What both limiters share: the rule's key, the client and the lease script, the
    conversations of a renewal and of the hand-back, and the count of failures."""

    asynchronous = False

    def __init__(
        self,
        client: Any,
        key: Key,
        rule: LeaseRule,
        *,
        fallback: Config | None = None,
        name: str | bytes | None = None,
        background: bool = True,
    ) -> None:
        self._begin(client, key, rule, fallback, name, None, background)

    @classmethod
    def open_host(
        cls: type[_L],
        client: Any,
        key: Key,
        path: str | os.PathLike[str],
        rule: LeaseRule,
        *,
        fallback: Config | None = None,
        background: bool = True,
    ) -> _L:
        """The holder of ``rule`` for this host, in the file at ``path`` (created with mode
        0600 if absent; put it on a tmpfs such as ``/dev/shm``): every worker process that
        opens it decides from one share, under the one name the file holds, and one of
        them renews it. Each process renews in the background as the constructor's
        holder does, but sends a renewal only while it leads (``lead()``): the first to
        claim the file, until it closes or dies, when another process's renewer takes it
        over. ``close()`` gives up renewing and hands nothing back: the other processes
        still decide from the share, which lapses once none renews it. Open the file once
        a process (holders of one process are one renewer); ``fallback`` is this
        process's own.

        Raises ``Incompatible`` if the file is no host's holder of this rule and lease
        (the message says what it holds, as ``describe_file`` does; it is left
        untouched), ``InvalidConfig`` for a ``fallback`` librate rejects, and ``OSError``
        with the OS's ``errno`` (``FileNotFoundError`` for a missing directory,
        ``PermissionError``…) if it cannot be created, opened or mapped."""
        limiter = cls.__new__(cls)
        limiter._begin(client, key, rule, fallback, None, path, background)
        return limiter

    def _begin(
        self,
        client: Any,
        key: Key,
        rule: LeaseRule,
        fallback: Config | None,
        name: str | bytes | None,
        path: str | os.PathLike[str] | None,
        background: bool,
    ) -> None:
        _check_client(client, self.asynchronous, type(self).__name__)
        self._key = key_bytes(key)
        self._hold(rule, fallback, name, path)
        self._client = client
        self._script = client.register_script(lib.rate_lease_script(self._handle))
        self._errors = 0
        self._last_error: RedisError | None = None
        self._start(background)

    @property
    def key(self) -> bytes:
        """The rule's Redis key."""
        return self._key

    @property
    def client(self) -> Any:
        """The redis-py client renewals go through."""
        return self._client

    @property
    def errors(self) -> int:
        """How many renewals and hand-backs failed (Redis unreachable, an error reply, a
        reply the script never gives): each left the holder as it was."""
        return self._errors

    @property
    def last_error(self) -> RedisError | None:
        """The last of those failures (a ``RedisError``, or its ``ReplyError``), or None."""
        return self._last_error

    def __repr__(self) -> str:
        state = "closed" if self.closed else self.state.name.lower()
        return f"<{type(self).__name__} {state} {self._key!r} {self._rule}>"

    def _due(self) -> bool:
        """A holder renews while this process leads (``lead()``: always, for a holder of
        its own)."""
        return self.lead()

    def _renewing(self, now_ns: int | None) -> Conversation[HolderState]:
        """One renewal: the script call, and its answer applied."""
        renewal = self._renewal(now_ns)
        reply = yield self._call(arguments(renewal))
        return self._apply(renewal, reply, now_ns)

    def _handing_back(self) -> Conversation[None]:
        """Stops deciding from the share, and hands it back. A host's holder hands nothing
        back, for the host's other processes decide from the share still: closing frees
        its handle, which gives up renewing (``_LeaseHandle``)."""
        if self._path is not None:
            return
        renewal = self._release()
        yield self._call(arguments(renewal))

    def _call(self, args: list[bytes]) -> Callable[[], Any]:
        """EVALSHA of the lease script on the rule's key, through redis-py's registered
        script, which loads it after NOSCRIPT; a Cluster client sends it to the key's
        slot."""
        return lambda: self._script(keys=[self._key], args=args)

    def _failed(self, error: RedisError) -> None:
        self._errors += 1
        self._last_error = error
        logger.warning("librate lease %r: %s", self._key, error)


class LeasedLimiter(_Leased, Threaded[HolderState]):
    """A holder of a share of a global rule kept in Redis, renewed by a daemon thread of
    its own (docs/leases.md).

    ``LeasedLimiter(client, key, rule, *, fallback=None, name=None, background=True)``:
    ``client`` a ``redis.Redis`` or ``redis.cluster.RedisCluster``; ``key`` (str or
    bytes) the rule's Redis key; ``rule`` a ``LeaseRule``; ``fallback`` what decides
    when the holder has no lease and Redis does not answer: a local ``Config`` (such as
    the rule divided by the expected number of holders), or None, which denies; ``name``
    the holder's name in the rule's hash (1 to 64 bytes of UTF-8, unique among the
    rule's holders; None: a random one). With ``background=False`` no thread renews:
    ``renew()`` or ``renew_at(now_ns)`` do (simulations on a timeline of your own).

    The first renewal is sent at once; a rule Redis has not seen is quiet for a lease
    (a lease from before may still run), then granted. Decisions never wait on Redis:
    ``try_acquire``, ``acquire``, ``state``, ``in_fallback`` and ``last_grant`` read the
    holder alone. A failed renewal is counted (``errors``, ``last_error``) and logged to
    the ``librate.lease`` logger, never raised into a decision: the holder decides from
    its lease until it ends, then by the fallback. ``close()`` (or ``with``) stops the
    thread and hands the share back; one collected unclosed stops renewing, and its share
    returns to the rule when its lease ends. ``LeasedLimiter.open_host(client, key, path,
    rule)`` is the host's holder, in a file every worker process shares.

    Thread-safety: decisions from any number of threads at once; renewals are taken one
    at a time.
    """

    def renew(self) -> HolderState:
        """Renews the lease now, by the Redis server's clock, and returns where decisions
        come from afterwards, whether or not this process leads (a host's holder renewed
        by hand renews only while ``lead()`` says so). Raises ``RedisError``
        (``ReplyError`` for a reply the script never gives), counted in ``errors``;
        nothing is applied then."""
        return self._renew(None)

    def renew_at(self, now_ns: int) -> HolderState:
        """``renew()`` at ``now_ns`` on your own timeline, which the script decides at
        (every holder of a rule, its decisions and renewals on one timeline)."""
        return self._renew(u64(now_ns, "now_ns"))

    def close(self) -> None:
        """Stops renewing and hands the share back (a failure is counted and logged, and
        the share then returns to the rule when its lease ends); a host's holder gives up
        renewing instead, for another process to take over. Idempotent; afterwards
        decisions raise ``ClosedError``."""
        self._close()

    def __enter__(self) -> LeasedLimiter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncLeasedLimiter(_Leased, Tasked[HolderState]):
    """``LeasedLimiter`` for asyncio: renewed by a task on the running event loop, over a
    ``redis.asyncio.Redis`` (or ``redis.asyncio.cluster.RedisCluster``). The same
    constructor and ``open_host`` (made inside a running loop when ``background``),
    decisions and properties, all synchronous and non-blocking; ``await renew()``,
    ``await renew_at(now_ns)``, ``await aclose()`` and ``async with``."""

    asynchronous = True

    async def renew(self) -> HolderState:
        """``LeasedLimiter.renew``."""
        return await self._renew(None)

    async def renew_at(self, now_ns: int) -> HolderState:
        """``LeasedLimiter.renew_at``."""
        return await self._renew(u64(now_ns, "now_ns"))

    async def aclose(self) -> None:
        """``LeasedLimiter.close``: cancels the task and hands the share back."""
        await self._close()

    async def __aenter__(self) -> AsyncLeasedLimiter:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
