"""Work for tests of worker processes that holds whatever the machine's load: a task waits
until the other processes have begun theirs, instead of sleeping and hoping they have.

On a loaded machine a spawned worker's interpreter can take seconds to start, and the caller
(which takes tasks too) would otherwise have done every task by then. The processes meet
through files in a folder, since a spawned worker shares no memory with the caller. Each wait
is bounded, far past any start: a worker that never comes fails the test instead of leaving
the others waiting forever.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

# Far past any start on a loaded machine; only a worker that never starts waits this long.
PATIENCE_S = 120.0


def wait_for(folder: Path, count: int) -> None:
    """Return once ``folder`` holds ``count`` entries (or fail after :data:`PATIENCE_S`)."""
    started = time.monotonic()
    while len(os.listdir(folder)) < count:
        assert time.monotonic() - started < PATIENCE_S, f"{folder}: fewer than {count} came"
        time.sleep(0.005)


def pid_once_all_started(folder: str, processes: int, _: object) -> int:
    """This process's pid, once ``processes`` processes have each begun a task: then every
    process takes at least one, whatever the timing. Each leaves a file named after its pid."""
    (Path(folder) / str(os.getpid())).touch()
    wait_for(Path(folder), processes)
    return os.getpid()


def killed_in_a_worker(folder: str, task: tuple[int, int]) -> int:
    """``task`` is (the caller's pid, a value): a worker leaves a file and kills itself; the
    caller returns the value once a worker has done so, so a worker surely takes a task."""
    caller, value = task
    if os.getpid() != caller:
        (Path(folder) / str(os.getpid())).touch()
        os.kill(os.getpid(), signal.SIGKILL)
    wait_for(Path(folder), 1)
    return value
