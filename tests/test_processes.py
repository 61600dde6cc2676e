"""The forked workers behind the parallel scan: every task once, failures brought home."""

from __future__ import annotations

import os
import signal
import time
from functools import partial
from pathlib import Path

import pytest

from analyzer.core.processes import Start, WorkerDied, run_forked, run_streamed
from tests.rendezvous import killed_in_a_worker, pid_once_all_started

# Forked workers, and spawned ones (what a process running other threads starts).
START: list[Start] = ["fork", "spawn"]


def _square(value: int) -> int:
    return value * value


def _pid(_: int) -> int:
    return os.getpid()


@pytest.mark.parametrize("count", [1, 2, 7, 1024, 1025, 5000])
@pytest.mark.parametrize(
    ("processes", "start"), [(1, None), (2, "fork"), (3, "fork"), (3, "spawn")]
)
def test_every_task_runs_once(count: int, processes: int, start: Start) -> None:
    # Over 1,024 tasks, tokens stand for groups of tasks: every task still runs exactly once.
    results = dict(run_forked(list(range(count)), _square, processes, start=start))
    assert results == {index: index * index for index in range(count)}


@pytest.mark.parametrize("start", START)
def test_tasks_are_shared_between_this_process_and_the_workers(
    start: Start, tmp_path: Path
) -> None:
    work = partial(pid_once_all_started, str(tmp_path), 3)
    found = dict(run_forked(list(range(200)), work, 3, start=start))
    assert sorted(found) == list(range(200))
    assert len(set(found.values())) == 3 and os.getpid() in found.values()


def test_one_process_is_this_one() -> None:
    assert {pid for _, pid in run_forked(list(range(20)), _pid, 1)} == {os.getpid()}


def _slow_pid(_: int) -> int:
    # Not instant: stopping early finds the workers with tasks left (whether they have begun
    # any or not, none may be left behind).
    time.sleep(0.01)
    return os.getpid()


def test_no_tasks_still_runs_the_waiting_work() -> None:
    called: list[bool] = []
    assert list(run_forked([], _square, 2, lambda: called.append(True))) == []
    assert called == [True]


def test_waiting_work_runs_before_this_process_works() -> None:
    called: list[int] = []
    results = run_forked([1, 2, 3], _square, 2, lambda: called.append(os.getpid()))
    assert called == []
    assert sorted(value for _, value in results) == [1, 4, 9]
    assert called == [os.getpid()]


class Boom(ValueError):
    """An error raised inside a worker."""


def _fail_on_three(value: int) -> int:
    if value == 3:
        raise Boom(f"task {value} failed")
    return value


@pytest.mark.parametrize("start", START)
def test_an_exception_in_a_worker_is_raised_here(start: Start) -> None:
    with pytest.raises(Boom, match="task 3 failed"):
        list(run_forked(list(range(6)), _fail_on_three, 2, start=start))


@pytest.mark.parametrize("start", START)
def test_a_killed_worker_is_reported(start: Start, tmp_path: Path) -> None:
    # The caller's pid travels with the task: a spawned worker has its own. The caller's
    # first task waits until the worker has taken one (and died of it).
    tasks = [(os.getpid(), n) for n in range(100)]
    with pytest.raises(WorkerDied, match="killed by signal SIGKILL"):
        list(run_forked(tasks, partial(killed_in_a_worker, str(tmp_path)), 2, start=start))


@pytest.mark.parametrize("start", START)
def test_large_results_cross_the_pipe_whole(start: Start) -> None:
    # Several megabytes per result: more than a pipe holds, read while the workers write.
    results = dict(run_forked([3, 5, 7, 11], _blob, 2, start=start))
    assert results == {index: _blob(value) for index, value in enumerate([3, 5, 7, 11])}


def _blob(value: int) -> bytes:
    return bytes([value]) * (3 << 20)


@pytest.mark.parametrize("start", START)
def test_stopping_early_reaps_the_workers(start: Start) -> None:
    results = run_forked(list(range(50)), _slow_pid, 2, start=start)
    next(results)
    results.close()
    # No child is left behind: waiting for any child finds none.
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_process_count_where_fork_or_affinity_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from analyzer.classify._fastscan.parallel import PARALLEL_MIN_WORK, processes_for

    monkeypatch.delenv("JOBDOCTOR_JOBS", raising=False)
    big = PARALLEL_MIN_WORK * 4
    # macOS: no sched_getaffinity, so every core counts.
    monkeypatch.delattr(os, "sched_getaffinity")
    assert processes_for(big, None) == max(1, os.cpu_count() or 1)
    assert processes_for(1, None) == 1
    # Windows: no fork, so one process, whatever is asked.
    monkeypatch.delattr(os, "fork")
    assert processes_for(big, None) == 1
    assert processes_for(big, 4) == 1


def _size_and_head(index: int, item: bytes) -> tuple[int, int, bytes]:
    return index, len(item), item[:3]


@pytest.mark.parametrize(
    ("processes", "start"), [(1, "fork"), (2, "fork"), (3, "fork"), (2, "spawn")]
)
def test_streamed_items_each_reach_one_worker_whole(processes: int, start: Start) -> None:
    # Items in two parts arrive joined; large ones (more than a pipe holds) arrive whole.
    items = [(b"ab", bytes([index % 256]) * (index * 7_919 % 300_000)) for index in range(60)]
    results = dict(run_streamed(iter(items), _size_and_head, processes, start=start))
    assert sorted(results) == list(range(60))
    for index, (first, second) in enumerate(items):
        assert results[index] == (index, len(first) + len(second), (first + second)[:3])


def test_streamed_nothing() -> None:
    assert list(run_streamed(iter([]), _size_and_head, 2)) == []


def _fail_on_five(index: int, item: bytes) -> int:
    if index == 5:
        raise Boom("item 5 failed")
    return len(item)


@pytest.mark.parametrize("start", START)
def test_a_streamed_worker_failure_is_raised_here(start: Start) -> None:
    with pytest.raises(Boom, match="item 5 failed"):
        list(run_streamed(iter([(b"x",)] * 20), _fail_on_five, 2, start=start))


def _die_on_three(index: int, item: bytes) -> int:
    if index == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return len(item)


@pytest.mark.parametrize("start", START)
def test_a_killed_streamed_worker_is_reported(start: Start) -> None:
    with pytest.raises(WorkerDied, match="killed by signal SIGKILL"):
        list(run_streamed(iter([(b"x" * 1000,)] * 30), _die_on_three, 2, start=start))


@pytest.mark.parametrize("start", START)
def test_stopping_a_stream_early_reaps_the_workers(start: Start) -> None:
    results = run_streamed(iter([(b"y" * 10,)] * 100), _size_and_head, 2, start=start)
    next(results)
    results.close()
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)
