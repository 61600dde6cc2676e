"""Running tasks in worker processes (forked, or spawned where a fork is unsafe), with pipes only.

``multiprocessing.Pool`` costs about 30 ms before its first task runs (its import, handler
threads, a queue per direction), a tenth of a large scan here. Measured by
``bench/library_choices.py pool`` (a fresh interpreter, 2 processes, 64 tasks each counting the
lines of 1 MB of a sink file, start-up included; CPU medians of 15 interleaved runs on the
2-core host, loaded): :func:`run_forked` 87 ms, ``multiprocessing.Pool`` 123 ms,
``concurrent.futures.ProcessPoolExecutor`` 117 ms, the same counts. The scan needs only this: forked
workers that share the parent's memory (the loaded rule book), take the next task when they
are free, and send each result back when it is done.

- The tasks are handed out through one pipe holding a token per group of tasks, written at
  once before forking. Each token is 4 bytes and the whole write fits in ``PIPE_BUF``, so it is
  atomic and no reader ever gets half a token: a worker reads a token, runs its tasks, and
  reads the next one until the pipe is empty.
- The caller is one of the processes: after its own work that can overlap the scan
  (``while_waiting``), it takes tasks like the workers, and between two of them reads what the
  workers sent. With as many processes as cores, nothing waits for a core.
- Each worker sends its results on a pipe of its own (made large, so that it rarely waits for
  the caller to read), each a length-prefixed pickle, as soon as it has one, so the caller can
  show progress; a task that takes long can also tell how far it has got
  (:func:`tell_progress`) on the same pipe.
- A worker that fails sends the exception, which the caller raises. A worker that dies without
  a word (killed) is reported as such. Workers leave with ``os._exit``: never through the
  caller's stack.
- Forking copies only the thread that forks: a lock another thread held at that moment stays
  held in the child forever, and a child that needs it hangs (Python 3.12 warns about such a
  fork). So workers are forked only while this process runs no other thread
  (:func:`fork_is_safe`: a Jupyter kernel, a Dask client, a BLAS pool all run threads). Else
  they are spawned: a new interpreter started by ``posix_spawn`` (no Python code runs between
  the fork and the exec), given the same pipes and, through one more pipe, the pickled work;
  from there on it is the same worker. Work that does not pickle is done in this process.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import sys
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from contextvars import ContextVar
from functools import partial
from typing import BinaryIO, Literal, TypeVar, cast

from analyzer.core.errors import JobDoctorError

T = TypeVar("T")
R = TypeVar("R")
# How workers start: None decides by :func:`fork_is_safe`; the tests choose.
Start = Literal["fork", "spawn"] | None

# A token is a 4-byte task group number; the token pipe is written once, atomically.
_TOKEN = struct.Struct("<I")
_MAX_TOKENS = getattr(select, "PIPE_BUF", 512) // _TOKEN.size  # POSIX: at least 512
_LENGTH = struct.Struct("<Q")
_ITEM = struct.Struct("<QQ")  # a streamed item's index and size
_READ_BYTES = 1 << 20
_PIPE_BYTES = 1 << 20


# What a spawned worker runs: the caller's import path first (a notebook's folder, a source
# tree), then the work, read from the boot pipe (its descriptor numbers are the arguments).
# Ctrl-C is the caller's to handle: it stops the workers.
_BOOT = """\
import os, pickle, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
boot = os.fdopen(int(sys.argv[1]), "rb")
sys.path[:] = pickle.load(boot)
from analyzer.core.processes import _spawned
_spawned(boot, int(sys.argv[2]), int(sys.argv[3]))
"""


# Where tell_progress sends what a task tells while it runs: to the caller's pipe in a worker,
# to the caller's on_progress when this process runs the task itself.
_told: ContextVar[Callable[[int], None] | None] = ContextVar("told", default=None)


def tell_progress(amount: int) -> None:
    """From inside a task's work: tell the caller of :func:`run_forked` ``amount`` more of the
    task is done (its ``on_progress``, with the task's index), now rather than when the task
    ends. Nothing when nobody listens."""
    told = _told.get()
    if told is not None:
        told(amount)


class WorkerDied(JobDoctorError):
    """A worker process ended without sending its results (killed by a signal, say)."""


def fork_is_safe() -> bool:
    """Whether this process may fork now: it runs no thread but this one.

    Python knows the threads it started; a library's own (libzmq's in a Jupyter kernel, a
    BLAS pool) it does not, so on Linux the kernel's count of them decides.
    """
    if threading.active_count() > 1:
        return False
    try:
        return len(os.listdir("/proc/self/task")) <= 1
    except OSError:  # no /proc (macOS, say): Python's count is all there is
        return True


def _spawning(start: Start) -> bool:
    return start == "spawn" if start is not None else not fork_is_safe()


def _spawnable(serve: Callable[[int, int], None]) -> bytes | None:
    """``serve`` pickled for spawned workers; None when it does not pickle, names what only
    this process has (``__main__``), or when no interpreter can be started (an embedded
    Python): then the work is done here."""
    if not sys.executable or not hasattr(os, "posix_spawn"):
        return None
    try:
        blob = pickle.dumps(serve, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None
    # A function of __main__ (a notebook cell, a script) is pickled by name, and a new
    # interpreter's __main__ has none. (The bytes may also be data that says __main__: then
    # this process works alone, for nothing worse than time.)
    return None if b"__main__" in blob else blob


def _start(serve: Callable[[int, int], None], source: int, out: int, spawned: bytes | None) -> int:
    """Start a worker that runs ``serve(source, out)`` and exits, and return its pid: forked,
    or, given the pickled ``serve`` (``spawned``), a new interpreter. Every other pipe of
    this process is closed in a spawned worker (they are not inheritable); a forked one
    closes what it must itself."""
    if spawned is None:
        pid = os.fork()
        if pid == 0:  # the worker
            _live(out, partial(serve, source, out))
        return pid
    boot_read, boot_write = os.pipe()
    try:
        _enlarge(boot_write)
        # dup2 onto numbers above every one moved, so that no move overwrites another's
        # source; the copies are inheritable, the originals stay closed on exec.
        base = max(boot_read, source, out) + 1
        moves = [
            (os.POSIX_SPAWN_DUP2, fd, base + n) for n, fd in enumerate((boot_read, source, out))
        ]
        # stdin is the caller's (it may be reading it): the worker gets nothing there.
        quiet = (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0)
        argv = [
            sys.executable,
            *_interpreter_flags(),
            "-c",
            _BOOT,
            *map(str, range(base, base + 3)),
        ]
        pid = os.posix_spawn(sys.executable, argv, os.environ, file_actions=[*moves, quiet])
        os.close(boot_read)
        boot_read = -1
        with contextlib.suppress(BrokenPipeError):  # it died first: its exit status tells
            _write_all(boot_write, pickle.dumps(sys.path) + spawned)
    finally:
        if boot_read != -1:
            os.close(boot_read)
        os.close(boot_write)
    return pid


def _interpreter_flags() -> list[str]:
    """This interpreter's command-line flags (``-X``, ``-W``, ``-I``...), for a worker."""
    import subprocess

    # What multiprocessing's spawn passes too; private, so absent where it is not.
    flags = getattr(subprocess, "_args_from_interpreter_flags", None)
    return [str(flag) for flag in flags()] if callable(flags) else []


def _spawned(boot: BinaryIO, source: int, out: int) -> None:
    """A spawned worker's life (:data:`_BOOT`): read the work, then as a forked worker."""

    def serve() -> None:
        with boot:
            work = cast(Callable[[int, int], None], pickle.load(boot))
        work(source, out)

    _live(out, serve)


def run_forked(
    tasks: Sequence[T],
    work: Callable[[T], R],
    processes: int,
    while_waiting: Callable[[], None] | None = None,
    *,
    on_progress: Callable[[int, int], None] | None = None,
    start: Start = None,
) -> Generator[tuple[int, R], None, None]:
    """``(index, work(tasks[index]))`` for every task, in the order they finish, computed by
    ``processes`` processes: this one and ``processes - 1`` forked workers.

    ``while_waiting`` runs here once the workers have started, before this process takes its
    first task: with one process per core, that work then shares no core with the workers'.
    Results travel by pickle. An exception raised by ``work`` is raised here. What a task
    tells of its progress (:func:`tell_progress`) is given to ``on_progress(index, amount)``,
    from a worker when this process next reads the workers' pipes. While another
    thread runs here, the workers are spawned (:func:`fork_is_safe`): ``tasks`` and ``work``
    then travel by pickle too, or, where they do not pickle, this process does every task.
    """
    if not tasks:
        if while_waiting is not None:
            while_waiting()
        return
    group = -(-len(tasks) // _MAX_TOKENS)
    serve = partial(_serve, tasks, work, group, on_progress is not None)
    spawned = None
    if processes > 1 and _spawning(start):
        spawned = _spawnable(serve)
        if spawned is None:
            processes = 1
    groups = -(-len(tasks) // group)
    token_read, token_write = os.pipe()
    os.write(token_write, b"".join(_TOKEN.pack(number) for number in range(groups)))
    os.close(token_write)
    workers: dict[int, int] = {}  # result pipe -> pid
    try:
        for _ in range(min(processes, groups) - 1):
            result_read, result_write = os.pipe()
            _enlarge(result_write)
            pid = _start(
                partial(_closing, (result_read,), serve), token_read, result_write, spawned
            )
            os.close(result_write)
            workers[result_read] = pid
        if while_waiting is not None:
            while_waiting()
        received = {fd: bytearray() for fd in workers}
        # This process takes task groups too; between tasks it reads what the workers sent.
        while token := os.read(token_read, _TOKEN.size):
            (number,) = _TOKEN.unpack(token)
            for index in range(number * group, min(len(tasks), (number + 1) * group)):
                yield index, _run(work, tasks[index], index, on_progress)
                for done, result in _results(workers, received, on_progress, wait=False):
                    yield done, cast(R, result)
        for done, result in _results(workers, received, on_progress, wait=True):
            yield done, cast(R, result)
    finally:
        os.close(token_read)
        _stop(workers)


def run_streamed(
    items: Iterator[Sequence[bytes | memoryview]],
    work: Callable[[int, bytes], R],
    processes: int,
    *,
    in_flight: int = 2,
    start: Start = None,
) -> Generator[tuple[int, R], None, None]:
    """``(index, work(index, item))`` for every item, in the order they finish, computed by
    ``processes`` forked workers while this process produces the items (reading a stream).
    An item is given in parts, which the worker receives joined (so they are not joined here).

    Unlike :func:`run_forked`, the work is not known before forking: each item is sent to a
    worker through a pipe of its own, the least busy first, with at most ``in_flight`` items
    waiting per worker (so at most that many items are held here). A worker ends when its pipe
    is closed. Results travel by pickle; an exception raised by ``work`` is raised here. While
    another thread runs here, the workers are spawned (:func:`fork_is_safe`) and ``work``
    travels by pickle too; where it does not pickle, this process does the work as it reads.
    """
    serve = partial(_serve_items, work)
    spawned = None
    if _spawning(start):
        spawned = _spawnable(serve)
        if spawned is None:
            for index, item in enumerate(items):
                yield index, work(index, b"".join(item))
            return
    inboxes: dict[int, int] = {}  # worker's input pipe (written here) -> its result pipe
    workers: dict[int, int] = {}  # result pipe -> pid
    try:
        for _ in range(max(1, processes)):
            item_read, item_write = os.pipe()
            result_read, result_write = os.pipe()
            _enlarge(item_write)
            _enlarge(result_write)
            # A forked worker closes the other workers' pipes: its own input must end when
            # this process closes it.
            unused = (item_write, result_read, *inboxes, *workers)
            pid = _start(partial(_closing, unused, serve), item_read, result_write, spawned)
            os.close(item_read)
            os.close(result_write)
            os.set_blocking(item_write, False)
            inboxes[item_write] = result_read
            workers[result_read] = pid
        yield from _distribute(items, inboxes, workers, in_flight)
    finally:
        for fd in inboxes:
            os.close(fd)
        _stop(workers)


def _distribute(
    items: Iterator[Sequence[bytes | memoryview]],
    inboxes: dict[int, int],
    workers: dict[int, int],
    in_flight: int,
) -> Iterator[tuple[int, R]]:
    """Send ``items`` to the workers' input pipes (``inboxes``, closed here once drained) and
    yield the workers' results as they come, until every worker has closed its result pipe."""
    waiting = dict.fromkeys(inboxes, 0)  # items sent to each open input pipe, not yet answered
    unsent: dict[int, list[memoryview]] = {fd: [] for fd in inboxes}
    inbox_of = {result: inbox for inbox, result in inboxes.items()}
    received = {fd: bytearray() for fd in workers}
    index = 0
    more = True
    while received:
        if more:
            index, more = _queue_items(items, waiting, unsent, in_flight, index)
        if not more:
            # Nothing more to send: a worker whose pipe is drained gets its end of input.
            for inbox in [fd for fd in waiting if not unsent[fd]]:
                _close_inbox(inbox, inboxes, waiting, unsent)
        writable = [fd for fd in waiting if unsent[fd]]
        readable, can_write, _ = select.select(list(received), writable, [])
        for inbox in can_write:
            if not _write_some(inbox, unsent[inbox]):  # the worker is gone: its pipe says why
                _close_inbox(inbox, inboxes, waiting, unsent)
        for fd in readable:
            # A worker whose input is still open has ended before taking all it was sent.
            early = inbox_of[fd] in waiting
            for done, result in _receive(fd, received, workers, ended_early=early):
                if inbox_of[fd] in waiting:
                    waiting[inbox_of[fd]] -= 1
                yield done, cast(R, result)


def _queue_items(
    items: Iterator[Sequence[bytes | memoryview]],
    waiting: dict[int, int],
    unsent: dict[int, list[memoryview]],
    in_flight: int,
    index: int,
) -> tuple[int, bool]:
    """Queue the next ``items`` (numbered from ``index``) for the least busy workers, until
    each has ``in_flight`` unanswered; the next index, and whether items may remain."""
    while waiting:
        inbox = min(waiting, key=waiting.__getitem__)  # the least busy worker
        if waiting[inbox] >= in_flight:
            break
        item = next(items, None)
        if item is None:
            return index, False
        parts = [memoryview(part) for part in item]
        size = sum(part.nbytes for part in parts)
        unsent[inbox] += [memoryview(_ITEM.pack(index, size)), *parts]
        waiting[inbox] += 1
        index += 1
    return index, True


def _close_inbox(
    inbox: int,
    inboxes: dict[int, int],
    waiting: dict[int, int],
    unsent: dict[int, list[memoryview]],
) -> None:
    os.close(inbox)
    del inboxes[inbox], waiting[inbox], unsent[inbox]


def _write_some(fd: int, queue: list[memoryview]) -> bool:
    """Write what ``fd`` takes now of ``queue``; False when its reader has gone."""
    while queue:
        try:
            written = os.write(fd, queue[0])
        except BlockingIOError:
            return True
        except BrokenPipeError:
            queue.clear()
            return False
        if written < len(queue[0]):
            queue[0] = queue[0][written:]
            return True
        queue.pop(0)
    return True


def _closing(fds: Sequence[int], serve: Callable[[int, int], None], source: int, out: int) -> None:
    """``serve(source, out)`` in a forked worker, once it has closed ``fds``: pipes of this
    process it inherited. A spawned worker never had them (they are not inheritable)."""
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    serve(source, out)


def _serve_items(work: Callable[[int, bytes], R], items: int, out: int) -> None:
    """A streamed worker's work: take items from ``items`` until it ends, send each result."""
    with os.fdopen(items, "rb", buffering=_READ_BYTES) as source:
        while header := source.read(_ITEM.size):
            index, size = _ITEM.unpack(header)
            _send(out, ("done", index, work(index, source.read(size))))


def _enlarge(pipe: int) -> None:
    """Room in ``pipe`` for a few results: a worker need not wait while this process works.
    (Linux only; elsewhere the pipe keeps its size.)"""
    try:
        import fcntl

        fcntl.fcntl(pipe, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (ImportError, AttributeError, OSError):
        pass


def _run(
    work: Callable[[T], R], task: T, index: int, on_progress: Callable[[int, int], None] | None
) -> R:
    """``work(task)`` in this process, what it tells of its progress given to ``on_progress``."""
    if on_progress is None:
        return work(task)
    token = _told.set(partial(on_progress, index))
    try:
        return work(task)
    finally:
        _told.reset(token)


def _serve(
    tasks: Sequence[T],
    work: Callable[[T], R],
    group: int,
    telling: bool,
    tokens: int,
    out: int,
) -> None:
    """A worker's work: take task groups until none are left, send each result (and, when the
    caller listens, what each task tells of its progress)."""
    while token := os.read(tokens, _TOKEN.size):
        (number,) = _TOKEN.unpack(token)
        for index in range(number * group, min(len(tasks), (number + 1) * group)):
            if telling:
                _told.set(partial(_tell, out, index))
            _send(out, ("done", index, work(tasks[index])))


def _tell(out: int, index: int, amount: int) -> None:
    _send(out, ("told", index, amount))


def _live(out: int, serve: Callable[[], None]) -> None:
    """A worker's life: ``serve``, send its failure if it fails, and exit, never returning
    into the caller's stack."""
    code = 0
    try:
        serve()
    except BaseException as error:  # every failure goes back to the caller
        code = 1
        # Unless it cannot be pickled, or the caller is gone: then the exit status tells.
        with contextlib.suppress(BaseException):
            _send(out, ("failed", -1, error))
    finally:
        os._exit(code)


def _send(out: int, message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    _write_all(out, _LENGTH.pack(len(data)) + data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _results(
    workers: dict[int, int],
    received: dict[int, bytearray],
    on_progress: Callable[[int, int], None] | None,
    *,
    wait: bool,
) -> Iterator[tuple[int, object]]:
    """The workers' results: those that have arrived, or (``wait``) all of them, until every
    worker has closed its pipe (what tasks told of their progress goes to ``on_progress``).
    A worker that closed its pipe is reaped."""
    while received:
        ready, _, _ = select.select(list(received), [], [], None if wait else 0)
        for fd in ready:
            yield from _receive(fd, received, workers, on_progress=on_progress)
        if not wait:
            return


def _receive(
    fd: int,
    received: dict[int, bytearray],
    workers: dict[int, int],
    *,
    ended_early: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[tuple[int, object]]:
    """The whole messages one read of the worker pipe ``fd`` completes. At its end the worker is
    reaped, and WorkerDied raised if it died, left half a message, or ``ended_early``."""
    chunk = os.read(fd, _READ_BYTES)
    buffer = received[fd]
    if chunk:
        buffer += chunk
        return list(_messages(buffer, on_progress))
    del received[fd]
    os.close(fd)
    _, status = os.waitpid(workers.pop(fd), 0)
    if buffer or ended_early or os.waitstatus_to_exitcode(status) != 0:
        raise WorkerDied(_death(status))
    return []


def _messages(
    buffer: bytearray, on_progress: Callable[[int, int], None] | None = None
) -> Iterator[tuple[int, object]]:
    """The results in the whole messages at the start of ``buffer``, removed from it; a
    task's progress goes to ``on_progress``."""
    at = 0
    while len(buffer) - at >= _LENGTH.size:
        (size,) = _LENGTH.unpack_from(buffer, at)
        end = at + _LENGTH.size + size
        if len(buffer) < end:
            break
        with memoryview(buffer) as view:
            kind, index, payload = pickle.loads(view[at + _LENGTH.size : end])
        at = end
        if kind == "failed":
            del buffer[:at]
            raise payload
        if kind == "told":
            if on_progress is not None:
                on_progress(index, payload)
            continue
        yield index, payload
    del buffer[:at]


def _death(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        how = f"was killed by signal {signal.Signals(-code).name}"
    else:
        how = f"ended with status {code} before sending its results"
    # Most likely the system ran out of memory, or someone stopped it: say what to try.
    return (
        f"a worker process {how}; run again, or with JOBDOCTOR_JOBS=1 to read in this process only"
    )


def _stop(workers: dict[int, int]) -> None:
    """Stop and reap the workers still running (the caller stopped early or failed)."""
    for fd, pid in workers.items():
        os.close(fd)
        try:
            os.kill(pid, signal.SIGTERM)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    workers.clear()
