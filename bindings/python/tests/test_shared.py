"""Limiter.open: a limiter in a file shared by processes (real files, real processes)."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

import librate

HOUR = 3600
FROZEN = 1_000 * 1_000_000_000


def _take_all(path: str, algorithm: str, queue: multiprocessing.Queue) -> None:
    limiter = librate.Limiter.open(path, algorithm=algorithm, limit=40, period=HOUR)
    admitted = 0
    while limiter.acquire(now_ns=FROZEN).allowed:
        admitted += 1
    queue.put(admitted)


@pytest.mark.parametrize("algorithm", librate.ALGORITHMS)
def test_processes_share_one_limit(tmp_path: Path, algorithm: str) -> None:
    path = str(tmp_path / "limit")
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    workers = [context.Process(target=_take_all, args=(path, algorithm, queue)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
        assert worker.exitcode == 0
    assert sum(queue.get() for _ in workers) == 40
    assert (os.stat(path).st_mode & 0o777) == 0o600


def test_another_configuration_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "limit"
    with librate.Limiter.open(path, limit=1, period=HOUR) as first:
        second = librate.Limiter.open(path, limit=1, period=HOUR)
        assert first.acquire(now_ns=0).allowed
        assert not second.acquire(now_ns=0).allowed
        second.close()
    before = path.read_bytes()
    with pytest.raises(librate.Incompatible) as raised:
        librate.Limiter.open(path, limit=2, period=HOUR)
    assert raised.value.code == -8
    assert path.read_bytes() == before


def test_os_refusals_are_os_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as raised:
        librate.Limiter.open(tmp_path / "none" / "limit", limit=1, period=HOUR)
    assert raised.value.filename == str(tmp_path / "none" / "limit")
    with pytest.raises(IsADirectoryError):
        librate.Limiter.open(tmp_path, limit=1, period=HOUR)
    with pytest.raises(librate.InvalidConfig):
        librate.Limiter.open(tmp_path / "bad", limit=0, period=HOUR)
