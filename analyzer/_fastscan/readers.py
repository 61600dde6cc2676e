"""The fast scan of the other readers' inputs: stream-logs text and gcloud's JSON array.

Each is read by its light scanner (``streamlogs``, ``gcloudjson``) into what the sink scan
gives (:class:`~analyzer._fastscan.parallel.RangeScan`), so the classify stage treats them alike.
A large file is cut into byte ranges where a range can be read apart (``safe_ranges``,
``entry_ranges``), read by forked workers (:func:`~analyzer.processes.run_forked`) and merged in
order as sink ranges are. A gcloud JSON file one of whose ranges the light scanner cannot read as
the plain reader would (:class:`~analyzer._fastscan.gcloudjson.Unusual`) gets no scan: the
caller reads it record by record. A whole input read in one process never does: the plain
reader reads on from where the light scanner stopped.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial
from typing import BinaryIO, Protocol

from analyzer._fastscan import parallel
from analyzer._fastscan.gcloudjson import Unusual, entry_ranges, scan_gcloud_json
from analyzer._fastscan.jsonl import ScanTally, TextSelector
from analyzer._fastscan.parallel import BookLike, RangeScan, processes_for, warm
from analyzer._fastscan.streamlogs import Matches, safe_ranges, scan_stream_logs
from analyzer.events import Event
from analyzer.ingest import FileSource, Format
from analyzer.ingest.sources import TRUNCATED_COMPRESSED, StreamSource
from analyzer.ingest.streams import decompressed, open_counted, transcoded
from analyzer.processes import run_forked, tell_progress
from analyzer.progress import Share
from analyzer.records import InputStats, Source

STREAM_LOGS = Format.STREAM_LOGS.value
GCLOUD_JSON = Format.GCLOUD_JSON.value
FORMATS = frozenset({STREAM_LOGS, GCLOUD_JSON})


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


_SCANNERS: dict[str, _Scanner] = {STREAM_LOGS: scan_stream_logs, GCLOUD_JSON: scan_gcloud_json}
_RANGES = {STREAM_LOGS: safe_ranges, GCLOUD_JSON: entry_ranges}


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
    gcloud JSON file read in ranges: once it is all read)."""
    scans: dict[int, RangeScan] = {}
    for source in sources:
        share = None
        if on_bytes is not None and isinstance(source, FileSource):
            share = Share(on_bytes, os.path.getsize(source.stats.path))
        found = _scan_source(source, book, processes, while_waiting, share)
        if found is not None:
            source.stats.add(found.stats)
            found.stats = source.stats
            scans[id(source)] = found
        if found is not None and isinstance(source, FileSource):
            # (An unusual file is counted by the plain reading that reads it instead: nothing
            # of it was told, see _scan_source.)
            if share is not None:
                share.finish()
            if on_input is not None:
                on_input(source.stats.path)
    return scans


def _scan_source(
    source: Source,
    book: BookLike,
    processes: int | None,
    while_waiting: Callable[[], None] | None,
    share: Share | None,
) -> RangeScan | None:
    """The scan of one input; ``share`` (a file's, of the progress meter) told its bytes as
    they are read, except a gcloud JSON file's read in ranges: one of them may turn out
    unusual, and the file then be read again record by record."""
    form = source.stats.format
    path = source.stats.path
    if isinstance(source, FileSource) and not source.compressed and source.encoding is None:
        size = os.path.getsize(path)
        count = processes_for(size, processes)
        if count > 1:
            ranges = _RANGES[form](path, size, parallel.MIN_RANGE_BYTES, count)
            if len(ranges) > 1:
                told = share if form == STREAM_LOGS else None
                return _scan_ranges(form, path, ranges, book, count, while_waiting, told)
    assert isinstance(source, FileSource | StreamSource)
    opened = open_counted(path, share) if share is not None else source.open_binary()
    with opened as raw:
        return _scan_whole(form, raw, path, book)


def _scan_whole(form: str, raw: BinaryIO, path: str, book: BookLike) -> RangeScan | None:
    """One process's scan of a whole input (gzip or UTF-16 too), into fresh stats."""
    stats = InputStats(path=path)
    stream, guard = decompressed(raw)
    stream, _ = transcoded(stream)
    found = _scan(form, stream, stats, book)
    if found is not None and guard is not None and guard.damaged:
        # As the plain reader does: the lost tail counts as one skipped line.
        stats.lines += 1
        stats.skip(TRUNCATED_COMPRESSED)
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
    before = Counter(book.timeouts)
    try:
        tally, events = _SCANNERS[form](
            stream, stats, book.may_match_texts, book.match, at_start=at_start, limit=limit
        )
    except Unusual:
        return None
    timeouts = Counter(book.timeouts)
    timeouts.subtract(before)
    return RangeScan(stats, tally, events, +timeouts)


# A task: its index, the format, the path, and the byte range to read.
_Task = tuple[int, str, str, int, int]


def _range_task(book: BookLike, task: _Task) -> RangeScan | None:
    """A worker's scan of one range, its events packed to travel; None when it is unusual."""
    _, form, path, start, end = task
    # Its bytes told as they are read, when the caller listens (analyzer.processes).
    with open_counted(path, tell_progress) as stream:
        stream.seek(start)
        found = _scan(
            form, stream, InputStats(path=path), book, at_start=start == 0, limit=end - start
        )
    return None if found is None else parallel._packed(found)


def _scan_ranges(
    form: str,
    path: str,
    ranges: list[tuple[int, int]],
    book: BookLike,
    processes: int,
    while_waiting: Callable[[], None] | None,
    share: Share | None = None,
) -> RangeScan | None:
    """The ranges' scans by ``processes`` processes, merged in order; None when one of them
    is unusual (the whole file is then read record by record). ``share`` is told the bytes
    the ranges' scans read, as they read them."""
    tasks = [(index, form, path, start, end) for index, (start, end) in enumerate(ranges)]
    # The largest first, so that the processes finish together.
    order = sorted(tasks, key=lambda task: task[3] - task[4])
    warm(book)
    results: list[RangeScan | None] = [None] * len(tasks)
    unusual = False
    told = None if share is None else lambda _, amount: share(amount)
    scan = partial(_range_task, book)
    for position, found in run_forked(order, scan, processes, while_waiting, on_progress=told):
        if found is None:
            unusual = True
        else:
            results[order[position][0]] = parallel._unpacked(found)
    if unusual:
        return None
    done = [found for found in results if found is not None]
    assert len(done) == len(tasks)
    return parallel._merged(done, book)
