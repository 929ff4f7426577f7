#!/usr/bin/env python3
"""The instructions redis-server executes for one call of each librate Redis script and of
the peers' scripts it is compared with, counted by valgrind (callgrind), so the count does
not depend on the machine's load as a timing does.

Each script runs N times on a fresh redis-server under callgrind, through one pipelined
connection, over 1,000 keys (each key written N/1,000 times, so the first call of a key
creates it and the others update it). Every limit allows 1,000 a day, so every call
admits and no key expires during the run (were keys to expire, the count would depend on
how long the run took, so on the machine's load). The count a call is the server's total
over the run, less the total of N calls of `return 1` with one key, over N. Each of
librate's single-limiter scripts is counted a second time deciding with its exact decision
alone, on the same requests, to show what its decision near now saves (a decision near
now that saves little is not worth its code); docs/bench/redis-scripts.txt keeps the
output. Needs
valgrind, redis-server, the librate Python package (for librate's scripts, as the clients
send them), `limits` (its Lua files) and the Go module cache holding go-redis/redis_rate
v10.0.1:

    cargo build --release && .venv/bin/pip install ./bindings/python limits
    (cd bindings/go/redis && go mod download github.com/go-redis/redis_rate/v10)
    .venv/bin/python scripts/redis_script_cost.py [N]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import limits
import redis

from librate import Config
from librate._redis_core import Plan, PolicyPlan

PORT = 16391
KEYS = 1_000
#: Every limit's: 1,000 a day.
LIMIT, DAY = 1_000, 86_400
#: A call's arguments after the script's SHA, for call number i.
Args = Callable[[int], list[object]]


def instructions(source: str, args: Args, calls: int) -> int:
    """redis-server's instructions over `calls` calls of `source`, loading included."""
    with tempfile.TemporaryDirectory() as directory:
        out = os.path.join(directory, "callgrind.out")
        server = subprocess.Popen(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "redis-server",
             "--port", str(PORT), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", directory],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=PORT)
        for _ in range(600):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.1)
        sha = client.script_load(source)
        pipeline = client.pipeline(transaction=False)
        for i in range(calls):
            pipeline.evalsha(sha, *args(i))
        for reply in pipeline.execute(raise_on_error=False):
            if isinstance(reply, Exception):
                raise reply
        try:
            client.shutdown(nosave=True)
        except redis.ConnectionError:
            pass
        server.wait()
        return int(re.search(r"^summary: (\d+)", Path(out).read_text(), re.M).group(1))


def redis_rate_script() -> str:
    """redis_rate v10.0.1's allowN script, from the Go module cache."""
    cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True,
                           check=True).stdout.strip()
    lua = Path(cache, "github.com/go-redis/redis_rate/v10@v10.0.1/lua.go").read_text()
    return lua.split("var allowN = redis.NewScript(`", 1)[1].split("`)", 1)[0]


def limits_script(name: str) -> str:
    """One of `limits`' Redis Lua scripts, from the installed package."""
    return Path(limits.__file__).parent.joinpath("resources/redis/lua_scripts", name).read_text()


def librate(config: Config, brief: bool = False, exact: bool = False) -> tuple[str, Args]:
    """librate's script for `config` and the arguments of one unit now: an acquire's, or
    with `brief` a try_acquire's (the reply `allowed` alone). With `exact`, the script
    decides with its exact decision alone, as if it had no decision near now: the line
    naming `decide` (src/redis/scripts.rs lays the script out) names the exact one, so
    the two rows show what the decision near now saves on the same requests."""
    plan = Plan(config)
    args = plan.one_now_brief if brief else plan.args(1, None, 0)
    source = plan.source.decode()
    if exact:
        near = f"local decide = {config.algorithm}_near\n"
        assert near in source, "the script no longer names its decision as this expects"
        source = source.replace(near, f"local decide = exact().{config.algorithm}\n")
    return source, lambda i: [1, f"lr{i % KEYS}", *args]


def librate_policy(rules: tuple[Config, ...]) -> tuple[str, Args]:
    """librate's policy script for `rules` and the arguments of one unit now, each call
    naming one subject's keys, one a rule."""
    plan = PolicyPlan(rules)
    args = plan.args(1, None)
    return plan.source.decode(), lambda i: [
        len(rules), *(f"lp{{={i % KEYS}}}:{rule}" for rule in range(len(rules))), *args]


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000
    now = time.time()
    day_ns = DAY * 1_000_000_000
    cases: list[tuple[str, str, Args]] = [
        ("librate GCRA", *librate(Config("gcra", LIMIT, day_ns))),
        ("librate GCRA, brief (Allow, try_acquire)", *librate(Config("gcra", LIMIT, day_ns), True)),
        ("librate fixed window", *librate(Config("fixed_window", LIMIT, day_ns))),
        ("librate sliding window", *librate(Config("sliding_window", LIMIT, day_ns))),
        ("librate sliding log", *librate(Config("sliding_log", LIMIT, day_ns))),
        ("librate GCRA, exact decision alone", *librate(Config("gcra", LIMIT, day_ns), exact=True)),
        ("librate fixed window, exact decision alone",
         *librate(Config("fixed_window", LIMIT, day_ns), exact=True)),
        ("librate sliding window, exact decision alone",
         *librate(Config("sliding_window", LIMIT, day_ns), exact=True)),
        ("librate sliding log, exact decision alone",
         *librate(Config("sliding_log", LIMIT, day_ns), exact=True)),
        ("librate policy of the four algorithms", *librate_policy(tuple(
            Config(algorithm, LIMIT, day_ns)
            for algorithm in ("gcra", "fixed_window", "sliding_window", "sliding_log")))),
        ("redis_rate GCRA", redis_rate_script(),
         lambda i: [1, f"rr{i % KEYS}", LIMIT, LIMIT, DAY, 1]),
        ("limits fixed window", limits_script("incr_expire.lua"),
         lambda i: [1, f"lf{i % KEYS}", DAY, 1]),
        ("limits moving window", limits_script("acquire_moving_window.lua"),
         lambda i: [1, f"lm{i % KEYS}", repr(now + i / 1e6), LIMIT, DAY, 1]),
    ]
    empty = instructions("return 1", lambda i: [1, f"k{i % KEYS}"], calls)
    print(f"| script | instructions a call, above `return 1` ({calls:,} calls) |")
    print("|---|---:|")
    for name, source, args in cases:
        total = instructions(source, args, calls)
        print(f"| {name} | {(total - empty) / calls:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
