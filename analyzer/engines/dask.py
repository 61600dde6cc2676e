"""The fast scan on a Dask cluster: ``--dask local`` or ``--dask tcp://HOST:PORT``.

The tasks are those of ``analyzer.classify._fastscan.parallel.scan_files``: byte ranges of local
files
(which the workers must see at the same paths: a shared file system) and whole Cloud Storage objects
(which the workers read themselves, with their own credentials). Each Dask task runs
jobdoctor's own scan (``parallel.scan_task``) over a batch of them; the results come back and
are merged here exactly as the forked processes' are, so the diagnoses are the same.

The rule book travels once: pickled, scattered to every worker, and unpickled once per worker
process (its Hyperscan databases with it). Workers need the same jobdoctor version installed.
Needs the ``dask`` extra (``distributed``), imported only when a cluster is asked for.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import pickle
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any, cast

from analyzer import __version__
from analyzer.classify._fastscan.parallel import BookLike, RangeScan, Task, scan_task, warm
from analyzer.core.errors import InputError

LOCAL = "local"
_INSTALL = "--dask needs the dask extra: pip install 'jobdoctor[dask]'"
# A Dask task costs about a millisecond of the scheduler's time: small files are scanned a
# batch at a time, of about this many bytes (fewer when the batches would not keep every
# worker busy).
BATCH_BYTES = 64 << 20
MIN_BATCH_BYTES = 4 << 20
CONNECT_SECONDS = 30


class DaskCluster:
    """A Dask client for one scan: a ``LocalCluster`` started for it (``"local"``), an existing
    scheduler (``"tcp://HOST:PORT"``), or a ``distributed.Client`` already connected.

    A context manager: what it started, it stops; a client it was given stays open.
    """

    def __init__(self, where: object) -> None:
        self._where = where
        self._client: Any = None
        self._cluster: Any = None

    def __enter__(self) -> DaskCluster:
        distributed = _distributed()
        where = self._where
        if isinstance(where, distributed.Client):
            self._client = where
        elif not isinstance(where, str) or not (where == LOCAL or "://" in where):
            raise InputError(
                f"--dask {where!s}: give 'local' (a cluster of this machine's cores) or a"
                " scheduler address such as tcp://10.0.0.5:8786"
            )
        # Connected when first used: inputs the scan does not take (text exports, stdin)
        # start no cluster.
        return self

    def _connected(self) -> Any:
        """The client, connecting (or starting the LocalCluster) on first use."""
        if self._client is not None:
            return self._client
        distributed = _distributed()
        where = self._where
        try:
            if where == LOCAL:
                self._cluster = distributed.LocalCluster(
                    n_workers=_cores(),
                    threads_per_worker=1,  # the scan holds the GIL: one per process
                    processes=True,
                    dashboard_address=":0",  # a free port: never fight over 8787
                    silence_logs=logging.ERROR,
                )
                self._client = distributed.Client(self._cluster)
            else:
                self._client = distributed.Client(where, timeout=CONNECT_SECONDS)
        except (OSError, TimeoutError) as error:
            self.__exit__(None, None, None)
            raise InputError(
                f"--dask {where}: cannot reach the Dask scheduler ({_first_line(error)}),"
                " check the address and that the scheduler is running"
            ) from None
        return self._client

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._client is not None and self._client is not self._where:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        self._client = self._cluster = None

    def width(self) -> int:
        """The number of tasks the workers run at once (their threads)."""
        threads: dict[str, int] = self._connected().nthreads()
        return max(1, sum(threads.values()))

    def run(
        self,
        tasks: Sequence[Task],
        weights: Sequence[int],
        book: BookLike,
        processes: int,
        while_waiting: Callable[[], None] | None,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> Iterator[tuple[int, RangeScan]]:
        """``(position, packed scan)`` for every task, as the workers finish batches of them
        (``analyzer.classify._fastscan.parallel.Runner``). A Dask worker does not tell how far a
        task
        has got: ``on_progress`` is never called, the caller counts each task once done."""
        distributed = _distributed()
        client = self._connected()
        blob = pickle.dumps(book, protocol=pickle.HIGHEST_PROTOCOL)
        digest = hashlib.sha256(blob).hexdigest()
        shared = client.scatter(blob, broadcast=True, hash=False)
        futures = [
            client.submit(_scan_batch, shared, digest, __version__, batch, pure=False)
            for batch in _batches(tasks, weights, self.width())
        ]
        if while_waiting is not None:
            while_waiting()
        try:
            for future in distributed.as_completed(futures):
                try:
                    found = future.result()
                except ImportError as error:  # the workers lack jobdoctor, or a part of it
                    raise InputError(
                        f"the Dask workers cannot import jobdoctor ({_first_line(error)});"
                        f" install jobdoctor {__version__} on them"
                    ) from None
                yield from found
        finally:
            client.cancel(futures)


def _batches(
    tasks: Sequence[Task], weights: Sequence[int], width: int
) -> list[list[tuple[int, Task]]]:
    """The tasks with their positions, in batches of about the same weight: a few batches
    per worker, so that the last ones finish together."""
    target = min(BATCH_BYTES, max(MIN_BATCH_BYTES, sum(weights) // (4 * width)))
    batches: list[list[tuple[int, Task]]] = []
    current: list[tuple[int, Task]] = []
    held = 0
    for position, (task, weight) in enumerate(zip(tasks, weights, strict=True)):
        current.append((position, task))
        held += weight
        if held >= target:
            batches.append(current)
            current, held = [], 0
    if current:
        batches.append(current)
    return batches


# The rule books this worker process has unpickled, by digest of their pickle.
_BOOKS: dict[str, BookLike] = {}


def _scan_batch(
    blob: bytes, digest: str, version: str, batch: list[tuple[int, Task]]
) -> list[tuple[int, RangeScan]]:
    """On a worker: scan each task of ``batch`` with the rule book pickled in ``blob``, if
    this worker's jobdoctor is the caller's ``version`` (another could read differently)."""
    if version != __version__:
        raise InputError(
            f"a Dask worker runs jobdoctor {__version__} and this machine {version}; install"
            f" jobdoctor {version} on the workers"
        )
    book = _BOOKS.get(digest)
    if book is None:
        book = cast(BookLike, pickle.loads(blob))
        warm(book)
        _BOOKS.clear()  # one book at a time: a long-lived worker serves many runs
        _BOOKS[digest] = book
    return [(position, scan_task(book, task)) for position, task in batch]


def _distributed() -> Any:
    """The ``distributed`` package (untyped: it is used through Any)."""
    try:
        return importlib.import_module("distributed")
    except ImportError:
        raise InputError(_INSTALL) from None


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
