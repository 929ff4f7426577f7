"""``Limiter`` and ``KeyedLimiter``: Python objects over the C handles.

Both share one base class; they differ only in the C functions they call and in the
``(key, key_len)`` arguments a keyed call puts before ``n`` (the "target").
"""

from __future__ import annotations

import functools
import os
from array import array
from collections.abc import Callable, Iterable
from ctypes import (
    byref,
    c_int32,
    c_size_t,
    c_uint64,
    c_void_p,
    create_string_buffer,
    get_errno,
    sizeof,
)
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

from . import _waiting
from ._convert import FOREVER, U64_MAX, Duration, duration_ns, key_bytes, u64
from ._decision import Decision, blank_decision, seconds
from ._counts import Counted
from ._decorator import decorate
from ._errors import InvalidConfig, LibrateError, RateLimited, error_for
from ._ffi import (
    RATE_E_INCOMPATIBLE,
    RATE_E_INVALID_CONFIG,
    RATE_E_IO,
    RATE_FIXED_WINDOW,
    RATE_GCRA,
    RATE_LIMITED,
    RATE_OK,
    RATE_REASON_LEN,
    RATE_SLIDING_LOG,
    RATE_SLIDING_WINDOW,
    lib,
    rate_config,
    rate_decision,
    rate_keyed_stats,
)
from ._renamed import renamed, renamed_method
from ._stats import KeyedStats

F = TypeVar("F", bound=Callable[..., Any])

#: The algorithm names the constructors accept, and their C numbers.
ALGORITHMS = {
    "gcra": RATE_GCRA,
    "fixed_window": RATE_FIXED_WINDOW,
    "sliding_window": RATE_SLIDING_WINDOW,
    "sliding_log": RATE_SLIDING_LOG,
}
#: The algorithms by their C number, as ``rate_limiter_get_config`` reports them.
_ALGORITHM_NAMES = {number: name for name, number in ALGORITHMS.items()}

#: A key: ``str`` (sent as UTF-8) or ``bytes``.
Key = str | bytes

# The default cost, and the same as the ctypes value the fast paths pass: a call that
# leaves `n` out passes this very object (`n is _ONE`), known valid, so it needs neither
# a range check nor a conversion.
_ONE = 1
_C_ONE = c_uint64(1)


class _Handle(c_void_p):
    """Owns one C handle and frees it exactly once, when the last reference to it goes.

    A limiter holds one reference, and each C call in flight holds another (ctypes keeps
    its arguments alive until the call returns). So ``close()`` racing with a call in
    another thread only drops the limiter's reference: the memory is freed when that call
    returns, never under it. In the usual case (no call in flight) ``close()`` frees at
    once. A handle that was never filled in (a failed constructor) is NULL and frees
    nothing.
    """

    __slots__ = ()

    @staticmethod
    def _free(handle: c_void_p) -> None:
        raise NotImplementedError

    def __del__(self) -> None:
        if self:  # non-NULL
            type(self)._free(self)


class _LimiterHandle(_Handle):
    __slots__ = ()
    _free = staticmethod(lib.rate_limiter_free)


class _KeyedHandle(_Handle):
    __slots__ = ()

    @staticmethod
    def _free(handle: c_void_p, _lib: Any = lib) -> None:
        # Bound as a default so it still works during interpreter shutdown.
        _lib.rate_keyed_free(handle)


# What a closed limiter passes as its handle: NULL, which the C library answers with
# RATE_E_NULL, so the fast paths need no "is it closed?" test of their own.
_CLOSED = c_void_p()


class _CFunctions(NamedTuple):
    """The C functions of one kind of limiter."""

    new: Any
    #: ``rate_*_explain_config``: why ``new`` rejects a configuration.
    explain: Any
    acquire: Any
    acquire_at: Any
    reserve_at: Any
    #: ``acquire`` unchecked (see ``Library.unchecked``), for ``try_acquire``.
    fast: Any
    set_config: Any
    set_config_at: Any
    #: ``rate_*_get_config``: the rule in force (a file's, for one opened from a file).
    get_config: Any
    #: ``rate_*_enable_counts`` and ``rate_*_read_counts``: the counters (docs/metrics.md).
    enable_counts: Any
    read_counts: Any


_LIMITER_C = _CFunctions(
    lib.rate_limiter_new,
    lib.rate_limiter_explain_config,
    lib.rate_limiter_acquire,
    lib.rate_limiter_acquire_at,
    lib.rate_limiter_reserve_at,
    lib.unchecked("rate_limiter_acquire"),
    lib.rate_limiter_set_config,
    lib.rate_limiter_set_config_at,
    lib.rate_limiter_get_config,
    lib.rate_limiter_enable_counts,
    lib.rate_limiter_read_counts,
)
# The hot path's function, bound once: a global load is the cheapest lookup.
_limiter_try = _LIMITER_C.fast


@functools.cache
def _with_errno(name: str) -> Any:
    """``rate_limiter_open``, ``rate_keyed_open`` and the like, keeping ``errno`` (looked
    up at the first call of each)."""
    return lib.with_errno(name)


def describe_file(path: str | os.PathLike[str]) -> str:
    """What the table file at ``path`` holds, in one English sentence that starts with the
    path (``rate_describe_file``): the kind of table and the rule it holds, or why it is no
    table this librate reads. The message of every ``Incompatible`` an ``open`` raises.

    >>> import os, tempfile, librate
    >>> with tempfile.TemporaryDirectory() as directory:
    ...     path = os.path.join(directory, "api")
    ...     with librate.Limiter.open(path, limit=10, period=1):
    ...         print(librate.describe_file(path)[len(path):])
    : a librate limiter holding GCRA, limit 10, period_ns 1000000000, burst 10

    The file is only read, never created or changed. Raises ``OSError`` with the OS's
    ``errno`` (``FileNotFoundError`` for a missing file) if it cannot be read."""
    encoded = os.fsencode(path)
    describe = _with_errno("rate_describe_file")
    size = RATE_REASON_LEN
    while True:
        buffer = create_string_buffer(size)
        status = describe(encoded, buffer, size)
        if status == RATE_E_IO:
            raise _refused_by_os(path)
        if status != RATE_OK:
            raise error_for(status, status_text(status))
        text = buffer.value
        if len(text) < size - 1:  # room to spare: the sentence is whole
            return text.decode("utf-8", "replace")
        size *= 2


def _open_file(
    path: str | os.PathLike[str], name: str, extra: tuple[int, ...]
) -> Callable[[Any, Any], int]:
    """The ``make`` of ``_Base._create`` for a table in a file: calls
    ``name(path, config, *extra, out)`` and raises what ``opened`` raises."""
    encoded = os.fsencode(path)

    def make(c_config: Any, out: Any) -> int:
        return opened(_with_errno(name)(encoded, c_config, *extra, out), path)

    return make


def _refused_by_os(path: str | os.PathLike[str]) -> OSError:
    """The ``OSError`` of a call on ``path`` that returned ``RATE_E_IO``, with the OS's
    ``errno`` (read before anything else can change it) and ``path``."""
    errno = get_errno()
    return OSError(errno, os.strerror(errno), os.fspath(path))


def opened(status: int, path: str | os.PathLike[str]) -> int:
    """The status of an ``open`` of ``path``, just returned: raises ``OSError`` with the
    OS's ``errno`` and ``path`` when the OS refused the file (``RATE_E_IO``; read ``errno``
    before anything else), and ``Incompatible`` whose message is what the file holds
    (``describe_file``) when it is no table of the opener's kind and rule; else returns
    ``status``."""
    if status == RATE_E_IO:
        raise _refused_by_os(path)
    if status == RATE_E_INCOMPATIBLE:
        try:
            message = describe_file(path)
        except (OSError, LibrateError):  # gone or unreadable since: say what C says
            message = status_text(status)
        raise error_for(status, message)
    return status


@functools.cache
def _keyed_c() -> _CFunctions:
    # Looked up at the first KeyedLimiter, not at import: a library without the keyed
    # table still serves Limiter, and KeyedLimiter() then says which symbol is missing.
    return _CFunctions(
        lib.rate_keyed_new,
        lib.rate_keyed_explain_config,
        lib.rate_keyed_acquire,
        lib.rate_keyed_acquire_at,
        lib.rate_keyed_reserve_at,
        lib.unchecked("rate_keyed_acquire"),
        lib.rate_keyed_set_config,
        lib.rate_keyed_set_config_at,
        lib.rate_keyed_get_config,
        lib.rate_keyed_enable_counts,
        lib.rate_keyed_read_counts,
    )


@functools.cache
def _keyed_packed_c() -> tuple[Any, Any]:
    # rate_keyed_acquire_packed and its _at twin, looked up at first use like _keyed_c.
    return lib.rate_keyed_acquire_packed, lib.rate_keyed_acquire_packed_at


# An array of C `size_t`, for the key lengths of a batch.
_SIZE_T_CODE = next(code for code in "LQ" if array(code).itemsize == sizeof(c_size_t))


def status_text(status: int) -> str:
    """librate's description of a status code."""
    return str(lib.rate_status_str(status).decode())


@dataclass(frozen=True)
class Config:
    """What a limiter enforces: at most ``limit`` units per ``period_ns``, by
    ``algorithm``; GCRA admits bursts of up to ``burst`` (None: ``limit``).

    ``Config.gcra(limit, period, burst=None)``, ``Config.fixed_window(limit, period)``,
    ``Config.sliding_window(…)`` and ``Config.sliding_log(…)`` take ``period`` as the
    limiters do (seconds or a ``timedelta``); ``Config(algorithm, limit, period_ns,
    burst)`` takes nanoseconds. Either way every field is checked when the Config is
    made, as the limiters check their arguments (``TypeError``, or ``InvalidConfig``
    naming the field), so no Config holds a value that C would wrap around.
    """

    algorithm: str
    limit: int
    period_ns: int
    burst: int | None = None

    def __post_init__(self) -> None:
        # What Python must check, because it cannot become a C field: types, negative
        # numbers, 0. The rest (too high a rate, a window's bound, overflow) is the C
        # library's verdict, which it explains (``rate_limiter_explain_config``), so
        # there is one rule book.
        if not isinstance(self.algorithm, str):
            raise TypeError(f"algorithm must be a str, not {type(self.algorithm).__name__}")
        if self.algorithm not in ALGORITHMS:
            raise InvalidConfig(
                f"algorithm {self.algorithm!r}: must be one of {', '.join(sorted(ALGORITHMS))}"
            )
        if self.burst is not None:
            if self.algorithm != "gcra":
                raise InvalidConfig(
                    f"burst {self.burst!r}: applies to gcra only, not {self.algorithm}"
                )
            burst = u64(self.burst, "burst", error=InvalidConfig)
            if burst == 0:
                raise InvalidConfig("burst 0: must be at least 1 (None means limit)")
            object.__setattr__(self, "burst", burst)
        object.__setattr__(self, "limit", u64(self.limit, "limit", least=1, error=InvalidConfig))
        period_ns = u64(self.period_ns, "period_ns", least=1, error=InvalidConfig)
        object.__setattr__(self, "period_ns", period_ns)

    @classmethod
    def gcra(cls, limit: int, period: Duration, burst: int | None = None) -> Config:
        """GCRA: ``limit`` units per ``period``, bursts of up to ``burst`` (None: ``limit``)."""
        return _config("gcra", limit, period, burst)

    @classmethod
    def fixed_window(cls, limit: int, period: Duration) -> Config:
        """A fixed window: ``limit`` units per window of ``period``."""
        return _config("fixed_window", limit, period, None)

    @classmethod
    def sliding_window(cls, limit: int, period: Duration) -> Config:
        """A sliding window counter: ``limit`` units per ``period``."""
        return _config("sliding_window", limit, period, None)

    @classmethod
    def sliding_log(cls, limit: int, period: Duration) -> Config:
        """A sliding log: ``limit`` units in any ``period``."""
        return _config("sliding_log", limit, period, None)

    @property
    def period(self) -> float:
        """``period_ns`` in seconds."""
        return seconds(self.period_ns)

    @property
    def max_n(self) -> int:
        """The most units admitted at once: the largest ``n`` that is not an
        ``InsufficientCapacity`` error (GCRA: burst; windows: limit)."""
        return self.limit if self.burst is None else self.burst

    @property
    def capacity(self) -> int:
        """Deprecated alias of ``max_n``: ``capacity`` now means only the keys a table
        holds."""
        renamed("Config.capacity", "Config.max_n")
        return self.max_n

    def to_c(self) -> rate_config:
        """The configuration as the C library takes it, a ``struct rate_config`` (a
        ``burst`` of None as 0)."""
        return rate_config(ALGORITHMS[self.algorithm], self.limit, self.period_ns, self.burst or 0)


def config_from_c(out: rate_config) -> Config:
    """The ``Config`` of a ``struct rate_config`` the library wrote (a ``burst`` of 0 as
    None)."""
    return Config(_ALGORITHM_NAMES[out.algorithm], out.limit, out.period_ns, out.burst or None)


def _config(algorithm: object, limit: object, period: object, burst: object) -> Config:
    """The Config of the constructors' arguments, ``period`` in seconds or a
    ``timedelta``: a period under 1 ns (which would round to 0) is an ``InvalidConfig``,
    and Config checks the rest. Every bad value is an ``InvalidConfig`` naming the field,
    its value and the bound (or a ``TypeError``). ``FOREVER`` (``math.inf``) is the
    period that never ends, 2**64-1 ns: a rule that never refills."""
    if period == FOREVER:
        return Config(algorithm, limit, U64_MAX, burst)  # type: ignore[arg-type]
    period_ns = duration_ns(period, "period", least_ns=1, error=InvalidConfig)
    return Config(algorithm, limit, period_ns, burst)  # type: ignore[arg-type]


def _rejection(c: _CFunctions, config: Any, extra: tuple[int, ...], status: int) -> str:
    """The message for a failed ``c.new``: for an invalid configuration, the C library's
    reason (which field, which bound); otherwise the status's description."""
    if status == RATE_E_INVALID_CONFIG:
        reason = create_string_buffer(RATE_REASON_LEN)
        if c.explain(config, *extra, reason, RATE_REASON_LEN) == RATE_E_INVALID_CONFIG:
            return reason.value.decode()
    return status_text(status)


class _Owner:
    """An object over one C handle (a ``_Handle``, or ``_CLOSED``): ``close()``,
    ``closed``, ``with``, no pickling, and a ``repr`` and error messages that say what
    it enforces (``_enforces``)."""

    __slots__ = ("_handle", "__weakref__")

    _handle: c_void_p

    def _enforces(self) -> str:
        raise NotImplementedError

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._handle is _CLOSED

    def close(self) -> None:
        """Releases the native state. Idempotent; later calls raise ``ClosedError``.
        Safe while other threads are inside a call: the memory is freed when the last
        of those calls returns."""
        self._handle = _CLOSED

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __reduce__(self) -> Any:
        raise TypeError(f"{type(self).__name__} cannot be pickled or copied: it owns native state")

    def __repr__(self) -> str:
        state = " closed" if self.closed else ""
        return f"<{type(self).__name__}{state} {self._enforces()}>"

    def _fail(self, status: int, n: object = None) -> LibrateError:
        if self.closed:
            return error_for(status, f"{type(self).__name__} is closed")
        cost = "" if n is None else f"n={n}, "
        return error_for(status, f"{status_text(status)} ({cost}{self._enforces()})")


_Self = TypeVar("_Self", bound=_Owner)


class _Base(_Owner, Counted):
    """What ``Limiter`` and ``KeyedLimiter`` share. ``target`` arguments are what a C call
    takes between the handle and ``n``: ``()`` direct, ``(key, len(key))`` keyed."""

    __slots__ = ("_config", "_c")

    _config: Config
    _c: _CFunctions

    def _count_functions(self) -> tuple[Any, Any]:
        return self._c.enable_counts, self._c.read_counts

    def __init__(
        self, c: _CFunctions, handle_class: type[_Handle], config: Config, *extra: int
    ) -> None:
        """Creates the C handle: ``c.new(config, *extra, &handle)``, where ``extra`` is
        what a kind of limiter takes beside its configuration (a table's capacity)."""
        self._create(
            c, handle_class, config, extra, lambda c_config, out: c.new(c_config, *extra, out)
        )

    def _create(
        self,
        c: _CFunctions,
        handle_class: type[_Handle],
        config: Config,
        extra: tuple[int, ...],
        make: Callable[[Any, Any], int],
    ) -> None:
        """Sets the handle that ``make(config, &handle)`` creates, or raises its error."""
        self._handle = _CLOSED
        self._config = config
        self._c = c
        handle = handle_class()
        c_config = byref(config.to_c())
        status = make(c_config, byref(handle))
        if status != RATE_OK:
            raise error_for(status, _rejection(c, c_config, extra, status))
        self._handle = handle

    @property
    def config(self) -> Config:
        """The configuration this limiter enforces: the one it was made with, or the last
        ``set_config`` gave; for one opened from a file, the file's rule in force, which
        ``set_config`` in any process attached, or an opener's ``replace=True``, may have
        changed. A closed limiter reports the last one it knew."""
        out = rate_config()
        if self._c.get_config(self._handle, byref(out)) != RATE_OK:
            return self._config
        held = config_from_c(out)
        self._config = held
        return held

    def _enforces(self) -> str:
        return str(self.config)

    def _set_config(self, config: Config, now_ns: object) -> None:
        """Replaces the rule, now or at ``now_ns`` (``set_config`` of either kind)."""
        if not isinstance(config, Config):
            raise TypeError(f"config must be a Config, not {type(config).__name__}")
        c_config = byref(config.to_c())
        if now_ns is None:
            status = self._c.set_config(self._handle, c_config)
        else:
            status = self._c.set_config_at(self._handle, c_config, u64(now_ns, "now_ns"))
        if status != RATE_OK:
            raise self._fail(status)
        self._config = config

    def _decide(self, function: Any, target: tuple[Any, ...], n: int, *after: int) -> Decision:
        out = rate_decision()
        status = function(self._handle, *target, n, *after, out)
        if status == RATE_OK or status == RATE_LIMITED:
            return Decision.from_c(out)
        raise self._fail(status, n)

    def _acquire(self, target: tuple[Any, ...], n: object, now_ns: object) -> Decision:
        n = u64(n, "n")
        if now_ns is None:
            return self._decide(self._c.acquire, target, n)
        return self._decide(self._c.acquire_at, target, n, u64(now_ns, "now_ns"))

    def _reserve(
        self, target: tuple[Any, ...], n: object, max_wait: object, now_ns: object
    ) -> Decision:
        n = u64(n, "n")
        max_wait_ns = duration_ns(max_wait, "max_wait", saturate=True)
        now = lib.rate_now_ns() if now_ns is None else u64(now_ns, "now_ns")
        return self._decide(self._c.reserve_at, target, n, now, max_wait_ns)

    def _plan(
        self, target: tuple[Any, ...], n: int, timeout_ns: int | None
    ) -> _waiting.Plan[Decision]:
        """Waits for ``n`` units: yields sleeps (ns), returns the final decision, which is
        a denial only if ``timeout_ns`` runs out first. ``n`` is already checked."""
        deadline = None if timeout_ns is None else lib.rate_now_ns() + timeout_ns
        while True:
            now = lib.rate_now_ns()
            if self._config.algorithm == "gcra":
                # Book a place in the queue (GCRA reserve): fair under contention, and a
                # denial means even waiting until the deadline could not admit.
                max_wait = U64_MAX if deadline is None else min(max(deadline - now, 0), U64_MAX)
                decision = self._decide(self._c.reserve_at, target, n, now, max_wait)
                if decision.wait_ns:
                    yield decision.wait_ns
                return decision
            # Windows have no reserve: retry when a retry could first succeed.
            decision = self._decide(self._c.acquire_at, target, n, now)
            if decision.allowed:
                return decision
            if deadline is not None and now + decision.retry_after_ns > deadline:
                return decision
            yield max(decision.retry_after_ns, 1)

    def _waiter(
        self, target: tuple[Any, ...], n: object, timeout: object
    ) -> _waiting.Plan[Decision]:
        timeout_ns = None if timeout is None else duration_ns(timeout, "timeout", saturate=True)
        return self._plan(target, u64(n, "n"), timeout_ns)

    def _decorator(
        self,
        target_of: Callable[[tuple[Any, ...], dict[str, Any]], tuple[Any, ...]],
        n: object,
        wait: object,
        timeout: object,
    ) -> Callable[[F], F]:
        if callable(n):
            raise TypeError("write @limiter.rate_limited() with parentheses")
        cost = u64(n, "n")
        if not isinstance(wait, bool):
            raise TypeError(f"wait must be a bool, not {type(wait).__name__}")
        timeout_ns = None if timeout is None else duration_ns(timeout, "timeout", saturate=True)

        def admitted(decision: Decision) -> None:
            if not decision.allowed:
                raise RateLimited(decision)

        def admit(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            target = target_of(args, kwargs)
            if wait:
                admitted(_waiting.block(self._plan(target, cost, timeout_ns)))
            else:
                admitted(self._acquire(target, cost, None))

        async def admit_async(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            target = target_of(args, kwargs)
            if wait:
                admitted(await _waiting.pause(self._plan(target, cost, timeout_ns)))
            else:
                admitted(self._acquire(target, cost, None))

        return functools.partial(decorate, admit=admit, admit_async=admit_async)


def _no_target(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[()]:
    return ()


class Limiter(_Base):
    """One rate limiter: at most ``limit`` units per ``period`` (seconds or timedelta).

    ``algorithm`` is ``"gcra"`` (default; bursts of up to ``burst``, None meaning
    ``limit``), ``"fixed_window"``, ``"sliding_window"`` or ``"sliding_log"``.

    Thread-safety: share one limiter between any number of threads; every call is one
    lock-free C call, made with the GIL released. Times are nanoseconds on
    CLOCK_MONOTONIC (``librate.now_ns()``); ``now_ns=`` arguments take your own timeline.
    """

    __slots__ = ()

    def __init__(
        self, *, algorithm: str = "gcra", limit: int, period: Duration, burst: int | None = None
    ) -> None:
        super().__init__(_LIMITER_C, _LimiterHandle, _config(algorithm, limit, period, burst))

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        algorithm: str = "gcra",
        limit: int,
        period: Duration,
        burst: int | None = None,
        replace: bool = False,
    ) -> Limiter:
        """Opens the limiter whose state lives in the file at ``path``, creating it (mode
        0600) if it does not exist: every process that opens the same file with the same
        configuration shares one limit, as threads sharing one ``Limiter`` do (gunicorn
        or uWSGI workers, separate services). Put the file on a tmpfs such as
        ``/dev/shm``; ``close()`` unmaps it and leaves it in place.

        A file that exists must hold this rule: the one it was made with, or the last one
        any process set in it (``set_config``). With ``replace=True`` a file holding
        another rule is given this one instead (``rate_limiter_open_replacing``), as
        ``set_config`` would change it: the state carried over, every process attached
        deciding under the new rule from its next decision. That is how a rolling restart
        rolls out a new limit.

        Raises ``Incompatible`` if the file is not a librate limiter of this rule (it is
        left untouched; the message says what it holds, as ``describe_file`` does, and with
        ``replace=True`` only a file of another kind or size is), ``InvalidConfig`` also
        when ``replace=True`` cannot carry the file's state over (another algorithm, a
        sliding log's rule), and ``OSError`` with the OS's ``errno``
        (``FileNotFoundError`` for a missing directory, ``PermissionError``…) if it cannot
        be created, opened or mapped."""
        if not isinstance(replace, bool):
            raise TypeError(f"replace must be a bool, not {type(replace).__name__}")
        limiter = cls.__new__(cls)
        name = "rate_limiter_open_replacing" if replace else "rate_limiter_open"
        make = _open_file(path, name, ())
        config = _config(algorithm, limit, period, burst)
        limiter._create(_LIMITER_C, _LimiterHandle, config, (), make)
        return limiter

    def try_acquire(self, n: int = _ONE) -> bool:
        """Acquires ``n`` units now and says only whether they were admitted: the fast
        path (the C library decides on its coarse clock when that settles the outcome).

        Raises ``InsufficientCapacity`` if ``n`` exceeds ``config.max_n``."""
        units = _C_ONE if n is _ONE else c_uint64(u64(n, "n"))
        status = _limiter_try(self._handle, units, None)
        # Literals, not RATE_OK/RATE_LIMITED: a constant is cheaper than a global load.
        if status == 0:
            return True
        if status == 1:
            return False
        raise self._fail(status, n)

    def acquire(self, n: int = _ONE, *, now_ns: int | None = None) -> Decision:
        """Acquires ``n`` units (``n == 0`` only reports the state) and returns the full
        decision; at ``now_ns`` if given, else now."""
        if now_ns is not None:
            return self._acquire((), n, now_ns)
        # try_acquire's fast path, the C library writing into a new Decision (one per
        # call: the call releases the GIL, so a shared one would be raced).
        units = _C_ONE if n is _ONE else c_uint64(u64(n, "n"))
        decision: Decision = blank_decision(Decision)
        status = _limiter_try(self._handle, units, byref(decision))
        if status == 0 or status == 1:
            return decision
        raise self._fail(status, n)

    def reserve(self, n: int = 1, *, max_wait: Duration, now_ns: int | None = None) -> Decision:
        """Reserves ``n`` units (GCRA only: the leaky bucket as a queue). Admitted if the
        caller would have to wait at most ``max_wait`` (seconds, timedelta or
        ``math.inf``) before acting; ``decision.wait`` says how long. Window algorithms
        raise ``Unsupported``."""
        return self._reserve((), n, max_wait, now_ns)

    def set_config(self, config: Config, *, now_ns: int | None = None) -> None:
        """Replaces the rule this limiter enforces (a customer changes plan, an operator
        tightens a limit), now or at ``now_ns``, keeping what was consumed: GCRA keeps
        its tokens (capped at the new burst, then refilled at the new rate); the fixed
        and sliding windows keep their counts, moved to the new period's windows holding
        the instant (capped at the new limit); ``FOREVER`` keeps the algorithm. Each
        acquire racing it, in any thread, is decided wholly under the old rule or wholly
        under the new one. ``config`` then reports the new rule.

        A shared limiter (``Limiter.open``) changes in its file, once, for every process:
        each decides under the new rule from its next decision, and later openers must
        give it (or ``replace=True``). ``config`` reports the file's rule in force,
        whichever process set it.

        Raises ``InvalidConfig`` for an invalid rule, another algorithm, or a sliding
        log's rule (its entries are not carried over), and ``ClosedError`` once closed;
        nothing changes."""
        self._set_config(config, now_ns)

    def reset(self) -> None:
        """Makes the limiter new again (a customer's limit lifted): from the latest time
        it has seen on, it decides as a new limiter of its configuration would (GCRA and
        the fixed window at any time). Each acquire racing it, in any thread (or, for a
        shared limiter, any process), is decided wholly before it or wholly after it.

        Raises ``ClosedError`` once closed."""
        status = lib.rate_limiter_reset(self._handle)
        if status != RATE_OK:
            raise self._fail(status)

    def wait(self, n: int = 1, timeout: Duration | None = None) -> Decision:
        """Blocks until ``n`` units are admitted and returns the decision; with a
        ``timeout`` (seconds or timedelta), returns the denial instead once it is clear
        that the wait would exceed it (without sleeping in vain)."""
        return _waiting.block(self._waiter((), n, timeout))

    async def wait_async(self, n: int = 1, timeout: Duration | None = None) -> Decision:
        """``wait()`` for asyncio: sleeps the task, not the thread."""
        return await _waiting.pause(self._waiter((), n, timeout))

    def rate_limited(
        self, n: int = 1, *, wait: bool = False, timeout: Duration | None = None
    ) -> Callable[[F], F]:
        """Decorator: each call of the function (sync or async) first acquires ``n``
        units. Denied calls raise ``RateLimited``; with ``wait=True`` they wait instead
        (up to ``timeout``, then raise ``RateLimited``)."""
        return self._decorator(_no_target, n, wait, timeout)

    # ``limit`` now means only units per period.
    limit = renamed_method(rate_limited, "Limiter.limit()", "Limiter.rate_limited()")


def _key_target(key: object) -> tuple[bytes, int]:
    data = key_bytes(key)
    return (data, len(data))


class KeyedLimiter(_Base):
    """Independent limits per key (user id, IP, API key: ``str`` or ``bytes``, the empty
    key included), in one table of fixed ``capacity`` allocated once.

    Holding up to ``capacity`` live keys never fails; a key whose state is back to fresh
    may be reclaimed. When the table is full of live keys, a new key raises ``TableFull``
    and the caller chooses to fail open or closed. Same arguments, algorithms and
    thread-safety as ``Limiter``; every method takes the key first.
    """

    __slots__ = ("_fast",)

    def __init__(
        self,
        *,
        algorithm: str = "gcra",
        limit: int,
        period: Duration,
        burst: int | None = None,
        capacity: int,
    ) -> None:
        c, config, extra = self._prepare(algorithm, limit, period, burst, capacity)
        super().__init__(c, _KeyedHandle, config, *extra)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        algorithm: str = "gcra",
        limit: int,
        period: Duration,
        burst: int | None = None,
        capacity: int,
        replace: bool = False,
    ) -> KeyedLimiter:
        """Opens the keyed limiter whose table lives in the file at ``path``, creating it
        (mode 0600) if it does not exist: every process that opens the same file with the
        same configuration and ``capacity`` shares one table, and each key's limit holds
        across them as across threads sharing one ``KeyedLimiter`` (a per-IP limit over
        gunicorn or uWSGI workers, say). Put the file on a tmpfs such as ``/dev/shm``;
        ``close()`` unmaps it and leaves it in place. The file holds the table's secret
        hash key: leave it readable by its owner alone.

        A file that exists must hold this rule (the one it was made with, or the last one
        any process set in it with ``set_config``) and ``capacity``. With ``replace=True``
        a file holding another rule is given this one instead
        (``rate_keyed_open_replacing``), as ``set_config`` would change it, now: each key's
        state carried over, every process attached deciding under the new rule from its
        next decision. That is how a rolling restart rolls out a new limit.

        A process killed at any point, even mid-insert, leaves the table usable by the
        others. A slot that a live process keeps claimed (one stopped mid-insert) is
        waited on for about a second, after which the call that needs it raises
        ``TableFull``.

        Raises ``Incompatible`` if the file is not a librate keyed table of this rule and
        capacity (it is left untouched; the message says what it holds, as
        ``describe_file`` does, and with ``replace=True`` only a file of another kind or
        capacity is), ``InvalidConfig`` also when ``replace=True`` cannot carry the file's
        state over (another algorithm, a sliding log's rule), and ``OSError`` with the
        OS's ``errno`` (``FileNotFoundError`` for a missing directory,
        ``PermissionError``…) if it cannot be created, opened or mapped."""
        if not isinstance(replace, bool):
            raise TypeError(f"replace must be a bool, not {type(replace).__name__}")
        keyed = cls.__new__(cls)
        c, config, extra = keyed._prepare(algorithm, limit, period, burst, capacity)
        name = "rate_keyed_open_replacing" if replace else "rate_keyed_open"
        keyed._create(c, _KeyedHandle, config, extra, _open_file(path, name, extra))
        return keyed

    def _prepare(
        self, algorithm: object, limit: object, period: object, burst: object, capacity: object
    ) -> tuple[_CFunctions, Config, tuple[int]]:
        """Checks the arguments and readies the fast path: the C functions, the
        configuration, and what the C constructors take beside it (the capacity)."""
        config = _config(algorithm, limit, period, burst)
        c = _keyed_c()
        self._fast = c.fast
        return c, config, (u64(capacity, "capacity", least=1, error=InvalidConfig),)

    def try_acquire(self, key: Key, n: int = _ONE) -> bool:
        """``Limiter.try_acquire`` for ``key``."""
        if key.__class__ is not bytes:
            key = key_bytes(key)
        units = _C_ONE if n is _ONE else c_uint64(u64(n, "n"))
        status = self._fast(self._handle, key, c_size_t(len(key)), units, None)
        # The same tail as Limiter.try_acquire, written out on purpose: a shared helper
        # would add a Python call (~20% of a ctypes call) to the hottest path.
        if status == 0:
            return True
        if status == 1:
            return False
        raise self._fail(status, n)

    def try_acquire_many(
        self,
        keys: Iterable[Key],
        n: int = 1,
        *,
        when_full: bool = False,
        now_ns: int | None = None,
    ) -> list[bool]:
        """``try_acquire(key, n)`` for each key in turn, in one C call: a list of bools,
        one per key, in order (a key given twice is decided twice). A new key that finds
        the table full of live keys gets ``when_full`` (False: fail closed) and admits
        nothing; ``try_acquire`` would raise ``TableFull`` for it. Every ~16 keys share
        one reading of the clock, or all use ``now_ns``.

        Per key this costs a fraction of a ``try_acquire`` call: the ctypes call, the
        largest part of each, is paid once for the batch.
        """
        data = [key if key.__class__ is bytes else key_bytes(key) for key in keys]
        count = len(data)
        packed, packed_at = _keyed_packed_c()
        units = c_uint64(u64(n, "n"))
        # The keys back to back in one buffer and their lengths in an array: built by C
        # loops inside CPython, where a ctypes array of pointers costs ~150 ns per key.
        lengths = array(_SIZE_T_CODE, map(len, data))
        arguments = (b"".join(data), (c_size_t * count).from_buffer(lengths), count, units)
        statuses = (c_int32 * count)()
        if now_ns is None:
            status = packed(self._handle, *arguments, statuses)
        else:
            status = packed_at(self._handle, *arguments, u64(now_ns, "now_ns"), statuses)
        if status != RATE_OK:
            raise self._fail(status, n)
        # RATE_OK admitted, RATE_LIMITED denied, RATE_E_TABLE_FULL the only other status.
        codes = memoryview(statuses).cast("B").cast("i").tolist()
        if when_full:
            return [code != RATE_LIMITED for code in codes]
        return list(map(RATE_OK.__eq__, codes))

    def acquire(self, key: Key, n: int = _ONE, *, now_ns: int | None = None) -> Decision:
        """``Limiter.acquire`` for ``key``. A query (``n == 0``) never inserts the key."""
        if now_ns is not None:
            return self._acquire(_key_target(key), n, now_ns)
        # Limiter.acquire's fast path, with the key.
        if key.__class__ is not bytes:
            key = key_bytes(key)
        units = _C_ONE if n is _ONE else c_uint64(u64(n, "n"))
        decision: Decision = blank_decision(Decision)
        status = self._fast(self._handle, key, c_size_t(len(key)), units, byref(decision))
        if status == 0 or status == 1:
            return decision
        raise self._fail(status, n)

    def reserve(
        self, key: Key, n: int = 1, *, max_wait: Duration, now_ns: int | None = None
    ) -> Decision:
        """``Limiter.reserve`` for ``key``."""
        return self._reserve(_key_target(key), n, max_wait, now_ns)

    def reset(self, key: Key) -> None:
        """Resets ``key``: its next request is decided as a new key's, at any time. A key
        not in the table stays out of it. Its former state keeps a slot, under no key,
        until it is fresh (at most a period, or GCRA's burst, after its last admission), so
        resetting many busy keys at once can fill a table for that long. Each acquire of
        the key racing the reset is decided wholly before or after it.

        Raises ``TableFull`` only for a shared table whose slot a stopped process keeps
        claimed (nothing is reset), and ``ClosedError`` once closed."""
        data = key_bytes(key)
        status = lib.rate_keyed_reset(self._handle, data, len(data))
        if status != RATE_OK:
            raise self._fail(status)

    def set_config(self, config: Config, *, now_ns: int | None = None) -> None:
        """Replaces the rule every key follows (a customer changes plan, an operator
        tightens a limit), now or at ``now_ns``, keeping what each key consumed, by the
        rules of ``Limiter.set_config``: GCRA keeps each key's tokens, the windows their
        counts, capped at the new burst or limit. A key whose state is fresh (it would
        admit as much as a new key) starts anew under the new rule. The keys move one
        table slot after another: each acquire racing the change, in any thread, is
        decided wholly under the old rule or wholly under the new one; requests for keys
        already in the table never wait for it, new keys wait until every key has moved.
        The old rule's table is freed once no thread can still be reading it.

        A shared table (``KeyedLimiter.open``) changes in its file, once, for every
        process: each decides under the new rule from its next decision, every key carried
        over as above, and later openers must give it (or ``replace=True``). ``config``,
        through any handle in any process, reports the file's rule in force, whichever
        process set it.

        Raises ``InvalidConfig`` for an invalid rule, another algorithm, or a sliding
        log's rule (its entries are not carried over), and ``ClosedError`` once closed;
        nothing changes."""
        self._set_config(config, now_ns)

    def stats(self, *, now_ns: int | None = None) -> KeyedStats:
        """The table's statistics, for dashboards: capacity, slots, the keys live now
        (or at ``now_ns``), and the new keys refused with ``TableFull`` since the table
        (a shared table: its file) was created. Reads every slot: not for hot paths."""
        out = rate_keyed_stats()
        if now_ns is None:
            status = lib.rate_keyed_read_stats(self._handle, out)
        else:
            status = lib.rate_keyed_read_stats_at(self._handle, u64(now_ns, "now_ns"), out)
        if status != RATE_OK:
            raise self._fail(status)
        return KeyedStats.from_c(out)

    def wait(self, key: Key, n: int = 1, timeout: Duration | None = None) -> Decision:
        """``Limiter.wait`` for ``key``."""
        return _waiting.block(self._waiter(_key_target(key), n, timeout))

    async def wait_async(self, key: Key, n: int = 1, timeout: Duration | None = None) -> Decision:
        """``Limiter.wait_async`` for ``key``."""
        return await _waiting.pause(self._waiter(_key_target(key), n, timeout))

    def rate_limited(
        self,
        key: Key | Callable[..., Key],
        n: int = 1,
        *,
        wait: bool = False,
        timeout: Duration | None = None,
    ) -> Callable[[F], F]:
        """``Limiter.rate_limited`` for a key: a fixed ``str``/``bytes``, or a function
        called with the decorated function's arguments that returns the key."""
        if callable(key):
            key_of = key

            def target_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
                return _key_target(key_of(*args, **kwargs))

        else:
            fixed = _key_target(key)

            def target_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
                return fixed

        return self._decorator(target_of, n, wait, timeout)

    # ``limit`` now means only units per period.
    limit = renamed_method(rate_limited, "KeyedLimiter.limit()", "KeyedLimiter.rate_limited()")
