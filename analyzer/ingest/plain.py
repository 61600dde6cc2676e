"""Any other text: each non-blank line is a record of its own.

A line that starts with a timestamp (``2022-09-21 14:41:46``, ISO 8601 with or
without ``T``, fraction and offset; Python logging's ``,123`` milliseconds too)
gets that time, read as UTC when it has no offset, and the rest of the line as
its text (after a LogEntry severity word there, which becomes the record's severity); a line
that starts with the time of day only (a console copy) gets no time, and the rest of the line
as its text. Task and job are unknown; the severity is ``DEFAULT`` unless the line gave one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from typing import BinaryIO

from analyzer.ingest.lines import text_lines
from analyzer.ingest.sniff import CLOCK_LINE, SEVERITIES
from analyzer.records import InputStats, LogRecord, Origin, parse_timestamp

BLANK_LINE = "blank line"

_LEADING_TIME = re.compile(
    r"^\[?(?P<time>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)"
    r"(?P<zone>Z|[+-]\d\d:?\d\d| ?UTC)?\]?(?:[ \t:\-|]+|$)"
)


def split_leading_time(text: str) -> tuple[datetime | None, str]:
    """The timestamp a line starts with (or None) and the rest of the line."""
    match = _LEADING_TIME.match(text)
    if match is None:
        # A console copy's time of day alone ("18:51:16.318 Job completed successfully."):
        # no date, so no timestamp, but the message is what follows it.
        clock = CLOCK_LINE.match(text)
        return None, text if clock is None else text[clock.end() :]
    zone = (match["zone"] or "").strip()
    if zone in ("", "UTC"):
        zone = "Z"
    elif len(zone) == 5:
        zone = f"{zone[:3]}:{zone[3:]}"
    try:
        timestamp = parse_timestamp(match["time"].replace(",", ".") + zone)
    except (ValueError, OverflowError):
        return None, text
    return timestamp, text[match.end() :]


# A LogEntry severity right after a line's time: gcloud's table(timestamp, severity, ...) and
# value(...) output, and most "time level message" logs. Taken as the record's severity, so
# that the message itself is the text the rules read whole ("Job failed.").
_LEADING_SEVERITY = re.compile(
    r"(?P<severity>" + "|".join(sorted(SEVERITIES)) + r")(?:[ \t]*[:|\-][ \t]*|[ \t]+|$)"
)


def split_severity(text: str) -> tuple[str, str]:
    """The LogEntry severity ``text`` starts with (else ``DEFAULT``) and the rest of it."""
    match = _LEADING_SEVERITY.match(text)
    if match is None:
        return "DEFAULT", text
    return match["severity"], text[match.end() :]


def read_plain_text(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per non-blank line; blank lines are skipped as "blank line"."""
    for number, text in text_lines(stream, stats):
        if not text.strip():
            stats.skip(BLANK_LINE)
            continue
        timestamp, message = split_leading_time(text)
        severity = "DEFAULT"
        if timestamp is not None:
            severity, message = split_severity(message)
        stats.records += 1
        stats.used += 1
        yield LogRecord(
            timestamp=timestamp,
            job_id=None,
            task=None,
            severity=severity,
            text=message,
            origin=Origin(stats.path, number),
        )
