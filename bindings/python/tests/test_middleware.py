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
from helpers import (
    MS,
    SECOND,
    SECOND_AND_MINUTE,
    SECOND_AND_MINUTE_ADVERTISED,
    SECOND_AND_MINUTE_NAMES,
    SECOND_AND_MINUTE_STEPS,
    Step,
    VirtualClock,
    get,
    hello_asgi,
    hello_wsgi,
    replay,
)
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
    with pytest.raises(ValueError, match="max_n"):
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
        d["allowed"], config.max_n, d["remaining"], d["retry_after_ns"], d["reset_after_ns"]
    )
    name = sf_string(case["name"])
    assert policy_header(name, config) == case["policy"]
    assert ratelimit_header(name, decision) == case["ratelimit"]
    assert (None if decision.allowed else retry_after(decision)) == case["retry_after"]


def test_policy_over_http(serve: Serve) -> None:
    # 2 a second and 3 a minute, for all requests.
    clock = VirtualClock(now=0)
    calls: list[str] = []
    policy = librate.Policy(SECOND_AND_MINUTE)
    port = serve(policy, calls, clock=clock, rule_names=SECOND_AND_MINUTE_NAMES)
    replay(port, clock, SECOND_AND_MINUTE_ADVERTISED, SECOND_AND_MINUTE_STEPS)
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
    with pytest.raises(ValueError, match="max_n 2"):
        WSGIRateLimit(app, policy, cost=3)


#: Posts (3 per 3 s: GCRA, T = 1 s, burst 3), likes (5 a second), friend adds (1 a day)
#: and everything (4 a minute, a fixed window).
SOCIAL = [
    librate.Config.gcra(3, 3),
    librate.Config.gcra(5, 1),
    librate.Config.fixed_window(1, 86400),
    librate.Config.fixed_window(4, 60),
]
SOCIAL_NAMES = ["post", "like", "friend", "all"]
#: A post costs the post rule and the everything rule.
POST = [1, 0, 0, 1]


@pytest.mark.parametrize("keyed", [False, True], ids=["policy", "keyed_policy"])
def test_costs_per_rule_over_http(serve: Serve, keyed: bool) -> None:
    # Every request a post, for all clients (a Policy) or per client (a KeyedPolicy).
    policy: librate.Policy | librate.KeyedPolicy
    if keyed:
        policy = librate.KeyedPolicy([librate.KeyedRule.per_key(rule) for rule in SOCIAL], capacity=8)
    else:
        policy = librate.Policy(SOCIAL)

    def query(now_ns: int) -> list[int]:
        """Each rule's remaining units, asked with a cost of 0."""
        if isinstance(policy, librate.KeyedPolicy):
            return [rule.remaining for rule in policy.acquire("127.0.0.1", 0, now_ns=now_ns).rules]
        return [rule.remaining for rule in policy.acquire(0, now_ns=now_ns).rules]

    clock = VirtualClock(now=0)
    calls: list[str] = []
    port = serve(policy, calls, clock=clock, cost=POST, rule_names=SOCIAL_NAMES)
    advertised = '"post";q=3;w=3, "like";q=5;w=1, "friend";q=1;w=86400, "all";q=4;w=60'
    steps: list[Step] = [
        # (time, status, RateLimit, Retry-After)
        # The post rule has 2 left (full again in 1 s), everything 3: the post rule binds.
        # The friend rule has 1 left, fewer, but a post costs it nothing.
        (0, 200, '"post";r=2;t=1', None),
        (0, 200, '"post";r=1;t=2', None),
        (0, 200, '"post";r=0;t=3', None),
        # Denied by the post rule for 1 s; everything gave its unit back (1 left).
        (0, 429, '"post";r=0;t=1', "1"),
        # At 2 s the post rule has 2, takes 1 (TAT 4 s); everything has 0 until 1:00.
        (2 * SECOND, 200, '"all";r=0;t=58', None),
        # Denied by everything for 57 s; the post rule gave its unit back.
        (3 * SECOND, 429, '"all";r=0;t=57', "57"),
    ]
    replay(port, clock, advertised, steps)
    assert calls == ["/0", "/1", "/2", "/4"]
    # The like and friend rules untouched, full; the post rule 2 of 3 at 3 s (TAT 4 s).
    assert query(3 * SECOND) == [2, 5, 1, 0]


def test_cost_per_rule_arguments() -> None:
    policy = librate.Policy(SOCIAL)
    keyed = librate.KeyedPolicy([librate.KeyedRule.global_(rule) for rule in SOCIAL], capacity=1)
    app = hello_wsgi([])
    for limiter in (policy, keyed):
        with pytest.raises(ValueError, match="cost has 2 costs for 4 rules"):
            WSGIRateLimit(app, limiter, cost=[1, 0])
        with pytest.raises(ValueError, match="cost\\[1\\] 6 exceeds rule 1's max_n 5"):
            WSGIRateLimit(app, limiter, cost=[1, 6, 0, 1])
        with pytest.raises(ValueError, match="cost is all zero"):
            ASGIRateLimit(hello_asgi([]), limiter, cost=(0, 0, 0, 0))
        with pytest.raises(ValueError, match="cost\\[3\\] -1: must be at least 0"):
            WSGIRateLimit(app, limiter, cost=[1, 0, 0, -1])
        with pytest.raises(TypeError, match="cost\\[0\\] must be an int, not str"):
            WSGIRateLimit(app, limiter, cost=["1", 0, 0, 1])
    with pytest.raises(TypeError, match="cost must be an int, not str"):
        WSGIRateLimit(app, policy, cost="1001")  # type: ignore[arg-type]
    for one in (librate.Limiter(limit=1, period=1), librate.KeyedLimiter(limit=1, period=1, capacity=1)):
        with pytest.raises(TypeError, match="needs a Policy or KeyedPolicy; a .*Limiter has one rule"):
            WSGIRateLimit(app, one, cost=[1])
    # Nothing was taken by the constructors.
    assert [rule.remaining for rule in policy.acquire(0, now_ns=0).rules] == [3, 5, 1, 4]


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
            d["allowed"], rule.max_n, d["remaining"], d["retry_after_ns"], d["reset_after_ns"]
        )
        for rule, d in zip(rules, case["decisions"], strict=True)
    )
    # The rules the request costs: every rule, unless costs say otherwise.
    costs = case.get("costs") or [1] * len(rules)
    counted = [index for index, cost in enumerate(costs) if cost]
    combined = librate.Decision(
        case["denied_by"] is None,
        min(rules[i].max_n for i in counted),
        min(each[i].remaining for i in counted),
        max(each[i].retry_after_ns for i in counted),
        max(each[i].reset_after_ns for i in counted),
    )
    decision = librate.PolicyDecision(combined, case["denied_by"], each)
    names = [sf_string(name) for name in case["names"] or [f"rule{i}" for i in range(len(rules))]]
    assert policies_header(names, rules) == case["policy"]
    rule = binding_rule(decision, counted)
    assert ratelimit_header(names[rule], each[rule]) == case["ratelimit"]
    assert (None if combined.allowed else retry_after(combined)) == case["retry_after"]


def test_client_ip_as_the_tower_layer_keys_it() -> None:
    # The cases of src/tower/key.rs: every middleware keys a client as Rust's PeerIp.
    from librate.middleware._client import client_ip

    assert client_ip("192.0.2.1", [], 0) == "192.0.2.1"
    assert client_ip("::ffff:192.0.2.1", [], 0) == "192.0.2.1"
    assert client_ip("2001:DB8:0::1", [], 0) == "2001:db8::1"
    assert client_ip("192.0.2.1", ["203.0.113.9"], 0) == "192.0.2.1"  # no proxy trusted
    assert client_ip(None, [], 0) == ""
    assert client_ip(None, ["not an address"], 1) == ""
    # The client forged the first entry; proxy 1 appended 198.51.100.7, proxy 2
    # 10.0.0.1, and proxy 2's address is the peer.
    lines = ["203.0.113.9, 198.51.100.7", "10.0.0.1"]
    peer = "10.0.0.2"
    assert [client_ip(peer, lines, hops) for hops in (1, 2, 3, 4)] == [
        "10.0.0.1",
        "198.51.100.7",
        "203.0.113.9",  # trusting more proxies than run takes the client's own claim
        "10.0.0.2",  # too few entries: the peer
    ]
    # A malformed entry is the peer; only the entries up to the client's are read.
    for malformed in ("unknown", "1.2.3.4.5", "\xff\xfe", "fe80::1%eth0", "[192.0.2.1]:80"):
        assert client_ip(peer, [malformed], 1) == "10.0.0.2"
    assert client_ip(peer, ["\xff\xfe", "192.0.2.1"], 1) == "192.0.2.1"
    assert client_ip(peer, ["\xff, 192.0.2.1"], 1) == "192.0.2.1"
    # Empty members are no entries; ports and brackets are allowed.
    assert client_ip(peer, ["192.0.2.1:80, ,"], 1) == "192.0.2.1"
    assert client_ip(peer, [" [2001:db8::1]:80"], 1) == "2001:db8::1"
    assert client_ip(peer, ["192.0.2.1:65536"], 1) == "10.0.0.2"


def test_trusted_proxies_through_wsgi_and_asgi(serve: Serve) -> None:
    # 1 an hour per client behind one proxy, over HTTP: the client the proxy names.
    per_ip = librate.KeyedLimiter(limit=1, period=3600, capacity=8)
    port = serve(per_ip, [], trusted_proxies=1)
    assert get(port, headers={"X-Forwarded-For": "203.0.113.9, 198.51.100.7"}).status == 200
    assert get(port, headers={"X-Forwarded-For": "198.51.100.7"}).status == 429
    assert get(port, headers={"X-Forwarded-For": "198.51.100.8"}).status == 200
    assert get(port).status == 200  # no header: the peer, 127.0.0.1
    assert get(port, headers={"X-Forwarded-For": "unknown"}).status == 429


@pytest.mark.parametrize("kind", ["wsgi", "asgi"])
def test_an_inner_limit_s_headers_are_kept(kind: str, request: pytest.FixtureRequest) -> None:
    # An app limited twice: the response reports the inner, narrower limit, once.
    inner = librate.Limiter(limit=2, period=60)
    outer = librate.Limiter(limit=1000, period=1)
    if kind == "wsgi":
        app: Any = WSGIRateLimit(WSGIRateLimit(hello_wsgi([]), inner, policy="inner"), outer)
        port = request.getfixturevalue("wsgi_server")(app)
    else:
        app = ASGIRateLimit(ASGIRateLimit(hello_asgi([]), inner, policy="inner"), outer)
        port = request.getfixturevalue("asgi_server")(app)
    answer = get(port)
    assert answer.headers.get_all("RateLimit-Policy") == ['"inner";q=2;w=60']
    assert answer.headers.get_all("RateLimit") == ['"inner";r=1;t=30']
