"""Response headers for rate-limited HTTP APIs.

``Retry-After`` (RFC 9110 §10.2.3): delay-seconds, rounded UP so a client that waits that
long is admitted.

``RateLimit-Policy`` and ``RateLimit`` in the format of draft-ietf-httpapi-ratelimit-headers-10
(Structured Field Lists, RFC 8941), which the later editor's drafts keep unchanged:

    RateLimit-Policy: "default";q=100;w=60
    RateLimit: "default";r=42;t=7

- ``q`` is the limit per period; ``w`` the period in seconds, sent only when the period is
  a whole number of seconds (the draft has no sub-second windows); a GCRA burst other than
  the limit is sent as the vendor parameter ``librate-burst``.
- ``r`` is the decision's ``remaining``.
- ``t`` is, on a denial, ``Retry-After`` (so the two never disagree); when admitted, the
  seconds until the quota is whole again (``reset_after``), rounded up.
"""

from __future__ import annotations

from .._convert import NS_PER_SECOND
from .._decision import Decision
from .._limiter import Config

# RFC 8941 §3.3.1: an sf-integer has at most 15 digits.
_SF_INTEGER_MAX = 999_999_999_999_999


def seconds_up(ns: int) -> int:
    """Whole seconds, rounded up."""
    return -(-ns // NS_PER_SECOND)


def sf_string(text: str) -> str:
    """``text`` as an RFC 8941 sf-string, or ``ValueError`` if it has characters outside
    printable ASCII (which an sf-string cannot hold)."""
    if not all(" " <= c <= "~" for c in text):
        raise ValueError(f"policy name must be printable ASCII, got {text!r}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _sf_integer(value: int) -> int:
    return min(value, _SF_INTEGER_MAX)


def policy_header(name: str, config: Config) -> str:
    """The ``RateLimit-Policy`` value for a limiter's configuration. ``name`` is an
    sf-string already (see ``sf_string``)."""
    item = f"{name};q={_sf_integer(config.limit)}"
    if config.period_ns % NS_PER_SECOND == 0:
        item += f";w={_sf_integer(config.period_ns // NS_PER_SECOND)}"
    if config.burst is not None and config.burst != config.limit:
        item += f";librate-burst={_sf_integer(config.burst)}"
    return item


def retry_after(decision: Decision) -> str:
    """The ``Retry-After`` value for a denial."""
    return str(seconds_up(decision.retry_after_ns))


def ratelimit_header(name: str, decision: Decision) -> str:
    """The ``RateLimit`` value for one decision."""
    window_ns = decision.reset_after_ns if decision.allowed else decision.retry_after_ns
    return f"{name};r={_sf_integer(decision.remaining)};t={_sf_integer(seconds_up(window_ns))}"
