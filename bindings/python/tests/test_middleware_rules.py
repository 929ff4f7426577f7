"""The middleware names the rule that denied (log record, optional field) and runs a
limiter, a leased one too, in shadow: WSGI (wsgiref) and ASGI (uvicorn) over HTTP on
127.0.0.1, on a virtual clock."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import librate
from conftest import Serve
from helpers import SECOND, VirtualClock, get, hello_wsgi
from librate.lease import LeasedLimiter
from librate.middleware import WSGIRateLimit

LOGGER = "librate.middleware"


#: The record of a would-be denial by the one rule of a limiter in shadow.
WOULD_DENY = (
    logging.INFO,
    'librate: rule 0 "default" would deny the request (shadow)',
    0,
    "default",
    True,
)


def two_a_minute() -> librate.Limiter:
    return librate.Limiter(algorithm="fixed_window", limit=2, period=60)


def denials(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str, int, str, bool]]:
    """The middleware's denial records: level, message, and the attributes a handler
    reads (rule, rule_name, shadow)."""
    return [
        (r.levelno, r.getMessage(), r.rule, r.rule_name, r.shadow)  # type: ignore[attr-defined]
        for r in caplog.records
        if r.name == LOGGER
    ]


def test_the_third_request_names_its_rule(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    calls: list[str] = []
    port = serve(two_a_minute(), calls, clock=VirtualClock(now=0), rule_header="RateLimit-Rule")
    first, second = get(port, "/0"), get(port, "/1")
    assert (first.status, second.status) == (200, 200)
    assert first.headers["RateLimit-Rule"] is None  # admitted: no rule to name
    assert denials(caplog) == []

    third = get(port, "/2")
    assert third.status == 429
    assert third.headers["RateLimit-Rule"] == '"default"'
    assert third.headers["RateLimit"] == '"default";r=0;t=60'
    assert third.headers["Retry-After"] == "60"
    assert denials(caplog) == [
        (logging.INFO, 'librate: rule 0 "default" denied the request', 0, "default", False)
    ]
    assert calls == ["/0", "/1"]


def test_no_rule_header_unless_asked(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    port = serve(two_a_minute(), [], clock=VirtualClock(now=0), policy="api")
    get(port), get(port)
    third = get(port)
    assert third.status == 429
    assert third.headers["RateLimit-Rule"] is None
    # Logged all the same, with the name the fields give the rule.
    assert denials(caplog) == [
        (logging.INFO, 'librate: rule 0 "api" denied the request', 0, "api", False)
    ]


def test_shadow_serves_logs_and_names(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    calls: list[str] = []
    clock = VirtualClock(now=0)
    limiter = two_a_minute()
    port = serve(limiter, calls, clock=clock, shadow=True, rule_header="X-Would-Deny")
    first = get(port, "/0")
    # A limit in shadow is not in force: no field tells the client of it.
    assert first.status == 200
    assert (first.headers["RateLimit"], first.headers["RateLimit-Policy"]) == (None, None)
    get(port, "/1")

    third = get(port, "/2")
    assert third.status == 200
    assert third.headers["X-Would-Deny"] == '"default"'
    assert (third.headers["RateLimit"], third.headers["Retry-After"]) == (None, None)
    assert denials(caplog) == [WOULD_DENY]
    assert calls == ["/0", "/1", "/2"]
    # The shadow limiter decided every request: the third took nothing, so the window
    # holds 0 more at 0 s and 2 at 60 s.
    assert not limiter.acquire(now_ns=0).allowed
    assert limiter.acquire(2, now_ns=60 * SECOND).allowed


class Unanswered:
    """A stand-in for a redis-py client that grants nothing: the holder renews only when
    asked and is never asked; the hand-back on closing, whose reply is not read, is the
    one call its script takes."""

    def register_script(self, source: bytes) -> Any:
        return lambda keys, args: None


def unanswered_lease() -> LeasedLimiter:
    """A leased limiter of 1,000 a second, leased 2 s at a time (renewed every 500 ms),
    with no answer yet and no fallback: it denies every request (docs/leases.md), its
    ``retry_after`` the renewal interval."""
    rule = librate.LeaseRule(librate.Config.gcra(1000, 1), lease=2)
    return LeasedLimiter(Unanswered(), "lease:{api}", rule, background=False)


@pytest.mark.parametrize("shadow", [False, True])
def test_a_leased_limiter_denies_or_in_shadow_serves(
    serve: Serve, caplog: pytest.LogCaptureFixture, shadow: bool
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    calls: list[str] = []
    with unanswered_lease() as limiter:
        options = {"clock": VirtualClock(now=0), "shadow": shadow, "rule_header": "X-Rule"}
        answer = get(serve(limiter, calls, **options), "/0")
    assert answer.headers["X-Rule"] == '"default"'
    if shadow:
        # Served, without the fields of a limit not in force.
        assert (answer.status, answer.headers["Retry-After"]) == (200, None)
        assert answer.headers["RateLimit"] is None
        assert (denials(caplog), calls) == ([WOULD_DENY], ["/0"])
        return
    # Retry-After: the 500 ms renewal interval, in whole seconds rounded up.
    assert (answer.status, answer.headers["Retry-After"]) == (429, "1")
    denied = (logging.INFO, 'librate: rule 0 "default" denied the request', 0, "default", False)
    assert (denials(caplog), calls) == ([denied], [])


def test_a_leased_limiter_takes_no_key() -> None:
    with unanswered_lease() as limiter, pytest.raises(TypeError, match="a LeasedLimiter has"):
        WSGIRateLimit(hello_wsgi([]), limiter, key=lambda _: "x")


def test_shadow_serves_a_request_the_limiter_cannot_decide(serve: Serve) -> None:
    table = librate.KeyedLimiter(algorithm="fixed_window", limit=2, period=60, capacity=1)
    port = serve(table, [], clock=VirtualClock(now=0), shadow=True, key=lambda _: "x")
    assert table.acquire("other", now_ns=0).allowed  # the one slot is taken
    assert get(port).status == 200  # a full table: 503 when enforced


def test_a_policy_names_the_first_rule_that_denied(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    # 2 a second and 2 a minute: the third request at 0 is denied by both.
    policy = librate.Policy([librate.Config.gcra(2, 1), librate.Config.fixed_window(2, 60)])
    port = serve(
        policy,
        [],
        clock=VirtualClock(now=0),
        rule_names=["second", "minute"],
        rule_header="RateLimit-Rule",
    )
    get(port), get(port)
    third = get(port)
    assert third.status == 429
    # The field and the log name the first rule that denied, the one the policy's counts
    # charge; RateLimit reports the longest wait, the minute's 60 s.
    assert third.headers["RateLimit-Rule"] == '"second"'
    assert third.headers["RateLimit"] == '"minute";r=0;t=60'
    assert [record[1:4] for record in denials(caplog)] == [
        ('librate: rule 0 "second" denied the request', 0, "second")
    ]


def test_the_log_level_is_the_user_s(serve: Serve, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    port = serve(two_a_minute(), [], clock=VirtualClock(now=0), log_level=logging.WARNING)
    get(port), get(port), get(port)
    assert [record[0] for record in denials(caplog)] == [logging.WARNING]


def test_rule_header_must_be_a_field_name() -> None:
    app = hello_wsgi([])
    with pytest.raises(ValueError, match="'Rate Limit' is no field name"):
        WSGIRateLimit(app, two_a_minute(), rule_header="Rate Limit")
    with pytest.raises(ValueError, match="'' is no field name"):
        WSGIRateLimit(app, two_a_minute(), rule_header="")
    with pytest.raises(TypeError, match="rule_header must be a str, not bytes"):
        WSGIRateLimit(app, two_a_minute(), rule_header=b"X")  # type: ignore[arg-type]


def test_a_policy_s_shadow_rule_is_logged_named_and_never_binds(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    # 10 a second in force; 2 a minute in shadow (docs/policies.md#shadow-rules). Every
    # request passes; RateLimit reports the enforced rule alone (10 a second, T = 100 ms:
    # k requests at 0 leave 10 - k, full again in k × 100 ms, 1 s rounded up), though
    # the shadow rule has less left; the third, which the shadow rule would deny, is
    # logged and named.
    caplog.set_level(logging.INFO, logger=LOGGER)
    rules = [librate.Config.gcra(10, 1), librate.Config.fixed_window(2, 60)]
    policy = librate.Policy(rules, shadow=[1])
    port = serve(
        policy,
        [],
        clock=VirtualClock(now=0),
        rule_names=["second", "minute"],
        rule_header="RateLimit-Rule",
    )
    answers = [get(port) for _ in range(3)]
    assert [a.status for a in answers] == [200, 200, 200]
    assert [a.headers["RateLimit"] for a in answers] == [
        '"second";r=9;t=1',
        '"second";r=8;t=1',
        '"second";r=7;t=1',
    ]
    assert [a.headers["RateLimit-Rule"] for a in answers] == [None, None, '"minute"']
    assert denials(caplog) == [
        (
            logging.INFO,
            'librate: rule 1 "minute" would deny the request (shadow rule)',
            1,
            "minute",
            True,
        )
    ]


def test_a_policy_of_shadow_rules_alone_reports_none() -> None:
    # Nothing is enforced: every request passes, without RateLimit (no rule binds).
    policy = librate.Policy([librate.Config.fixed_window(1, 60)], shadow=[0])
    gate = WSGIRateLimit(hello_wsgi([]), policy, rule_header="RateLimit-Rule")._gate
    first, second = gate.check({}), gate.check({})
    assert first is not None and second is not None
    assert (first.status, first.headers) == (None, [])
    assert (second.status, second.headers) == (None, [("RateLimit-Rule", '"rule0"')])
