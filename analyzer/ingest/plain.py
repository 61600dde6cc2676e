"""Any other text: each non-blank line is a record of its own.

A line that starts with a timestamp (``2022-09-21 14:41:46``, ISO 8601 with or
without ``T``, fraction and offset; Python logging's ``,123`` milliseconds too)
gets that time, read as UTC when it has no offset, and the rest of the line as
its text (after a LogEntry severity word there, which becomes the record's severity); a line
that starts with the time of day only (a console copy) gets no time, and the rest of the line
as its text. A terminal's colour sequences are left out. A line of the old Logs Viewer's copy
gives its severity letter and task (:func:`split_viewer_line`). Otherwise task and job are
unknown; the severity is ``DEFAULT`` unless the line gave one.
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


# A copy of the old Logs Viewer's lines (Stackdriver, the Cloud ML Engine era): a one-letter
# severity, two spaces, the entry's task, its message, two spaces and the task again
# ("I  worker-replica-3 global step 52335: ...  worker-replica-3"); an entry without a task
# label (the service's) shows its severity and message alone. Without the task the replica's
# own lines read as nobody's, and a paste holding them as one without the container's output.
_VIEWER_SEVERITY = re.compile(r"(?P<letter>[DIWEC])  (?=\S)")
_VIEWER_TASK = re.compile(
    r"(?P<task>[A-Za-z][\w.]*(?:-[A-Za-z]\w*)*-\d+) (?P<message>.*?)  (?P=task)[ \t]*"
)
_LETTERS = {"D": "DEBUG", "I": "INFO", "W": "WARNING", "E": "ERROR", "C": "CRITICAL"}


def split_viewer_line(text: str) -> tuple[str, str | None, str] | None:
    """The severity, task (None: none shown) and message of a Logs Viewer copy's line (see
    above), or None when ``text`` is not one."""
    match = _VIEWER_SEVERITY.match(text)
    if match is None:
        return None
    rest = text[match.end() :]
    tasked = _VIEWER_TASK.fullmatch(rest)
    if tasked is None:
        return _LETTERS[match["letter"]], None, rest
    return _LETTERS[match["letter"]], tasked["task"], tasked["message"]


# A terminal's control sequences (ESC [ ... letter): the colours IPython, rich or a coloured
# logger put around a traceback's parts, kept in a notebook's saved outputs and in pastes of a
# terminal. They style the text and are none of it: read without them, a coloured
# "RuntimeError" line is the exception line it shows.
_ANSI_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def read_plain_text(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per non-blank line; blank lines are skipped as "blank line"."""
    for number, line in text_lines(stream, stats):
        text = _ANSI_SEQUENCE.sub("", line) if "\x1b" in line else line
        if not text.strip():
            stats.skip(BLANK_LINE)
            continue
        timestamp, message = split_leading_time(text)
        severity, task = "DEFAULT", None
        if timestamp is not None:
            severity, message = split_severity(message)
        elif (viewer := split_viewer_line(text)) is not None:
            severity, task, message = viewer
        stats.records += 1
        stats.used += 1
        yield LogRecord(
            timestamp=timestamp,
            job_id=None,
            task=task,
            severity=severity,
            text=message,
            origin=Origin(stats.path, number),
        )
