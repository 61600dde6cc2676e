"""``gcloud ai custom-jobs stream-logs`` (and ``gcloud ai-platform jobs stream-logs``) text.

gcloud prints ``SEVERITY<TAB>YYYY-MM-DD HH:MM:SS ±ZZZZ<TAB>task_name<TAB>message``
(legacy: a ``trial_id`` column, often empty, before the message), one line per
line of the message, each with the entry's prefix. Pasting often turns the tabs
into runs of spaces; the message's own indentation is then lost.

A multi-line service entry comes back as several lines with one prefix, but two
distinct service messages can share a second too (``Finished tearing down
training program.`` and ``Job failed.``). :func:`continues` decides which lines
are joined back: see its docstring for the heuristic.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import BinaryIO

from analyzer.ingest.lines import text_lines
from analyzer.ingest.preamble import is_preamble, preamble_record
from analyzer.ingest.records import SERVICE_TASK, InputStats, LogRecord, Origin
from analyzer.ingest.sniff import SEVERITIES

ENDPOINT_BANNER = "gcloud endpoint banner"
BLANK_LINE = "blank line"
NOT_STREAM_LOGS = "not a stream-logs line"

_PREFIX = re.compile(
    r"^(?P<severity>" + "|".join(sorted(SEVERITIES)) + r")[ \t]+"
    r"(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4})(?=[ \t]|$)"
)
# With tabs lost, only a token shaped like a task name is taken as the task.
_SPACED_TASK = re.compile(
    r"^[ \t]+(?P<task>service|unknown_task|[A-Za-z][\w.]*(?:-[A-Za-z]\w*)*-\d+)(?=[ \t]|$)"
)
# Cloud ML Engine (2016-2017) wrote the job's own messages before provisioning (validation,
# queueing) under this task: the service's, as `service` is now.
_LEGACY_SERVICE_TASK = "unknown_task"
_SPACED_TRIAL = re.compile(r"^[ \t]+(?P<trial>\d+)(?=[ \t])")
_TAB_TRIAL = re.compile(r"^(?P<trial>\d*)\t")

# Lines that start a service message of their own (platform.md sections 3 and 4): an
# error template, which may go on over several lines, or a one-line lifecycle sentence.
_ERROR_START = re.compile(
    r"^(?:The replica |Replicas low on memory|Resources are insufficient|Internal error occurred"
    r"|The following quota metrics)"
)
_LIFECYCLE_START = re.compile(
    r"^(?:Waiting for |Vertex AI is |Job is |Job failed\.|Job completed|Job will not be retried"
    r"|Tearing down training program|Finished tearing down|Validating job requirements"
    r"|Job creation request|Job \S+ is queued|Module completed|Clean up finished|Task completed)"
)
_CONTINUATION_START = re.compile(
    r"^(?:\s|Traceback \(most recent call last\)|File \"|\[\.\.\.\]|During handling of the above"
    r"|The above exception|To find out more about why your job exited)"
)


@dataclass(frozen=True, slots=True)
class StreamLine:
    """One parsed stream-logs line."""

    severity: str
    timestamp: datetime
    task: str | None
    trial: str | None
    message: str

    def same_entry_prefix(self, other: StreamLine) -> bool:
        return (self.severity, self.timestamp, self.task, self.trial) == (
            other.severity,
            other.timestamp,
            other.task,
            other.trial,
        )


def parse_time(value: str) -> datetime | None:
    """``value`` (``2024-05-08 16:47:59 +0000``) as aware UTC, or None when it is no time.

    ``strptime`` is the definition; ``fromisoformat`` gives its answer twenty times faster for
    ASCII digits and an offset's minutes under 60 (beyond that strptime refuses and
    fromisoformat does not), and anything it refuses is asked of strptime.
    """
    if value.isascii() and value[23] < "6":
        try:
            return datetime.fromisoformat(f"{value[:19]}{value[20:23]}:{value[23:]}").astimezone(
                UTC
            )
        except ValueError:
            pass
    try:
        return datetime.strptime(value, "%Y-%m-%d %H:%M:%S %z").astimezone(UTC)
    except ValueError:
        return None


def parse_line(text: str) -> StreamLine | None:
    """The fields of a stream-logs line, or None when ``text`` is not one."""
    prefix = _PREFIX.match(text)
    if prefix is None:
        return None
    timestamp = parse_time(prefix["time"])
    if timestamp is None:
        return None
    rest = text[prefix.end() :]
    task: str | None
    trial: str | None = None
    if rest.startswith("\t"):
        task, _, message = rest[1:].partition("\t")
        legacy = _TAB_TRIAL.match(message)
        if legacy is not None:
            trial, message = legacy["trial"] or None, message[legacy.end() :]
    else:
        spaced = _SPACED_TASK.match(rest)
        task = spaced["task"] if spaced else None
        rest = rest[spaced.end() :] if spaced else rest
        legacy = _SPACED_TRIAL.match(rest) if task and "-replica-" in task else None
        if legacy is not None:
            trial, rest = legacy["trial"], rest[legacy.end() :]
        message = rest.lstrip(" \t")
    if task == _LEGACY_SERVICE_TASK:
        task = SERVICE_TASK
    return StreamLine(prefix["severity"], timestamp, task or None, trial, message)


@dataclass(slots=True)
class _Pending:
    head: StreamLine
    first_line: int
    messages: list[str] = field(default_factory=list)

    @property
    def line_count(self) -> int:
        return len(self.messages)


def continues(pending_head: StreamLine, pending_lines: int, line: StreamLine) -> bool:
    """Whether ``line`` continues the service message begun by ``pending_head``.

    Only the service's entries are joined: a worker writes one entry per output
    line. A line continues the message when it has the same severity, second,
    task and trial, and does not itself start a known service message (a
    lifecycle sentence or an error template). The head must not be a lifecycle
    sentence itself, those are one line. A ``The replica ...`` line joins a
    ``The replica ...`` head that already absorbed lines (a multi-replica message
    with a traceback in between); after a one-line head it starts a new record.
    """
    if pending_head.task != SERVICE_TASK or not line.same_entry_prefix(pending_head):
        return False
    return continues_message(pending_head.message, pending_lines, line.message)


def continues_message(head_message: str, pending_lines: int, message: str) -> bool:
    """:func:`continues` for a line with the head's prefix (severity, second, task ``service``
    and trial): whether ``message`` goes on the message begun by ``head_message``, which has
    ``pending_lines`` lines so far."""
    if _LIFECYCLE_START.match(head_message):
        return False
    if _CONTINUATION_START.match(message) or not message.strip():
        return True
    if _LIFECYCLE_START.match(message):
        return False
    if _ERROR_START.match(message):
        return (
            message.startswith("The replica ")
            and head_message.startswith("The replica ")
            and pending_lines > 1
        )
    return True


def read_stream_logs(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per stream-logs message, joining multi-line service messages."""
    pending: _Pending | None = None
    for number, text in text_lines(stream, stats):
        line = parse_line(text)
        if line is None:
            if text.startswith("Using endpoint ["):
                stats.skip(ENDPOINT_BANNER)
            elif is_preamble(text):
                if pending is not None:
                    yield _emit(pending, stats)
                    pending = None
                yield preamble_record(text, number, stats)
            elif not text.strip():
                stats.skip(BLANK_LINE)
            else:
                stats.skip(NOT_STREAM_LOGS)
            continue
        if pending is not None and continues(pending.head, pending.line_count, line):
            pending.messages.append(line.message)
            continue
        if pending is not None:
            yield _emit(pending, stats)
        pending = _Pending(line, number, [line.message])
    if pending is not None:
        yield _emit(pending, stats)


def _emit(pending: _Pending, stats: InputStats) -> LogRecord:
    head = pending.head
    stats.records += 1
    stats.used += pending.line_count
    return LogRecord(
        timestamp=head.timestamp,
        job_id=None,
        task=head.task,
        severity=head.severity,
        text="\n".join(pending.messages).rstrip("\n"),
        origin=Origin(stats.path, pending.first_line),
        trial=head.trial,
    )
