"""Newline-delimited LogEntry JSON, as a Cloud Logging sink writes to Cloud Storage.

Entries may be out of order and duplicated; both are kept as they are (a later
stage drops duplicate ``insertId``s). This is the plain reader, a full record per
line: the fast scan (``analyzer.classify._fastscan``) reads sink files without one, and is
tested against it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from analyzer.ingest.entries import (
    CUT_SHORT,
    InvalidJson,
    invalid_reason,
    load_json_repairing,
    record_or_reason,
)
from analyzer.ingest.lines import BOM, LONGEST_LINE, read_past_line, skip_long_line
from analyzer.ingest.records import InputStats, LogRecord, Origin

BLANK_LINE = "blank line"


def read_jsonl(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per LogEntry line of ``stream``, counting every line in ``stats``."""
    path = stats.path
    number = 0
    readline = stream.readline  # (capped_lines inline, as in text_lines)
    while raw := readline(LONGEST_LINE + 1):
        number += 1
        stats.lines += 1
        if len(raw) > LONGEST_LINE and not raw.endswith(b"\n"):
            read_past_line(stream)
            skip_long_line(stats, number)
            continue
        if number == 1 and raw.startswith(BOM):
            raw = raw[len(BOM) :]
        if not raw.strip():
            stats.skip(BLANK_LINE)
            continue
        try:
            entry, repaired = load_json_repairing(raw)
        except InvalidJson:
            # Only the input's last line can lack its line end.
            reason = invalid_reason(raw, not raw.endswith(b"\n"))
            stats.skip(reason)
            if reason == CUT_SHORT:
                stats.cut_line = number
            continue
        stats.invalid_utf8 += repaired
        outcome = record_or_reason(entry, Origin(path, number))
        if isinstance(outcome, str):
            stats.skip(outcome)
            continue
        stats.records += 1
        stats.used += 1
        yield outcome
