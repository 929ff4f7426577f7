"""Shadow rules of a policy handle (docs/policies.md#shadow-rules): the rule indices a
caller names, as the C mask ``rate_*policy_set_shadow`` takes (bit i for rule i)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from ._errors import InvalidConfig
from ._ffi import RATE_OK


def shadow_mask(rules: Iterable[int], count: int) -> int:
    """The mask of the rule indices ``rules`` of a policy of ``count`` rules. Raises
    ``TypeError`` for something other than ints, ``InvalidConfig`` (a ``ValueError``) for
    an index outside the rules, naming the indices and the count."""
    if isinstance(rules, (int, str, bytes)):
        raise TypeError("shadow must be a collection of rule indices: put one index in a list")
    indices = list(rules)
    mask = 0
    for index in indices:
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"a shadow rule is a rule's index, not {type(index).__name__}")
        if not 0 <= index < count:
            # As Rust says it (ConfigError::ShadowMask), with the indices given.
            raise InvalidConfig(
                f"shadow rules {indices} for {count} rules: "
                "a shadow mask names only rules the policy holds"
            )
        mask |= 1 << index
    return mask


def indices(mask: int) -> tuple[int, ...]:
    """The rule indices of ``mask``, in order."""
    return tuple(index for index in range(mask.bit_length()) if mask >> index & 1)


#: Held across a change of mask, so that the handle's mask and the one its decisions are
#: read with (``owner._shadow``) end up the same when two threads change it at once.
_CHANGING = threading.Lock()


def set_shadow(owner: Any, setter: Any, mask: int) -> None:
    """Makes ``mask`` the shadow rules of ``owner``'s handle with the C call ``setter``,
    and remembers it for the decisions (``owner._shadow``); raises what the status says."""
    with _CHANGING:
        status = setter(owner._handle, mask)
        if status != RATE_OK:
            raise owner._fail(status)
        owner._shadow = mask
