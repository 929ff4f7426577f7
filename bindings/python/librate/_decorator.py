"""The function wrapper behind ``@limiter.rate_limited(...)``, for sync and async functions."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])

#: Checks one call's arguments against the limiter; raises ``RateLimited`` on denial.
Admit = Callable[[tuple[Any, ...], dict[str, Any]], None]
AdmitAsync = Callable[[tuple[Any, ...], dict[str, Any]], Awaitable[None]]


def decorate(func: F, *, admit: Admit, admit_async: AdmitAsync) -> F:
    """Wraps ``func`` so each call is admitted first: coroutine functions through
    ``admit_async`` (which may ``await`` a wait), plain functions through ``admit``."""
    if not callable(func):
        raise TypeError(
            f"rate_limited(...) decorates a function, not {type(func).__name__}; "
            "write @limiter.rate_limited() with parentheses"
        )
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def limited_async(*args: Any, **kwargs: Any) -> Any:
            await admit_async(args, kwargs)
            return await func(*args, **kwargs)

        return cast(F, limited_async)

    @functools.wraps(func)
    def limited(*args: Any, **kwargs: Any) -> Any:
        admit(args, kwargs)
        return func(*args, **kwargs)

    return cast(F, limited)
