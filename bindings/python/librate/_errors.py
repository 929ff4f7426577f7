"""Exceptions, chosen by status NUMBER, never by message text (CONTRIBUTING.md, style).

Every status below 0 that the C library returns maps to one class here. The classes that
mean "this argument can never work" are also ``ValueError`` subclasses, so code that
already catches ``ValueError`` for bad input keeps working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._decision import Decision


class LibrateError(Exception):
    """Base class of every librate error; ``code`` is the C status, or None."""

    code: int | None = None


class LibraryError(LibrateError, OSError):
    """librate.so could not be loaded, or lacks a function these bindings need."""


class ClosedError(LibrateError, ValueError):
    """The limiter was closed. (``RATE_E_NULL``: the only NULL these bindings ever pass
    is the handle of a closed limiter.)"""

    code = -1


class InvalidConfig(LibrateError, ValueError):
    """``RATE_E_INVALID_CONFIG``: zero limit or period, more than one unit per ns, a
    product that does not fit 64 bits, or a keyed capacity that cannot be allocated."""

    code = -2


class InsufficientCapacity(LibrateError, ValueError):
    """``RATE_E_INSUFFICIENT_CAPACITY``: the cost ``n`` exceeds what the limiter can ever
    admit at once, so no amount of waiting would admit it."""

    code = -3


class TableFull(LibrateError):
    """``RATE_E_TABLE_FULL``: a keyed limiter is full of live keys and cannot take a new
    one. Nothing was admitted; the caller chooses to fail open or closed."""

    code = -4


class Unsupported(LibrateError, ValueError):
    """``RATE_E_UNSUPPORTED``: the operation does not exist for this limiter: a reserve
    on a window algorithm (a reserve needs GCRA)."""

    code = -5


class InternalError(LibrateError, RuntimeError):
    """``RATE_E_INTERNAL``: a bug inside librate (a panic caught at the C boundary)."""

    code = -6


class Incompatible(LibrateError):
    """``RATE_E_INCOMPATIBLE``: ``Limiter.open``, ``KeyedLimiter.open`` or
    ``KeyedPolicy.open`` found a file that is not a librate table of this kind, rule,
    capacity and size, and left it untouched. The message says what the file holds (as
    ``librate.describe_file`` does): open it with that rule, or use another path; an
    opener may replace the file's rule instead (``open(..., replace=True)`` of each)."""

    code = -8


class RedisError(LibrateError):
    """A ``librate.redis`` limiter got no decision from Redis: the server unreachable or
    past the client's timeout, an error reply (OOM, READONLY, WRONGTYPE, a key holding
    something that is no librate state), or a reply the scripts never give. Nothing was
    admitted. The redis-py exception, if any, is ``__cause__``. (Refusals decided before
    anything is sent are the usual ``InsufficientCapacity`` and ``Unsupported``.)"""


class ReplyError(RedisError):
    """``RATE_E_REPLY``: Redis answered a lease's renewal with something librate's lease
    script never answers (a share above the rule, a status it never gives); nothing of
    it was applied, and the holder decides from the lease it holds until it ends."""

    code = -9


class RateLimited(LibrateError):
    """Raised by ``@limiter.rate_limited(...)`` when a call is denied (or its wait timed out).

    ``retry_after`` (seconds) and ``retry_after_ns`` say when the same call, with no other
    traffic, would be admitted; ``decision`` is the full denial.
    """

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        self.retry_after = decision.retry_after
        self.retry_after_ns = decision.retry_after_ns
        super().__init__(f"rate limited: retry after {self.retry_after:.9g} s")


_BY_CODE: dict[int, type[LibrateError]] = {
    cls.code: cls
    for cls in (
        ClosedError,
        InvalidConfig,
        InsufficientCapacity,
        TableFull,
        Unsupported,
        InternalError,
        Incompatible,
        ReplyError,
    )
    if cls.code is not None
}


def error_for(status: int, message: str) -> LibrateError:
    """The exception for a negative C status; an unknown number gives a plain
    ``LibrateError`` carrying it, so a newer library never goes unreported."""
    error = _BY_CODE.get(status, LibrateError)(message)
    error.code = status
    return error
