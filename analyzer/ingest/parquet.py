"""Parquet files of log entries: a BigQuery sink table exported (``EXPORT DATA ... FORMAT
PARQUET``, ``bq extract --destination_format PARQUET``) or a pandas frame (``to_parquet``).

A sink table keeps the LogEntry's objects as nested columns (``resource`` of ``type`` and
``labels``, ``jsonPayload``), the user's keys renamed by the sink (``labels``'
``ml_googleapis_com_trial_id``); a json_normalize'd frame has dotted column names; an
unflattened frame nested ones. Each is read through the one mapping
(:func:`~analyzer.ingest.records.column_path`, :func:`~analyzer.ingest.tables.flat_entry`).

The file is read a record batch at a time, within its row groups, so memory stays flat
whatever its size. A Parquet file has no lines: ``lines`` counts its rows, and a record's
``line`` is its row's number (1-based). pyarrow is the ``parquet`` extra, imported only here.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any, BinaryIO

from analyzer.core.errors import InputError
from analyzer.ingest.records import InputStats, LogRecord, LostDigits, Origin
from analyzer.ingest.tables import counted, flat_entry, header_paths, lost_digits

PARQUET = "parquet"
# Every Parquet file starts (and ends) with these four bytes.
MAGIC = b"PAR1"
# Rows decoded at a time: a few MB of log text, whatever the row groups' size.
BATCH_ROWS = 4096
MISSING = (
    "{path}: a Parquet file, which needs pyarrow: pip install 'jobdoctor[parquet]'"
    " (or export the table as JSON: bq extract --destination_format NEWLINE_DELIMITED_JSON)"
)
UNREADABLE = "{path}: not a readable Parquet file ({error}), check the file or export it again"


def is_parquet(head: bytes) -> bool:
    """Whether ``head`` is the start of a Parquet file."""
    return head.startswith(MAGIC)


# The magic at both ends and a footer's length between them: the least a Parquet file is.
_SMALLEST = 2 * len(MAGIC) + 4
NOT_PARQUET = (
    "binary data that starts as a Parquet file but is not one (no footer): check the file or"
    " export it again"
)


def is_whole_parquet(data: bytes) -> bool:
    """Whether ``data``, a whole input (small enough to be seen whole), is a Parquet file:
    magic at both ends, a footer length that fits, and a footer pyarrow reads (when pyarrow
    is there; without it the reader says what to install)."""
    if len(data) < _SMALLEST or not data.startswith(MAGIC) or not data.endswith(MAGIC):
        return False
    footer = int.from_bytes(data[-8:-4], "little")
    if footer + _SMALLEST > len(data):
        return False
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return True
    try:
        pq.ParquetFile(io.BytesIO(data)).schema_arrow  # noqa: B018 - reading the footer
    except Exception:  # pyarrow's errors for a damaged file are of several kinds
        return False
    return True


def read_parquet(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per row of the Parquet file ``stream``, a batch at a time."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(MISSING.format(path=stats.path)) from None
    source: Any = stream
    if not stream.seekable():  # stdin: Parquet's index is at the file's end
        source = io.BytesIO(stream.read())
    try:
        table = pq.ParquetFile(source)
        batches = table.iter_batches(batch_size=BATCH_ROWS)
        names = table.schema_arrow.names
    except (OSError, ValueError) as error:
        raise InputError(UNREADABLE.format(path=stats.path, error=error)) from None
    paths = header_paths(names)
    try:
        for batch in batches:
            for row in batch.to_pylist():
                stats.lines += 1
                try:
                    entry = flat_entry(
                        (path, row.get(name)) for path, name in zip(paths, names, strict=True)
                    )
                except LostDigits as error:
                    raise lost_digits(error, stats.path, stats.lines) from None
                yield from counted(entry, Origin(stats.path, stats.lines), 1, stats)
    except (OSError, ValueError) as error:  # a damaged row group, found when it is read
        raise InputError(UNREADABLE.format(path=stats.path, error=error)) from None
