"""Decisions per second and latency of librate's Redis tier (``librate.redis.RedisLimiter``)
against ``limits`` with its Redis storage, on one ``redis-server`` the script starts on
127.0.0.1 (as bench_shared.py does, whose ``local_redis`` this reuses).

    python bench_redis.py [--rounds 5] [--seconds 1]   # prints Markdown tables

Each librate algorithm is paired with the closest ``limits`` strategy:

- ``gcra`` with ``MovingWindowRateLimiter``: ``limits`` has no GCRA; its moving window is
  the other limit without window edges (GCRA spaces admissions by period / limit and lets
  a burst through, the moving window counts the admissions of the last period);
- ``fixed_window`` with ``FixedWindowRateLimiter``;
- ``sliding_window`` (the sliding window counter) with ``SlidingWindowCounterRateLimiter``;
- ``sliding_log`` with ``MovingWindowRateLimiter`` (both log each admission's time).

Shapes: one connection (one thread, a ``redis.Redis`` on a pool of ``max_connections=1``)
and a pool of 8 (8 threads sharing a ``redis.Redis`` with ``max_connections=8``); one key
a call, the calls going round 1,000 keys, or 100 keys a call: librate's
``acquire_batch`` (one script call for 100 keys), against 100 ``hit``s of ``limits``
in turn (``limits`` has no batch call and its ``hit`` cannot join a pipeline: it reads
its reply before returning). Concurrent calls take the next key (or 100 keys) in turn, so
they decide different keys. A ``PING`` per call is the floor under any single call.

Every key allows 1,000 a second, far more than any key gets here (at most about 100 a
second), so every decision is an admission, the path that writes. Each case runs for
``--seconds``, every call timed on its own; the server's time per script call is
``usec_per_call`` of ``EVALSHA`` in ``INFO commandstats`` (reset before each case; the
script's own commands, ``TIME`` and the writes, run inside it), and its CPU per decision
is the change of ``used_cpu_user + used_cpu_sys`` (``INFO cpu``) over the case. Rounds
repeat every case, the contenders of a shape in an order turning from round to round; the
tables give medians over the rounds and ratios taken within each round, with their range.

Needs ``pip install ./bindings/python redis limits`` (hiredis optional) and
``redis-server`` (``$REDIS_SERVER``, else from PATH).
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import librate
from bench import BATCH, KEYS, LIMIT, PERIOD
from bench_shared import Server, local_redis, versions

#: A decision function of a case: decides one unit for each key of a call, returns how
#: many were admitted.
Decide = Callable[[list[bytes]], int]

#: (librate algorithm, the ``limits`` strategy it is compared with).
PAIRS = [
    ("gcra", "MovingWindowRateLimiter"),
    ("fixed_window", "FixedWindowRateLimiter"),
    ("sliding_window", "SlidingWindowCounterRateLimiter"),
    ("sliding_log", "MovingWindowRateLimiter"),
]
STRATEGIES = list(dict.fromkeys(strategy for _, strategy in PAIRS))


@dataclass(frozen=True)
class Shape:
    connections: int  # the pool's max_connections, and as many threads calling
    batch: int  # keys a call


SHAPES = [Shape(1, 1), Shape(1, BATCH), Shape(8, 1), Shape(8, BATCH)]


@dataclass(frozen=True)
class Contender:
    name: str  # "librate gcra", "limits FixedWindowRateLimiter", "PING"
    make: Callable[[Any], Decide]  # the decide function over a redis.Redis
    commands: tuple[str, ...]  # the commands whose server time it pays


# ---- the contenders ---------------------------------------------------------------------


def librate_decide(algorithm: str) -> Callable[[Any], Decide]:
    def make(client: Any) -> Decide:
        from librate.redis import RedisLimiter

        limiter = RedisLimiter(
            client, algorithm=algorithm, limit=LIMIT, period=PERIOD, prefix=f"bench:{algorithm}:"
        )
        try_acquire, batch = limiter.try_acquire, limiter.acquire_batch

        def decide(keys: list[bytes]) -> int:
            if len(keys) == 1:
                return try_acquire(keys[0])
            return sum(isinstance(d, librate.Decision) and d.allowed for d in batch(keys))

        return decide

    return make


def limits_decide(strategy: str) -> Callable[[Any], Decide]:
    def make(client: Any) -> Decide:
        from limits import RateLimitItemPerSecond, strategies
        from limits.storage import RedisStorage

        # The client's own pool, so both libraries send through the same kind of pool.
        storage = RedisStorage(
            "redis://", connection_pool=client.connection_pool, key_prefix=f"bench-{strategy}"
        )
        hit = getattr(strategies, strategy)(storage).hit
        item = RateLimitItemPerSecond(LIMIT, PERIOD)
        names = {key: key.decode() for key in KEYS}

        def decide(keys: list[bytes]) -> int:
            return sum(hit(item, names[key]) for key in keys)

        return decide

    return make


def ping_decide(client: Any) -> Decide:
    ping = client.ping

    def decide(keys: list[bytes]) -> int:
        return sum(ping() for _ in keys)

    return decide


def contenders(shape: Shape) -> list[Contender]:
    table = [
        Contender(f"librate {algorithm}", librate_decide(algorithm), ("evalsha",))
        for algorithm, _ in PAIRS
    ]
    table += [
        Contender(f"limits {strategy}", limits_decide(strategy), ("evalsha",))
        for strategy in STRATEGIES
    ]
    if shape.batch == 1:
        table.append(Contender("PING", ping_decide, ("ping",)))
    return table


# ---- running a case ---------------------------------------------------------------------


@dataclass
class Sample:
    """One run of one case."""

    per_second: float  # decisions
    p50_us: float  # a call's latency (a batch's: the whole batch)
    p99_us: float
    script_us: float  # server time per call of the case's commands (commandstats)
    cpu_us: float  # server CPU per decision (INFO cpu)
    client_us: float  # this process's CPU per decision, every thread's
    admitted: float  # the share of decisions that admitted


@dataclass
class Case:
    shape: Shape
    contender: Contender
    client: Any
    decide: Decide
    calls: list[list[bytes]]  # the keys of each call, in turn
    samples: list[Sample] = field(default_factory=list)


def new_case(server: Server, shape: Shape, contender: Contender) -> Case:
    """A case with a client of its own, every call made once (the scripts loaded, every
    key written)."""
    import redis

    pool = redis.ConnectionPool(
        host="127.0.0.1", port=server.port, max_connections=shape.connections
    )
    client = redis.Redis(connection_pool=pool)
    calls = [KEYS[i : i + shape.batch] for i in range(0, len(KEYS), shape.batch)]
    case = Case(shape, contender, client, contender.make(client), calls)
    for keys in calls:
        case.decide(keys)
    return case


def percentile(ordered: list[int], p: int) -> int:
    """The p-th percentile of sorted values, by nearest rank."""
    return ordered[max(0, (len(ordered) * p + 99) // 100 - 1)]


def server_stats(client: Any, commands: tuple[str, ...]) -> tuple[int, int, float]:
    """Calls and µs of ``commands`` since the last CONFIG RESETSTAT, and the server's
    CPU seconds so far."""
    stats = client.info("commandstats")
    calls = sum(stats.get(f"cmdstat_{c}", {}).get("calls", 0) for c in commands)
    usec = sum(stats.get(f"cmdstat_{c}", {}).get("usec", 0) for c in commands)
    cpu = client.info("cpu")
    return calls, usec, cpu["used_cpu_user"] + cpu["used_cpu_sys"]


def run(case: Case, seconds: float) -> Sample:
    """Calls from ``case.shape.connections`` threads for ``seconds``, each call timed."""
    threads = case.shape.connections
    turn = itertools.count()  # next() on it is atomic under the GIL
    latencies: list[list[int]] = [[] for _ in range(threads)]
    admitted, ends = [0] * threads, [0] * threads
    failures: list[BaseException] = []
    ready = threading.Barrier(threads + 1)
    deadline = [0]

    def work(me: int) -> None:
        own, calls, decide, total = latencies[me], case.calls, case.decide, 0
        clock = time.perf_counter_ns
        ready.wait()
        try:
            while True:
                keys = calls[next(turn) % len(calls)]
                start = clock()
                total += decide(keys)
                end = clock()
                own.append(end - start)
                if end >= deadline[0]:
                    break
        except BaseException as error:  # reported after the join
            failures.append(error)
        admitted[me], ends[me] = total, clock()

    case.client.config_resetstat()
    _, _, cpu_before = server_stats(case.client, ())
    client_before = time.process_time()
    workers = [threading.Thread(target=work, args=(me,)) for me in range(threads)]
    for worker in workers:
        worker.start()
    started = time.perf_counter_ns()
    deadline[0] = started + int(seconds * 1e9)
    ready.wait()
    for worker in workers:
        worker.join()
    client_cpu = time.process_time() - client_before
    if failures:
        raise failures[0]
    calls, usec, cpu_after = server_stats(case.client, case.contender.commands)
    ordered = sorted(itertools.chain.from_iterable(latencies))
    decisions = len(ordered) * case.shape.batch
    return Sample(
        per_second=decisions / ((max(ends) - started) / 1e9),
        p50_us=percentile(ordered, 50) / 1e3,
        p99_us=percentile(ordered, 99) / 1e3,
        script_us=usec / calls if calls else 0.0,
        cpu_us=(cpu_after - cpu_before) * 1e6 / decisions,
        client_us=client_cpu * 1e6 / decisions,
        admitted=sum(admitted) / decisions,
    )


# ---- the tables -------------------------------------------------------------------------


def spread(ratios: list[float]) -> str:
    """The median of ratios and their range: "0.93 (0.90–0.97)"."""
    return f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})"


def med(case: Case, metric: str) -> float:
    """The median over the rounds of one of ``Sample``'s fields."""
    return float(statistics.median(getattr(sample, metric) for sample in case.samples))


def number(x: float) -> str:
    """Three significant figures or whole units, with thousands separated."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def ratios(a: Case, b: Case) -> list[float]:
    """a's decisions/s over b's, round by round."""
    return [x.per_second / y.per_second for x, y in zip(a.samples, b.samples, strict=True)]


def header(server: Server, rounds: int, seconds: float, load: tuple[str, str]) -> str:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if "model name" in line)
    except (OSError, StopIteration):
        pass
    return (
        f"{time.strftime('%Y-%m-%d')}; {cpu}, {os.cpu_count()} CPUs; "
        f"{platform.python_implementation()} {platform.python_version()}, librate "
        f"{librate.library_version()}; {versions(server)}; redis-server on 127.0.0.1 (TCP); "
        f"{LIMIT} per {PERIOD} s a key, {len(KEYS):,} keys; {rounds} rounds of {seconds:g} s "
        f"a case; load average {load[0]} before, {load[1]} after."
    )


def report(cases: dict[tuple[Shape, str], Case], heading: str) -> str:
    lines = [
        heading,
        "",
        "| connections | keys a call | librate | `limits` | librate decisions/s "
        "| `limits` decisions/s | librate / `limits` |",
        "|---|---|---|---|---:|---:|---|",
    ]
    for shape in SHAPES:
        for algorithm, strategy in PAIRS:
            ours, theirs = cases[shape, f"librate {algorithm}"], cases[shape, f"limits {strategy}"]
            lines.append(
                f"| {shape.connections} | {shape.batch} | {algorithm} | {strategy} "
                f"| {med(ours, 'per_second'):,.0f} | {med(theirs, 'per_second'):,.0f} "
                f"| {spread(ratios(ours, theirs))} |"
            )
    lines += [
        "",
        "| connections | contender | batch / single decisions/s |",
        "|---|---|---|",
    ]
    for connections in sorted({shape.connections for shape in SHAPES}):
        single, batch = Shape(connections, 1), Shape(connections, BATCH)
        for name in [f"librate {a}" for a, _ in PAIRS] + [f"limits {s}" for s in STRATEGIES]:
            lines.append(
                f"| {connections} | {name} | "
                f"{spread(ratios(cases[batch, name], cases[single, name]))} |"
            )
    lines += [
        "",
        "| connections | keys a call | contender | decisions/s | p50 / p99 µs a call "
        "| server µs a command | server CPU µs a decision | client CPU µs a decision |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for (shape, name), case in cases.items():
        lines.append(
            f"| {shape.connections} | {shape.batch} | {name} | {med(case, 'per_second'):,.0f} "
            f"| {number(med(case, 'p50_us'))} / {number(med(case, 'p99_us'))} "
            f"| {med(case, 'script_us'):.2f} | {med(case, 'cpu_us'):.1f} "
            f"| {med(case, 'client_us'):.1f} |"
        )
    short = [
        f"{case.contender.name} ({case.shape.connections}×{case.shape.batch}): "
        f"{min(s.admitted for s in case.samples):.1%}"
        for case in cases.values()
        if any(s.admitted < 1 for s in case.samples)
    ]
    lines += ["", "Every decision admitted." if not short else "Denials: " + "; ".join(short)]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=1.0, help="per case and round")
    options = parser.parse_args()
    load_before = f"{os.getloadavg()[0]:.1f}"
    with local_redis() as server:
        if isinstance(server, str):
            print(f"bench_redis.py: {server}", file=sys.stderr)
            return 1
        cases = {
            (shape, contender.name): new_case(server, shape, contender)
            for shape in SHAPES
            for contender in contenders(shape)
        }
        for round_ in range(options.rounds):
            for shape in SHAPES:
                in_shape = [case for (s, _), case in cases.items() if s == shape]
                turned = in_shape[round_ % len(in_shape) :] + in_shape[: round_ % len(in_shape)]
                for case in turned:
                    sample = run(case, options.seconds)
                    case.samples.append(sample)
                    print(
                        f"round {round_ + 1}, {shape.connections}×{shape.batch}, "
                        f"{case.contender.name}: {sample}",
                        file=sys.stderr,
                    )
        load = (load_before, f"{os.getloadavg()[0]:.1f}")
        print(report(cases, header(server, options.rounds, options.seconds, load)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
