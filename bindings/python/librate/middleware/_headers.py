"""Response headers for rate-limited HTTP APIs, written exactly as the Go middleware
writes them (the tests hold both to one table of vectors,
``bindings/testdata/ratelimit_headers.json``).

``Retry-After`` (RFC 9110 §10.2.3): delay-seconds, rounded UP so a client that waits that
long is admitted.

``RateLimit-Policy`` and ``RateLimit`` in the format of
draft-ietf-httpapi-ratelimit-headers-11 (Structured Field Lists, RFC 9651):

    RateLimit-Policy: "default";q=100;w=60
    RateLimit: "default";r=42;t=7

A ``Policy`` of several rules lists every rule in ``RateLimit-Policy``, one list member a
rule (RFC 9651 §4.1.1 joins members with ", "), and reports in ``RateLimit`` the rule that
binds (``binding_rule``; of the rules the request costs, when it costs rules
differently), as the draft's example of several windows (Appendix B.3.1) does:

    RateLimit-Policy: "hour";q=1000;w=3600, "day";q=5000;w=86400
    RateLimit: "day";r=100;t=36000

- ``w`` is the period rounded up to whole seconds (at least 1), and ``q`` the limit scaled
  to that window and rounded down, so the advertised rate never exceeds the real one:
  10 per 100 ms is ``q=100;w=1``, 3 per 1.5 s is ``q=4;w=2``. A GCRA burst is not
  advertised (the draft has no parameter for it); ``r`` shows what it allows now.
- ``r`` is the decision's ``remaining`` (a policy's: the binding rule's own).
- ``t`` is, on a denial, ``Retry-After`` (so the two never disagree); when admitted, the
  seconds until the quota is whole again (``reset_after``), rounded up.
- Integers are clamped to RFC 9651's largest (15 digits), and a duration to 2**63-1 ns
  (Go's longest ``time.Duration``, about 292 years: "never"), as in Go.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._convert import NS_PER_SECOND
from .._decision import Decision, PolicyDecision
from .._limiter import Config

# RFC 9651 §3.3.1: an sf-integer has at most 15 digits.
_SF_INTEGER_MAX = 999_999_999_999_999
# The longest duration Go's middleware can report (its time.Duration saturates there).
_DURATION_MAX_NS = 2**63 - 1


def seconds_up(ns: int) -> int:
    """Whole seconds, rounded up."""
    return -(-ns // NS_PER_SECOND)


def sf_string(text: str) -> str:
    """``text`` as an RFC 9651 sf-string, or ``ValueError`` if it has characters outside
    printable ASCII (which an sf-string cannot hold)."""
    if not all(" " <= c <= "~" for c in text):
        raise ValueError(f"policy name must be printable ASCII, got {text!r}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


#: RFC 9110 §5.6.2: a field name is a token, one or more of these.
_TCHARS = frozenset("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def field_name(name: str) -> str:
    """``name`` checked as a field name (an RFC 9110 token), or ``ValueError``."""
    if not isinstance(name, str):
        raise TypeError(f"rule_header must be a str, not {type(name).__name__}")
    if not name or not set(name) <= _TCHARS:
        raise ValueError(f"rule_header {name!r} is no field name (RFC 9110 token)")
    return name


def _sf_integer(value: int) -> int:
    return min(value, _SF_INTEGER_MAX)


def _seconds(ns: int) -> int:
    """A duration as delay-seconds: rounded up, clamped as Go clamps it."""
    return _sf_integer(seconds_up(min(ns, _DURATION_MAX_NS)))


def policy_header(name: str, config: Config) -> str:
    """The ``RateLimit-Policy`` value for a limiter's configuration. ``name`` is an
    sf-string already (see ``sf_string``)."""
    window = max(_seconds(config.period_ns), 1)
    quota = config.limit * window * NS_PER_SECOND // config.period_ns
    return f"{name};q={_sf_integer(quota)};w={window}"


def policies_header(names: Sequence[str], rules: Sequence[Config]) -> str:
    """The ``RateLimit-Policy`` value listing every rule, ``names[i]`` (an sf-string
    already) naming ``rules[i]``: RFC 9651 §4.1.1 joins list members with ", "."""
    return ", ".join(map(policy_header, names, rules))


def retry_after(decision: Decision) -> str:
    """The ``Retry-After`` value for a denial."""
    return str(_seconds(decision.retry_after_ns))


def ratelimit_header(name: str, decision: Decision) -> str:
    """The ``RateLimit`` value for one decision."""
    window_ns = decision.reset_after_ns if decision.allowed else decision.retry_after_ns
    return f"{name};r={_sf_integer(decision.remaining)};t={_seconds(window_ns)}"


def binding_rule(decision: PolicyDecision, counted: Sequence[int] | None = None) -> int:
    """The index of the rule a policy's ``RateLimit`` reports, of the rules ``counted``
    (the indices of the rules the request costs; None: every rule). On a denial, of the
    rules that denied, the one with the longest ``retry_after``: the policy's own, so
    ``t`` equals ``Retry-After``, as the draft's §6 wants. When admitted, the rule closest
    to its limit: the least ``remaining``, and of those the longest ``reset_after`` (the
    rule whose quota comes back last). Ties go to the first rule."""
    rules = decision.rules
    among = range(len(rules)) if counted is None else counted
    if decision.decision.allowed:
        return max(among, key=lambda i: (-rules[i].remaining, rules[i].reset_after_ns))
    return max(among, key=lambda i: (not rules[i].allowed, rules[i].retry_after_ns))
