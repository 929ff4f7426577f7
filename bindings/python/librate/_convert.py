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
NS_PER_SECOND = 1_000_000_000

#: Seconds, or a ``timedelta``.
Duration = float | int | timedelta


def u64(value: object, name: str) -> int:
    """``value`` as an int in 0..2**64-1, or a ``TypeError``/``ValueError`` naming it."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, not bool")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from None
    if not 0 <= number <= U64_MAX:
        raise ValueError(f"{name} must be in 0..2**64-1, got {number}")
    return number


def duration_ns(value: object, name: str, *, saturate: bool = False) -> int:
    """A duration in seconds (int, float, Fraction) or a ``timedelta``, in whole
    nanoseconds (rounded to nearest). Negative or NaN is a ``ValueError``. Beyond
    2**64-1 ns (infinity included) it is a ``ValueError``, or 2**64-1 ("forever") when
    ``saturate``."""
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
            raise ValueError(f"{name} must not be NaN")
        scaled = value * NS_PER_SECOND
        ns = U64_MAX + 1 if scaled > U64_MAX else round(scaled)
    if ns < 0:
        raise ValueError(f"{name} must not be negative, got {value!r}")
    if ns > U64_MAX:
        if saturate:
            return U64_MAX
        raise ValueError(f"{name} must be at most 2**64-1 ns (~584 years), got {value!r}")
    return ns


def key_bytes(key: object) -> bytes:
    """A key for the C table: ``bytes`` as is, ``str`` as UTF-8."""
    if isinstance(key, bytes):
        return key
    if isinstance(key, str):
        return key.encode()
    raise TypeError(f"key must be str or bytes, not {type(key).__name__}")
