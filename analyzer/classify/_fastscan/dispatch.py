"""Which inputs the fast scan takes, and where each is read: here, in forked workers, or on a
cluster's workers."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeGuard

from analyzer.classify._fastscan import readers
from analyzer.classify._fastscan.parallel import (
    MIN_RANGE_BYTES,
    PARALLEL_MIN_WORK,
    BookLike,
    RangeScan,
    Task,
    processes_for,
    run_here,
    scan_binary,
    scan_files,
    work_of,
)
from analyzer.ingest import FileSource, Format
from analyzer.ingest.gcs import GcsSource
from analyzer.ingest.progress import Expanded, input_progress, reading_progress, source_size
from analyzer.ingest.records import Source
from analyzer.ingest.sources import StreamSource
from analyzer.rulebook.events import RuleMatch

SINK = Format.CLOUD_LOGGING_JSONL.value
# Processes reading Cloud Storage objects, per core.
GCS_READERS_PER_CORE = 4


class Matcher(Protocol):
    """What reading needs of a rule book at the least: the matches of one text."""

    def match(self, text: str) -> tuple[RuleMatch, ...]: ...


class Cluster(Protocol):
    """Somewhere else to run the fast scan's tasks (``analyzer.engines.dask``: Dask)."""

    def width(self) -> int:
        """How many tasks it runs at once."""
        ...

    def run(
        self,
        tasks: Sequence[Task],
        weights: Sequence[int],
        book: BookLike,
        processes: int,
        while_waiting: Callable[[], None] | None,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> Iterator[tuple[int, RangeScan]]:
        """The tasks' packed scans (``analyzer.classify._fastscan.parallel.Runner``)."""
        ...


def can_scan(book: Matcher) -> TypeGuard[BookLike]:
    """Whether ``book`` can tell, for a block of texts, which ones it may match: what the fast
    scan needs of a rule book."""
    return callable(getattr(book, "may_match_texts", None))


def takes(source: Source, book: Matcher) -> bool:
    """Whether the fast scan reads ``source``: sink JSONL, as UTF-8 bytes, present on disk
    (a file gone since it was opened is left to the plain reading, which names it); or
    stream-logs text or a gcloud JSON file (``analyzer.classify._fastscan.readers``)."""
    if source.stats.format in readers.FORMATS:
        return can_scan(book) and readers.takes(source)
    return (
        isinstance(source, FileSource | StreamSource | GcsSource)
        and source.stats.format == Format.CLOUD_LOGGING_JSONL.value
        and source.encoding is None  # the fast path reads UTF-8 bytes
        and can_scan(book)
        and (not isinstance(source, FileSource) or os.path.exists(source.stats.path))
    )


def scan(
    sources: Sequence[Source],
    book: Matcher,
    *,
    processes: int | None = None,
    while_waiting: Callable[[], None] | None = None,
    cluster: Cluster | None = None,
    meter: Callable[[int], None] | None = None,
) -> list[RangeScan | None]:
    """The fast scan of each of ``sources``, in order; None for a source it does not take
    (:func:`takes`), which the caller reads record by record.

    Large files and streams are read by several processes (``processes``: None for as many
    as there are cores), or every file by the workers of ``cluster``. ``while_waiting`` is
    called while those processes read, if there are any. ``meter`` (the caller's, over all of
    its inputs) is told the bytes read, else :data:`~analyzer.ingest.progress.reading_progress` is
    told these files' (see there for the units)."""
    taken = [source for source in sources if takes(source, book)]
    if not taken or not can_scan(book):
        return [None] * len(sources)
    texts = [source for source in taken if source.stats.format in readers.FORMATS]
    sinks = [source for source in taken if source.stats.format not in readers.FORMATS]
    found = _scan(sinks, book, processes, while_waiting, cluster, meter) if sinks else {}
    if texts:
        # Read here or by forked workers, never a cluster's: a cluster's tasks are sink ranges.
        found |= readers.scan_texts(
            texts, book, processes, while_waiting, meter, input_progress.get()
        )
    return [found.get(id(source)) for source in sources]


def _scan(
    files: list[Source],
    book: BookLike,
    processes: int | None,
    while_waiting: Callable[[], None] | None,
    cluster: Cluster | None,
    meter: Callable[[int], None] | None,
) -> dict[int, RangeScan]:
    scans: dict[int, RangeScan] = {}
    # A stream (stdin) is read in this process, as it comes; files maybe in several.
    here: list[FileSource | StreamSource | GcsSource] = [
        s for s in files if isinstance(s, StreamSource)
    ]
    files = [s for s in files if not isinstance(s, StreamSource)]
    layout = _Layout.of(files)
    on_bytes = _byte_meter(meter, layout.total, files)
    count = _reader_count(files, layout, processes, cluster)
    # One compressed file is one task: a pool would only add its start-up.
    if cluster is not None or (count > 1 and (len(files) > 1 or not layout.whole)):
        scans |= _scan_in_tasks(files, layout, book, count, on_bytes, while_waiting, cluster)
    else:
        for source in files:
            assert isinstance(source, FileSource | GcsSource)
            here.append(source)
    told = input_progress.get()
    for source in here:
        scans[id(source)] = _scan_here(source, layout, book, processes, on_bytes, meter)
        if told is not None:
            told(source.stats.path)
    return scans


@dataclass(frozen=True, slots=True)
class _Layout:
    """The sizes of the files to read, and which of them cannot be entered in the middle."""

    sizes: dict[str, int]
    compressed: frozenset[str]
    whole: frozenset[str]

    @classmethod
    def of(cls, files: list[Source]) -> _Layout:
        """The layout of ``files`` (no stream among them)."""
        # A gzip file cannot be entered in the middle: one task each. So is a Cloud Storage
        # object too small to be cut (asking whether it is gzip would cost a request).
        compressed = frozenset(
            s.stats.path for s in files if isinstance(s, FileSource) and s.compressed
        )
        whole = compressed | {
            s.stats.path
            for s in files
            if isinstance(s, GcsSource) and (s.size <= MIN_RANGE_BYTES or s.compressed)
        }
        sizes = {
            s.stats.path: s.size if isinstance(s, GcsSource) else os.path.getsize(s.stats.path)
            for s in files
        }
        return cls(sizes, compressed, whole)

    @property
    def total(self) -> int:
        """The bytes of all the files."""
        return sum(self.sizes.values())

    def weight(self, path: str) -> int:
        """The work of reading it (:func:`~analyzer.classify._fastscan.parallel.work_of`); a
        stream's
        size is not known: enough to be worth several processes."""
        if path not in self.sizes:
            return PARALLEL_MIN_WORK
        return work_of(self.sizes[path], SINK, compressed=path in self.compressed)


def _byte_meter(
    meter: Callable[[int], None] | None, total: int, files: list[Source]
) -> Callable[[int], None] | None:
    """Who is told the bytes read: the caller's ``meter``, else the reading progress (told
    the total first), else nobody."""
    progress = reading_progress.get()
    if meter is None and progress is not None and files:
        progress(total, 0)
        return lambda count: progress(total, count)
    return meter


def _reader_count(
    files: list[Source], layout: _Layout, processes: int | None, cluster: Cluster | None
) -> int:
    """How many processes read ``files``: by their work, more for several Cloud Storage
    objects, a cluster's width on a cluster."""
    count = processes_for(sum(map(layout.weight, layout.sizes)), processes)
    objects = sum(1 for s in files if isinstance(s, GcsSource))
    if objects > 1 and processes is None and not os.environ.get("JOBDOCTOR_JOBS"):
        # Reading an object waits on the network more than on a core: more readers than
        # cores keep the cores busy, whatever the total size.
        cores = processes_for(PARALLEL_MIN_WORK, None)
        count = max(count, min(GCS_READERS_PER_CORE * cores, objects))
    if cluster is not None and files:
        count = cluster.width()
    return count


def _scan_in_tasks(
    files: list[Source],
    layout: _Layout,
    book: BookLike,
    count: int,
    on_bytes: Callable[[int], None] | None,
    while_waiting: Callable[[], None] | None,
    cluster: Cluster | None,
) -> dict[int, RangeScan]:
    """The scans of ``files`` cut into tasks, run by ``count`` forked workers or a cluster's;
    each scan's stats added to its source's."""
    scans: dict[int, RangeScan] = {}
    paths = [s.stats.path for s in files]
    found = scan_files(
        paths,
        book,
        count,
        on_bytes,
        compressed=layout.whole,
        while_waiting=while_waiting,
        sizes=[layout.sizes[path] for path in paths],
        on_input=input_progress.get(),
        run=cluster.run if cluster is not None else run_here,
    )
    for source, scanned in zip(files, found, strict=True):
        source.stats.add(scanned.stats)
        scanned.stats = source.stats
        scans[id(source)] = scanned
    return scans


def _scan_here(
    source: FileSource | StreamSource | GcsSource,
    layout: _Layout,
    book: BookLike,
    processes: int | None,
    on_bytes: Callable[[int], None] | None,
    meter: Callable[[int], None] | None,
) -> RangeScan:
    """The scan of one stream, or one file not cut into tasks, read in this process (and,
    when long, by forked workers as it comes); the meter told its bytes."""
    # A stream's bytes are not in the progress total.
    counted = on_bytes if not isinstance(source, StreamSource) else None
    expanded = None
    if counted is not None and meter is not None and source.stats.path in layout.compressed:
        # Decompressed bytes are counted: told in the file's own, in proportion.
        counted = expanded = Expanded(counted, source.stats.path)
    elif counted is not None and meter is not None and source.stats.path in layout.whole:
        counted = None  # a compressed object: its size is told once it is read
    workers = processes_for(layout.weight(source.stats.path), processes)
    with source.open_binary() as raw:
        scanned = scan_binary(raw, source.stats, book, counted, workers)
    if expanded is not None:
        expanded.finish()
    elif meter is not None and counted is None and not isinstance(source, StreamSource):
        meter(source_size(source) or 0)
    return scanned
