"""How far reading has got: the callbacks a caller that shows progress sets (the CLI's bar),
and the meters the readers tell.

Both are context variables, so the API keeps its shape: :data:`reading_progress` is called with
the total to read (None when a stream is among the inputs: its length is not known) and each
amount read, first with 0; :data:`input_progress` is told each input (file, Cloud Storage
object) once all of it is read.

Units are the inputs' bytes on disk (or in Cloud Storage), told as they are read: a plain
file's by the fast scan's blocks; a gzip file's read in this process in proportion to what it
has decompressed (its trailer gives the size it expands to), one read by a worker process by the
compressed bytes the worker has consumed; inputs of the other formats by the bytes taken from
under their reader (:func:`records_counted`). Streams are not counted here (their reader can
wrap the stream itself).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

from analyzer.ingest.gcs import GcsSource
from analyzer.ingest.records import LogRecord, Source
from analyzer.ingest.sources import FileSource

reading_progress: ContextVar[Callable[[int | None, int], None] | None] = ContextVar(
    "reading_progress", default=None
)
input_progress: ContextVar[Callable[[str], None] | None] = ContextVar(
    "input_progress", default=None
)


def file_size(path: str) -> int:
    """A file's size for the progress meter; 0 for one gone since it was opened (its reading
    names it)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def gzip_size(path: str) -> int:
    """The uncompressed size of a gzip file as its trailer records it (ISIZE: the last
    member's size modulo 4 GiB), never less than the file's own size; the file's size when
    the trailer cannot be read."""
    size = file_size(path)
    try:
        with open(path, "rb") as handle:
            handle.seek(-4, os.SEEK_END)
            recorded = int.from_bytes(handle.read(4), "little")
    except OSError:
        return size
    return max(size, recorded)


def source_size(source: Source) -> int | None:
    """An input's size on disk (or in Cloud Storage); None for a stream."""
    size = getattr(source, "size", None)
    if isinstance(size, int):
        return size
    if isinstance(source, FileSource):
        return file_size(source.stats.path)
    return None


@dataclass(frozen=True, slots=True)
class Meter:
    """Tells :data:`reading_progress` what was read, with the total of this read."""

    report: Callable[[int | None, int], None]
    total: int | None

    def __call__(self, count: int) -> None:
        self.report(self.total, count)


class Expanded:
    """A gzip file read here reports its decompressed bytes: told in the file's own bytes,
    in proportion (its trailer gives the size it expands to), so the bar moves while it is
    decompressed and the total stays the inputs' sizes on disk."""

    def __init__(self, meter: Callable[[int], None], path: str) -> None:
        self._meter = meter
        self._size = file_size(path)
        self._expanded = gzip_size(path)
        self._read = 0
        self._told = 0

    def __call__(self, count: int) -> None:
        self._read += count
        now = min(self._size, self._read * self._size // max(self._expanded, 1))
        if now > self._told:
            self._meter(now - self._told)
            self._told = now

    def finish(self) -> None:
        """What is left of the file's size (the trailer's size is modulo 4 GiB)."""
        if self._told < self._size:
            self._meter(self._size - self._told)
            self._told = self._size


def meter_for(pending: Sequence[Source]) -> Meter | None:
    """The progress meter of one read of ``pending``, or None when nobody asked for
    progress: the total is the inputs' sizes (None when a stream is among them)."""
    report = reading_progress.get()
    if report is None:
        return None
    sizes = [source_size(source) for source in pending]
    total = None if any(size is None for size in sizes) else sum(s or 0 for s in sizes)
    meter = Meter(report, total)
    meter(0)
    return meter


class Share:
    """One input's share of a meter: told the bytes read from it (never more than its
    ``size``), and, by :meth:`finish`, what is left of its size, so the meter adds up to the
    total it said whatever the reader took (a damaged gzip file ends early)."""

    def __init__(self, meter: Callable[[int], None], size: int) -> None:
        self._meter = meter
        self._left = size

    def __call__(self, count: int) -> None:
        count = min(count, self._left)
        if count > 0:
            self._left -= count
            self._meter(count)

    def finish(self) -> None:
        """Count the rest of the input as read."""
        self(self._left)


def records_counted(
    source: Source, meter: Callable[[int], None] | None
) -> tuple[Iterator[LogRecord], Share | None]:
    """``source``'s records, read record by record, and the :class:`Share` of ``meter`` its
    bytes are told to as its reader takes them (a file or Cloud Storage object; None for
    other sources, whose size the caller tells once read)."""
    if meter is None or not isinstance(source, FileSource | GcsSource):
        return source.records(), None
    share = Share(meter, source_size(source) or 0)
    return source.records(share), share
