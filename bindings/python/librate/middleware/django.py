"""Django: a middleware and a view decorator, configured from ``settings.LIBRATE``, with
the headers, keys and failure modes of the WSGI and ASGI middleware (needs Django:
``pip install 'librate[django]'``).

``settings.LIBRATE`` maps a name to an entry; the middleware applies the entry
``"default"`` to every request, ``@rate_limited(name)`` an entry to one view::

    LIBRATE = {
        "default": {"limit": 100, "period": 60, "capacity": 100_000, "trusted_proxies": 1},
        "login": {"limit": 5, "period": 60, "capacity": 10_000},
        "search": {"limit": 10, "period": 1, "redis": "redis://127.0.0.1:6379/0"},
    }
    MIDDLEWARE = [..., "librate.middleware.django.DjangoRateLimit"]

An entry's limiter is one of:

- ``"limiter"``: a limiter object the WSGI middleware takes (``KeyedLimiter``,
  ``Limiter``, ``Policy``, ``KeyedPolicy``, ``RedisLimiter``, ``RedisPolicy``), or the
  dotted path of one;
- ``"redis"``: a Redis URL: a ``RedisLimiter`` per key (redis-py) with ``algorithm``,
  ``limit``, ``period``, ``burst`` and ``"prefix"`` (default ``"librate:<name>:"``);
- otherwise a ``KeyedLimiter`` per key, in process: ``algorithm`` (default ``"gcra"``),
  ``limit``, ``period`` (seconds), ``burst`` and ``capacity`` (the keys its table holds).

Every entry may also give the middleware's options (``RateLimitMiddleware``): ``key``
(a function of the ``HttpRequest``, or its dotted path; default: the client's IP
address), ``cost``, ``policy`` (the name in the headers; default: the entry's name),
``rule_names`` (a policy's), ``clock`` (a function or its dotted path),
``trusted_proxies``, ``fail_open``, ``shadow``, ``rule_header`` and ``log_level``.
Limiters are made at the first request that needs them, and again after
``settings.LIBRATE`` changes (``override_settings`` in tests).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.utils.module_loading import import_string

from .._limiter import KeyedLimiter
from ._client import client_key, trusted_hops
from ._gate import _POLICIES, AnyLimiter, Gate, Verdict, _redis_kinds
from .wsgi import WSGIRateLimit

__all__ = ["DjangoRateLimit", "rate_limited"]

View = TypeVar("View", bound=Callable[..., Any])

#: The keys of an entry that make its in-process or Redis limiter.
_LIMITER_KEYS = {"algorithm", "limit", "period", "burst", "capacity", "redis", "prefix"}
#: The keys of an entry that are the middleware's options.
_OPTION_KEYS = {
    "key",
    "cost",
    "policy",
    "rule_names",
    "clock",
    "trusted_proxies",
    "fail_open",
    "shadow",
    "rule_header",
    "log_level",
}



# Django's request carries the WSGI environ (or, under ASGI, its equivalent) as ``META``.
def _peer(request: HttpRequest) -> str | None:
    return WSGIRateLimit.client_address(request.META)


def _forwarded_for(request: HttpRequest) -> list[str]:
    return WSGIRateLimit.forwarded_for(request.META)



@dataclass(frozen=True)
class _Entry:
    """One entry of ``settings.LIBRATE``, made: its gate, and whether asking its
    limiter blocks on the network (a Redis limiter)."""

    gate: Gate[HttpRequest]
    blocking: bool


_entries: dict[str, _Entry] = {}
_entries_lock = threading.Lock()


def _forget(setting: str, **_: object) -> None:
    """Drops the limiters made from ``settings.LIBRATE`` when it changes."""
    if setting == "LIBRATE":
        with _entries_lock:
            _entries.clear()


setting_changed.connect(_forget)


def _entry(name: str) -> _Entry:
    """The entry ``name`` of ``settings.LIBRATE``, made at its first use."""
    entry = _entries.get(name)
    if entry is None:
        with _entries_lock:
            entry = _entries.get(name)
            if entry is None:
                entry = _entries[name] = _made(name)
    return entry


def _made(name: str) -> _Entry:
    configured = getattr(settings, "LIBRATE", None)
    if not isinstance(configured, Mapping) or name not in configured:
        raise ImproperlyConfigured(f"settings.LIBRATE has no entry {name!r}")
    entry = configured[name]
    if not isinstance(entry, Mapping):
        raise ImproperlyConfigured(f"settings.LIBRATE[{name!r}] must be a dict")
    unknown = set(entry) - _LIMITER_KEYS - _OPTION_KEYS - {"limiter"}
    if unknown:
        raise ImproperlyConfigured(
            f"settings.LIBRATE[{name!r}] has unknown keys: {', '.join(sorted(unknown))}"
        )
    limiter = _limiter(name, entry)
    key, clock = (_imported(entry.get(option)) for option in ("key", "clock"))
    gate: Gate[HttpRequest] = Gate(
        limiter,
        key=key,
        default_key=client_key(
            _peer, _forwarded_for, trusted_hops(entry.get("trusted_proxies", 0))
        ),
        cost=entry.get("cost", 1),
        # A policy's rules are named by rule_names, or rule0, rule1...
        policy=entry.get("policy", None if isinstance(limiter, _POLICIES) else name),
        rule_names=entry.get("rule_names"),
        clock=clock,
        fail_open=entry.get("fail_open", False),
        asynchronous=False,
        shadow=entry.get("shadow", False),
        rule_header=entry.get("rule_header"),
        log_level=entry.get("log_level", logging.INFO),
    )
    return _Entry(gate, isinstance(limiter, _redis_kinds()))


def _imported(value: Any) -> Any:
    """A setting's value, or the object its dotted path names."""
    return import_string(value) if isinstance(value, str) else value


def _limiter(name: str, entry: Mapping[str, Any]) -> AnyLimiter:
    """The limiter an entry gives, or makes."""
    if "limiter" in entry:
        if _LIMITER_KEYS & set(entry):
            raise ImproperlyConfigured(
                f"settings.LIBRATE[{name!r}] gives a limiter: it takes no "
                + ", ".join(sorted(_LIMITER_KEYS & set(entry)))
            )
        return cast(AnyLimiter, _imported(entry["limiter"]))
    rule = {k: entry[k] for k in ("algorithm", "limit", "period", "burst") if k in entry}
    if "redis" in entry:
        from redis import Redis  # only an entry on Redis needs redis-py

        from ..redis import RedisLimiter

        client = Redis.from_url(entry["redis"])
        return RedisLimiter(client, **rule, prefix=entry.get("prefix", f"librate:{name}:"))
    if "capacity" not in entry:
        raise ImproperlyConfigured(
            f"settings.LIBRATE[{name!r}] needs a capacity (the keys its table holds), "
            "a redis URL, or a limiter"
        )
    return KeyedLimiter(**rule, capacity=entry["capacity"])


def _refusal(verdict: Verdict) -> HttpResponse:
    """The answer to a request the verdict refuses (429, or 503 when undecided)."""
    assert verdict.status is not None
    response = HttpResponse(
        verdict.body, status=verdict.status, content_type="text/plain; charset=utf-8"
    )
    for name, value in verdict.headers:
        response[name] = value
    return response


def _with_headers(
    response: HttpResponseBase, verdict: Verdict | None, *, replace: bool = True
) -> HttpResponseBase:
    """``response`` with the admitting verdict's headers; with ``replace=False`` only
    those it does not carry yet."""
    if verdict is not None:
        for name, value in verdict.headers:
            if replace:
                response[name] = value
            else:
                response.setdefault(name, value)
    return response


class DjangoRateLimit:
    """Django middleware: limits every request by ``settings.LIBRATE["default"]``, as
    ``WSGIRateLimit`` does. Admitted responses gain ``RateLimit-Policy`` and
    ``RateLimit``; a denied request is answered ``429 Too Many Requests`` with
    ``Retry-After`` and both headers, and reaches no view; a request the limiter cannot
    decide (a full table, Redis down) passes or is answered 503 as ``fail_open`` says.
    A response that carries the headers already, from a view's ``@rate_limited``, keeps
    them: they report the view's own, narrower limit.

    Synchronous, as Django runs most middleware: under ASGI, Django runs it in a thread.
    """

    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        verdict = _entry("default").gate.check(request)
        if verdict is not None and verdict.status is not None:
            return _refusal(verdict)
        return _with_headers(self.get_response(request), verdict, replace=False)


def rate_limited(name: str = "default") -> Callable[[View], View]:
    """View decorator: limits the view by ``settings.LIBRATE[name]``, answering as
    ``DjangoRateLimit`` does. Takes sync and async views; an async view asks a Redis
    limiter from a thread (``sync_to_async``), never blocking its event loop.

    ::

        @rate_limited("login")
        def login(request): ...
    """
    if not isinstance(name, str):
        raise TypeError(
            f"rate_limited takes the name of an entry of settings.LIBRATE, not "
            f"{type(name).__name__}; write @rate_limited() with parentheses"
        )

    def decorate(view: View) -> View:
        if iscoroutinefunction(view):

            async def limited_async(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
                entry = _entry(name)
                if entry.blocking:
                    verdict = await sync_to_async(entry.gate.check)(request)
                else:
                    verdict = entry.gate.check(request)
                if verdict is not None and verdict.status is not None:
                    return _refusal(verdict)
                return _with_headers(await view(request, *args, **kwargs), verdict)

            return cast(View, markcoroutinefunction(functools.wraps(view)(limited_async)))

        @functools.wraps(view)
        def limited(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            verdict = _entry(name).gate.check(request)
            if verdict is not None and verdict.status is not None:
                return _refusal(verdict)
            return _with_headers(view(request, *args, **kwargs), verdict)

        return cast(View, limited)

    return decorate
