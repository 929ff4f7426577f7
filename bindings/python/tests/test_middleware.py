"""WSGI (wsgiref) and ASGI (uvicorn) middleware with one Limiter, or one Policy, for all
requests, through real HTTP requests on 127.0.0.1, on a virtual clock."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import librate
from conftest import Serve
from helpers import MS, SECOND, VirtualClock, get, hello_asgi, hello_wsgi
from librate.middleware import ASGIRateLimit, WSGIRateLimit
from librate.middleware._headers import (
    binding_rule,
    policies_header,
    policy_header,
    ratelimit_header,
    retry_after,
    sf_string,
)

TESTDATA = Path(__file__).resolve().parents[2] / "testdata"
VECTORS = TESTDATA / "ratelimit_headers.json"
POLICY_VECTORS = TESTDATA / "policy_headers.json"


def test_seed_scenario_over_http(serve: Serve) -> None:
    # L=1 per 2 s: admitted at 0, denied at 999 ms (Retry-After: ceil(1.001 s) = 2),
    # admitted at 2001 ms.
    clock = VirtualClock(now=0)
    calls: list[str] = []
    port = serve(librate.Limiter(limit=1, period=2), calls, clock=clock)

    first = get(port, "/a")
    assert (first.status, first.body, first.headers["X-App"]) == (200, b"hello", "yes")
    assert first.headers["RateLimit-Policy"] == '"default";q=1;w=2'
    assert first.headers["RateLimit"] == '"default";r=0;t=2'  # full again in 2 s
    assert "Retry-After" not in first.headers

    clock.now = 999 * MS
    denied = get(port, "/b")
    assert denied.status == 429
    assert denied.body == b"429 Too Many Requests\n"
    assert denied.headers["Retry-After"] == "2"
    assert denied.headers["RateLimit"] == '"default";r=0;t=2'
    assert denied.headers["RateLimit-Policy"] == '"default";q=1;w=2'
    assert denied.headers["Content-Type"] == "text/plain; charset=utf-8"

    clock.now = 2001 * MS
    assert get(port, "/c").status == 200
    assert calls == ["/a", "/c"]  # the denied request never reached the app


def test_retry_after_rounds_up(serve: Serve) -> None:
    clock = VirtualClock(now=0)
    port = serve(librate.Limiter(limit=1, period=10), [], clock=clock)
    assert get(port).status == 200
    clock.now = 8 * SECOND + 1
    denied = get(port)
    # 2 s - 1 ns to go: still "2", never a Retry-After that is too early.
    assert (denied.status, denied.headers["Retry-After"]) == (429, "2")
    clock.now = 8 * SECOND
    assert get(port).headers["Retry-After"] == "2"


def test_cost_burst_and_policy_name(serve: Serve) -> None:
    clock = VirtualClock(now=0)
    limiter = librate.Limiter(limit=2, period=1, burst=6)
    port = serve(limiter, [], clock=clock, cost=3, policy="api")
    first = get(port)
    assert first.headers["RateLimit-Policy"] == '"api";q=2;w=1'  # the burst is not advertised
    assert first.headers["RateLimit"] == '"api";r=3;t=2'  # 3 of 6 left; T = 0.5 s
    assert get(port).headers["RateLimit"] == '"api";r=0;t=3'
    denied = get(port)
    assert (denied.status, denied.headers["Retry-After"]) == (429, "2")  # 3 units = 1.5 s


def test_real_clock(serve: Serve) -> None:
    port = serve(librate.Limiter(limit=1, period=3600), [])
    assert get(port).status == 200
    denied = get(port)
    assert denied.status == 429
    assert 1 <= int(denied.headers["Retry-After"]) <= 3600


def test_policy_header_forms() -> None:
    sub_second = librate.Limiter(limit=5, period=0.5).config
    assert policy_header('"p"', sub_second) == '"p";q=10;w=1'  # 5 per 0.5 s is 10 per 1 s
    # sf-integers have at most 15 digits: larger values are clamped.
    huge = librate.Config("gcra", 2**60, 3 * SECOND)
    assert policy_header('"p"', huge) == '"p";q=999999999999999;w=3'
    assert sf_string('a "quoted" \\ name') == '"a \\"quoted\\" \\\\ name"'
    with pytest.raises(ValueError):
        sf_string("caf\u00e9")
    never = librate.Decision(False, 1, 0, 2**64 - 1, 2**64 - 1)
    # "never" is advertised as 2**63-1 ns (Go's longest duration), rounded up.
    assert ratelimit_header('"p"', never) == '"p";r=0;t=9223372037'
    plenty = librate.Decision(True, 2**64 - 1, 2**64 - 1, 0, 0)
    assert ratelimit_header('"p"', plenty) == '"p";r=999999999999999;t=0'


def test_middleware_arguments() -> None:
    limiter = librate.Limiter(limit=2, period=1)
    app = hello_wsgi([])
    with pytest.raises(TypeError, match="KeyedLimiter"):
        WSGIRateLimit(app, limiter, key=lambda environ: "x")
    with pytest.raises(ValueError, match="capacity"):
        WSGIRateLimit(app, limiter, cost=3)
    with pytest.raises(ValueError, match="printable ASCII"):
        ASGIRateLimit(hello_asgi([]), limiter, policy="\n")
    with pytest.raises(TypeError):
        WSGIRateLimit(app, object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        WSGIRateLimit(app, limiter, cost=1.0)  # type: ignore[arg-type]


def test_asgi_passes_other_scopes_through(asgi_server: Callable[[object], int]) -> None:
    seen: list[str] = []

    async def app(scope: dict, receive: Callable, send: Callable) -> None:  # type: ignore[type-arg]
        seen.append(scope["type"])

    middleware = ASGIRateLimit(app, librate.Limiter(limit=1, period=3600))
    for kind in ("lifespan", "websocket", "websocket"):
        asyncio.run(middleware({"type": kind}, None, None))  # type: ignore[arg-type]
    assert seen == ["lifespan", "websocket", "websocket"]


@pytest.mark.parametrize(
    "case", json.loads(VECTORS.read_text())["cases"], ids=lambda case: str(case["what"])
)
def test_header_vectors_shared_with_go(case: dict[str, Any]) -> None:
    # The Go middleware is held to the same table (middleware_test.go).
    config = librate.Config("gcra", case["limit"], case["period_ns"], case["burst"] or None)
    d = case["decision"]
    decision = librate.Decision(
        d["allowed"], config.capacity, d["remaining"], d["retry_after_ns"], d["reset_after_ns"]
    )
    name = sf_string(case["name"])
    assert policy_header(name, config) == case["policy"]
    assert ratelimit_header(name, decision) == case["ratelimit"]
    assert (None if decision.allowed else retry_after(decision)) == case["retry_after"]


def test_policy_over_http(serve: Serve) -> None:
    # 2 a second (GCRA, T = 500 ms) and 3 a minute (a fixed window), for all requests.
    clock = VirtualClock(now=0)
    calls: list[str] = []
    policy = librate.Policy([librate.Config.gcra(2, 1), librate.Config.fixed_window(3, 60)])
    port = serve(policy, calls, clock=clock, rule_names=["second", "minute"])
    advertised = '"second";q=2;w=1, "minute";q=3;w=60'
    steps = [
        # (time, status, RateLimit, Retry-After)
        # The per-second rule has the least left: 1 (full again in 0.5 s), then 0 (1 s).
        (0, 200, '"second";r=1;t=1', None),
        (0, 200, '"second";r=0;t=1', None),
        # Denied by the per-second rule for 0.5 s; the minute rule gave its unit back.
        (0, 429, '"second";r=0;t=1', "1"),
        # At 1 s the minute rule has 0 left, until 1:00; the per-second rule 1.
        (SECOND, 200, '"minute";r=0;t=59', None),
        # Denied by the minute rule for 58 s.
        (2 * SECOND, 429, '"minute";r=0;t=58', "58"),
    ]
    for index, (now, status, ratelimit, retry) in enumerate(steps):
        clock.now = now
        answer = get(port, f"/{index}")
        assert answer.status == status, index
        assert answer.headers["RateLimit-Policy"] == advertised
        assert answer.headers["RateLimit"] == ratelimit, index
        assert answer.headers["Retry-After"] == retry, index
    assert calls == ["/0", "/1", "/3"]


def test_policy_rule_names_default_and_cost(serve: Serve) -> None:
    clock = VirtualClock(now=0)
    policy = librate.Policy([librate.Config.sliding_log(10, 1), librate.Config.gcra(4, 60)])
    port = serve(policy, [], clock=clock, cost=2)
    first = get(port)
    assert first.headers["RateLimit-Policy"] == '"rule0";q=10;w=1, "rule1";q=4;w=60'
    # 2 of the 4 a minute (T = 15 s) left, full again in 30 s.
    assert first.headers["RateLimit"] == '"rule1";r=2;t=30'


def test_policy_middleware_arguments() -> None:
    policy = librate.Policy([librate.Config.gcra(2, 1), librate.Config.gcra(5, 60)])
    app = hello_wsgi([])
    with pytest.raises(TypeError, match="key= needs a KeyedLimiter or KeyedPolicy; a Policy"):
        WSGIRateLimit(app, policy, key=lambda environ: "x")
    with pytest.raises(TypeError, match="rule_names="):
        WSGIRateLimit(app, policy, policy="api")
    with pytest.raises(TypeError, match="policy="):
        WSGIRateLimit(app, librate.Limiter(limit=1, period=1), rule_names=["a"])
    with pytest.raises(ValueError, match="1 names for 2 rules"):
        WSGIRateLimit(app, policy, rule_names=["a"])
    with pytest.raises(TypeError, match="not a str"):
        WSGIRateLimit(app, policy, rule_names="ab")
    with pytest.raises(TypeError, match="must be str, not int"):
        WSGIRateLimit(app, policy, rule_names=["a", 2])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="printable ASCII"):
        ASGIRateLimit(hello_asgi([]), policy, rule_names=["a", "caf\u00e9"])
    with pytest.raises(ValueError, match="capacity 2"):
        WSGIRateLimit(app, policy, cost=3)


@pytest.mark.parametrize(
    "case", json.loads(POLICY_VECTORS.read_text())["cases"], ids=lambda case: str(case["what"])
)
def test_policy_header_vectors_shared_with_go(case: dict[str, Any]) -> None:
    # The Go middleware is held to the same table (middleware_test.go).
    rules = [
        librate.Config("gcra", rule["limit"], rule["period_ns"], rule["burst"] or None)
        for rule in case["rules"]
    ]
    each = tuple(
        librate.Decision(
            d["allowed"], rule.capacity, d["remaining"], d["retry_after_ns"], d["reset_after_ns"]
        )
        for rule, d in zip(rules, case["decisions"], strict=True)
    )
    combined = librate.Decision(
        case["denied_by"] is None,
        min(rule.capacity for rule in rules),
        min(d.remaining for d in each),
        max(d.retry_after_ns for d in each),
        max(d.reset_after_ns for d in each),
    )
    decision = librate.PolicyDecision(combined, case["denied_by"], each)
    names = [sf_string(name) for name in case["names"] or [f"rule{i}" for i in range(len(rules))]]
    assert policies_header(names, rules) == case["policy"]
    rule = binding_rule(decision)
    assert ratelimit_header(names[rule], each[rule]) == case["ratelimit"]
    assert (None if combined.allowed else retry_after(combined)) == case["retry_after"]
