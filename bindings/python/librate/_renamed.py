"""Old names kept for one release after a rename, each warning when used
(docs/python.md, Names across languages)."""

from __future__ import annotations

import warnings


def renamed(old: str, new: str) -> None:
    """Warns that ``old`` is now ``new``: the first statement of the old name's body, so
    that the warning points at the caller's line."""
    warnings.warn(
        f"{old} is deprecated: use {new}; {old} will be removed in the next release",
        DeprecationWarning,
        stacklevel=3,
    )
