"""librate: lock-free rate limiters (GCRA, fixed window, sliding window counter, sliding
log; direct, keyed, or several rules at once as a policy, per key or global) for the price of one foreign
call, safe across threads.

>>> import librate
>>> limiter = librate.Limiter(limit=1, period=1.0, burst=2)   # 1/s, bursts of 2
>>> [limiter.acquire(now_ns=0).allowed for _ in range(3)]
[True, True, False]
>>> limiter.acquire(now_ns=0).retry_after
1.0

See docs/python.md for the API and the middleware; ``librate.redis`` (with
redis-py installed) keeps limits in Redis, shared across hosts, and ``librate.lease``
divides one such limit into shares that each process decides from in process.
"""

from __future__ import annotations

from . import _errors
from ._decision import Decision, PolicyDecision
from ._errors import (
    ClosedError,
    Incompatible,
    InsufficientCapacity,
    InternalError,
    InvalidConfig,
    LibraryError,
    LibrateError,
    RateLimited,
    RedisError,
    ReplyError,
    TableFull,
    Unsupported,
)
from ._ffi import lib as _lib
from ._convert import FOREVER
from ._counts import Counts, RuleCounts
from ._limiter import ALGORITHMS, Config, KeyedLimiter, Limiter, describe_file
from ._keyed_policy import KeyedPolicy, KeyedRule
from ._lease import LeaseRule
from ._policy import Policy
from ._stats import KeyedStats

__version__ = "0.1.0"

# Errors show as librate.TableFull etc., the names users catch them by.
for _name in dir(_errors):
    _value = getattr(_errors, _name)
    if isinstance(_value, type) and issubclass(_value, LibrateError):
        _value.__module__ = __name__

__all__ = [
    "ALGORITHMS",
    "ClosedError",
    "Config",
    "Counts",
    "Incompatible",
    "Decision",
    "FOREVER",
    "InsufficientCapacity",
    "InternalError",
    "InvalidConfig",
    "KeyedLimiter",
    "KeyedPolicy",
    "KeyedRule",
    "KeyedStats",
    "LeaseRule",
    "LibrateError",
    "LibraryError",
    "Limiter",
    "Policy",
    "PolicyDecision",
    "RateLimited",
    "RedisError",
    "ReplyError",
    "RuleCounts",
    "TableFull",
    "Unsupported",
    "describe_file",
    "library_path",
    "library_version",
    "now_ns",
]


def now_ns() -> int:
    """Nanoseconds on CLOCK_MONOTONIC: the library's timeline (``rate_now_ns``)."""
    return int(_lib.rate_now_ns())


def library_version() -> str:
    """The loaded librate's version, "MAJOR.MINOR.PATCH" (``rate_version``)."""
    return str(_lib.rate_version().decode())


def library_path() -> str:
    """The file the native library was loaded from."""
    return str(_lib.path)
