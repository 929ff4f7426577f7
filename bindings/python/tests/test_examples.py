"""examples/python/flask_app.py, run as a user runs it: a process serving 127.0.0.1,
asked over HTTP until its per-IP limit answers 429."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import get

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "python" / "flask_app.py"


def test_flask_app_limits_each_ip() -> None:
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--port", "0"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:"), line
        port = int(line.rsplit(":", 1)[1].strip("/\n"))
        # 5 per 60 s, bursts of 5: T = 12 s. The k-th request leaves 5 - k, as long as the
        # six requests take less than T.
        for left in (4, 3, 2, 1, 0):
            answer = get(port)
            assert answer.status == 200
            assert answer.headers["RateLimit-Policy"] == '"default";q=5;w=60'
            assert answer.headers["RateLimit"].startswith(f'"default";r={left};t=')
        denied = get(port)
        assert denied.status == 429
        # The next unit is T = 12 s after the first, minus what has passed since.
        assert 1 <= int(denied.headers["Retry-After"]) <= 12
        assert denied.headers["RateLimit"] == f'"default";r=0;t={denied.headers["Retry-After"]}'
        # Another address has a limit of its own.
        other = get(port, source="127.0.0.2")
        assert other.status == 200
        assert other.headers["RateLimit"].startswith('"default";r=4;t=')
    finally:
        process.terminate()
        process.wait(timeout=10)
