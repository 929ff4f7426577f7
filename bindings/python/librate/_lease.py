"""Leases (docs/leases.md) without I/O: a global rule and the timing of its leases
(``LeaseRule``), and a holder over the C library's (``rate_lease_*``), which decides from
its share with atomics alone, says what to send the lease script and applies the answer.
``librate.lease`` carries the calls over redis-py, on a thread or an asyncio task.
"""

from __future__ import annotations

import enum
import os
from ctypes import byref, c_uint64, create_string_buffer
from dataclasses import dataclass
from typing import Any, cast

from ._convert import Duration, duration_ns, key_bytes, u64
from ._counts import Counted
from ._decision import Decision, seconds
from ._errors import InvalidConfig, LibrateError, ReplyError, error_for
from ._ffi import (
    RATE_E_REPLY,
    RATE_LEASE_FALLBACK,
    RATE_LEASE_FIELDS,
    RATE_LEASE_LEASED,
    RATE_LEASE_UNSHARED,
    RATE_LIMITED,
    RATE_OK,
    RATE_REASON_LEN,
    lib,
    rate_decision,
    rate_lease_grant,
    rate_lease_renewal,
    rate_lease_rule,
    rate_lease_stats,
)
from ._limiter import _CLOSED, Config, _Handle, opened, status_text
from ._redis_core import _u64


class LeaseRule:
    """A global rule that holders lease shares of, with the timing of those leases.

    ``LeaseRule(config, lease, renew_every=None)``: ``config`` a GCRA or fixed-window
    ``Config``, kept in Redis; ``lease`` how long a share is held, by Redis's clock, and
    ``renew_every`` how often a holder renews it (seconds or ``timedelta``; None: a quarter
    of the lease). A holder stops deciding from a lease ``margin`` (a thousandth of it)
    before Redis's end.

    Raises ``Unsupported`` for the sliding window or log; ``InvalidConfig`` for a rule the
    Redis tier refuses, a fixed window whose period is not a whole number of microseconds
    or whose limit reaches 2**48, a lease shorter than 1 ms or of 2**53 µs or more, or a
    ``renew_every`` under 1 ms or not below the lease less its margin.

    >>> import librate
    >>> rule = librate.LeaseRule(librate.Config.gcra(1000, 1), lease=2)
    >>> rule.renew_every, rule.margin
    (0.5, 0.002)
    """

    __slots__ = ("config", "lease_ns", "renew_every_ns")

    config: Config
    lease_ns: int
    renew_every_ns: int

    def __init__(self, config: Config, lease: Duration, renew_every: Duration | None = None):
        if not isinstance(config, Config):
            raise TypeError(f"config must be a Config, not {type(config).__name__}")
        lease_ns = duration_ns(lease, "lease", error=InvalidConfig)
        if renew_every is None:
            every_ns = lease_ns // 4  # what LeaseRule::new takes: a quarter of the lease
        else:
            every_ns = duration_ns(renew_every, "renew_every", error=InvalidConfig)
        object.__setattr__(self, "config", config)
        object.__setattr__(self, "lease_ns", lease_ns)
        object.__setattr__(self, "renew_every_ns", every_ns)
        # The C library's verdict and its reason, with nothing made.
        status, reason = _refusal(self, None, b"")
        if status != RATE_OK:
            raise error_for(status, reason)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"LeaseRule is immutable: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LeaseRule):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"LeaseRule({self.config}, lease={self.lease!r}, renew_every={self.renew_every!r})"

    def _values(self) -> tuple[Config, int, int]:
        return (self.config, self.lease_ns, self.renew_every_ns)

    @property
    def lease(self) -> float:
        """How long a lease lasts, by Redis's clock, in seconds."""
        return seconds(self.lease_ns)

    @property
    def renew_every(self) -> float:
        """How often a holder renews its lease, in seconds."""
        return seconds(self.renew_every_ns)

    @property
    def margin(self) -> float:
        """How long before Redis's end of a lease its holder stops deciding from it, by
        its own clock, in seconds: a thousandth of the lease, so clocks whose rates differ
        by up to 0.1% never see one lease at once."""
        return seconds(self.lease_ns // 1000)

    def to_c(self) -> rate_lease_rule:
        """The rule as the C library takes it, a ``struct rate_lease_rule``."""
        return rate_lease_rule(self.config.to_c(), self.lease_ns, self.renew_every_ns)


class HolderState(enum.Enum):
    """Where a holder's decisions come from at an instant."""

    #: From its share, under a lease.
    LEASED = RATE_LEASE_LEASED
    #: Redis answered that it holds no share (the rule is taken, or quiet): denied.
    UNSHARED = RATE_LEASE_UNSHARED
    #: No lease and no answer: from the fallback (a local ``Config``, or denied).
    FALLBACK = RATE_LEASE_FALLBACK


@dataclass(frozen=True)
class LeaseStats:
    """A holder's statistics, for dashboards (docs/metrics.md, lease holders): kept by the
    handle that renews (a host holder's other processes renew nothing)."""

    #: Answers of the lease script this handle applied: grants, quiet answers and
    #: refusals alike.
    renewals: int
    #: Nanoseconds, since this handle's first renewal, during which decisions came from
    #: the fallback (no lease held and no answer from Redis): the alert when it rises.
    fallback_ns: int
    #: The share of the last grant: millionths of the rule's rate (0 before the first).
    held_rate: int
    #: The share of the last grant: units at once.
    held_burst: int
    #: Where decisions come from at the time asked.
    state: HolderState

    @property
    def fallback(self) -> float:
        """``fallback_ns`` in seconds."""
        return seconds(self.fallback_ns)


@dataclass(frozen=True)
class Grant:
    """The lease script's last grant to a holder: its share (``rate`` in millionths of
    the rule's rate, and ``burst`` in units; both 0 for none), held ``lease_us`` µs from
    the script's time; the rule's ``epoch`` (when Redis made its state: it changes when
    the state is lost); what every holder may still be deciding from, this one's included
    (``held_rate``, ``held_burst``); the ``holders`` that asked within a lease; and, for
    a fixed window, the ``window``'s number (its start over its period; 0 for GCRA),
    whose share is a count: ``burst`` the count, ``held_burst`` the counts granted in the
    window, ``rate`` and ``held_rate`` 0."""

    rate: int
    burst: int
    lease_us: int
    epoch: int
    held_rate: int
    held_burst: int
    holders: int
    window: int = 0


class _LeaseHandle(_Handle):
    __slots__ = ()

    @staticmethod
    def _free(handle: Any, _lib: Any = lib) -> None:
        # Bound as a default so it still works during interpreter shutdown. A host's
        # holder, closed or collected, gives up renewing, so that another process takes
        # it over; for a holder of its own stepping down does nothing.
        _lib.rate_lease_step_down(handle)
        _lib.rate_lease_holder_free(handle)


def _new_holder(rule: LeaseRule, fallback: Config | None, name: bytes) -> tuple[int, _LeaseHandle]:
    """``rate_lease_holder_new``'s status and the handle it made (NULL on error)."""
    handle = _LeaseHandle()
    local = None if fallback is None else byref(fallback.to_c())
    status = lib.rate_lease_holder_new(byref(rule.to_c()), local, name, len(name), byref(handle))
    return status, handle


def _open_holder(
    path: str | os.PathLike[str], rule: LeaseRule, fallback: Config | None
) -> tuple[int, _LeaseHandle]:
    """``rate_lease_holder_open``'s status and the handle it made (NULL on error); raises
    what ``opened`` raises for a file the OS refuses or that holds something else."""
    handle = _LeaseHandle()
    local = None if fallback is None else byref(fallback.to_c())
    opener = lib.with_errno("rate_lease_holder_open")
    status = opener(os.fsencode(path), byref(rule.to_c()), local, byref(handle))
    return opened(status, path), handle


def _name(name: str | bytes | None) -> bytes:
    """A holder's name as the C library takes it (b"": a random one)."""
    return b"" if name is None else key_bytes(name)


def _refusal(rule: LeaseRule, fallback: Config | None, name: bytes) -> tuple[int, str]:
    """Whether the C library takes a holder of these (its status) and, if not, its reason."""
    reason = create_string_buffer(RATE_REASON_LEN)
    local = None if fallback is None else byref(fallback.to_c())
    status = lib.rate_lease_explain(
        byref(rule.to_c()), local, name, len(name), reason, RATE_REASON_LEN
    )
    return status, reason.value.decode()


class Native:
    """What every holder over a C handle shares: ``closed``, no pickling, and errors that
    name the rule."""

    _handle: Any
    _rule: LeaseRule

    @property
    def closed(self) -> bool:
        """Whether the holder was closed."""
        return self._handle is _CLOSED

    def __reduce__(self) -> Any:
        raise TypeError(f"{type(self).__name__} cannot be pickled or copied: it owns native state")

    def _fail(self, status: int, n: object = None) -> LibrateError:
        if self.closed:
            return error_for(status, f"{type(self).__name__} is closed")
        cost = "" if n is None else f"n={n}, "
        return error_for(status, f"{status_text(status)} ({cost}{self._rule})")


class Holder(Native, Counted):
    """A holder of a share of a ``LeaseRule``, without I/O: decisions from its share (or
    the fallback) with atomics alone, safe from any number of threads; renewals (what to
    send, and applying the answer) one at a time, which its subclasses ensure. A host's
    holder (``path`` given) lives in the file at ``path``, which every process of the host
    maps: they decide from one share under one name, and one of them renews it
    (``lead``)."""

    def _hold(
        self,
        rule: LeaseRule,
        fallback: Config | None,
        name: str | bytes | None,
        path: str | os.PathLike[str] | None,
    ) -> None:
        self._handle: Any = _CLOSED
        if not isinstance(rule, LeaseRule):
            raise TypeError(f"rule must be a LeaseRule, not {type(rule).__name__}")
        if fallback is not None and not isinstance(fallback, Config):
            raise TypeError(f"fallback must be a Config or None, not {type(fallback).__name__}")
        data = _name(name)
        if path is None:
            status, handle = _new_holder(rule, fallback, data)
        else:
            status, handle = _open_holder(path, rule, fallback)
        if status != RATE_OK:
            raise error_for(status, _refusal(rule, fallback, data)[1])
        self._handle = handle
        self._rule = rule
        self._fallback = fallback
        self._path = path

    @property
    def path(self) -> str | os.PathLike[str] | None:
        """The file of a host's holder (``open_host``), or None for a holder of its own."""
        return self._path

    def _count_functions(self) -> tuple[Any, Any]:
        # Its decisions, from its share and by its fallback alike (docs/metrics.md).
        return lib.rate_lease_enable_counts, lib.rate_lease_read_counts

    def lead(self) -> bool:
        """Whether this process renews the share: always for a holder of its own; for a
        host's, if no live process of the host does, this one claims it (one of them, of
        those that ask at once), and keeps it until it closes or dies. Renewals are sent
        only while this says so."""
        code = lib.rate_lease_lead(self._handle)
        if code < 0:
            raise self._fail(code)
        return bool(code)

    @property
    def rule(self) -> LeaseRule:
        """The rule held."""
        return self._rule

    @property
    def fallback(self) -> Config | None:
        """What decides without a lease while Redis does not answer: a local rule, or
        None, which denies."""
        return self._fallback

    def try_acquire(self, n: int = 1) -> bool:
        """Acquires ``n`` units now and says only whether they were admitted: from the
        share under a lease, else from the fallback, never waiting on Redis.

        Raises ``InsufficientCapacity`` if ``n`` exceeds the global rule's burst."""
        status = lib.rate_lease_acquire(self._handle, u64(n, "n"), None)
        if status == RATE_OK or status == RATE_LIMITED:
            return bool(status == RATE_OK)
        raise self._fail(status, n)

    def acquire(self, n: int = 1, *, now_ns: int | None = None) -> Decision:
        """Acquires ``n`` units and returns the decision, whose fields are the share's
        (exact for it, conservative for the global rule), or the fallback's; without
        either, a denial whose ``retry_after`` is the renewal interval. At ``now_ns`` on
        your own timeline if given (``acquire_at``), else now."""
        out = rate_decision()
        cost = u64(n, "n")
        if now_ns is None:
            status = lib.rate_lease_acquire(self._handle, cost, out)
        else:
            status = lib.rate_lease_acquire_at(self._handle, cost, u64(now_ns, "now_ns"), out)
        if status == RATE_OK or status == RATE_LIMITED:
            return Decision.from_c(out)
        raise self._fail(status, n)

    def acquire_at(self, n: int, now_ns: int) -> Decision:
        """``acquire(n, now_ns=now_ns)``."""
        return self.acquire(n, now_ns=now_ns)

    @property
    def state(self) -> HolderState:
        """Where decisions come from now."""
        return self._state(lib.rate_lease_state(self._handle))

    def state_at(self, now_ns: int) -> HolderState:
        """Where decisions come from at ``now_ns`` on your own timeline."""
        return self._state(lib.rate_lease_state_at(self._handle, u64(now_ns, "now_ns")))

    def _state(self, code: int) -> HolderState:
        if code < 0:
            raise self._fail(code)
        return HolderState(code)

    @property
    def in_fallback(self) -> bool:
        """Whether decisions come from the fallback now: no lease, and Redis not
        answering (or not yet)."""
        return self.state is HolderState.FALLBACK

    def stats(self, *, now_ns: int | None = None) -> LeaseStats:
        """The holder's statistics now (or at ``now_ns`` on your own timeline, the
        fallback counted up to it); its decisions' counts are ``counts()``."""
        out = rate_lease_stats()
        if now_ns is None:
            status = lib.rate_lease_read_stats(self._handle, out)
        else:
            status = lib.rate_lease_read_stats_at(self._handle, u64(now_ns, "now_ns"), out)
        if status != RATE_OK:
            raise self._fail(status)
        held = (out.renewals, out.fallback_ns, out.held_rate, out.held_burst)
        return LeaseStats(*held, HolderState(out.state))

    @property
    def last_grant(self) -> Grant | None:
        """The last grant applied (None before the first; a quiet answer grants
        nothing)."""
        out = rate_lease_grant()
        status = lib.rate_lease_last_grant(self._handle, out)
        if status != RATE_OK:
            raise self._fail(status)
        if out.lease_us == 0:  # every grant the script gives lasts a lease
            return None
        return Grant(*(getattr(out, field[0]) for field in out._fields_))

    def _renewal(self, now_ns: int | None) -> rate_lease_renewal:
        """The renewal to send: at ``now_ns`` on the caller's timeline, which the script
        decides at, or now by the server's clock (None)."""
        out = rate_lease_renewal()
        if now_ns is None:
            status = lib.rate_lease_renew(self._handle, out)
        else:
            status = lib.rate_lease_renew_at(self._handle, now_ns, out)
        if status != RATE_OK:
            raise self._fail(status)
        return out

    def _release(self) -> rate_lease_renewal:
        """Stops deciding from the share and gives the call that hands it back."""
        out = rate_lease_renewal()
        status = lib.rate_lease_release(self._handle, out)
        if status != RATE_OK:
            raise self._fail(status)
        return out

    def _apply(self, renewal: rate_lease_renewal, reply: object, now_ns: int | None) -> HolderState:
        """Applies the script's ``reply`` to ``renewal`` (now, or at ``now_ns``): where
        decisions come from afterwards. A reply the script never gives is a ``ReplyError``,
        and nothing of it is applied."""
        status_text_, array = grant_of(reply)
        if now_ns is None:
            code = lib.rate_lease_apply(
                self._handle, renewal, status_text_, len(status_text_), array
            )
        else:
            code = lib.rate_lease_apply_at(
                self._handle, renewal, status_text_, len(status_text_), array, now_ns
            )
        if code == RATE_E_REPLY:
            raise _never_answered(reply)
        return self._state(code)


def arguments(renewal: rate_lease_renewal) -> list[bytes]:
    """A renewal's ARGV, as the script takes them."""
    return [bytes(arg.value) for arg in renewal.args]


def grant_of(reply: object) -> tuple[bytes, Any]:
    """A renewal's reply as its status and RATE_LEASE_FIELDS u64 (``{status, rate, burst,
    lease_us, epoch, held_rate, held_burst, holders, window}``), a C array; any other
    shape is a ``ReplyError``."""
    if isinstance(reply, (list, tuple)) and len(reply) == 1 + RATE_LEASE_FIELDS:
        status = reply[0].encode() if isinstance(reply[0], str) else reply[0]
        fields = [_u64(field) for field in reply[1:]]
        if isinstance(status, bytes) and None not in fields:
            return status, (c_uint64 * RATE_LEASE_FIELDS)(*cast(list[int], fields))
    raise _never_answered(reply)


def _never_answered(reply: object) -> ReplyError:
    return error_for(  # type: ignore[return-value]
        RATE_E_REPLY, f"redis: the lease script never answers {reply!r}; nothing was applied"
    )
