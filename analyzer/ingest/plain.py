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
from collections.abc import Iterable, Iterator
from dataclasses import replace
from datetime import datetime
from typing import BinaryIO

from analyzer.ingest.lines import text_lines
from analyzer.ingest.records import InputStats, LogRecord, Origin, parse_timestamp
from analyzer.ingest.sdklines import sdk_messages
from analyzer.ingest.sniff import CLOCK_LINE, SEVERITIES

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


# A message that goes on over the indented lines after it, in a paste without times on them
# (the error printed by a program, not a log): gRPC's error repr, "<_InactiveRpcError of RPC
# that terminated with:" and its tab-indented "status = ...", "details = "..."" (a long
# details string broken over lines too), "debug_error_string = ..." fields and closing ">";
# and an exception's message that ends with a colon and goes on indented ("ResourceExhausted:
# 429 The following quota metrics exceed quota limits:" and the metric on the next line). Read
# one record a line, the quota metric on its own line was no part of the error the rules read.
_GOES_ON = re.compile(
    r"of RPC that terminated with:\s*$"
    r"|^\s*(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exhausted|Denied|Failure|Invalid\w*)"
    r": .*:\s*$"
)
# A line that goes on such a message: indented (not a traceback's frame line), or the repr's ">".
_CONTINUES = re.compile(r"^(?:[ \t]+(?!File \")\S|>)")
# Bounds a message so joined: a real error's fields are a few lines.
_MOST_JOINED = 40


def read_plain_text(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per non-blank line; blank lines are skipped as "blank line". A message
    that goes on over indented lines without a time (:data:`_GOES_ON`) is one record of them
    all, numbered by its first line; so is each of the SDK's two-line messages
    (:func:`~analyzer.ingest.sdklines.sdk_messages`)."""
    path = stats.path
    lines = ((Origin(path, number), line) for number, line in text_lines(stream, stats))
    return sdk_messages(line_records(lines, stats), stats)


def line_records(lines: Iterable[tuple[Origin, str]], stats: InputStats) -> Iterator[LogRecord]:
    """The records of text ``lines`` (each with its origin, already counted in
    ``stats.lines``), read as :func:`read_plain_text` reads a text's lines."""
    pending: LogRecord | None = None  # a message that may go on, and the lines it went on over
    more: list[str] = []
    for origin, line in lines:
        text = _ANSI_SEQUENCE.sub("", line) if "\x1b" in line else line
        if pending is not None:
            if len(more) < _MOST_JOINED and _CONTINUES.match(text):
                more.append(text)
                if text.startswith(">"):  # the end of gRPC's repr
                    yield _joined(pending, more, stats)
                    pending = None
                continue
            yield _joined(pending, more, stats)
            pending = None
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
        record = LogRecord(
            timestamp=timestamp,
            job_id=None,
            task=task,
            severity=severity,
            text=message,
            origin=origin,
        )
        if _GOES_ON.search(message):
            pending, more = record, []
            continue
        stats.used += 1
        yield record
    if pending is not None:
        yield _joined(pending, more, stats)


def _joined(record: LogRecord, more: list[str], stats: InputStats) -> LogRecord:
    """``record`` with the lines its message went on over (each counted used), joined into
    one line as the program's one message was before its printer broke it: the form the rules
    and the cause's one-line message read (a gRPC repr as the SDK's one-line copies give it)."""
    stats.used += 1 + len(more)
    if not more:
        return record
    return replace(record, text=" ".join([record.text.rstrip(), *(line.strip() for line in more)]))
