"""A shared limiter's rule changed in its file (docs/shared.md, changing the rule):
``Limiter.set_config`` in one process is every process's rule at its next decision,
``Limiter.open(..., replace=True)`` gives the file the opener's rule, and
``librate.describe_file`` (and the message of every ``Incompatible``) says what a file
holds. Real files, real processes (fork).

GCRA with limit L, period P, burst B (None: L): T = P / L, tau = B*T; after a decision,
debt = max(0, TAT - t), remaining = floor((tau - debt) / T), reset_after = debt. A change
keeps the tokens, capped at the new burst (docs/live-changes.md).
"""

from __future__ import annotations

import doctest
import errno
import os
from pathlib import Path

import pytest

import librate
from helpers import MS, SECOND
from librate import Config, KeyedRule
from shared_tables import HOUR, in_child


def change_to_five(path: Path) -> None:
    """The child of the set_config test: attaches with the file's rule, 10 a second, and
    changes it to 5 a second at 0. The 6 tokens left at 0 are capped at the new burst, 5:
    a query at 0 sees a full bucket of 5."""
    with librate.Limiter.open(path, limit=10, period=1) as there:
        there.set_config(Config.gcra(5, 1), now_ns=0)
        assert there.config == Config.gcra(5, 1)
        assert there.acquire(0, now_ns=0) == librate.Decision(True, 5, 5, 0, 0, 0)


def test_a_change_in_one_process_is_seen_by_every_process(tmp_path: Path) -> None:
    path = tmp_path / "limit"
    here = librate.Limiter.open(path, limit=10, period=1)
    # 10 a second, T = 100 ms, tau = 1 s: 4 at 0 leave TAT = 400 ms, remaining 6.
    assert here.acquire(4, now_ns=0) == librate.Decision(True, 10, 6, 0, 400 * MS, 0)
    in_child(change_to_five, path)
    # This process's handle reports the file's rule in force, as the child gave it.
    assert here.config == Config.gcra(5, 1)
    # Here too at the next decision: 5 a second, T = 200 ms, tau = 1 s, a full bucket.
    assert here.acquire(0, now_ns=0) == librate.Decision(True, 5, 5, 0, 0, 0)
    # 5 at 0: TAT = 1 s, remaining 0, reset 1 s; 1 more: retry 1 s + 200 ms - 1 s.
    assert here.acquire(5, now_ns=0) == librate.Decision(True, 5, 0, 0, SECOND, 0)
    assert here.acquire(1, now_ns=0) == librate.Decision(False, 5, 0, 200 * MS, SECOND, 0)
    here.close()
    # The file holds the new rule: the old one is refused, and told what the file holds.
    with pytest.raises(librate.Incompatible) as refused:
        librate.Limiter.open(path, limit=10, period=1)
    held = (
        f"{path}: a librate limiter holding GCRA, limit 5, period_ns 1000000000, burst 5 "
        "(its rule changed 1 time since it was made)"
    )
    assert str(refused.value) == held
    assert refused.value.code == -8
    assert librate.describe_file(path) == held
    # A later opener of the new rule decides on the state the processes left.
    with librate.Limiter.open(path, limit=5, period=1) as again:
        assert again.acquire(1, now_ns=0) == librate.Decision(False, 5, 0, 200 * MS, SECOND, 0)


def gunicorn_worker(path: Path, limit: int) -> librate.Limiter:
    """What each worker's app factory does (the README's example): opens the host's
    limit of ``limit`` an hour, giving the file this release's rule if it holds another,
    so a rolling restart rolls out a new limit."""
    return librate.Limiter.open(path, limit=limit, period=3600, replace=True)


def restart_with_five(path: Path) -> None:
    """The child of the replace test, a worker restarted with a new limit, 5 an hour:
    refused without ``replace``, given the file with it. The 6 tokens left are capped at
    5, and none refills while the test runs (T = 12 min)."""
    with pytest.raises(librate.Incompatible):
        librate.Limiter.open(path, limit=5, period=HOUR)
    with gunicorn_worker(path, 5) as worker:
        assert worker.config == Config.gcra(5, HOUR)
        query = worker.acquire(0)
        assert (query.limit, query.remaining) == (5, 5)


def test_an_opener_replaces_the_files_rule(tmp_path: Path) -> None:
    # On the real clock, 10 an hour (T = 6 min): 4 now leave 6 tokens.
    path = tmp_path / "limit"
    old = gunicorn_worker(path, 10)
    took = old.acquire(4)
    assert (took.allowed, took.limit, took.remaining) == (True, 10, 6)
    in_child(restart_with_five, path)
    # The process still on the old rule follows at its next decision: 5 of 5 left.
    query = old.acquire(0)
    assert (query.limit, query.remaining) == (5, 5)
    assert old.acquire(5).remaining == 0
    assert not old.try_acquire()
    held = (
        f"{path}: a librate limiter holding GCRA, limit 5, period_ns 3600000000000, burst 5 "
        "(its rule changed 1 time since it was made)"
    )
    assert librate.describe_file(path) == held
    # The rule the file holds changes nothing (burst 5 is what None means).
    with librate.Limiter.open(path, limit=5, period=HOUR, burst=5, replace=True) as same:
        assert not same.try_acquire()
    assert librate.describe_file(path) == held
    # Another algorithm cannot carry the state over: refused, the file's rule kept.
    with pytest.raises(librate.InvalidConfig):
        librate.Limiter.open(path, algorithm="fixed_window", limit=5, period=HOUR, replace=True)
    assert librate.describe_file(path) == held
    old.close()


def test_replace_makes_a_new_file_and_is_a_bool(tmp_path: Path) -> None:
    path = tmp_path / "new"
    with librate.Limiter.open(path, limit=10, period=1, replace=True) as limiter:
        # 3 at 1 s: TAT = 1.3 s, remaining floor(700 ms / 100 ms) = 7, reset 300 ms.
        assert limiter.acquire(3, now_ns=SECOND) == librate.Decision(True, 10, 7, 0, 300 * MS, 0)
    assert librate.describe_file(path) == (
        f"{path}: a librate limiter holding GCRA, limit 10, period_ns 1000000000, burst 10"
    )
    with pytest.raises(TypeError):
        librate.Limiter.open(path, limit=10, period=1, replace=1)  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        librate.Limiter.open(tmp_path / "none" / "limit", limit=10, period=1, replace=True)
    # A keyed table's file is no limiter's, replace or not; its message says what it is.
    keyed = tmp_path / "keyed"
    librate.KeyedLimiter.open(keyed, limit=10, period=1, capacity=64).close()
    with pytest.raises(librate.Incompatible) as refused:
        librate.Limiter.open(keyed, limit=10, period=1, replace=True)
    assert str(refused.value) == (
        f"{keyed}: a librate keyed table of capacity 64 holding GCRA, limit 10, period_ns "
        "1000000000, burst 10"
    )


def test_every_open_says_what_the_file_holds(tmp_path: Path) -> None:
    keyed = tmp_path / "keyed"
    librate.KeyedLimiter.open(keyed, limit=10, period=1, capacity=64).close()
    with pytest.raises(librate.Incompatible) as refused:
        librate.KeyedLimiter.open(keyed, limit=20, period=1, capacity=64)
    assert str(refused.value) == (
        f"{keyed}: a librate keyed table of capacity 64 holding GCRA, limit 10, period_ns "
        "1000000000, burst 10"
    )
    policy = tmp_path / "policy"
    rules = [
        KeyedRule.per_key(Config.gcra(1, 1)),
        KeyedRule.global_(Config.fixed_window(100, 60)),
    ]
    librate.KeyedPolicy.open(policy, rules, capacity=64).close()
    with pytest.raises(librate.Incompatible) as refused:
        librate.KeyedPolicy.open(policy, rules[:1], capacity=64)
    assert str(refused.value) == (
        f"{policy}: a librate keyed policy of capacity 64 holding 2 rules: GCRA, limit 1, "
        "period_ns 1000000000, burst 1 (per key); fixed window, limit 100, period_ns "
        "60000000000 (global)"
    )
    # 128 bytes that do not start with librate's magic bytes.
    zeros = tmp_path / "zeros"
    zeros.write_bytes(bytes(128))
    with pytest.raises(librate.Incompatible) as refused:
        librate.Limiter.open(zeros, limit=10, period=1)
    assert str(refused.value) == (
        f"{zeros}: not a librate table (it does not start with librate's magic bytes)"
    )


def test_describe_file_whole_however_long(tmp_path: Path) -> None:
    # A name of 200 bytes: the sentence outgrows RATE_REASON_LEN (256) and is still whole.
    path = tmp_path / ("x" * 200)
    librate.Limiter.open(path, algorithm="sliding_window", limit=7, period=60).close()
    assert librate.describe_file(os.fspath(path)) == (
        f"{path}: a librate limiter holding sliding window, limit 7, period_ns 60000000000"
    )
    assert librate.describe_file(os.fsencode(path)) == librate.describe_file(path)


def test_describe_file_os_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as missing:
        librate.describe_file(tmp_path / "missing")
    assert missing.value.errno == errno.ENOENT
    assert missing.value.filename == os.fspath(tmp_path / "missing")
    assert not (tmp_path / "missing").exists()
    with pytest.raises(IsADirectoryError):
        librate.describe_file(tmp_path)


def test_describe_file_docstring_example() -> None:
    runner = doctest.DocTestRunner()
    for test in doctest.DocTestFinder().find(librate.describe_file, "describe_file"):
        runner.run(test)
    failed, attempted = runner.summarize(verbose=False)
    assert (failed, attempted) == (0, 2)
