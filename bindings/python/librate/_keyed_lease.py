"""Keyed leases (docs/leases.md, keys) without I/O: a holder over the C library's
(``rate_keyed_lease_*``) that decides the keys it leases in process and says which
requests to decide in Redis, with the script calls to send and the checks of their
answers. ``librate.lease`` carries the calls over redis-py, on a thread or an asyncio task.
"""

from __future__ import annotations

from collections.abc import Iterator
from ctypes import byref, c_int64, c_size_t, c_void_p, string_at
from typing import Any

from ._convert import U64_MAX, key_bytes, u64
from ._decision import Decision
from ._errors import InvalidConfig, ReplyError, error_for
from ._ffi import (
    RATE_E_REPLY,
    RATE_KEYED_LEASE_FIELDS,
    RATE_KEYED_LEASE_IN_REDIS,
    RATE_LIMITED,
    RATE_OK,
    lib,
    rate_decision,
    rate_lease_renewal,
)
from ._lease import (
    HolderState,
    LeaseRule,
    Native,
    _name,
    _never_answered,
    _refusal,
    grant_of,
)
from ._lease import arguments as _arguments
from ._limiter import _CLOSED, _Handle, status_text

#: A script call: the Redis key (the prefix and the key) and its ARGV.
Call = tuple[bytes, list[bytes]]

#: The range of a C ``int64_t``, what an answer's fields must fit.
_I64 = range(-(2**63), 2**63)


class _KeyedLeaseHandle(_Handle):
    __slots__ = ()

    @staticmethod
    def _free(handle: Any, _lib: Any = lib) -> None:
        # Bound as a default so it still works during interpreter shutdown.
        _lib.rate_keyed_lease_holder_free(handle)


class _RoundHandle(_Handle):
    __slots__ = ()

    @staticmethod
    def _free(handle: Any, _lib: Any = lib) -> None:
        _lib.rate_keyed_lease_round_free(handle)


class Round:
    """A round of renewals of a holder's keys (or the hand-back of them all): each key's
    script call, and the answer applied to the key's holder. It keeps the keys' holders
    alive (each answer applies to the holder its call came from, even one that stopped
    being leased since), and frees them when the last reference to it goes."""

    __slots__ = ("_handle", "_prefix")

    def __init__(self, handle: _RoundHandle, prefix: bytes) -> None:
        self._handle = handle
        self._prefix = prefix

    def __len__(self) -> int:
        return int(lib.rate_keyed_lease_round_len(self._handle))

    def calls(self) -> Iterator[Call]:
        """Each call of the round, in order: its Redis key and its ARGV."""
        for index in range(len(self)):
            key, length = c_void_p(), c_size_t()
            if lib.rate_keyed_lease_round_key(self._handle, index, byref(key), byref(length)):
                raise AssertionError("a round's key within its length")
            renewal = rate_lease_renewal()
            if lib.rate_keyed_lease_round_renewal(self._handle, index, renewal) != RATE_OK:
                raise AssertionError("a round's call within its length")
            yield self._prefix + string_at(key, length.value), _arguments(renewal)

    def apply(self, index: int, reply: object, now_ns: int | None) -> HolderState:
        """Applies the script's ``reply`` to call ``index`` (now, or at ``now_ns``): where
        the key's decisions come from afterwards. A reply the script never gives is a
        ``ReplyError``, and nothing of it is applied."""
        status, array = grant_of(reply)
        if now_ns is None:
            code = lib.rate_keyed_lease_round_apply(self._handle, index, status, len(status), array)
        else:
            code = lib.rate_keyed_lease_round_apply_at(
                self._handle, index, status, len(status), array, now_ns
            )
        if code == RATE_E_REPLY:
            raise _never_answered(reply)
        if code < 0:
            raise error_for(code, status_text(code))
        return HolderState(code)


class KeyedHolder(Native):
    """A holder of leases on the keys of a ``LeaseRule`` hot at it, without I/O: every
    key is a global rule of its own, at the Redis key ``prefix`` + key. Decisions of the
    keys it leases are made in process with atomics alone, safe from any number of
    threads; every other request is a script call to send (``_in_redis``). Rounds of
    renewals are one at a time, which its subclasses ensure."""

    def _hold_keys(
        self,
        prefix: bytes,
        rule: LeaseRule,
        hot: object,
        capacity: object,
        name: str | bytes | None,
    ) -> None:
        self._handle: Any = _CLOSED
        if not isinstance(rule, LeaseRule):
            raise TypeError(f"rule must be a LeaseRule, not {type(rule).__name__}")
        self._hot = u64(hot, "hot")
        # The C library refuses a capacity of 0 with no reason of its own to give.
        self._capacity = u64(capacity, "capacity", least=1, error=InvalidConfig)
        data = _name(name)
        handle = _KeyedLeaseHandle()
        status = lib.rate_keyed_lease_holder_new(
            byref(rule.to_c()), self._hot, self._capacity, data, len(data), byref(handle)
        )
        if status != RATE_OK:
            raise error_for(status, _refusal(rule, None, data)[1])
        self._handle = handle
        self._prefix = prefix
        self._rule = rule

    @property
    def rule(self) -> LeaseRule:
        """The rule of every key."""
        return self._rule

    @property
    def prefix(self) -> bytes:
        """What every key's Redis key starts with."""
        return self._prefix

    @property
    def hot(self) -> int:
        """The units a key not leased must ask for between two rounds to be leased."""
        return self._hot

    @property
    def capacity(self) -> int:
        """The most keys leased at once."""
        return self._capacity

    @property
    def counted(self) -> int:
        """The most keys not leased that a round counts, and that a local fallback rule
        keeps: four times ``capacity`` (``KeyedLeaseHolder::counted``)."""
        return min(self._capacity * 4, U64_MAX)

    def is_leased(self, key: str | bytes) -> bool:
        """Whether ``key`` is leased here now (perhaps still without a share, when its
        requests are decided in Redis)."""
        data = key_bytes(key)
        code = lib.rate_keyed_lease_leased(self._handle, data, len(data))
        if code < 0:
            raise self._fail(code)
        return bool(code)

    def _decide(
        self, key: bytes, n: int, now_ns: int | None, out: rate_decision | None = None
    ) -> bool | None:
        """Decides ``n`` units of ``key`` in process if it is leased here with a share
        (True or False; the share's decision in ``out`` if given); else None, the request
        counted towards making the key hot: decide it in Redis."""
        if now_ns is None:
            status = lib.rate_keyed_lease_acquire(self._handle, key, len(key), n, out)
        else:
            status = lib.rate_keyed_lease_acquire_at(
                self._handle, key, len(key), n, now_ns, out
            )
        if status == RATE_OK or status == RATE_LIMITED:
            return bool(status == RATE_OK)
        if status == RATE_KEYED_LEASE_IN_REDIS:
            return None
        raise self._fail(status, n)

    def _decision_in_process(self, key: bytes, n: int, now_ns: int | None) -> Decision | None:
        """``_decide`` with the share's decision (exact for the share, conservative for
        the key's rule), or None: decide it in Redis."""
        out = rate_decision()
        if self._decide(key, n, now_ns, out) is None:
            return None
        return Decision.from_c(out)

    def _in_redis(self, key: bytes, n: int, now_ns: int | None) -> Call:
        """The script call that decides ``n`` units of ``key`` in Redis, against what
        the key's leases leave: at ``now_ns`` on the caller's timeline, or by the server's
        clock (None). ``InsufficientCapacity`` for ``n`` past the rule's burst (a window's
        limit): never sent."""
        out = rate_lease_renewal()
        if now_ns is None:
            status = lib.rate_keyed_lease_in_redis(self._handle, n, out)
        else:
            status = lib.rate_keyed_lease_in_redis_at(self._handle, n, now_ns, out)
        if status != RATE_OK:
            raise self._fail(status, n)
        return self._prefix + key, _arguments(out)

    def _decision(self, n: int, reply: object) -> Decision:
        """The decision of the script's ``reply`` to a request of ``n`` units decided in
        Redis, ``{allowed, limit, remaining, retry_after_us, reset_after_us}``; a
        ``ReplyError`` for one the script never gives."""
        fields = reply if isinstance(reply, (list, tuple)) else ()
        if len(fields) != RATE_KEYED_LEASE_FIELDS or not all(
            isinstance(field, int) and not isinstance(field, bool) and field in _I64
            for field in fields
        ):
            raise _never_decided(reply)
        array = (c_int64 * RATE_KEYED_LEASE_FIELDS)(*fields)
        out = rate_decision()
        status = lib.rate_keyed_lease_decision(self._handle, n, array, out)
        if status == RATE_E_REPLY:
            raise _never_decided(reply)
        if status != RATE_OK and status != RATE_LIMITED:
            raise self._fail(status, n)
        return Decision.from_c(out)

    def _round(self, now_ns: int | None) -> Round:
        """A round of renewals: the keys hot since the last round are leased, the cooled
        ones stop (docs/leases.md, keys); at ``now_ns`` on the caller's timeline, or by
        the server's clock (None)."""
        handle = _RoundHandle()
        if now_ns is None:
            status = lib.rate_keyed_lease_renewals(self._handle, byref(handle))
        else:
            status = lib.rate_keyed_lease_renewals_at(self._handle, now_ns, byref(handle))
        if status != RATE_OK:
            raise self._fail(status)
        return Round(handle, self._prefix)

    def _release_all(self) -> Round:
        """Stops leasing every key and gives the round that hands each share back (its
        answers need no applying): for a holder being closed, after its last decision."""
        handle = _RoundHandle()
        status = lib.rate_keyed_lease_release_all(self._handle, byref(handle))
        if status != RATE_OK:
            raise self._fail(status)
        return Round(handle, self._prefix)

    def _script(self) -> bytes:
        """The lease script of the rule's algorithm, which also decides the keys not
        leased."""
        return bytes(lib.rate_keyed_lease_script(self._handle))


def _never_decided(reply: object) -> ReplyError:
    return error_for(  # type: ignore[return-value]
        RATE_E_REPLY, f"redis: the lease script never decides a request by {reply!r}"
    )
