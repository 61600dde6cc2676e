"""The fast scan of the other readers' inputs: stream-logs text, gcloud's JSON array,
gcloud's YAML and the Logging API's entries:list responses.

Each is read by its light scanner (``streamlogs``, ``gcloudjson``, ``gcloudyaml``) into what the
sink scan gives (:class:`~analyzer.classify._fastscan.parallel.RangeScan`), so the classify stage
treats
them alike. A large file is cut into byte ranges where a range can be read apart
(``safe_ranges``, ``entry_ranges``, ``document_ranges``), read by forked workers
(:func:`~analyzer.core.processes.run_forked`) and merged in order as sink ranges are. A gcloud JSON
or YAML file one of whose ranges the light scanner cannot read as the plain reader would
(:class:`~analyzer.classify._fastscan.gcloudjson.Unusual`) gets no scan: the caller reads it record
by
record. A whole input read in one process never does: the plain reader reads on from where the
light scanner stopped.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, BinaryIO, Protocol

from analyzer.classify._fastscan import parallel
from analyzer.classify._fastscan.jsonl import ScanTally, TextSelector
from analyzer.classify._fastscan.parallel import BookLike, RangeScan, processes_for, warm
from analyzer.core.processes import run_forked, tell_progress
from analyzer.ingest import FileSource, Format
from analyzer.ingest.progress import Share
from analyzer.ingest.records import InputStats, Source
from analyzer.ingest.sources import StreamSource
from analyzer.ingest.streams import decompressed, open_counted, transcoded
from analyzer.rulebook.events import Event

if TYPE_CHECKING:
    from analyzer.classify._fastscan.streamlogs import Matches

STREAM_LOGS = Format.STREAM_LOGS.value
GCLOUD_JSON = Format.GCLOUD_JSON.value
GCLOUD_YAML = Format.GCLOUD_YAML.value
LOGGING_API = Format.LOGGING_API.value
FORMATS = frozenset({STREAM_LOGS, GCLOUD_JSON, GCLOUD_YAML, LOGGING_API})
# Read in ranges that may turn out unusual (the file is then read again, record by record).
_MAY_FAIL = (GCLOUD_JSON, GCLOUD_YAML, LOGGING_API)


class _Scanner(Protocol):
    def __call__(
        self,
        stream: BinaryIO,
        stats: InputStats,
        select: TextSelector,
        matches: Matches,
        *,
        at_start: bool = True,
        limit: int = -1,
    ) -> tuple[ScanTally, list[Event]]: ...


# A file's path, size, smallest range and processes -> its byte ranges.
_Ranges = Callable[[str, int, int, int], list[tuple[int, int]]]


# The light scanners load with their first input, not with the package: a run over sink
# exports needs none, and their patterns, classes and the readers they build on are about 15M
# instructions of its start-up (callgrind); the YAML scanner loads PyYAML besides, which a
# diagnosis of a sink file does not load (tests/test_cli_startup.py).
def _scanner(form: str) -> _Scanner:
    if form == STREAM_LOGS:
        from analyzer.classify._fastscan.streamlogs import scan_stream_logs

        return scan_stream_logs
    if form == GCLOUD_YAML:
        from analyzer.classify._fastscan.gcloudyaml import scan_gcloud_yaml

        return scan_gcloud_yaml
    if form == LOGGING_API:
        from analyzer.classify._fastscan.gcloudjson import scan_api_response

        return scan_api_response
    from analyzer.classify._fastscan.gcloudjson import scan_gcloud_json

    return scan_gcloud_json


def _ranges(form: str) -> _Ranges:
    if form == STREAM_LOGS:
        from analyzer.classify._fastscan.streamlogs import safe_ranges

        return safe_ranges
    if form == GCLOUD_YAML:
        from analyzer.classify._fastscan.gcloudyaml import document_ranges

        return document_ranges
    if form == LOGGING_API:
        from analyzer.classify._fastscan.gcloudjson import response_ranges

        return response_ranges
    from analyzer.classify._fastscan.gcloudjson import entry_ranges

    return entry_ranges


def takes(source: Source) -> bool:
    """Whether a light scanner reads ``source``: stream-logs text or a gcloud JSON array, from
    a file or a stream (UTF-16 too, transcoded)."""
    return source.stats.format in FORMATS and (
        isinstance(source, StreamSource)
        or (isinstance(source, FileSource) and os.path.exists(source.stats.path))
    )


def scan_texts(
    sources: Sequence[Source],
    book: BookLike,
    processes: int | None,
    while_waiting: Callable[[], None] | None,
    on_bytes: Callable[[int], None] | None,
    on_input: Callable[[str], None] | None,
) -> dict[int, RangeScan]:
    """The scans of ``sources`` (each :func:`takes`), by ``id`` of source; none for a gcloud
    JSON file that is unusual. ``on_bytes`` is told each file's bytes as they are read (a
    gcloud JSON file read in ranges: once it is all read).

    How many processes read the files is decided by the work of them all
    (:func:`~analyzer.classify._fastscan.parallel.work_of`): a folder of small files is read by
    several processes as one large file is, a file each (or, a large one, a range each)."""
    scans: dict[int, RangeScan] = {}
    files = [source for source in sources if isinstance(source, FileSource)]
    shares = {
        id(source): Share(on_bytes, os.path.getsize(source.stats.path))
        for source in files
        if on_bytes is not None
    }
    count = processes_for(sum(map(_work, files)), processes)
    pooled: set[int] = set()
    if count > 1:
        pooled = set(map(id, files))
        found = _scan_pooled(files, book, count, while_waiting, shares, on_input)
        for file, scanned in zip(files, found, strict=True):
            if scanned is not None:
                _take(file, scanned, scans)
    for source in sources:
        if id(source) in pooled:
            continue
        share = shares.get(id(source))
        assert isinstance(source, FileSource | StreamSource)
        opened = open_counted(source.stats.path, share) if share else source.open_binary()
        with opened as raw:
            scanned = _scan_whole(source.stats.format, raw, source.stats.path, book)
        if scanned is not None:
            _take(source, scanned, scans)
            if isinstance(source, FileSource):
                _done(source, shares, on_input)
    return scans


def _work(source: FileSource) -> int:
    return parallel.work_of(
        os.path.getsize(source.stats.path), source.stats.format, compressed=source.compressed
    )


def _take(source: Source, found: RangeScan, scans: dict[int, RangeScan]) -> None:
    source.stats.add(found.stats)
    found.stats = source.stats
    scans[id(source)] = found


def _done(
    source: FileSource, shares: dict[int, Share], on_input: Callable[[str], None] | None
) -> None:
    """``source`` is all read: the rest of its share told, and ``on_input``."""
    share = shares.get(id(source))
    if share is not None:
        share.finish()
    if on_input is not None:
        on_input(source.stats.path)


def _tasks(source: FileSource, processes: int) -> list[tuple[int, int]]:
    """The byte ranges ``source`` is read in by ``processes`` processes: ``(0, -1)``, the whole
    input, when it is too small to cut, compressed or UTF-16 (which cannot be entered in the
    middle)."""
    form = source.stats.format
    path = source.stats.path
    if source.compressed or source.encoding is not None:
        return [(0, -1)]
    size = os.path.getsize(path)
    ranges = _ranges(form)(path, size, parallel.MIN_RANGE_BYTES, processes)
    return ranges if len(ranges) > 1 else [(0, -1)]


def _scan_pooled(
    files: list[FileSource],
    book: BookLike,
    processes: int,
    while_waiting: Callable[[], None] | None,
    shares: dict[int, Share],
    on_input: Callable[[str], None] | None,
) -> list[RangeScan | None]:
    """The scans of ``files`` by ``processes`` processes, each file's ranges merged in order;
    None for a file one of whose ranges is unusual (it is then read record by record, and
    told nothing here). A file's share is told its bytes as they are read, except a gcloud JSON
    file's read in ranges: one of them may turn out unusual, and the file then be read again
    record by record, which tells them."""
    tasks: list[_Task] = []
    owner: list[int] = []
    for number, source in enumerate(files):
        for start, end in _tasks(source, processes):
            tasks.append((len(tasks), source.stats.format, source.stats.path, start, end))
            owner.append(number)
    # The largest first (a whole compressed file weighs what it expands to), so that the
    # processes finish together.
    weights = [_task_work(task, files[owner[task[0]]]) for task in tasks]
    order = sorted(tasks, key=lambda task: -weights[task[0]])
    told: list[Share | None] = [
        None if task[1] in _MAY_FAIL and task[4] != -1 else shares.get(id(files[owner[task[0]]]))
        for task in tasks
    ]

    def progress(position: int, amount: int) -> None:
        share = told[order[position][0]]
        if share is not None:
            share(amount)

    results: list[RangeScan | None] = [None] * len(tasks)
    unusual: set[int] = set()
    left = Counter(owner)
    warm(book)
    scan = partial(_range_task, book)
    listen = progress if shares else None
    for position, found in run_forked(order, scan, processes, while_waiting, on_progress=listen):
        index = order[position][0]
        if found is None:
            unusual.add(owner[index])
        else:
            results[index] = parallel._unpacked(found)
        left[owner[index]] -= 1
        if not left[owner[index]] and owner[index] not in unusual:
            _done(files[owner[index]], shares, on_input)
    merged: list[RangeScan | None] = []
    for number, indexes in itertools.groupby(range(len(tasks)), key=owner.__getitem__):
        parts = [results[index] for index in indexes]
        if number in unusual:
            merged.append(None)
            continue
        done = [found for found in parts if found is not None]
        assert len(done) == len(parts)
        merged.append(parallel._merged(done, book))
    return merged


def _task_work(task: _Task, source: FileSource) -> int:
    _, form, _, start, end = task
    if end == -1:
        return _work(source)
    return parallel.work_of(end - start, form)


def _scan_whole(form: str, raw: BinaryIO, path: str, book: BookLike) -> RangeScan | None:
    """One process's scan of a whole input (gzip or UTF-16 too), into fresh stats."""
    stats = InputStats(path=path)
    stream, guard = decompressed(raw)
    stream, _ = transcoded(stream)
    found = _scan(form, stream, stats, book)
    if found is not None and guard is not None and guard.damaged:
        # As the plain reader does: the lost tail counts as one skipped line.
        stats.lines += 1
        stats.skip(guard.reason)
    return found


def _scan(
    form: str,
    stream: BinaryIO,
    stats: InputStats,
    book: BookLike,
    *,
    at_start: bool = True,
    limit: int = -1,
) -> RangeScan | None:
    from analyzer.classify._fastscan.gcloudjson import Unusual

    before = Counter(book.timeouts)
    try:
        tally, events = _scanner(form)(
            stream, stats, book.may_match_texts, book.match, at_start=at_start, limit=limit
        )
    except Unusual:
        return None
    timeouts = Counter(book.timeouts)
    timeouts.subtract(before)
    return RangeScan(stats, tally, events, +timeouts)


# A task: its index, the format, the path, and the byte range to read (end -1: all of it).
_Task = tuple[int, str, str, int, int]


def _range_task(book: BookLike, task: _Task) -> RangeScan | None:
    """A worker's scan of one range (end -1: the whole input, gzip or UTF-16 too), its events
    packed to travel; None when it is unusual."""
    _, form, path, start, end = task
    # Its bytes told as they are read, when the caller listens (analyzer.core.processes).
    with open_counted(path, tell_progress) as stream:
        if end == -1:
            found = _scan_whole(form, stream, path, book)
            return None if found is None else parallel._packed(found)
        stream.seek(start)
        found = _scan(
            form, stream, InputStats(path=path), book, at_start=start == 0, limit=end - start
        )
    return None if found is None else parallel._packed(found)
