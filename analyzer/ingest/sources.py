"""Sources: files, stdin and memory, each sniffed once and read as a stream of records."""

from __future__ import annotations

import importlib
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, cast

from analyzer.core.errors import InputError
from analyzer.ingest.jsonl import read_jsonl
from analyzer.ingest.lines import capped_lines, skip_long_line
from analyzer.ingest.records import InputStats, LogRecord
from analyzer.ingest.sniff import SNIFF_LIMIT, Format, mentions_platform, sniff
from analyzer.ingest.streams import (
    BUFFER_SIZE,
    CORRUPT_COMPRESSED,
    TRUNCATED_COMPRESSED,
    CountingReader,
    ReplayReader,
    buffered,
    decompressed,
    read_head,
    read_window,
    transcoded,
)
from analyzer.ingest.webtext import WEB_TEXT

STDIN_NAME = "<stdin>"
BLANK_LINE = "blank line"

Reader = Callable[[BinaryIO, InputStats], Iterator[LogRecord]]
# The readers of tables (analyzer.ingest.tables, analyzer.ingest.parquet), by module and name.
TABLE_READERS = {
    Format.GCLOUD_TABLE: ("analyzer.ingest.tables", "read_aligned_table"),
    Format.GCLOUD_VALUE: ("analyzer.ingest.tables", "read_value_print"),
    Format.GCLOUD_FLATTENED: ("analyzer.ingest.tables", "read_flattened"),
    Format.JSON_TABLE: ("analyzer.ingest.tables", "read_json_table"),
    Format.PARQUET: ("analyzer.ingest.parquet", "read_parquet"),
}


def _read_empty(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    # An input of only blank lines has nothing to read, but its lines still count.
    for raw in capped_lines(stream):
        stats.lines += 1
        if raw is None:  # blank, but longer than any log entry: still not held
            skip_long_line(stats, stats.lines)
        else:
            stats.skip(BLANK_LINE)
    yield from ()


def reader_for(form: Format) -> Reader:
    """The reader of inputs in ``form``.

    The readers of the text formats are imported when first needed: a run over sink exports,
    the large case, does not pay for them at start-up.
    """
    if form is Format.CLOUD_LOGGING_JSONL:
        return read_jsonl
    if form is Format.GCLOUD_JSON:
        from analyzer.ingest.gcloud_json import read_gcloud_json

        return read_gcloud_json
    if form is Format.LOGGING_API:
        from analyzer.ingest.gcloud_json import read_api_response

        return read_api_response
    if form is Format.GCLOUD_YAML:
        from analyzer.ingest.gcloud_yaml import read_gcloud_yaml

        return read_gcloud_yaml
    if form in TABLE_READERS:
        module, name = TABLE_READERS[form]
        return cast(Reader, getattr(importlib.import_module(module), name))
    if form in (Format.EXPLORER_CSV, Format.CSV_TABLE):
        from analyzer.ingest.explorer_csv import read_explorer_csv

        return read_explorer_csv
    if form is Format.EXPLORER_SUMMARY:
        from analyzer.ingest.explorer import read_summary_lines

        return read_summary_lines
    if form is Format.STREAM_LOGS:
        from analyzer.ingest.stream_logs import read_stream_logs

        return read_stream_logs
    if form is Format.LOGS_EXPLORER:
        from analyzer.ingest.explorer import read_logs_explorer

        return read_logs_explorer
    if form is Format.JOBS_LIST:
        from analyzer.ingest.jobs_list import read_jobs_list

        return read_jobs_list
    if form is Format.NOTEBOOK:
        from analyzer.ingest.notebook import read_notebook

        return read_notebook
    if form is Format.PLAIN_TEXT:
        from analyzer.ingest.plain import read_plain_text

        return read_plain_text
    return _read_empty


def _records(
    stream: BinaryIO, stats: InputStats, on_bytes: Callable[[int], None] | None = None
) -> Iterator[LogRecord]:
    """Decompress if needed, then read ``stream`` with the reader of ``stats.format``;
    ``on_bytes`` is told the bytes taken from ``stream`` as they are (progress, counted here
    under every reader rather than by each)."""
    if on_bytes is not None:
        stream = buffered(CountingReader(stream, on_bytes))
    with stream:
        readable, guard = decompressed(stream)
        readable, _ = transcoded(readable)
        yield from reader_for(Format(stats.format))(readable, stats)
        if guard is not None and guard.damaged:
            # The lost tail's lines cannot be known: count it as one skipped line.
            stats.lines += 1
            stats.skip(guard.reason)


def damage_line(stats: InputStats) -> str | None:
    """The line that says a compressed input ended early (None when it did not): cut short,
    which a new copy fixes, or damaged, which it may not."""
    if stats.skip_reasons.get(TRUNCATED_COMPRESSED):
        return (
            f"{stats.path}: truncated compressed data, read up to the cut; the rest of the file"
            " is lost (it ends before the gzip end marker: copy or download it again)"
        )
    if stats.skip_reasons.get(CORRUPT_COMPRESSED):
        return (
            f"{stats.path}: corrupt compressed data, read up to the damage; the rest of the"
            " file is lost (the gzip data is damaged, not cut short)"
        )
    return None


@dataclass(frozen=True, slots=True)
class Sniffed:
    """What sniffing an input found: its format, whether it is gzip-compressed, what the
    readers read it through (``encoding``: its UTF-16 codec, the readers seeing UTF-8, or
    :data:`~analyzer.ingest.webtext.WEB_TEXT`; None for its own UTF-8 bytes, which the fast
    paths read), and, for plain text, whether its first lines hold any word of a job's logs."""

    format: Format
    compressed: bool
    encoding: str | None
    recognised: bool

    def describe(self, stats: InputStats) -> None:
        """Record the format (and whether it was recognised) in ``stats``."""
        stats.format = self.format.value
        stats.recognised = self.recognised
        stats.web_text = self.encoding == WEB_TEXT


def _sniff_stream(stream: BinaryIO, name: str) -> Sniffed:
    """What ``stream`` is (:class:`Sniffed`)."""
    readable, guard = decompressed(stream)
    readable, codec = transcoded(readable)
    head, lines_before = read_window(readable, SNIFF_LIMIT)
    if guard is not None and guard.damaged and not head:
        if guard.truncated:
            raise InputError(
                f"{name}: truncated gzip data (the file ends before the gzip end marker): its"
                " download or copy was cut short, copy it again"
            )
        raise InputError(f"{name}: corrupt gzip data, check the file or decompress it first")
    complete = len(head.lstrip()) < SNIFF_LIMIT
    found = sniff(head, name, complete=complete, first_line=lines_before + 1)
    recognised = found is not Format.PLAIN_TEXT or mentions_platform(head)
    return Sniffed(found, guard is not None, codec, recognised)


def open_file(path: str) -> BinaryIO:
    """The file at ``path`` opened for reading bytes; InputError naming it when it cannot be."""
    try:
        # Line readers read it through this buffer: the default (a page, often) costs a
        # system call every few lines.
        return open(path, "rb", buffering=BUFFER_SIZE)
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror}), check the file") from None


class FileSource:
    """A file on disk (plain or gzip), sniffed when created and reopened by :meth:`records`."""

    def __init__(self, path: str) -> None:
        self._stats = InputStats(path=path)
        with open_file(path) as stream:
            try:
                found = _sniff_stream(stream, path)
            except OSError as error:  # an I/O error under the file (EIO), say
                message = f"{path}: cannot be read ({error.strerror}), check the file"
                raise InputError(message) from None
        found.describe(self._stats)
        self.compressed = found.compressed  # gzip: read whole, not by ranges
        # "utf-16-le"/"-be", "web-text", or None: UTF-8 read as it is (the fast paths')
        self.encoding = found.encoding

    @property
    def stats(self) -> InputStats:
        """How the file was read; complete once :meth:`records` is exhausted."""
        return self._stats

    def open_binary(self) -> BinaryIO:
        """The file's raw bytes (still compressed if it is), for readers of their own."""
        return open_file(self._stats.path)

    def records(self, on_bytes: Callable[[int], None] | None = None) -> Iterator[LogRecord]:
        """The file's records, in file order; ``on_bytes`` is told the file's bytes (still
        compressed, if it is) as its reader takes them."""
        return _records(self.open_binary(), self._stats, on_bytes)


class StreamSource:
    """A binary stream read once (stdin): its sniffed head is kept and replayed."""

    def __init__(self, stream: BinaryIO, name: str) -> None:
        self._stats = InputStats(path=name)
        # Sniff on the raw bytes, keeping everything read so far to replay it.
        raw_head = read_head(stream, SNIFF_LIMIT)
        self._stream = buffered(ReplayReader(raw_head, stream))
        found = _sniff_stream(buffered(ReplayReader(raw_head, io.BytesIO())), name)
        found.describe(self._stats)
        self.encoding = found.encoding
        self._used = False

    @property
    def stats(self) -> InputStats:
        """How the stream was read; complete once :meth:`records` is exhausted."""
        return self._stats

    def open_binary(self) -> BinaryIO:
        """The stream's raw bytes, its sniffed head first, for readers of their own; a stream
        can be read only once."""
        if self._used:
            raise InputError(f"{self._stats.path}: already read, a stream can be read only once")
        self._used = True
        return self._stream

    def records(self) -> Iterator[LogRecord]:
        """The stream's records; a stream can be read only once."""
        return _records(self.open_binary(), self._stats)


class MemorySource:
    """The in-memory twin of :class:`FileSource` for tests: same sniffing, same readers."""

    def __init__(self, data: str | bytes, name: str = "<memory>") -> None:
        self._data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        self._stats = InputStats(path=name)
        _sniff_stream(io.BytesIO(self._data), name).describe(self._stats)

    @property
    def stats(self) -> InputStats:
        """How the data was read; complete once :meth:`records` is exhausted."""
        return self._stats

    def records(self) -> Iterator[LogRecord]:
        """The data's records; each call reads again and resets the counts."""
        self._stats.restart()
        return _records(io.BytesIO(self._data), self._stats)
