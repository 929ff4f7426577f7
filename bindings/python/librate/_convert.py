"""Checks and conversions of Python arguments into the C ABI's integers.

ctypes itself would silently wrap a negative or oversized int passed as ``uint64_t`` and
accept ``True`` as 1, so every integer is checked here before it reaches C: ints (or
objects with ``__index__``, such as numpy integers) in 0..2**64-1 pass; ``bool``,
``float``, ``None`` and other types are a ``TypeError``; out-of-range values a
``ValueError``.
"""

from __future__ import annotations

import math
import numbers
import operator
from datetime import timedelta
from typing import cast

U64_MAX = 2**64 - 1
#: A period that never ends (2**64-1 ns): a rule that never refills, a rate of zero.
FOREVER = math.inf
NS_PER_SECOND = 1_000_000_000

#: Seconds, or a ``timedelta``.
Duration = float | int | timedelta


def u64(
    value: object, name: str, *, least: int = 0, error: type[ValueError] = ValueError
) -> int:
    """``value`` as an int in ``least``..2**64-1, or a ``TypeError`` (not an int) or an
    ``error`` (out of range) whose message names the argument, its value and the bound
    it broke: "limit -1: must be at least 1"."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not bool")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from None
    if number < least:
        raise error(f"{name} {number}: must be at least {least}")
    if number > U64_MAX:
        raise error(f"{name} {number}: must be at most 2**64-1")
    return number


def duration_ns(
    value: object,
    name: str,
    *,
    saturate: bool = False,
    least_ns: int = 0,
    error: type[ValueError] = ValueError,
) -> int:
    """A duration in seconds (int, float, Fraction) or a ``timedelta``, in whole
    nanoseconds (rounded to nearest). NaN, or fewer than ``least_ns`` ns after rounding
    (a negative duration included), is an ``error``. Beyond 2**64-1 ns (infinity
    included) it is an ``error``, or 2**64-1 ("forever") when ``saturate``. Messages
    name the argument, its value and the bound: "period 1e-12 s: must be at least 1 ns".
    """
    if isinstance(value, timedelta):
        ns = (value.days * 86_400 + value.seconds) * NS_PER_SECOND + value.microseconds * 1_000
    elif isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be seconds (int or float) or a timedelta, not {type(value).__name__}"
        )
    elif isinstance(value, numbers.Integral):
        ns = int(value) * NS_PER_SECOND
    else:
        # float, Fraction or another Real: kept as is, so a Fraction scales exactly.
        value = cast(float, value)
        if math.isnan(value):
            raise error(f"{name} nan: must be a number of seconds")
        scaled = value * NS_PER_SECOND
        ns = U64_MAX + 1 if scaled > U64_MAX else round(scaled)
    shown = str(value) if isinstance(value, timedelta) else f"{value!r} s"
    if ns < least_ns:
        bound = "must not be negative" if least_ns == 0 else f"must be at least {least_ns} ns"
        raise error(f"{name} {shown}: {bound}")
    if ns > U64_MAX:
        if saturate:
            return U64_MAX
        raise error(f"{name} {shown}: must be at most 2**64-1 ns (about 584 years)")
    return ns


def key_bytes(key: object) -> bytes:
    """A key for the C table: ``bytes`` as is, ``str`` as UTF-8.

    A ``str`` holding a lone surrogate (U+D800..U+DFFF, which UTF-8 cannot encode, as
    ``os.fsdecode`` or ``surrogateescape`` produce) is encoded with ``surrogatepass``:
    each such code point becomes its three-byte form. So every ``str`` is a key, two
    different strings are always two different keys, and a valid string is the same key
    as its UTF-8 bytes."""
    if isinstance(key, bytes):
        return key
    if isinstance(key, str):
        return key.encode("utf-8", "surrogatepass")
    raise TypeError(f"key must be str or bytes, not {type(key).__name__}")
