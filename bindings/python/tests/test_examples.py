"""The Python examples, run as a user runs them: examples/python/first_screen.py (the
README's snippet); policy.py (the policy snippets); costs.py (a cost per rule);
flask_app.py, django_app.py and fastapi_app.py, each a process serving 127.0.0.1, asked
over HTTP until its per-IP limits answer 429; metrics_app.py, whose /metrics is scraped
after a few requests; and prefork_per_ip.py, worker processes
sharing one per-IP limit through a keyed table in a file."""

from __future__ import annotations

import http.client
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from helpers import Response, get

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "python"


@contextmanager
def serving(example: str, *args: str) -> Iterator[int]:
    """Runs ``examples/python/<example>`` with ``--port 0`` and ``args``; yields the port
    it reports on its first line ("… http://127.0.0.1:<port>/"), and stops it."""
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLES / example), "--port", "0", *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "listening on http://127.0.0.1:" in line, line
        yield int(line.rsplit(":", 1)[1].strip("/\n"))
    finally:
        process.terminate()
        process.wait(timeout=10)


def output(example: str) -> str:
    """What ``examples/python/<example>`` prints, run to its end."""
    return subprocess.run(
        [sys.executable, str(EXAMPLES / example)], capture_output=True, text=True, check=True
    ).stdout


def test_first_screen() -> None:
    # The README's Python snippet, in a program of its own.
    assert output("first_screen.py") == "api: True; 203.0.113.7: admitted True, 9 left\n"


def test_policy() -> None:
    # 3 a minute (T = 20 s) and 1,000 a day: one unit taken, two requests through the
    # middleware, then the per-minute rule denies for 20 s; all within a second, so every
    # duration rounds up to the same whole second.
    assert output("policy.py") == (
        "True None [2, 999]\n"
        '200 OK "minute";r=1;t=40 None\n'
        '200 OK "minute";r=0;t=60 None\n'
        '429 Too Many Requests "minute";r=0;t=20 20\n'
        'RateLimit-Policy: "minute";q=3;w=60, "day";q=1000;w=86400\n'
    )


def test_costs() -> None:
    # A post takes the client's post rule (1 a minute) and everybody's; a like the like
    # rule (5 a minute, T = 12 s) and everybody's. The like reports the like rule, not the
    # spent post rule it does not cost; the second post is denied for 60 s. Within a
    # second, so every duration rounds up to the same whole second.
    assert output("costs.py") == (
        '/posts 200 OK "posts";r=0;t=60\n'
        '/likes 200 OK "likes";r=4;t=12\n'
        '/posts 429 Too Many Requests "posts";r=0;t=60\n'
    )


def admits_five_then_429(port: int) -> None:
    """5 per 60 s, bursts of 5 (T = 12 s), for one address: the k-th request leaves
    5 - k, as long as the six requests take less than T; the 6th is denied until the
    next unit, T after the first, minus what has passed since."""
    for left in (4, 3, 2, 1, 0):
        answer = get(port)
        assert answer.status == 200
        assert answer.headers.get_all("RateLimit-Policy") == ['"default";q=5;w=60']
        assert answer.headers["RateLimit"].startswith(f'"default";r={left};t=')
    denied = get(port)
    assert denied.status == 429
    assert 1 <= int(denied.headers["Retry-After"]) <= 12
    assert denied.headers["RateLimit"] == f'"default";r=0;t={denied.headers["Retry-After"]}'


def test_flask_app_limits_each_ip() -> None:
    with serving("flask_app.py") as port:
        admits_five_then_429(port)
        # Another address has a limit of its own.
        other = get(port, source="127.0.0.2")
        assert other.status == 200
        assert other.headers["RateLimit"].startswith('"default";r=4;t=')


@pytest.mark.parametrize("example", ["django_app.py", "fastapi_app.py"])
def test_framework_app_limits_each_ip_and_its_login(example: str) -> None:
    pytest.importorskip(example.split("_")[0])
    with serving(example) as port:
        admits_five_then_429(port)
        # The login route: 2 per 60 s of its own (T = 30 s), reported instead of the
        # app's limit, which another address has whole.
        for left in (1, 0):
            login = get(port, "/login", source="127.0.0.2")
            assert login.status == 200
            assert login.headers.get_all("RateLimit-Policy") == ['"login";q=2;w=60']
            assert login.headers["RateLimit"].startswith(f'"login";r={left};t=')
        refused = get(port, "/login", source="127.0.0.2")
        assert refused.status == 429
        assert 1 <= int(refused.headers["Retry-After"]) <= 30
        assert refused.headers["RateLimit"] == f'"login";r=0;t={refused.headers["Retry-After"]}'


def test_metrics_app_counts_what_prometheus_scrapes() -> None:
    pytest.importorskip("fastapi")
    pytest.importorskip("prometheus_client")
    with serving("metrics_app.py") as port:
        # 3 a minute per address (GCRA, one every 20 s, a burst of 3) in force: 3
        # admitted, the 4th denied by "minute"; the shadow limit of 2 a minute sees the
        # same 4 requests, would deny the 3rd and 4th, and refuses neither.
        answers = [get(port) for _ in range(4)]
        assert [answer.status for answer in answers] == [200, 200, 200, 429]
        assert [answer.headers["X-Would-Deny"] for answer in answers] == [
            None,
            None,
            '"proposed"',
            '"proposed"',
        ]
        scraped = get(port, "/metrics")
    assert scraped.status == 200
    lines = [
        line
        for line in scraped.body.decode().splitlines()
        if line.startswith("ratelimit_requests_total")
    ]
    # /metrics itself is counted by no limit.
    assert lines == [
        'ratelimit_requests_total{limiter="api",result="admitted",rule=""} 3.0',
        'ratelimit_requests_total{limiter="api",result="table_full",rule=""} 0.0',
        'ratelimit_requests_total{limiter="api",result="denied",rule="minute"} 1.0',
        'ratelimit_requests_total{limiter="api",result="denied",rule="all"} 0.0',
        'ratelimit_requests_total{limiter="api",result="shadow_denied",rule="minute"} 0.0',
        'ratelimit_requests_total{limiter="api",result="shadow_denied",rule="all"} 0.0',
        'ratelimit_requests_total{limiter="proposed",result="admitted",rule=""} 2.0',
        'ratelimit_requests_total{limiter="proposed",result="table_full",rule=""} 0.0',
        'ratelimit_requests_total{limiter="proposed",result="denied",rule=""} 2.0',
    ]


WORKERS = 4


def round_of_requests(port: int, source: str) -> list[tuple[int, Response]]:
    """WORKERS requests from ``source``, each answered before the next is sent: (the
    worker that answered, the response). Their connections are all opened first and held,
    and a worker serves one connection at a time, so the workers (all waiting for a
    connection once the example says it listens) take one each."""
    connections = [
        http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
        for _ in range(WORKERS)
    ]
    try:
        for connection in connections:
            connection.connect()
        answers = []
        for connection in connections:
            connection.request("GET", "/")
            reply = connection.getresponse()
            answer = Response(reply.status, reply.headers, reply.read())
            answers.append((int(answer.headers["X-Worker"]), answer))
        return answers
    finally:
        for connection in connections:
            connection.close()


def test_prefork_workers_share_one_limit_per_ip(tmp_path: Path) -> None:
    """4 worker processes on one socket, 5 requests an hour per address in a table they
    share: of 8 requests from one address, exactly the first 5 are admitted and the other
    3 denied, one limit for the address across the workers; another address has 5 of
    its own."""
    table = tmp_path / "per-ip"
    options = ["--workers", str(WORKERS), "--table", str(table), "--period", "3600"]
    with serving("prefork_per_ip.py", *options) as port:
        served = round_of_requests(port, "127.0.0.1") + round_of_requests(port, "127.0.0.1")
        other = [answer for _, answer in round_of_requests(port, "127.0.0.2")]
    workers = [worker for worker, _ in served]
    print("workers that answered, in order:", workers)
    # Workers deciding on tables of their own would admit min(5, requests it served) each:
    # more than 5 in all as soon as two of them served any. Two or more did.
    assert len(set(workers)) >= 2
    answers = [answer for _, answer in served]
    assert [a.status for a in answers] == [200] * 5 + [429] * 3
    # GCRA, 5 per 3600 s, bursts of 5: T = 720 s. The k-th admission leaves r = 5 - k.
    for left, answer in zip((4, 3, 2, 1, 0), answers[:5], strict=True):
        assert answer.body == b"hello\n"
        assert answer.headers["RateLimit-Policy"] == '"default";q=5;w=3600'
        assert answer.headers["RateLimit"].startswith(f'"default";r={left};t=')
    for denied in answers[5:]:
        assert denied.body == b"429 Too Many Requests\n"
        # The next unit is T = 720 s after the first admission, minus what has passed.
        assert 1 <= int(denied.headers["Retry-After"]) <= 720
        assert denied.headers["RateLimit"] == f'"default";r=0;t={denied.headers["Retry-After"]}'
    assert [a.status for a in other] == [200] * 4
    assert [a.headers["RateLimit"].split(";")[1] for a in other] == ["r=4", "r=3", "r=2", "r=1"]
    # The table outlives the workers, in one file of mode 0600.
    assert stat.S_IMODE(os.stat(table).st_mode) == 0o600
