"""Limiter.open and KeyedLimiter.open: tables in files shared by processes (real files,
real processes), each test run on both kinds of table."""

from __future__ import annotations

import errno
import multiprocessing
import os
import pwd
import stat
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Any

import pytest

import librate
from helpers import SECOND
from shared_tables import FROZEN, GCRA_10, HOUR, KINDS, PROCESSES, THREADS, Kind, make_table

#: Units each limit of the process test admits at one instant.
UNITS = 2000


def shared_config(algorithm: str) -> dict[str, Any]:
    """A limiter that admits exactly UNITS units at one instant. GCRA L=10, P=1 h,
    B=UNITS: T = 360 s, and at a frozen t the k-th admission leaves TAT = t + k*T, so the
    next is admitted iff (k+1)*T <= B*T: B of them (the burst, not the limit). The
    windows: L = UNITS an hour."""
    if algorithm == "gcra":
        return {"algorithm": "gcra", "limit": 10, "period": HOUR, "burst": UNITS}
    return {"algorithm": algorithm, "limit": UNITS, "period": HOUR}


def admitted_decision(algorithm: str, remaining: int) -> librate.Decision:
    """The decision at FROZEN of the admission that leaves ``remaining``: the k-th leaves
    UNITS - k for every algorithm (GCRA: floor((B*T - k*T)/T)). reset_after: GCRA the
    debt k*T; the fixed window the next window, 3600 - 1000 = 2600 s away; the sliding
    window the start of window 2 (7200 - 1000 s), where window 1's count no longer weighs;
    the log the moment its entries, all at t, leave (t - P, t]: P."""
    reset = {
        "gcra": (UNITS - remaining) * 360 * SECOND,
        "fixed_window": 2600 * SECOND,
        "sliding_window": 6200 * SECOND,
        "sliding_log": HOUR * SECOND,
    }[algorithm]
    return librate.Decision(True, UNITS, remaining, 0, reset, 0)


def denied_decision(algorithm: str) -> librate.Decision:
    """Every decision at FROZEN once the units are taken. GCRA: debt B*T, retry T. Fixed
    window: retry and reset at the next window. Sliding window: in window 1, prev = L and
    e' = t + d - P, one unit is admitted iff L*(P - e') + P <= L*P iff e' >= P/L = 1.8 s
    (3600 s / 2000), so retry is 2600 s + 1.8 s; reset as above. Log: P."""
    retry = {
        "gcra": 360 * SECOND,
        "fixed_window": 2600 * SECOND,
        "sliding_window": 2600 * SECOND + 1_800_000_000,
        "sliding_log": HOUR * SECOND,
    }[algorithm]
    reset = admitted_decision(algorithm, 0).reset_after_ns
    return librate.Decision(False, UNITS, 0, retry, reset, 0)


def _take_until_denied(
    kind: Kind, path: str, algorithm: str, start: Any, results: multiprocessing.Queue[Any]
) -> None:
    """A child process: opens the file (racing its siblings to create it), meets them at
    ``start``, then runs THREADS threads taking 1 unit at a time of each of the kind's
    keys in turn at FROZEN until every key is denied, checking each decision. Puts (the
    (key index, remaining) of each admission, the problems)."""
    seen: list[tuple[int, int]] = []
    problems: list[str] = []
    try:
        table = kind.open(path, **shared_config(algorithm))
    except BaseException:
        start.abort()  # no sibling waits for this process
        results.put(([], [traceback.format_exc()]))
        return
    denied = denied_decision(algorithm)
    threads_ready = threading.Barrier(THREADS)

    def take(thread: int) -> None:
        threads_ready.wait()
        taken = 0
        # Each thread starts at another key; a key leaves the round once it is denied (at
        # a frozen time nothing is admitted after a denial: the state only fills).
        keys = list(range(len(kind.keys)))
        pending = keys[thread % len(keys) :] + keys[: thread % len(keys)]
        while pending:
            for index in list(pending):
                d = kind.acquire(table, kind.keys[index], now_ns=FROZEN)
                if not d.allowed:
                    if d != denied:
                        problems.append(f"key {index} denied: {d}, want {denied}")
                    pending.remove(index)
                    continue
                if d != admitted_decision(algorithm, d.remaining) or d.remaining >= UNITS:
                    problems.append(f"key {index} admitted: {d}")
                    return
                seen.append((index, d.remaining))  # list.append is atomic under the GIL
                taken += 1
                # With fewer cores than threads in all the processes, one process could
                # take every unit in one time slice; giving up the core now and then
                # interleaves the processes.
                if taken % 16 == 0:
                    os.sched_yield()

    try:
        start.wait(timeout=60)
        threads = [threading.Thread(target=take, args=(i,)) for i in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    except BaseException:
        problems.append(traceback.format_exc())
    finally:
        table.close()
    results.put((seen, problems))


@pytest.mark.parametrize("algorithm", librate.ALGORITHMS)
@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_processes_and_threads_share_one_limit(tmp_path: Path, kind: Kind, algorithm: str) -> None:
    """4 processes x 4 threads at a frozen time admit exactly UNITS of each key between
    them, and each admission of a key leaves a remaining of its own (UNITS-1 down to 0,
    once each): one limit per key across the processes, not one per process, and the
    keys independent."""
    path = str(tmp_path / "table")
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    start = context.Barrier(PROCESSES)
    workers = [
        context.Process(target=_take_until_denied, args=(kind, path, algorithm, start, results))
        for _ in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    reports = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join()
        assert worker.exitcode == 0
    assert [problems for _, problems in reports] == [[]] * PROCESSES
    print("admitted per process:", [len(seen) for seen, _ in reports])
    remainings: dict[int, list[int]] = {index: [] for index in range(len(kind.keys))}
    for seen, _ in reports:
        for index, remaining in seen:
            remainings[index].append(remaining)
    assert {index: sorted(left) for index, left in remainings.items()} == {
        index: list(range(UNITS)) for index in range(len(kind.keys))
    }
    # One file, no temporary one left, mode exactly 0600; the state outlives the
    # processes: a later opener's query reports every key used up.
    assert os.listdir(tmp_path) == ["table"]
    mode = os.stat(path).st_mode
    assert stat.S_ISREG(mode) and stat.S_IMODE(mode) == 0o600
    denied = denied_decision(algorithm)
    with kind.open(path, **shared_config(algorithm)) as later:
        for key in kind.keys:
            query = kind.acquire(later, key, 0, now_ns=FROZEN)
            assert query == librate.Decision(True, UNITS, 0, 0, denied.reset_after_ns, 0)


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_two_handles_share_one_limit(tmp_path: Path, kind: Kind) -> None:
    # Limit 1 an hour: each key is admitted once through either handle, then denied
    # through the other; a keyed table's keys do not share that one unit.
    path = tmp_path / "table"
    with kind.open(path, limit=1, period=HOUR) as first:
        with kind.open(path, limit=1, period=HOUR) as second:
            for key in kind.keys:
                assert kind.acquire(first, key, now_ns=0).allowed
                assert not kind.acquire(second, key, now_ns=0).allowed


@pytest.mark.parametrize(
    "other",
    [
        {"limit": 11, "period": 1},
        {"limit": 10, "period": 2},
        {"limit": 10, "period": 1, "burst": 5},
        {"limit": 10, "period": 1, "burst": 11},
        {"algorithm": "fixed_window", "limit": 10, "period": 1},
        {"algorithm": "sliding_window", "limit": 10, "period": 1},
        {"algorithm": "sliding_log", "limit": 10, "period": 1},
    ],
)
@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_another_configuration_is_refused_untouched(
    tmp_path: Path, kind: Kind, other: dict[str, Any]
) -> None:
    path = tmp_path / "table"
    before = make_table(kind, path)
    with pytest.raises(librate.Incompatible) as raised:
        kind.open(path, **other)
    assert raised.value.code == -8
    assert path.read_bytes() == before


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_burst_0_and_burst_limit_are_one_table(tmp_path: Path, kind: Kind) -> None:
    # 3 units taken at 1 s with T = 100 ms: TAT = 1.3 s, remaining
    # floor((1 s - 0.3 s) / 100 ms) = 7, reset 300 ms.
    path = tmp_path / "table"
    before = make_table(kind, path)
    with kind.open(path, limit=10, period=1, burst=10) as same:
        query = kind.acquire(same, kind.keys[0], 0, now_ns=SECOND)
        assert query == librate.Decision(True, 10, 7, 0, 300_000_000, 0)
    assert path.read_bytes() == before


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_garbage_or_a_wrong_size_is_refused_untouched(tmp_path: Path, kind: Kind) -> None:
    table = make_table(kind, tmp_path / "model")
    n = len(table)
    twice = table + table
    contents = {
        "garbage": bytes(i * 131 % 251 for i in range(n)),
        "zeros": bytes(n),
        "empty": b"",
        "one byte": table[:1],
        "half": table[: n // 2],
        "8 short": table[: n - 8],
        "1 short": table[: n - 1],
        "1 long": twice[: n + 1],
        "8 long": twice[: n + 8],
        "twice": twice,
    }
    for name, content in contents.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(librate.Incompatible):
            kind.open(path, **GCRA_10)
        assert path.read_bytes() == content, name


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_os_refusals_are_os_errors(tmp_path: Path, kind: Kind) -> None:
    make_table(kind, tmp_path / "plain")
    refusals: list[tuple[Path, type[OSError], int]] = [
        (tmp_path / "none" / "table", FileNotFoundError, errno.ENOENT),
        (tmp_path, IsADirectoryError, errno.EISDIR),
        (tmp_path / "plain" / "table", NotADirectoryError, errno.ENOTDIR),
    ]
    for path, error, number in refusals:
        with pytest.raises(error) as raised:
            kind.open(path, **GCRA_10)
        assert (raised.value.errno, raised.value.filename) == (number, str(path))
    with pytest.raises(librate.InvalidConfig):
        kind.open(tmp_path / "bad", limit=0, period=HOUR)
    assert os.listdir(tmp_path) == ["plain"]  # nothing made on the way


def _as_nobody(kind: Kind, nobody: pwd.struct_passwd, table: Path, open_copy: Path) -> int:
    """In a forked child that becomes nobody: the 0600 table is refused with EACCES, and
    its 0666 copy is attached, state included (3 of 10 units taken at 1 s: 8 more are
    denied), so it is the mode that refuses. 0 if so; 2 if nobody cannot reach the
    directory at all; else 1."""
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)
    try:
        os.stat(open_copy)
    except PermissionError:
        return 2
    try:
        kind.open(table, **GCRA_10).close()
        print("nobody opened root's 0600 table", file=sys.stderr)
        return 1
    except PermissionError as error:
        if error.errno != errno.EACCES:
            print(f"nobody opening root's 0600 table: {error!r}", file=sys.stderr)
            return 1
    with kind.open(open_copy, **GCRA_10) as copy:
        if kind.acquire(copy, kind.keys[0], 8, now_ns=SECOND).allowed:
            print("the copy admitted 8 of its 7 units", file=sys.stderr)
            return 1
    return 0


@pytest.mark.parametrize("kind", KINDS, ids=str)
def test_another_user_cannot_attach(kind: Kind) -> None:
    """A table is mode 0600 (test_processes_and_threads_share_one_limit checks the bits).
    As root, who passes every permission check, a forked child that becomes nobody tries
    to attach; as anyone else, the file made unreadable refuses this very process."""
    # Not tmp_path: pytest's base directory is 0700, and nobody must reach the files.
    with tempfile.TemporaryDirectory(prefix="librate-nobody-") as name:
        directory = Path(name)
        table = directory / "private"
        content = make_table(kind, table)
        if os.geteuid() != 0:
            table.chmod(0)
            with pytest.raises(PermissionError) as raised:
                kind.open(table, **GCRA_10)
            assert raised.value.errno == errno.EACCES
            pytest.skip("not root: this process was refused; another user's attach not tried")
        try:
            nobody = pwd.getpwnam("nobody")
        except KeyError:
            pytest.skip("no user nobody: another user's attach not tried")
        open_copy = directory / "open-to-all"
        open_copy.write_bytes(content)
        open_copy.chmod(0o666)
        directory.chmod(0o755)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _as_nobody(kind, nobody, table, open_copy)
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) == 2:
            pytest.skip(f"nobody cannot reach {directory}: another user's attach not tried")
        assert os.waitstatus_to_exitcode(status) == 0
