"""The Logs Explorer's "Download" as CSV.

The layout, as a real download shows it (``downloaded-logs-20260331-031943.csv`` in the public
repository boksaemstudio/boksaem-yoga-app, ``tests/``): one header row of LogEntry field paths,
the union of the entries' fields flattened, sorted (``httpRequest.latency, ..., insertId,
jsonPayload.message, labels.execution_id, logName, ..., receiveTimestamp,
resource.labels.project_id, resource.type, severity, spanId, textPayload, timestamp, trace``);
a key that is not a plain name is quoted inside the path (``labels."run.googleapis.com/..."``);
then one row per entry, newest first, empty cells for the fields an entry lacks. RFC 4180
quoting: a message with a newline or a comma is a quoted cell over several physical lines.
A cell whose text a spreadsheet could take for a formula or a date (``'2026-03-30T12:58:48Z``,
``'projects/p/logs/...``, ``'https://...``; seen with a ``-``, ``/``, ``@``, ``(`` or quote in it)
starts with an apostrophe, the spreadsheet's "this is text" mark: it is removed.

The same reader reads any CSV of log entries by its header (``analyzer.ingest.tables``: gcloud's
``csv(...)`` print, pandas' ``to_csv``): each column is mapped by its name
(:func:`~analyzer.ingest.records.column_path`). Each row is rebuilt into a nested LogEntry dict
and read by the one mapping
(:func:`~analyzer.ingest.records.entry_fields`). Every physical line is accounted for: the header's
lines are used, a row's lines are used if it gave a record, else skipped with the reason.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any, BinaryIO

from analyzer.ingest.entries import record_or_reason
from analyzer.ingest.lines import text_lines
from analyzer.ingest.records import TEXT_PATHS, InputStats, LogRecord, LostDigits, Origin
from analyzer.ingest.tables import flat_entry, header_paths, lost_digits

BLANK_LINE = "blank line"
BAD_CSV = "unreadable CSV row"
# The download writes every column of every row: a last row with fewer cells than the header
# is a download or a paste that stopped inside it.
CUT_ROW = "cut short: the file ends inside a CSV row"

# A message can be long (a whole traceback in one cell); the csv module's default limit is 128 KiB.
csv.field_size_limit(1 << 30)

# The spreadsheet's text mark before a cell's value.
TEXT_MARK = "'"
MESSAGE_PATH = TEXT_PATHS[0]


def cell_value(cell: str) -> str:
    """A cell's text without the spreadsheet's text mark."""
    return cell[1:] if cell.startswith(TEXT_MARK) else cell


def row_entry(paths: list[tuple[str, ...]], row: list[str]) -> dict[str, Any]:
    """The nested LogEntry of one row; empty cells are fields the entry lacks, a cell where
    the mapping reads an object (another writer's CSV) is read as one (tables.flat_entry).

    An empty ``jsonPayload.message`` cell in a row that has a ``jsonPayload`` is the empty
    message (a blank line the program printed), as the sink holds it.
    """
    cells = list(zip(paths, row, strict=False))
    entry = flat_entry((path, cell_value(cell)) for path, cell in cells)
    payload = entry.get("jsonPayload")
    if isinstance(payload, dict) and any(path == MESSAGE_PATH for path, _ in cells):
        payload.setdefault("message", "")
    return entry


def _physical(stream: BinaryIO, stats: InputStats) -> Iterator[str]:
    for _, text in text_lines(stream, stats):
        yield text + "\n"


def read_explorer_csv(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per data row of a Logs Explorer CSV download."""
    physical = _physical(stream, stats)
    rows = csv.reader(physical, strict=False)
    paths: list[tuple[str, ...]] | None = None
    consumed = 0
    # A row shorter than the header waits for the next one: the last row is cut short when it
    # is the only short one (a file whose rows all lack their empty last cells is another
    # writer's, not a cut download).
    short: tuple[list[str], int, int] | None = None
    shorts = 0
    try:
        for row in rows:
            first, consumed = consumed + 1, rows.line_num
            count = consumed - first + 1
            if short is not None:
                yield from _row(paths or [], *short, stats)
                short = None
            if not any(cell.strip() for cell in row):
                stats.skip(BLANK_LINE, count)
                continue
            if paths is None:
                paths = header_paths(row)
                stats.used += count
                continue
            if len(row) < len(paths):
                shorts += 1
                short = (row, first, count)
                continue
            yield from _row(paths, row, first, count, stats)
        if short is not None and shorts == 1:
            _, first, count = short
            stats.skip(CUT_ROW, count)
            stats.cut_line = first + count - 1
        elif short is not None:
            yield from _row(paths or [], *short, stats)
    except csv.Error:
        # A cell beyond the size limit, or broken quoting: that row and the rest are skipped;
        # a short row still waiting for the next one is read as it is (its lines counted).
        if short is not None:
            yield from _row(paths or [], *short, stats)
        for _ in physical:
            pass
        stats.skip(BAD_CSV, stats.lines - consumed)


def _row(
    paths: list[tuple[str, ...]], row: list[str], first: int, count: int, stats: InputStats
) -> Iterator[LogRecord]:
    """The record of one data row on lines ``first`` .. ``first + count - 1``, counted."""
    try:
        entry = row_entry(paths, row)
    except LostDigits as error:
        raise lost_digits(error, stats.path, first) from None
    outcome = record_or_reason(entry, Origin(stats.path, first))
    if isinstance(outcome, str):
        stats.skip(outcome, count)
        return
    stats.used += count
    stats.records += 1
    yield outcome
