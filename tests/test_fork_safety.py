"""Workers are forked only while no other thread runs (a Jupyter kernel runs several): else
they are spawned, with the same result, no warning and no hang.

The hang is real, not a figure of speech: a fork copies a lock another thread holds, held,
and the child that needs it waits forever. :class:`GuardedBook` takes such a lock on every
match; the tests hold it in a thread while the workers start.
"""

from __future__ import annotations

import gzip
import os
import random
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from analyzer.api import Analysis
from analyzer.classify.collector import collect
from analyzer.core.processes import fork_is_safe, run_forked, run_streamed
from analyzer.ingest import open_sources
from analyzer.rulebook import RuleBook
from analyzer.rulebook.events import RuleMatch
from analyzer.simulate import fleet
from analyzer.timeline.attempts import build_timeline
from analyzer.verdict.policy import load_policy
from analyzer.verdict.predict import diagnose_timeline
from tests.rendezvous import pid_once_all_started

ROOT = Path(__file__).resolve().parents[1]
# Long enough for any spawned worker to start on a loaded 2-core machine; a forked worker
# waiting on the held lock never returns at all.
DEADLINE_S = 60

# The lock every match takes (a module global: a spawned worker imports its own, free).
_HELD = threading.Lock()


class GuardedBook:
    """A rule book whose every match first takes :data:`_HELD`, as code under a logging
    handler or an allocator takes theirs."""

    def __init__(self, book: RuleBook) -> None:
        self._book = book

    @property
    def timeouts(self) -> Counter[str]:
        return self._book.timeouts

    def match(self, text: str) -> tuple[RuleMatch, ...]:
        with _HELD:
            pass
        return self._book.match(text)

    def may_match_texts(self, texts: Sequence[str]) -> list[int]:
        return self._book.may_match_texts(texts)


@contextmanager
def lock_held_by_a_thread(seconds: float = 0.5) -> Iterator[threading.Thread]:
    """A thread that holds :data:`_HELD` for ``seconds`` from now, then stays alive until the
    block ends (a kernel's threads never end)."""
    taken = threading.Event()
    done = threading.Event()

    def hold() -> None:
        with _HELD:
            taken.set()
            time.sleep(seconds)
        done.wait()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    taken.wait()
    try:
        yield thread
    finally:
        done.set()
        thread.join()


@contextmanager
def deadline(seconds: int = DEADLINE_S) -> Iterator[None]:
    """Fail (rather than hang the suite) when the block lasts longer than ``seconds``."""

    def expired(signum: int, frame: Any) -> None:
        raise TimeoutError(f"still running after {seconds} s: a worker hangs")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def no_fork_warning() -> Iterator[None]:
    """Python 3.12+ warns (DeprecationWarning) when a process with threads forks."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    assert [str(w.message) for w in caught if "fork" in str(w.message)] == []


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


def _analysis(paths: list[str], book: Any, *, fast: bool, processes: int = 1) -> object:
    logs, stats = collect(open_sources(paths), book, fast=fast, processes=processes)
    policy = load_policy()
    diagnoses = tuple(diagnose_timeline(build_timeline(log), policy) for log in logs)
    return Analysis(tuple(stats), diagnoses).to_dict()


@pytest.fixture(scope="module")
def fleet_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fork") / "fleet.jsonl"
    with path.open("wb") as stream:
        stream.writelines(fleet(3_000_000, seed=random.randrange(1000)))
    return path


def test_a_thread_makes_forking_unsafe() -> None:
    # In a fresh interpreter: this test process may run threads of other tests' servers.
    code = (
        "import threading\n"
        "from analyzer.core.processes import fork_is_safe\n"
        "print(fork_is_safe())\n"
        "stop = threading.Event()\n"
        "threading.Thread(target=stop.wait).start()\n"
        "print(fork_is_safe())\n"
        "stop.set()\n"
    )
    assert _python(code) == ["True", "False"]


def test_a_thread_python_does_not_know_makes_forking_unsafe() -> None:
    # libzmq's I/O thread, as in every Jupyter kernel: started in C, unseen by threading.
    pytest.importorskip("zmq", reason="pyzmq comes with ipykernel, in the test extra")
    code = (
        "import threading, zmq\n"
        "from analyzer.core.processes import fork_is_safe\n"
        "print(fork_is_safe())\n"
        "context = zmq.Context()\n"
        "socket = context.socket(zmq.PUB)\n"
        "print(threading.active_count(), fork_is_safe())\n"
        "socket.close(); context.term()\n"
    )
    assert _python(code) == ["True", "1 False"]


def _python(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def test_a_diagnosis_with_a_thread_holding_a_lock_is_the_same(
    book: RuleBook, fleet_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analyzer.classify._fastscan.parallel as parallel

    # Many ranges: the workers surely match lines while the thread holds the lock.
    monkeypatch.setattr(parallel, "MIN_RANGE_BYTES", 256 << 10)
    expected = _analysis([str(fleet_file)], book, fast=False)
    with lock_held_by_a_thread(), deadline(), no_fork_warning():
        found = _analysis([str(fleet_file)], GuardedBook(book), fast=True, processes=2)
    assert found == expected


def test_a_streamed_scan_with_a_thread_holding_a_lock_is_the_same(
    book: RuleBook, fleet_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analyzer.classify._fastscan.parallel as parallel

    # One gzip file: read here and handed to the workers in chunks, many of them.
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 256 << 10)
    packed = tmp_path / "fleet.jsonl.gz"
    packed.write_bytes(gzip.compress(fleet_file.read_bytes(), compresslevel=1))
    expected = _analysis([str(packed)], book, fast=False)
    with lock_held_by_a_thread(), deadline(), no_fork_warning():
        found = _analysis([str(packed)], GuardedBook(book), fast=True, processes=2)
    assert found == expected


def _square(value: int) -> int:
    return value * value


def _item_pid(index: int, data: bytes) -> tuple[int, int]:
    return len(data), os.getpid()


def test_spawned_workers_share_the_tasks_with_this_process(tmp_path: Path) -> None:
    # Each task waits until all three processes have begun one (tests/rendezvous.py).
    work = partial(pid_once_all_started, str(tmp_path), 3)
    with lock_held_by_a_thread(0), deadline(), no_fork_warning():
        assert not fork_is_safe()
        found = dict(run_forked(list(range(200)), work, 3))
        assert dict(run_forked(list(range(50)), _square, 2)) == {n: n * n for n in range(50)}
    # Every task done once, by this process and two spawned workers, each of which took tasks.
    assert sorted(found) == list(range(200))
    assert len(set(found.values())) == 3 and os.getpid() in found.values()
    assert {int(name) for name in os.listdir(tmp_path)} == set(found.values())


def test_spawned_streamed_workers_get_every_item_whole() -> None:
    items = [(b"a" * n, b"b") for n in range(40)]
    with lock_held_by_a_thread(0), deadline(), no_fork_warning():
        found = dict(run_streamed(iter(items), _item_pid, 2))
    assert {index: size for index, (size, _) in found.items()} == {n: n + 1 for n in range(40)}
    assert os.getpid() not in {pid for _, pid in found.values()}


def test_work_that_does_not_pickle_is_done_here() -> None:
    offset = 1
    add: Callable[[int], int] = lambda value: value + offset  # noqa: E731
    with lock_held_by_a_thread(0), deadline(), no_fork_warning():
        assert dict(run_forked(list(range(20)), add, 3)) == {n: n + 1 for n in range(20)}
        streamed = dict(run_streamed(iter([(b"xy",), (b"z",)]), lambda i, d: (i, d), 2))
    assert streamed == {0: (0, b"xy"), 1: (1, b"z")}


def test_work_of_main_is_done_here() -> None:
    # A notebook cell's function: pickled by name, and a new interpreter's __main__ lacks it.
    code = (
        "import os, threading\n"
        "from analyzer.core.processes import run_forked\n"
        "def pid(value):\n"
        "    return value, os.getpid()\n"
        "threading.Thread(target=threading.Event().wait, daemon=True).start()\n"
        "found = dict(run_forked(list(range(30)), pid, 3))\n"
        "print(sorted(v for v, _ in found.values()) == list(range(30)))\n"
        "print({p for _, p in found.values()} == {os.getpid()})\n"
    )
    assert _python(code) == ["True", "True"]


def _fail(value: int) -> int:
    raise ValueError(f"task {value} failed in {os.getpid()}")


def test_a_spawned_workers_failure_is_raised_here() -> None:
    with lock_held_by_a_thread(0), deadline(), pytest.raises(ValueError, match="failed"):
        list(run_forked(list(range(6)), _fail, 2))


def test_a_parallel_diagnosis_in_a_jupyter_kernel(fleet_file: Path) -> None:
    # Where the issue was seen: a kernel runs threads (heartbeat, IOPub, libzmq's own).
    nbformat = pytest.importorskip("nbformat", reason="nbformat is in the test extra")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is in the test extra")
    pytest.importorskip("ipykernel", reason="ipykernel is in the test extra")
    cell = (
        "import sys, warnings\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "import analyzer.classify._fastscan.parallel as parallel\n"
        "from analyzer.core.processes import fork_is_safe\n"
        "from analyzer.rulebook import RuleBook\n"
        "from tests.test_fork_safety import _analysis\n"
        "parallel.MIN_RANGE_BYTES = 256 << 10\n"
        "book = RuleBook.load()\n"
        f"paths = [{str(fleet_file)!r}]\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    found = _analysis(paths, book, fast=True, processes=2)\n"
        "print(fork_is_safe(), found == _analysis(paths, book, fast=False),"
        " [str(w.message) for w in caught if 'fork' in str(w.message)])\n"
    )
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(cell)]
    nbclient.NotebookClient(notebook, timeout=DEADLINE_S, kernel_name="python3").execute()
    (output,) = notebook.cells[0].outputs
    assert output["text"].split() == ["False", "True", "[]"]
