"""Old names kept for one release after a rename, each warning when used
(docs/python.md, Names across languages)."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

F = TypeVar("F", bound=Callable[..., Any])


def renamed(old: str, new: str) -> None:
    """Warns that ``old`` is now ``new``: the first statement of the old name's body, so
    that the warning points at the caller's line."""
    warnings.warn(
        f"{old} is deprecated: use {new}; {old} will be removed in the next release",
        DeprecationWarning,
        stacklevel=3,
    )


def renamed_method(method: F, old: str, new: str) -> F:
    """``method`` under its old name ``old``, warning that it is now ``new``."""

    @functools.wraps(method)
    def alias(*args: Any, **kwargs: Any) -> Any:
        renamed(old, new)
        return method(*args, **kwargs)

    alias.__doc__ = f"Deprecated alias of ``{new}``, removed in the next release."
    return cast(F, alias)
