"""Log records: the one shape every input format is turned into.

A :class:`LogRecord` is one log entry (one message, possibly multi-line) with
where it came from, so that every finding can cite its evidence.
:func:`record_from_entry` converts a Cloud Logging ``LogEntry`` (API JSON field
names, as in sink files, ``gcloud logging read`` and the live API) into one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

SERVICE_TASK = "service"


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a record came from: input path and 1-based line number; ``entry`` tells the
    records of one line apart (0 for the first), for the input that holds several on a line
    (a compact JSON array). Two records never share an origin: later stages take it for the
    record's identity (which events one record gave, duplicates)."""

    path: str
    line: int
    entry: int = 0

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        """The evidence object of the JSON contract."""
        return {"path": self.path, "line": self.line}


@dataclass(frozen=True, slots=True)
class TableOrigin(Origin):
    """A record read from a table (BigQuery): ``path`` names the input as the report lists
    it and ``line`` orders its rows; the evidence cites ``table`` (the table the row is in,
    a wildcard's own table), ``insert_id`` and ``timestamp`` instead of a line."""

    table: str = ""
    insert_id: str | None = None
    timestamp: datetime | None = None

    def __str__(self) -> str:
        when = _rfc3339(self.timestamp) if self.timestamp is not None else "no time"
        return f"{self.table} insertId={self.insert_id or '-'} {when}"

    def to_dict(self) -> dict[str, Any]:
        """The evidence object: the file form's keys, and the table's own."""
        return {
            "path": self.path,
            "line": self.line,
            "table": self.table,
            "insert_id": self.insert_id,
            "timestamp": _rfc3339(self.timestamp) if self.timestamp is not None else None,
        }


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One log message of one job.

    ``timestamp`` is timezone-aware UTC, or None when the input has no time.
    ``task`` is the worker (``workerpool0-0``, legacy ``master-replica-0``) or
    ``service`` for the training service's own messages, or None when unknown.
    ``vm`` is ``labels["compute.googleapis.com/resource_id"]``: a change for
    the same task means the worker moved to another VM.
    """

    timestamp: datetime | None
    job_id: str | None
    task: str | None
    severity: str
    text: str
    origin: Origin
    vm: str | None = None
    trial: str | None = None
    insert_id: str | None = None


@dataclass(slots=True)
class InputStats:
    """How one input was read: every line is counted as used or skipped with a reason.

    ``lines`` counts physical input lines (for a JSON array: its lines too);
    ``records`` the records produced; ``used`` the lines those records were
    made of; ``skipped`` the lines that produced no record, by reason in
    ``skip_reasons``. Invariant once reading is done: ``lines == used + skipped``.
    ``duplicates`` counts records whose message another record (same entry
    from another export, or the same insertId twice) already gave.
    """

    path: str
    format: str = "unknown"
    lines: int = 0
    records: int = 0
    used: int = 0
    skipped: int = 0
    skip_reasons: Counter[str] = field(default_factory=Counter)
    duplicates: int = 0

    def restart(self) -> None:
        """Zero the line counts, for a source that is read again from its start."""
        self.lines = self.records = self.used = self.skipped = 0
        self.skip_reasons.clear()

    def add(self, other: InputStats) -> None:
        """Add the line counts of ``other`` (another part of the same input)."""
        self.lines += other.lines
        self.used += other.used
        self.records += other.records
        self.skipped += other.skipped
        self.skip_reasons.update(other.skip_reasons)

    def skip(self, reason: str, count: int = 1) -> None:
        """Count ``count`` lines as skipped for ``reason``."""
        self.skipped += count
        self.skip_reasons[reason] += count

    def to_dict(self) -> dict[str, Any]:
        """The ``inputs[]`` object of the JSON contract."""
        return {
            "path": self.path,
            "format": self.format,
            "lines": self.lines,
            "records": self.records,
            "skipped": self.skipped,
            "skip_reasons": dict(sorted(self.skip_reasons.items())),
            "duplicates": self.duplicates,
        }


# Hyperparameter-tuning trials run as jobs of their own inside one job id (their service lines
# carry the trial label too): they are grouped apart, under "<job id>\x1f<trial>".
_TRIAL_SEPARATOR = "\x1f"


def job_group(job_id: str | None, trial: str | None) -> str | None:
    """The key records of one job (or one trial of a tuning job) are grouped under."""
    if job_id is None or not trial:
        return job_id
    return f"{job_id}{_TRIAL_SEPARATOR}{trial}"


def split_job_group(group: str) -> tuple[str, str | None]:
    """The job id and trial (None when not a trial) of a :func:`job_group` key."""
    job_id, _, trial = group.partition(_TRIAL_SEPARATOR)
    return job_id, trial or None


class Source(Protocol):
    """Anything that yields log records and accounts for its input.

    Implemented by files and stdin (``analyzer.ingest``), by live Cloud
    Logging (``analyzer.live``) and in memory (for tests). ``stats`` is filled
    while ``records()`` is consumed.
    """

    @property
    def stats(self) -> InputStats: ...

    def records(self) -> Iterator[LogRecord]: ...


_SINK_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", re.ASCII)


def parse_timestamp(value: str) -> datetime:
    """Parse an RFC 3339 timestamp (nanoseconds allowed) into aware UTC.

    Raises ValueError when ``value`` is not a timestamp.
    """
    # The sink's own form, 2024-04-04T00:20:35.555006710Z, parsed without string surgery.
    if _SINK_TIME.fullmatch(value):
        return datetime.fromisoformat(value[:26]).replace(tzinfo=UTC)
    return _parse_any_timestamp(value)


def _parse_any_timestamp(value: str) -> datetime:
    """:func:`parse_timestamp` for any RFC 3339 form (offsets, ``z``, any fraction length)."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    # Python keeps microseconds: cut nanoseconds to 6 digits before parsing.
    dot = text.find(".")
    if dot != -1:
        end = dot + 1
        while end < len(text) and text[end].isdigit():
            end += 1
        text = text[: dot + 1] + text[dot + 1 : end][:6].ljust(6, "0") + text[end:]
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _label(mapping: Any, key: str) -> str | None:
    if isinstance(mapping, dict):
        value = mapping.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def record_from_entry(entry: dict[str, Any], origin: Origin) -> LogRecord:
    """Turn one Cloud Logging ``LogEntry`` (API JSON) into a :class:`LogRecord`.

    Raises ValueError when the entry has no usable message text.
    """
    resource = entry.get("resource")
    resource_labels = resource.get("labels") if isinstance(resource, dict) else None
    labels = entry.get("labels")
    # gcloud's order for the worker identity.
    task = (
        _label(resource_labels, "task_name")
        or _label(labels, "task_name")
        or _label(labels, "ml.googleapis.com/task_name")
    )
    job_id = _label(resource_labels, "job_id") or _label(labels, "ml.googleapis.com/job_id")
    trial = _label(labels, "trial_id") or _label(labels, "ml.googleapis.com/trial_id")

    payload = entry.get("jsonPayload")
    text: Any = None
    if isinstance(payload, dict):
        text = payload.get("message")
        # Container output names its replica in attrs.tag when no label does.
        if task is None:
            task = _label(payload.get("attrs"), "tag")
    if not isinstance(text, str):
        text = entry.get("textPayload")
    if not isinstance(text, str):
        raise ValueError("entry has neither jsonPayload.message nor textPayload")

    raw_time = entry.get("timestamp") or entry.get("receiveTimestamp")
    timestamp = parse_timestamp(raw_time) if isinstance(raw_time, str) else None
    severity = entry.get("severity")
    insert_id = entry.get("insertId")
    return LogRecord(
        timestamp=timestamp,
        job_id=job_id,
        task=task,
        severity=severity if isinstance(severity, str) else "DEFAULT",
        text=text,
        origin=origin,
        vm=_label(labels, "compute.googleapis.com/resource_id"),
        trial=trial,
        insert_id=insert_id if isinstance(insert_id, str) else None,
    )
