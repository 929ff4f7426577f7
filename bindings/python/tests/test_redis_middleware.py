"""The WSGI middleware over a ``RedisLimiter``, ``RedisPolicy`` or ``KeyedLeasedLimiter``
and the ASGI one over an ``AsyncRedisLimiter``, ``AsyncRedisPolicy`` or
``AsyncKeyedLeasedLimiter``, through real HTTP requests on 127.0.0.1
against a real ``redis-server``: the same answers as in process, and, with the server
stopped, requests served or refused as ``fail_open`` says, logged either way."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Any

import pytest
import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

import librate
from helpers import (
    MS,
    SECOND_AND_MINUTE,
    SECOND_AND_MINUTE_ADVERTISED,
    SECOND_AND_MINUTE_NAMES,
    SECOND_AND_MINUTE_STEPS,
    VirtualClock,
    get,
    hello_asgi,
    hello_wsgi,
    replay,
)
from librate.lease import AsyncKeyedLeasedLimiter, KeyedLeasedLimiter
from librate.middleware import ASGIRateLimit, WSGIRateLimit
from librate.redis import AsyncRedisLimiter, AsyncRedisPolicy, RedisLimiter, RedisPolicy
from redis_server import RedisServer

_prefixes = itertools.count()

#: serve(server, calls, limits, **options) -> the port of the hello app behind the
#: middleware, limited in ``server``'s Redis: ``limits`` a limiter's configuration (a dict
#: of its keyword arguments), a policy's rules (a list of ``Config``), or a keyed leased
#: limiter's rule (a ``LeaseRule``: no key is hot, so Redis decides every request).
ServeRedis = Callable[..., int]


@pytest.fixture(params=["wsgi", "asgi"])
def serve_redis(request: pytest.FixtureRequest) -> ServeRedis:
    """WSGI with a ``RedisLimiter``, ``RedisPolicy`` or ``KeyedLeasedLimiter``, ASGI with
    their asyncio forms; clients that fail at once (no retries) when the server is
    down."""
    kind = request.param
    server_of = request.getfixturevalue(f"{kind}_server")

    def serve(
        redis_server: RedisServer,
        calls: list[str],
        limits: dict[str, Any] | list[librate.Config] | librate.LeaseRule,
        **options: Any,
    ) -> int:
        where = {"host": "127.0.0.1", "port": redis_server.port, "retry": Retry(NoBackoff(), 0)}
        prefix = f"http:{next(_prefixes)}:"
        if kind == "wsgi":
            client = redis.Redis(**where)
            kinds = (RedisPolicy, RedisLimiter, KeyedLeasedLimiter)
            limiter = _limiter(client, limits, prefix, *kinds)
            return int(server_of(WSGIRateLimit(hello_wsgi(calls), limiter, **options)))
        # The asyncio client connects in uvicorn's event loop, on first use.
        async_client = redis.asyncio.Redis(**where)
        async_kinds = (AsyncRedisPolicy, AsyncRedisLimiter, AsyncKeyedLeasedLimiter)
        async_limiter = _limiter(async_client, limits, prefix, *async_kinds)
        return int(server_of(ASGIRateLimit(hello_asgi(calls), async_limiter, **options)))

    return serve


def _limiter(
    client: Any,
    limits: dict[str, Any] | list[librate.Config] | librate.LeaseRule,
    prefix: str,
    policy: type[Any],
    limiter: type[Any],
    keyed_leased: type[Any],
) -> Any:
    """The limiter ``limits`` describes, of the classes given (sync or asyncio)."""
    if isinstance(limits, list):
        return policy(client, limits, prefix=prefix)
    if isinstance(limits, librate.LeaseRule):
        # No key asks for 10**6 units a round: none is leased, no task or thread renews.
        return keyed_leased(client, prefix, limits, hot=10**6, capacity=1, background=False)
    return limiter(client, **limits, prefix=prefix)


def test_seed_scenario_over_http(serve_redis: ServeRedis, redis_server: RedisServer) -> None:
    # L=1 per 2 s at explicit times: admitted at 0, denied at 999 ms (Retry-After: 2),
    # admitted at 2001 ms; another address has a limit of its own.
    clock = VirtualClock(now=0)
    calls: list[str] = []
    port = serve_redis(redis_server, calls, {"limit": 1, "period": 2}, clock=clock)
    first = get(port, "/a")
    assert (first.status, first.body, first.headers["X-App"]) == (200, b"hello", "yes")
    assert first.headers["RateLimit-Policy"] == '"default";q=1;w=2'
    assert first.headers["RateLimit"] == '"default";r=0;t=2'
    clock.now = 999 * MS
    denied = get(port, "/b")
    assert (denied.status, denied.body) == (429, b"429 Too Many Requests\n")
    assert (denied.headers["Retry-After"], denied.headers["RateLimit"]) == (
        "2",
        '"default";r=0;t=2',
    )
    assert get(port, "/c", source="127.0.0.2").status == 200
    clock.now = 2001 * MS
    assert get(port, "/d").status == 200
    assert calls == ["/a", "/c", "/d"]


def test_the_servers_clock(serve_redis: ServeRedis, redis_server: RedisServer) -> None:
    # Without a clock, Redis's TIME decides.
    port = serve_redis(redis_server, [], {"limit": 1, "period": 3600})
    assert get(port).status == 200
    denied = get(port)
    assert denied.status == 429
    assert 3599 <= int(denied.headers["Retry-After"]) <= 3600


@pytest.mark.parametrize(
    "limits",
    [
        {"limit": 1, "period": 3600},
        [librate.Config.gcra(5, 1), librate.Config.fixed_window(1, 3600)],
    ],
    ids=["limiter", "policy"],
)
@pytest.mark.parametrize("fail_open", [True, False])
def test_redis_down(
    serve_redis: ServeRedis,
    own_redis_server: RedisServer,
    caplog: pytest.LogCaptureFixture,
    fail_open: bool,
    limits: dict[str, Any] | list[librate.Config],
) -> None:
    # The server stopped: each request is served unlimited, without headers, and a
    # warning logged (fail open), or answered 503 and an error logged (fail closed, the
    # default). Back up, the limit (of 1 an hour) holds again.
    calls: list[str] = []
    options = {"fail_open": True} if fail_open else {}
    port = serve_redis(own_redis_server, calls, limits, **options)
    assert get(port, "/up").status == 200
    own_redis_server.stop()
    caplog.set_level(logging.WARNING, logger="librate.middleware")
    for path in ("/down1", "/down2"):
        response = get(port, path)
        if fail_open:
            assert (response.status, response.body) == (200, b"hello")
            assert "RateLimit" not in response.headers
        else:
            assert (response.status, response.body) == (503, b"503 Service Unavailable\n")
            assert "Retry-After" not in response.headers
    records = [r for r in caplog.records if r.name == "librate.middleware"]
    assert len(records) == 2
    for record in records:
        if fail_open:
            assert record.levelno == logging.WARNING
            assert "served unlimited" in record.getMessage()
        else:
            assert record.levelno == logging.ERROR
            assert "refused with 503" in record.getMessage()
        assert "redis:" in record.getMessage()
    assert calls == (["/up", "/down1", "/down2"] if fail_open else ["/up"])
    own_redis_server.start()
    assert get(port, "/back").status == 200  # the restarted server is empty
    assert get(port, "/again").status == 429


def test_policy_over_http(serve_redis: ServeRedis, redis_server: RedisServer) -> None:
    # Per client, 2 a second and 3 a minute, at explicit times: the in-process policy's
    # answers (test_middleware.py).
    clock = VirtualClock(now=0)
    calls: list[str] = []
    port = serve_redis(
        redis_server, calls, SECOND_AND_MINUTE, clock=clock, rule_names=SECOND_AND_MINUTE_NAMES
    )
    replay(port, clock, SECOND_AND_MINUTE_ADVERTISED, SECOND_AND_MINUTE_STEPS)
    assert calls == ["/0", "/1", "/3"]
    # Another client has rules of its own.
    other = get(port, "/other", source="127.0.0.2")
    assert (other.status, other.headers["RateLimit"]) == (200, '"second";r=1;t=1')


def test_policy_cost(serve_redis: ServeRedis, redis_server: RedisServer) -> None:
    # cost=2 takes 2 of every rule: 10 a second (GCRA, T = 100 ms) and 4 a minute.
    clock = VirtualClock(now=0)
    rules = [librate.Config.gcra(10, 1), librate.Config.fixed_window(4, 60)]
    port = serve_redis(redis_server, [], rules, clock=clock, cost=2)
    # The minute rule has 2 left, fewer than the second rule's 8.
    assert get(port).headers["RateLimit"] == '"rule1";r=2;t=60'
    assert get(port).headers["RateLimit"] == '"rule1";r=0;t=60'
    denied = get(port)
    assert (denied.status, denied.headers["Retry-After"]) == (429, "60")


@pytest.mark.parametrize("kind", ["Limiter", "Policy"])
def test_each_middleware_takes_its_kind_of_limiter(redis_server: RedisServer, kind: str) -> None:
    rules = [librate.Config.gcra(2, 1), librate.Config.fixed_window(3, 60)]
    if kind == "Limiter":
        sync: Any = RedisLimiter(redis_server.client(), limit=2, period=1, prefix="kinds:")
        asynchronous: Any = AsyncRedisLimiter(
            redis_server.async_client(), limit=2, period=1, prefix="kinds:"
        )
    else:
        sync = RedisPolicy(redis_server.client(), rules, prefix="kinds:")
        asynchronous = AsyncRedisPolicy(redis_server.async_client(), rules, prefix="kinds:")
    with pytest.raises(TypeError, match=f"ASGI takes an AsyncRedis{kind}"):
        ASGIRateLimit(hello_asgi([]), sync)
    with pytest.raises(TypeError, match=f"WSGI takes a Redis{kind}, not an AsyncRedis{kind}"):
        WSGIRateLimit(hello_wsgi([]), asynchronous)
    with pytest.raises(ValueError, match="cost 3 exceeds the limiter's max_n 2"):
        WSGIRateLimit(hello_wsgi([]), sync, cost=3)
    # One cost for every rule: a sequence is refused, the Redis script takes one.
    refused = "not supported on Redis" if kind == "Policy" else "needs a Policy or KeyedPolicy"
    for limiter, middleware in ((sync, WSGIRateLimit), (asynchronous, ASGIRateLimit)):
        with pytest.raises(TypeError, match=refused):
            middleware(hello_wsgi([]), limiter, cost=[1, 0])
    assert WSGIRateLimit(hello_wsgi([]), sync, key=lambda environ: "x", cost=2)


def test_each_middleware_takes_its_kind_of_keyed_leased_limiter(redis_server: RedisServer) -> None:
    rule = librate.LeaseRule(librate.Config.gcra(2, 1), lease=2)
    options: dict[str, Any] = {"hot": 1, "capacity": 1, "background": False}
    sync = KeyedLeasedLimiter(redis_server.client(), "kinds:", rule, **options)
    asynchronous = AsyncKeyedLeasedLimiter(redis_server.async_client(), "kinds:", rule, **options)
    with pytest.raises(TypeError, match="ASGI takes an AsyncKeyedLeasedLimiter"):
        ASGIRateLimit(hello_asgi([]), sync)
    with pytest.raises(TypeError, match="WSGI takes a KeyedLeasedLimiter, not an Async"):
        WSGIRateLimit(hello_wsgi([]), asynchronous)
    with pytest.raises(ValueError, match="cost 3 exceeds the limiter's max_n 2"):
        WSGIRateLimit(hello_wsgi([]), sync, cost=3)


def test_a_redis_policys_rules_are_named_as_in_process(redis_server: RedisServer) -> None:
    rules = [librate.Config.gcra(2, 1), librate.Config.fixed_window(3, 60)]
    policy = RedisPolicy(redis_server.client(), rules, prefix="names:")
    with pytest.raises(TypeError, match="policy="):
        WSGIRateLimit(hello_wsgi([]), policy, policy="api")
    with pytest.raises(ValueError, match="1 names for 2 rules"):
        WSGIRateLimit(hello_wsgi([]), policy, rule_names=["a"])



@pytest.mark.parametrize(
    ("limits", "names", "name"),
    [
        ({"algorithm": "fixed_window", "limit": 2, "period": 60}, {}, '"default"'),
        # A key leased nowhere: Redis decides from the whole rule, full at first.
        (librate.LeaseRule(librate.Config.fixed_window(2, 60), lease=2), {}, '"default"'),
        # The per-second rule denies the third request; the minute rule has 1 left.
        (SECOND_AND_MINUTE, {"rule_names": SECOND_AND_MINUTE_NAMES}, '"second"'),
    ],
    ids=["limiter", "keyed-leased", "policy"],
)
@pytest.mark.parametrize("shadow", [False, True])
def test_the_rule_that_denied_and_shadow(
    serve_redis: ServeRedis,
    redis_server: RedisServer,
    caplog: pytest.LogCaptureFixture,
    limits: dict[str, Any] | list[librate.Config] | librate.LeaseRule,
    names: dict[str, Any],
    name: str,
    shadow: bool,
) -> None:
    # Two requests at 0 pass; the third is denied by rule 0, or in shadow served and
    # logged as a would-be denial.
    caplog.set_level(logging.INFO, logger="librate.middleware")
    clock = VirtualClock(now=0)
    options = {"clock": clock, "shadow": shadow, "rule_header": "RateLimit-Rule", **names}
    port = serve_redis(redis_server, [], limits, **options)
    get(port), get(port)
    third = get(port)
    assert (third.status, third.headers["RateLimit-Rule"]) == (200 if shadow else 429, name)
    message = (
        f"librate: rule 0 {name} would deny the request (shadow)"
        if shadow
        else f"librate: rule 0 {name} denied the request"
    )
    records = [r for r in caplog.records if r.name == "librate.middleware"]
    assert [(r.levelno, r.getMessage(), r.rule) for r in records] == [  # type: ignore[attr-defined]
        (logging.INFO, message, 0)
    ]
