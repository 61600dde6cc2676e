"""Paths into sources: every input a command line or a notebook names, expanded (directories,
globs, ``-``, ``gs://`` sink trees), sniffed and opened, one :class:`Source` each.

Above :mod:`analyzer.ingest.sources` (files, streams, memory) and :mod:`analyzer.ingest.gcs`
(Cloud Storage), which both read through the same readers.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from itertools import chain

from analyzer.core.errors import InputError
from analyzer.ingest.gcs import open_gcs
from analyzer.ingest.paths import STDIN, TimeWindow, expand_paths, special_file
from analyzer.ingest.records import LogRecord, Source
from analyzer.ingest.sources import STDIN_NAME, FileSource, StreamSource, open_file


def open_sources(
    paths: Sequence[str],
    problems: list[str] | None = None,
    window: TimeWindow | None = None,
) -> list[Source]:
    """One source per input file found in ``paths``.

    Each path is a file (plain or gzip, recognised by its magic bytes), ``-``
    for stdin, a directory (walked recursively, hidden files skipped, sink
    files in time order) or a glob pattern. Every file is sniffed now, so that
    a missing, unreadable or binary input raises InputError before any reading.
    With a ``problems`` list, such an input is named there in one line instead
    and the others are opened (a batch goes on past one bad file).
    A path that is not a regular file (a pipe such as the shell's ``<(...)``, a
    FIFO) can be read only once, and is read as a stream like stdin. A
    ``gs://BUCKET/PREFIX/`` path is a sink tree in Cloud Storage (``analyzer.ingest.gcs``).
    With ``window``, a tree (directory, glob, prefix) gives only its hourly sink files whose
    hour overlaps it.
    """
    sources: list[Source] = []
    if any(path.startswith("gs://") for path in paths):
        # In argument order: each run of local paths, then each gs:// path.
        local: list[str] = []
        for path in paths:
            if not path.startswith("gs://"):
                local.append(path)
                continue
            if local:
                sources.extend(open_sources(local, problems, window))
                local = []
            sources.extend(open_gcs([path], window, problems))
        if local:
            sources.extend(open_sources(local, problems, window))
        return sources
    for path in expand_paths(paths, problems, window):
        try:
            if path == STDIN:
                sources.append(StreamSource(sys.stdin.buffer, STDIN_NAME))
            elif special_file(path):
                sources.append(StreamSource(open_file(path), path))
            else:
                sources.append(FileSource(path))
        except InputError as error:
            if problems is None:
                raise
            problems.append(str(error))
    return sources


def read_records(paths: Sequence[str]) -> Iterator[LogRecord]:
    """All records of all inputs in ``paths``, one source after another."""
    return chain.from_iterable(source.records() for source in open_sources(paths))
