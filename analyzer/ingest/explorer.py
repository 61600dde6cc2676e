"""Text copied from the Logs Explorer page.

Each entry is a timestamp line with milliseconds and a zone name
(``2022-09-21 14:41:46.017 CEST``), a blank line, the task name, then the
message (possibly several lines), repeated newest first or oldest first.
Zone abbreviations are mapped to UTC offsets by :data:`ZONE_OFFSETS`; an
abbreviation it does not know (or an ambiguous one read its common way, e.g.
``IST`` as India) is taken as UTC: the record is kept, its time may be off by
the zone's offset.

Also the page's summary lines (:func:`read_summary_lines`), one entry a line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import BinaryIO

from analyzer.ingest.lines import text_lines
from analyzer.ingest.preamble import is_preamble, preamble_record
from analyzer.ingest.records import InputStats, LogRecord, Origin, parse_timestamp
from analyzer.ingest.sniff import SEVERITIES, SUMMARY_LINE

BEFORE_FIRST_ENTRY = "text before the first Logs Explorer entry"

_HOURS = {
    "UTC": 0, "GMT": 0, "Z": 0, "WET": 0, "WEST": 1, "BST": 1, "IST": 5.5, "CET": 1,
    "CEST": 2, "MET": 1, "MEST": 2, "EET": 2, "EEST": 3, "MSK": 3, "GST": 4, "PKT": 5,
    "ICT": 7, "WIB": 7, "SGT": 8, "HKT": 8, "AWST": 8, "PHT": 8, "JST": 9, "KST": 9,
    "ACST": 9.5, "ACDT": 10.5, "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13,
    "HST": -10, "AKST": -9, "AKDT": -8, "PST": -8, "PDT": -7, "MST": -7, "MDT": -6,
    "CST": -6, "CDT": -5, "EST": -5, "EDT": -4, "AST": -4, "ADT": -3, "NST": -3.5,
    "NDT": -2.5, "BRT": -3, "ART": -3, "CLT": -4, "COT": -5, "PET": -5,
}  # fmt: skip
ZONE_OFFSETS: dict[str, timedelta] = {name: timedelta(hours=h) for name, h in _HOURS.items()}

_TIMESTAMP_LINE = re.compile(
    r"^(?P<date>\d{4}-\d\d-\d\d) (?P<time>\d\d:\d\d:\d\d)\.(?P<fraction>\d{1,9}) "
    r"(?P<zone>[A-Za-z+\-][\w+\-:]*)[ \t]*$"
)
_NUMERIC_ZONE = re.compile(r"^(?:UTC|GMT)?(?P<sign>[+-])(?P<hours>\d{1,2}):?(?P<minutes>\d\d)?$")
_TASK = re.compile(r"^[A-Za-z][\w.\-]*$")


def zone_offset(zone: str) -> timedelta:
    """The UTC offset a Logs Explorer zone name stands for; UTC when unknown."""
    known = ZONE_OFFSETS.get(zone.upper())
    if known is not None:
        return known
    numeric = _NUMERIC_ZONE.match(zone.upper())
    if numeric is None:
        return timedelta(0)
    offset = timedelta(hours=int(numeric["hours"]), minutes=int(numeric["minutes"] or 0))
    return -offset if numeric["sign"] == "-" else offset


def parse_timestamp_line(text: str) -> datetime | None:
    """The UTC time of a Logs Explorer timestamp line, or None when ``text`` is not one."""
    match = _TIMESTAMP_LINE.match(text)
    if match is None:
        return None
    try:
        offset = zone_offset(match["zone"])
        local = datetime.fromisoformat(
            f"{match['date']}T{match['time']}.{match['fraction'][:6].ljust(6, '0')}"
        )
        return local.replace(tzinfo=timezone(offset)).astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def _record(timestamp: datetime, first_line: int, body: list[str], stats: InputStats) -> LogRecord:
    filled = [index for index, text in enumerate(body) if text.strip()]
    severity = "DEFAULT"
    if len(filled) > 1 and body[filled[0]].strip() in SEVERITIES:
        severity = body[filled.pop(0)].strip()
    task: str | None = None
    start = filled[0] if filled else len(body)
    # The task name sits on its own line before the message; a lone line is the message.
    if len(filled) > 1 and _TASK.match(body[filled[0]].strip()):
        task = body[filled[0]].strip()
        start = filled[0] + 1
    message = "\n".join(body[start:]).strip("\n")
    stats.records += 1
    stats.used += 1 + len(body)
    return LogRecord(
        timestamp=timestamp,
        job_id=None,
        task=task,
        severity=severity,
        text=message,
        origin=Origin(stats.path, first_line),
    )


def read_logs_explorer(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per Logs Explorer entry; its blank separator lines count as used."""
    timestamp: datetime | None = None
    first_line = 0
    body: list[str] = []
    for number, text in text_lines(stream, stats):
        parsed = parse_timestamp_line(text)
        if parsed is not None:
            if timestamp is not None:
                yield _record(timestamp, first_line, body, stats)
            timestamp, first_line, body = parsed, number, []
        elif timestamp is None:
            stats.skip(BEFORE_FIRST_ENTRY if text.strip() else "blank line")
        else:
            body.append(text)
    if timestamp is not None:
        yield _record(timestamp, first_line, body, stats)


BEFORE_FIRST_SUMMARY = "text before the first Logs Explorer summary line"
# Summary fields that name the worker, the job and the trial (the Logs Explorer shows the
# fields a user chose, under their LogEntry paths, camel-cased or not).
_TASK_FIELDS = (
    "resource.labels.taskName",
    "resource.labels.task_name",
    "labels.taskName",
    "labels.task_name",
    "jsonPayload.attrs.tag",
)
_JOB_FIELDS = ("resource.labels.jobId", "resource.labels.job_id")
_TRIAL_FIELDS = ("labels.trialId", "labels.trial_id", 'labels."ml.googleapis.com/trial_id"')


def summary_fields(text: str | None) -> dict[str, str]:
    """The ``key: value`` pairs of a summary line's brackets."""
    found: dict[str, str] = {}
    for part in (text or "").split(", "):
        key, colon, value = part.partition(": ")
        if colon and key.strip():
            found[key.strip()] = value.strip()
    return found


def _pick(fields: dict[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        if fields.get(name):
            return fields[name]
    return None


def _summary_time(text: str, zone: str | None = None) -> datetime | None:
    text = text.replace(" ", "T", 1)
    local = text[-1:].isdigit() and "+" not in text[19:] and "-" not in text[19:]
    try:
        if local and zone is not None:
            stamp = parse_timestamp(text + "Z").replace(tzinfo=timezone(zone_offset(zone)))
            return stamp.astimezone(UTC)
        # Without a zone, the page's time is taken as UTC.
        return parse_timestamp(text + "Z" if local else text)
    except (ValueError, OverflowError):
        return None


@dataclass(slots=True)
class _Summary:
    first_line: int
    severity: str
    timestamp: datetime | None
    fields: dict[str, str]
    lines: list[str]


def read_summary_lines(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per Logs Explorer summary line (``INFO 2024-03-01T10:00:00Z
    [resource.labels.taskName: workerpool0-0] message``); lines without the prefix continue
    the message above them (a traceback); gcloud's own lines are records of their own."""
    pending: _Summary | None = None
    for number, text in text_lines(stream, stats):
        match = SUMMARY_LINE.match(text)
        if match is not None:
            if pending is not None:
                yield _summary_record(pending, stats)
            zone = match["zone"]
            if zone is not None and zone not in ZONE_OFFSETS:
                # Not a zone's name: the message's first word, the brackets absent.
                message, fields = text[match.start("zone") :], {}
                timestamp = _summary_time(match["time"])
            else:
                message, fields = text[match.end() :], summary_fields(match["fields"])
                timestamp = _summary_time(match["time"], zone)
            pending = _Summary(number, match["severity"], timestamp, fields, [message])
        elif pending is not None and not is_preamble(text):
            pending.lines.append(text)
        elif is_preamble(text):
            if pending is not None:
                yield _summary_record(pending, stats)
                pending = None
            yield preamble_record(text, number, stats)
        else:
            stats.skip(BEFORE_FIRST_SUMMARY if text.strip() else "blank line")
    if pending is not None:
        yield _summary_record(pending, stats)


def _summary_record(pending: _Summary, stats: InputStats) -> LogRecord:
    stats.records += 1
    stats.used += len(pending.lines)
    fields = pending.fields
    return LogRecord(
        timestamp=pending.timestamp,
        job_id=_pick(fields, _JOB_FIELDS),
        task=_pick(fields, _TASK_FIELDS),
        severity=pending.severity,
        text="\n".join(pending.lines).strip("\n"),
        origin=Origin(stats.path, pending.first_line),
        trial=_pick(fields, _TRIAL_FIELDS),
    )
