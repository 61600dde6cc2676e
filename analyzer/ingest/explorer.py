"""Text copied from the Logs Explorer page.

Each entry is a timestamp line with milliseconds and a zone name
(``2022-09-21 14:41:46.017 CEST``), a blank line, the task name, then the
message (possibly several lines), repeated newest first or oldest first.
Zone abbreviations are mapped to UTC offsets by :data:`ZONE_OFFSETS`; an
abbreviation it does not know (or an ambiguous one read its common way, e.g.
``IST`` as India) is taken as UTC: the record is kept, its time may be off by
the zone's offset.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import BinaryIO

from analyzer.ingest.lines import text_lines
from analyzer.ingest.sniff import SEVERITIES
from analyzer.records import InputStats, LogRecord, Origin

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
