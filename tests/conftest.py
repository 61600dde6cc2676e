"""Test-wide settings."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from analyzer.core.cache import CACHE_ENV

# The tests (and the CLI runs they start) keep their cache apart from the user's.
os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="jobdoctor-test-cache-")

# Hypothesis times each example (200 ms) and the making of the inputs (too_slow) by the wall
# clock, which a loaded machine stretches: test_fastpath's serialisations failed "input
# generation is slow" beside other work. What a property test checks is its property; speed
# is bench/'s. A test's own settings replace these fields, so the few that list health checks
# of their own list too_slow as well.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")


def pytest_configure(config: pytest.Config) -> None:
    """Under xdist, the simulator's texts (tests/corpus.py) are made once for all workers, in
    the run's own temporary folder (the parent of each worker's, which pytest cleans up)."""
    basetemp = config.option.basetemp
    if os.environ.get("PYTEST_XDIST_WORKER") and basetemp:
        from tests import corpus

        corpus.share(Path(basetemp).parent / "corpus")


@pytest.fixture(scope="session")
def storage_emulator() -> Iterator[Any]:
    """The Cloud Storage emulator (``tests/storage_emulator.py``) for the whole session, with
    STORAGE_EMULATOR_HOST pointing at it."""
    pytest.importorskip("gcp_storage_emulator", reason="pip install -e '.[test]' installs it")
    from tests.storage_emulator import StorageEmulator

    with StorageEmulator() as emulator:
        yield emulator


@pytest.fixture(scope="session")
def sink_trees(storage_emulator: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The sink trees of ``tests/sink_trees.py``, on disk and uploaded to the emulator."""
    from tests.sink_trees import BUCKET, Tree, make_trees

    trees = {}
    for name, local in make_trees(tmp_path_factory.mktemp("trees")).items():
        storage_emulator.upload_tree(BUCKET, f"{name}/", local)
        trees[name] = Tree(name, local, f"gs://{BUCKET}/{name}/")
    return trees


# In the test process the workers are forked unless a Python thread runs, as `jobdoctor` forks
# them. fork_is_safe() also counts the threads Python does not know (a Jupyter kernel's
# libzmq ones), and here there always are some that are not the program's: xdist's worker
# runs execnet's I/O thread, and modules the suite imports start their own (duckdb's pool in
# test_bigquery_sql, pyarrow's jemalloc thread through google.cloud.bigquery). So every run over
# processes in the suite spawned a new interpreter per worker, 0.1-0.3 s each, most of the
# suite's time, and tested the spawned path where the command forks. Those threads are idle
# and the workers take none of their locks. A thread a test starts still makes the workers
# spawn (test_fork_safety, test_progress), test_processes chooses the start itself, and
# test_fork_safety runs the real check of library threads in fresh interpreters.
#
# The storage emulator's threads (a session fixture's HTTP server and its connections) count
# only in the tests that use it: in the others nothing sends it a request, so its threads wait
# in select() and recv() holding no lock. Counted there too, every run over processes after
# the first test of Cloud Storage in an xdist worker spawned: with worksteal, a worker that
# took the emulator's tests from the end of the other's queue then took more of its tests
# (23 of test_fast_readers' cases at 29.6 s of CPU against 21.4 s for the 455 before them).
_emulator_in_use = False


def pytest_runtest_setup(item: pytest.Item) -> None:
    global _emulator_in_use
    _emulator_in_use = "storage_emulator" in getattr(item, "fixturenames", ())


def _no_other_python_thread() -> bool:
    """:func:`analyzer.core.processes.fork_is_safe` without the count of non-Python threads,
    nor the storage emulator's threads outside its tests."""
    from tests.storage_emulator import EMULATOR_THREADS

    this = threading.current_thread()
    others = [thread for thread in threading.enumerate() if thread is not this]
    if not _emulator_in_use:
        others = [thread for thread in others if thread.name != EMULATOR_THREADS]
    return not others


@pytest.fixture(autouse=True, scope="session")
def _fork_as_the_command_does() -> Iterator[None]:
    from analyzer.core import processes

    original = processes.fork_is_safe
    processes.fork_is_safe = _no_other_python_thread
    try:
        yield
    finally:
        processes.fork_is_safe = original


# Tests that leave a Python thread running: the storage emulator (a session fixture's HTTP
# server; not counted outside its tests, above) and distributed's IO loop, which a closed
# Client leaves (test_dask stops it after the module). They run last, where a thread left
# running costs least.
_LEAVE_THREADS_RUNNING = ("tests/test_dask.py::",)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Items that leave threads running go to the end, each group in its collected order."""

    def last(item: pytest.Item) -> bool:
        return "storage_emulator" in getattr(item, "fixturenames", ()) or item.nodeid.startswith(
            _LEAVE_THREADS_RUNNING
        )

    items.sort(key=last)
