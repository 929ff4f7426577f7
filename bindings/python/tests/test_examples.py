"""The Python examples, run as a user runs them: examples/python/first_screen.py (the
README's snippet), and flask_app.py, a process serving 127.0.0.1, asked over HTTP until
its per-IP limit answers 429."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import get

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "python"
EXAMPLE = EXAMPLES / "flask_app.py"


def test_first_screen() -> None:
    # The README's Python snippet, in a program of its own.
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "first_screen.py")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout == "api: True; 203.0.113.7: admitted True, 9 left\n"


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
