"""Loads librate's shared library and declares the C contract (include/rate.h) for ctypes.

Every ``rate_*`` function of ``include/rate.h`` has its ``restype`` and ``argtypes`` in
``SIGNATURES`` (tests/test_header_sync.py fails if one is missing or differs). Without
them ctypes would assume ``int`` and truncate 64-bit values and pointers.

A function is looked up and declared the first time it is used, so a library that lacks
one (built from an older librate) still imports, and using that function raises a
``LibraryError`` naming the library file and the symbol.

Where the library comes from (first match wins; ``$LIBRATE_PATH`` is an override, so when
it is set it is the only path tried):

1. ``$LIBRATE_PATH``: the library file, or a directory holding it;
2. the copy installed inside this package (``pip install`` puts it there);
3. ``target/release/`` of the librate checkout this package sits in (in-tree runs).

If none loads, the ``LibraryError`` names every path tried and why it failed.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import (
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_int32,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import Any

from ._errors import LibraryError
from ._libname import LIBRARY_NAME

# Status codes and algorithm numbers (include/rate.h); never renumbered.
RATE_OK = 0
RATE_LIMITED = 1
RATE_E_NULL = -1
RATE_E_INVALID_CONFIG = -2
RATE_E_INSUFFICIENT_CAPACITY = -3
RATE_E_TABLE_FULL = -4
RATE_E_UNSUPPORTED = -5
RATE_E_INTERNAL = -6
RATE_E_IO = -7
RATE_E_INCOMPATIBLE = -8
RATE_E_REPLY = -9

RATE_GCRA = 0
RATE_FIXED_WINDOW = 1
RATE_SLIDING_WINDOW = 2
RATE_SLIDING_LOG = 3

#: Bytes that hold any reason ``rate_limiter_explain_config`` writes, NUL included.
RATE_REASON_LEN = 256
#: The most configuration arguments a Redis script takes (``rate_redis_prepare``).
RATE_REDIS_MAX_ARGS = 4
#: The most rules a policy holds (``rate_policy_new``).
RATE_POLICY_MAX_RULES = 8
#: The most configuration arguments a policy's Redis script takes
#: (``rate_redis_policy_prepare``): the rule count, then three per rule.
RATE_REDIS_POLICY_MAX_ARGS = 25
#: ``denied_by`` of an admitted policy decision: no rule denied it.
RATE_POLICY_NO_RULE = 2**32 - 1


class rate_config(Structure):  # noqa: N801 - the C name
    """``struct rate_config``: what a limiter enforces."""

    _fields_ = [
        ("algorithm", c_uint32),
        ("limit", c_uint64),
        ("period_ns", c_uint64),
        ("burst", c_uint64),
    ]


class rate_decision(Structure):  # noqa: N801 - the C name
    """``struct rate_decision``: the outcome of an acquire, reserve or query."""

    _fields_ = [
        ("allowed", c_uint8),
        ("limit", c_uint64),
        ("remaining", c_uint64),
        ("retry_after_ns", c_uint64),
        ("reset_after_ns", c_uint64),
        ("wait_ns", c_uint64),
    ]


class rate_counts(Structure):  # noqa: N801 - the C name
    """``struct rate_counts``: a handle's counts of its requests."""

    _fields_ = [
        ("admitted", c_uint64),
        ("denied", c_uint64),
        ("table_full", c_uint64),
    ]


class rate_rule_counts(Structure):  # noqa: N801 - the C name
    """``struct rate_rule_counts``: one policy rule's counts."""

    _fields_ = [
        ("denied", c_uint64),
        ("shadow_denied", c_uint64),
    ]


class rate_keyed_stats(Structure):  # noqa: N801 - the C name
    """``struct rate_keyed_stats``: a keyed table's statistics."""

    _fields_ = [
        ("capacity", c_uint64),
        ("max_keys", c_uint64),
        ("live_keys", c_uint64),
        ("table_full", c_uint64),
    ]


class rate_reservation(Structure):  # noqa: N801 - the C name
    """``struct rate_reservation``: a cancellable reserve's reservation; opaque words."""

    _fields_ = [("opaque", c_uint64 * 8)]


class rate_policy_decision(Structure):  # noqa: N801 - the C name
    """``struct rate_policy_decision``: a policy's decision, and each rule's."""

    _fields_ = [
        ("decision", rate_decision),
        ("denied_by", c_uint32),
        ("rules_len", c_uint32),
        ("rules", rate_decision * RATE_POLICY_MAX_RULES),
    ]


#: Scopes of a keyed policy's rule (``rate_keyed_rule.scope``).
RATE_RULE_GLOBAL = 0
RATE_RULE_PER_KEY = 1


class rate_keyed_rule(Structure):  # noqa: N801 - the C name
    """``struct rate_keyed_rule``: a keyed policy's rule and its scope."""

    _fields_ = [
        ("config", rate_config),
        ("scope", c_uint32),
    ]


class rate_redis_script(Structure):  # noqa: N801 - the C name
    """``struct rate_redis_script``: a Lua script of the Redis tier and its arguments."""

    _fields_ = [
        ("source", c_char_p),
        ("config_args", c_uint64 * RATE_REDIS_MAX_ARGS),
        ("config_args_len", c_uint32),
        ("limit", c_uint64),
    ]


class rate_redis_policy_script(Structure):  # noqa: N801 - the C name
    """``struct rate_redis_policy_script``: a policy's Lua script and its arguments."""

    _fields_ = [
        ("source", c_char_p),
        ("config_args", c_uint64 * RATE_REDIS_POLICY_MAX_ARGS),
        ("config_args_len", c_uint32),
        ("limit", c_uint64),
    ]


#: Where a lease holder's decisions come from (``rate_lease_state``).
RATE_LEASE_LEASED = 0
RATE_LEASE_UNSHARED = 1
RATE_LEASE_FALLBACK = 2
#: The most bytes of a lease holder's name.
RATE_LEASE_NAME_MAX = 64
#: The bytes of each argument of a ``rate_lease_renewal``, its NUL included.
RATE_LEASE_ARG_BYTES = 72
#: The arguments of a lease script call.
RATE_LEASE_ARGS = 7
#: The integers of a lease script's answer, after its status.
RATE_LEASE_FIELDS = 8
#: ``rate_keyed_lease_acquire``: decide the key in Redis.
RATE_KEYED_LEASE_IN_REDIS = 2
#: The integers of the lease script's answer to a request decided in Redis.
RATE_KEYED_LEASE_FIELDS = 5


class rate_lease_rule(Structure):  # noqa: N801 - the C name
    """``struct rate_lease_rule``: a global rule and the timing of its leases."""

    _fields_ = [
        ("config", rate_config),
        ("lease_ns", c_uint64),
        ("renew_every_ns", c_uint64),
    ]


class rate_lease_renewal(Structure):  # noqa: N801 - the C name
    """``struct rate_lease_renewal``: one call of the lease script, its ARGV as
    NUL-terminated strings."""

    _fields_ = [
        ("sent_at_ns", c_uint64),
        ("args", (c_char * RATE_LEASE_ARG_BYTES) * RATE_LEASE_ARGS),
    ]


class rate_lease_stats(Structure):  # noqa: N801 - the C name
    """``struct rate_lease_stats``: a lease holder's statistics."""

    _fields_ = [
        ("renewals", c_uint64),
        ("fallback_ns", c_uint64),
        ("held_rate", c_uint64),
        ("held_burst", c_uint64),
        ("state", c_int32),
    ]


class rate_lease_grant(Structure):  # noqa: N801 - the C name
    """``struct rate_lease_grant``: a lease holder's last grant."""

    _fields_ = [
        ("rate", c_uint64),
        ("burst", c_uint64),
        ("lease_us", c_uint64),
        ("epoch", c_uint64),
        ("held_rate", c_uint64),
        ("held_burst", c_uint64),
        ("holders", c_uint64),
        ("window", c_uint64),
    ]


# Opaque handles (`rate_limiter *`, `rate_keyed *`) travel as `c_void_p`: a typed POINTER
# costs ~30% more per call (measured), and only this package ever makes or passes them.
HANDLE = c_void_p
# `const uint8_t *key` is declared `c_char_p`: the same pointer at the ABI level, and
# ctypes then passes a `bytes` object's own buffer with no copy. The length travels
# separately, so keys may hold NUL bytes.
KEY = c_char_p
DECISION = POINTER(rate_decision)

SIGNATURES: dict[str, tuple[Any, tuple[Any, ...]]] = {
    "rate_limiter_new": (c_int32, (POINTER(rate_config), POINTER(HANDLE))),
    "rate_limiter_open": (c_int32, (c_char_p, POINTER(rate_config), POINTER(HANDLE))),
    "rate_limiter_open_replacing": (
        c_int32,
        (c_char_p, POINTER(rate_config), POINTER(HANDLE)),
    ),
    "rate_describe_file": (c_int32, (c_char_p, POINTER(c_char), c_size_t)),
    "rate_limiter_free": (None, (HANDLE,)),
    "rate_limiter_acquire": (c_int32, (HANDLE, c_uint64, DECISION)),
    "rate_limiter_acquire_at": (c_int32, (HANDLE, c_uint64, c_uint64, DECISION)),
    "rate_limiter_reserve_at": (
        c_int32,
        (HANDLE, c_uint64, c_uint64, c_uint64, DECISION),
    ),
    "rate_limiter_reserve_cancellable_at": (
        c_int32,
        (HANDLE, c_uint64, c_uint64, c_uint64, DECISION, POINTER(rate_reservation)),
    ),
    "rate_limiter_cancel": (c_int32, (HANDLE, POINTER(rate_reservation))),
    "rate_limiter_reset": (c_int32, (HANDLE,)),
    "rate_limiter_set_config": (c_int32, (HANDLE, POINTER(rate_config))),
    "rate_limiter_set_config_at": (c_int32, (HANDLE, POINTER(rate_config), c_uint64)),
    "rate_limiter_get_config": (c_int32, (HANDLE, POINTER(rate_config))),
    "rate_keyed_new": (c_int32, (POINTER(rate_config), c_uint64, POINTER(HANDLE))),
    "rate_keyed_open": (
        c_int32,
        (c_char_p, POINTER(rate_config), c_uint64, POINTER(HANDLE)),
    ),
    "rate_keyed_open_replacing": (
        c_int32,
        (c_char_p, POINTER(rate_config), c_uint64, POINTER(HANDLE)),
    ),
    "rate_keyed_free": (None, (HANDLE,)),
    "rate_keyed_acquire": (c_int32, (HANDLE, KEY, c_size_t, c_uint64, DECISION)),
    "rate_keyed_acquire_at": (
        c_int32,
        (HANDLE, KEY, c_size_t, c_uint64, c_uint64, DECISION),
    ),
    "rate_keyed_reserve_at": (
        c_int32,
        (HANDLE, KEY, c_size_t, c_uint64, c_uint64, c_uint64, DECISION),
    ),
    "rate_keyed_reserve_cancellable_at": (
        c_int32,
        (HANDLE, KEY, c_size_t, c_uint64, c_uint64, c_uint64, DECISION, POINTER(rate_reservation)),
    ),
    "rate_keyed_cancel": (c_int32, (HANDLE, POINTER(rate_reservation))),
    "rate_keyed_reset": (c_int32, (HANDLE, KEY, c_size_t)),
    "rate_keyed_set_config": (c_int32, (HANDLE, POINTER(rate_config))),
    "rate_keyed_set_config_at": (c_int32, (HANDLE, POINTER(rate_config), c_uint64)),
    "rate_keyed_get_config": (c_int32, (HANDLE, POINTER(rate_config))),
    "rate_keyed_read_stats": (c_int32, (HANDLE, POINTER(rate_keyed_stats))),
    "rate_limiter_enable_counts": (c_int32, (HANDLE,)),
    "rate_limiter_read_counts": (c_int32, (HANDLE, POINTER(rate_counts))),
    "rate_keyed_enable_counts": (c_int32, (HANDLE,)),
    "rate_keyed_read_counts": (c_int32, (HANDLE, POINTER(rate_counts))),
    "rate_policy_enable_counts": (c_int32, (HANDLE,)),
    "rate_policy_read_counts": (
        c_int32,
        (HANDLE, POINTER(rate_counts), POINTER(rate_rule_counts), c_size_t),
    ),
    "rate_keyed_policy_enable_counts": (c_int32, (HANDLE,)),
    "rate_keyed_policy_read_counts": (
        c_int32,
        (HANDLE, POINTER(rate_counts), POINTER(rate_rule_counts), c_size_t),
    ),
    "rate_keyed_read_stats_at": (c_int32, (HANDLE, c_uint64, POINTER(rate_keyed_stats))),
    "rate_keyed_acquire_batch": (
        c_int32,
        (HANDLE, POINTER(KEY), POINTER(c_size_t), c_size_t, c_uint64, POINTER(c_int32)),
    ),
    "rate_keyed_acquire_batch_at": (
        c_int32,
        (HANDLE, POINTER(KEY), POINTER(c_size_t), c_size_t, c_uint64, c_uint64, POINTER(c_int32)),
    ),
    "rate_keyed_acquire_packed": (
        c_int32,
        (HANDLE, KEY, POINTER(c_size_t), c_size_t, c_uint64, POINTER(c_int32)),
    ),
    "rate_keyed_acquire_packed_at": (
        c_int32,
        (HANDLE, KEY, POINTER(c_size_t), c_size_t, c_uint64, c_uint64, POINTER(c_int32)),
    ),
    "rate_limiter_explain_config": (
        c_int32,
        (POINTER(rate_config), POINTER(c_char), c_size_t),
    ),
    "rate_keyed_explain_config": (
        c_int32,
        (POINTER(rate_config), c_uint64, POINTER(c_char), c_size_t),
    ),
    "rate_now_ns": (c_uint64, ()),
    "rate_status_str": (c_char_p, (c_int32,)),
    "rate_version": (c_char_p, ()),
    "rate_redis_prepare": (c_int32, (POINTER(rate_config), POINTER(rate_redis_script))),
    "rate_redis_slot": (c_int32, (KEY, c_size_t, POINTER(c_uint16))),
    "rate_redis_policy_prepare": (
        c_int32,
        (POINTER(rate_config), c_size_t, POINTER(rate_redis_policy_script)),
    ),
    "rate_redis_policy_check_shadow": (c_int32, (POINTER(rate_redis_policy_script), c_uint32)),
    "rate_policy_new": (c_int32, (POINTER(rate_config), c_size_t, POINTER(HANDLE))),
    "rate_policy_set_rules": (c_int32, (HANDLE, POINTER(rate_config), c_size_t)),
    "rate_policy_set_rules_at": (c_int32, (HANDLE, POINTER(rate_config), c_size_t, c_uint64)),
    "rate_policy_set_shadow": (c_int32, (HANDLE, c_uint32)),
    "rate_policy_get_shadow": (c_int32, (HANDLE, POINTER(c_uint32))),
    "rate_policy_free": (None, (HANDLE,)),
    "rate_policy_acquire": (c_int32, (HANDLE, c_uint64, POINTER(rate_policy_decision))),
    "rate_policy_acquire_at": (
        c_int32,
        (HANDLE, c_uint64, c_uint64, POINTER(rate_policy_decision)),
    ),
    "rate_policy_acquire_costs": (
        c_int32,
        (HANDLE, POINTER(c_uint64), c_size_t, POINTER(rate_policy_decision)),
    ),
    "rate_policy_acquire_costs_at": (
        c_int32,
        (HANDLE, POINTER(c_uint64), c_size_t, c_uint64, POINTER(rate_policy_decision)),
    ),
    "rate_keyed_policy_new": (
        c_int32,
        (POINTER(rate_keyed_rule), c_size_t, c_uint64, POINTER(HANDLE)),
    ),
    "rate_keyed_policy_open": (
        c_int32,
        (c_char_p, POINTER(rate_keyed_rule), c_size_t, c_uint64, POINTER(HANDLE)),
    ),
    "rate_keyed_policy_open_replacing": (
        c_int32,
        (c_char_p, POINTER(rate_keyed_rule), c_size_t, c_uint64, POINTER(HANDLE)),
    ),
    "rate_keyed_policy_free": (None, (HANDLE,)),
    "rate_keyed_policy_acquire": (
        c_int32,
        (HANDLE, KEY, c_size_t, c_uint64, POINTER(rate_policy_decision)),
    ),
    "rate_keyed_policy_acquire_at": (
        c_int32,
        (HANDLE, KEY, c_size_t, c_uint64, c_uint64, POINTER(rate_policy_decision)),
    ),
    "rate_keyed_policy_acquire_costs": (
        c_int32,
        (HANDLE, KEY, c_size_t, POINTER(c_uint64), c_size_t, POINTER(rate_policy_decision)),
    ),
    "rate_keyed_policy_acquire_costs_at": (
        c_int32,
        (
            HANDLE,
            KEY,
            c_size_t,
            POINTER(c_uint64),
            c_size_t,
            c_uint64,
            POINTER(rate_policy_decision),
        ),
    ),
    "rate_keyed_policy_set_rules": (
        c_int32,
        (HANDLE, POINTER(rate_keyed_rule), c_size_t),
    ),
    "rate_keyed_policy_set_rules_at": (
        c_int32,
        (HANDLE, POINTER(rate_keyed_rule), c_size_t, c_uint64),
    ),
    "rate_keyed_policy_get_rules": (
        c_int32,
        (HANDLE, POINTER(rate_keyed_rule), c_size_t),
    ),
    "rate_keyed_policy_set_shadow": (c_int32, (HANDLE, c_uint32)),
    "rate_keyed_policy_get_shadow": (c_int32, (HANDLE, POINTER(c_uint32))),
    "rate_keyed_policy_reset": (c_int32, (HANDLE, KEY, c_size_t)),
    "rate_keyed_policy_read_stats": (c_int32, (HANDLE, POINTER(rate_keyed_stats))),
    "rate_keyed_policy_read_stats_at": (
        c_int32,
        (HANDLE, c_uint64, POINTER(rate_keyed_stats)),
    ),
    "rate_lease_holder_new": (
        c_int32,
        (POINTER(rate_lease_rule), POINTER(rate_config), KEY, c_size_t, POINTER(HANDLE)),
    ),
    "rate_lease_explain": (
        c_int32,
        (POINTER(rate_lease_rule), POINTER(rate_config), KEY, c_size_t, POINTER(c_char), c_size_t),
    ),
    "rate_lease_holder_open": (
        c_int32,
        (c_char_p, POINTER(rate_lease_rule), POINTER(rate_config), POINTER(HANDLE)),
    ),
    "rate_lease_lead": (c_int32, (HANDLE,)),
    "rate_lease_step_down": (c_int32, (HANDLE,)),
    "rate_lease_holder_free": (None, (HANDLE,)),
    "rate_lease_acquire": (c_int32, (HANDLE, c_uint64, DECISION)),
    "rate_lease_acquire_at": (c_int32, (HANDLE, c_uint64, c_uint64, DECISION)),
    "rate_lease_state": (c_int32, (HANDLE,)),
    "rate_lease_state_at": (c_int32, (HANDLE, c_uint64)),
    "rate_lease_read_stats": (c_int32, (HANDLE, POINTER(rate_lease_stats))),
    "rate_lease_read_stats_at": (c_int32, (HANDLE, c_uint64, POINTER(rate_lease_stats))),
    "rate_lease_enable_counts": (c_int32, (HANDLE,)),
    "rate_lease_read_counts": (c_int32, (HANDLE, POINTER(rate_counts))),
    "rate_lease_renew": (c_int32, (HANDLE, POINTER(rate_lease_renewal))),
    "rate_lease_renew_at": (c_int32, (HANDLE, c_uint64, POINTER(rate_lease_renewal))),
    "rate_lease_release": (c_int32, (HANDLE, POINTER(rate_lease_renewal))),
    "rate_lease_apply": (
        c_int32,
        (HANDLE, POINTER(rate_lease_renewal), KEY, c_size_t, POINTER(c_uint64)),
    ),
    "rate_lease_apply_at": (
        c_int32,
        (HANDLE, POINTER(rate_lease_renewal), KEY, c_size_t, POINTER(c_uint64), c_uint64),
    ),
    "rate_lease_last_grant": (c_int32, (HANDLE, POINTER(rate_lease_grant))),
    "rate_lease_script": (c_char_p, (HANDLE,)),
    "rate_keyed_lease_holder_new": (
        c_int32,
        (POINTER(rate_lease_rule), c_uint64, c_uint64, KEY, c_size_t, POINTER(HANDLE)),
    ),
    "rate_keyed_lease_holder_free": (None, (HANDLE,)),
    "rate_keyed_lease_acquire": (c_int32, (HANDLE, KEY, c_size_t, c_uint64, DECISION)),
    "rate_keyed_lease_acquire_at": (
        c_int32,
        (HANDLE, KEY, c_size_t, c_uint64, c_uint64, DECISION),
    ),
    "rate_keyed_lease_in_redis": (c_int32, (HANDLE, c_uint64, POINTER(rate_lease_renewal))),
    "rate_keyed_lease_in_redis_at": (
        c_int32,
        (HANDLE, c_uint64, c_uint64, POINTER(rate_lease_renewal)),
    ),
    "rate_keyed_lease_decision": (c_int32, (HANDLE, c_uint64, POINTER(c_int64), DECISION)),
    "rate_keyed_lease_leased": (c_int32, (HANDLE, KEY, c_size_t)),
    "rate_keyed_lease_renewals": (c_int32, (HANDLE, POINTER(HANDLE))),
    "rate_keyed_lease_renewals_at": (c_int32, (HANDLE, c_uint64, POINTER(HANDLE))),
    "rate_keyed_lease_release_all": (c_int32, (HANDLE, POINTER(HANDLE))),
    "rate_keyed_lease_round_len": (c_size_t, (HANDLE,)),
    "rate_keyed_lease_round_key": (
        c_int32,
        (HANDLE, c_size_t, POINTER(c_void_p), POINTER(c_size_t)),
    ),
    "rate_keyed_lease_round_renewal": (
        c_int32,
        (HANDLE, c_size_t, POINTER(rate_lease_renewal)),
    ),
    "rate_keyed_lease_round_apply": (
        c_int32,
        (HANDLE, c_size_t, KEY, c_size_t, POINTER(c_uint64)),
    ),
    "rate_keyed_lease_round_apply_at": (
        c_int32,
        (HANDLE, c_size_t, KEY, c_size_t, POINTER(c_uint64), c_uint64),
    ),
    "rate_keyed_lease_round_free": (None, (HANDLE,)),
    "rate_keyed_lease_script": (c_char_p, (HANDLE,)),
}


class Library:
    """The loaded library. Each attribute named in ``SIGNATURES`` is the C function,
    declared on first access and cached on the instance (so later accesses are plain
    attribute loads)."""

    def __init__(self, cdll: ctypes.CDLL, path: Path) -> None:
        self._cdll = cdll
        self.path = path

    def __getattr__(self, name: str) -> Any:
        # Only called for names not yet cached in the instance dict.
        try:
            restype, argtypes = SIGNATURES[name]
        except KeyError:
            raise AttributeError(name) from None
        try:
            function = getattr(self._cdll, name)
        except AttributeError:
            raise LibraryError(
                f"{self.path} has no function {name}: the library is older than these "
                "bindings; rebuild it (cargo build --release) or point LIBRATE_PATH at a "
                "current copy"
            ) from None
        function.restype = restype
        function.argtypes = argtypes
        setattr(self, name, function)
        return function

    def with_errno(self, name: str) -> Any:
        """A second, declared function object for ``name`` whose calls keep the C
        library's ``errno`` for ``ctypes.get_errno()``: for the rare calls whose failure
        carries an OS error (opening a shared file), so the hot path pays nothing for it."""
        restype, argtypes = SIGNATURES[name]
        getattr(self, name)  # the declared twin: raises LibraryError if the symbol is missing
        function = ctypes.CDLL(str(self.path), use_errno=True)[name]
        function.restype = restype
        function.argtypes = argtypes
        return function

    def unchecked(self, name: str) -> Any:
        """A second function object for ``name``, with the declared ``restype`` but no
        ``argtypes``, for the hottest path only.

        With ``argtypes``, ctypes calls ``from_param`` on every argument of every call
        (measured here: about a third of a 3-argument call). Without them it passes
        ctypes instances as they are, so the caller must pass each argument as an
        instance of its declared type (``c_void_p``, ``c_uint64``, ``c_size_t``), or
        ``bytes`` for a key pointer, or None for a NULL pointer: never a plain int,
        which ctypes would pass as a 32-bit C int.
        """
        restype, _ = SIGNATURES[name]
        getattr(self, name)  # the declared twin: raises LibraryError if the symbol is missing
        function = self._cdll[name]  # item access makes a new function object each time
        function.restype = restype
        return function


def candidates() -> list[tuple[str, Path]]:
    """Where to look for the library, in order, each with where the path came from."""
    override = os.environ.get("LIBRATE_PATH")
    if override:
        path = Path(override)
        return [("$LIBRATE_PATH", path / LIBRARY_NAME if path.is_dir() else path)]
    package = Path(__file__).resolve().parent
    found = [("inside the package", package / LIBRARY_NAME)]
    checkout = package.parent.parent.parent  # bindings/python/librate -> repo root
    if (checkout / "Cargo.toml").is_file() and (checkout / "include" / "rate.h").is_file():
        found.append(("in-tree build", checkout / "target" / "release" / LIBRARY_NAME))
    return found


def load() -> Library:
    """Loads the first candidate that works, or raises naming every path tried."""
    tried = []
    for origin, path in candidates():
        try:
            return Library(ctypes.CDLL(str(path)), path)
        except OSError as error:
            tried.append(f"{path} ({origin}): {error}")
    raise LibraryError(
        "could not load librate; tried:\n  "
        + "\n  ".join(tried)
        + "\nReinstall the package (pip install ./bindings/python builds the library), "
        "run `cargo build --release` in the checkout, or set LIBRATE_PATH."
    )


lib = load()
