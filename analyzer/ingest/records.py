"""Log records: the one shape every input format is turned into.

A :class:`LogRecord` is one log entry (one message, possibly multi-line) with
where it came from, so that every finding can cite its evidence.
:func:`record_from_entry` converts a Cloud Logging ``LogEntry`` (API JSON field
names, as in sink files, ``gcloud logging read`` and the live API) into one.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple, Protocol

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


@dataclass(frozen=True, slots=True)
class CellOrigin(Origin):
    """A record read from a notebook's saved outputs (``analyzer.ingest.notebook``): ``line``
    numbers the notebook's output lines in order (the lines its input counts), ``cell`` is
    the cell they are in (1-based, every cell counted, as the notebook lists them) and
    ``cell_line`` the line among that cell's output lines."""

    cell: int = 0
    cell_line: int = 0

    def __str__(self) -> str:
        return f"{self.path}:cell {self.cell}:{self.cell_line}"

    def to_dict(self) -> dict[str, Any]:
        """The evidence object: the file form's keys, and the cell and its line."""
        return {
            "path": self.path,
            "line": self.line,
            "cell": self.cell,
            "cell_line": self.cell_line,
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
    from another export, or the same insertId twice) already gave. ``invalid_utf8`` counts
    the lines whose undecodable bytes were replaced by U+FFFD (and kept).
    """

    path: str
    format: str = "unknown"
    lines: int = 0
    records: int = 0
    used: int = 0
    skipped: int = 0
    skip_reasons: Counter[str] = field(default_factory=Counter)
    duplicates: int = 0
    invalid_utf8: int = 0
    # False for a text whose first lines hold no word of a job's logs (see ingest.sniff).
    recognised: bool = True
    # The number of the input's last line when the input ends inside it (a JSON object cut
    # short, skipped as ingest.entries.CUT_SHORT).
    cut_line: int | None = None
    # True for a text taken from a web page's source, read with its <br> tags as line ends
    # (ingest.webtext): ``lines`` counts those lines.
    web_text: bool = False
    # True when the input's last Logging API response carries a nextPageToken: the API had
    # more entries for the request, the pages after it are not in the input.
    more_pages: bool = False
    # The numbers of the lines longer than any log entry (ingest.lines.LONG_LINE), read past.
    long_lines: list[int] = field(default_factory=list)

    def restart(self) -> None:
        """Zero the line counts, for a source that is read again from its start."""
        self.lines = self.records = self.used = self.skipped = self.invalid_utf8 = 0
        self.skip_reasons.clear()
        self.cut_line = None
        self.more_pages = False
        self.long_lines.clear()

    def add(self, other: InputStats) -> None:
        """Add the line counts of ``other`` (another part of the same input)."""
        self.lines += other.lines
        self.used += other.used
        self.records += other.records
        self.skipped += other.skipped
        self.invalid_utf8 += other.invalid_utf8
        self.skip_reasons.update(other.skip_reasons)
        if other.cut_line is not None:  # only the input's last part can end inside a line
            self.cut_line = other.cut_line
        self.more_pages |= other.more_pages  # only the input's last part reads its end
        self.long_lines += other.long_lines  # renumbered by the caller, as its events are

    def skip(self, reason: str, count: int = 1) -> None:
        """Count ``count`` lines as skipped for ``reason``."""
        self.skipped += count
        self.skip_reasons[reason] += count

    def to_dict(self) -> dict[str, Any]:
        """The ``inputs[]`` object of the JSON contract (``invalid_utf8`` only when some line
        had to be repaired, ``cut_line`` only when the input ends inside its last line,
        ``more_pages`` only when its last Logging API response has a nextPageToken, ``long_lines``
        only when a line was longer than any log entry)."""
        found: dict[str, Any] = {
            "path": self.path,
            "format": self.format,
            "lines": self.lines,
            "records": self.records,
            "used": self.used,
            "skipped": self.skipped,
            "skip_reasons": dict(sorted(self.skip_reasons.items())),
            "duplicates": self.duplicates,
        }
        if self.invalid_utf8:
            found["invalid_utf8"] = self.invalid_utf8
        if self.cut_line is not None:
            found["cut_line"] = self.cut_line
        if self.more_pages:
            found["more_pages"] = True
        if self.long_lines:
            found["long_lines"] = list(self.long_lines)
        return found


# Hyperparameter-tuning trials run as jobs of their own inside one job id (their service lines
# carry the trial label too): they are grouped apart, under "<job id>\x1f<trial>".
_TRIAL_SEPARATOR = "\x1f"


def job_group(job_id: str | None, trial: str | None) -> str | None:
    """The key records of one job (or one trial of a tuning job) are grouped under."""
    if not trial:
        return job_id
    # A text export names no job but may name the trial (legacy stream-logs' trial column):
    # its trials are still told apart, under "\x1f<trial>".
    return f"{job_id or ''}{_TRIAL_SEPARATOR}{trial}"


def split_job_group(group: str) -> tuple[str, str | None]:
    """The job id and trial (None when not a trial) of a :func:`job_group` key."""
    job_id, _, trial = group.partition(_TRIAL_SEPARATOR)
    return job_id, trial or None


class Source(Protocol):
    """Anything that yields log records and accounts for its input.

    Implemented by files and stdin (``analyzer.ingest``), by live Cloud
    Logging (``analyzer.engines.live``) and in memory (for tests). ``stats`` is filled
    while ``records()`` is consumed.
    """

    @property
    def stats(self) -> InputStats: ...

    def records(self) -> Iterator[LogRecord]: ...


# The zone BigQuery writes after a TIMESTAMP's text ("2024-04-04 00:33:29.951169 UTC").
BIGQUERY_UTC = " UTC"
_SINK_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", re.ASCII)


def parse_timestamp(value: str) -> datetime:
    """Parse an RFC 3339 timestamp (nanoseconds allowed) into aware UTC.

    Raises ValueError when ``value`` is not a timestamp.
    """
    # The sink's own form, 2024-04-04T00:20:35.555006710Z, parsed without string surgery.
    # The zone written out rather than set with replace(tzinfo=UTC): replace's keyword call
    # cost 1.1 us of 1.35 (CPython 3.11), once per candidate line of the fast scan; the zone
    # parsed is the same timezone.utc object.
    if _SINK_TIME.fullmatch(value):
        return datetime.fromisoformat(value[:26] + "+00:00")
    return _parse_any_timestamp(value)


def _parse_any_timestamp(value: str) -> datetime:
    """:func:`parse_timestamp` for any RFC 3339 form (offsets, ``z``, any fraction length),
    and BigQuery's ``2024-04-04 00:33:29.951169 UTC``."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    elif text.endswith(BIGQUERY_UTC):
        # What `bq extract` and the BigQuery console write for a TIMESTAMP column: a sink
        # table exported to JSON has every entry's time so (platform.md section 6).
        text = text[: -len(BIGQUERY_UTC)] + "+00:00"
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


# The LogEntry-to-record mapping (platform.md sections 5 and 9), written once: every reader of
# LogEntry objects (sink lines and their fast path, gcloud's JSON and YAML, Logs Explorer
# downloads, the live API) reads them through entry_fields.
JOB_RESOURCE_TYPES = frozenset({"ml_job", "cloudml_job"})
# Worker identity in gcloud's order: resource.labels.task_name, then these labels.
TASK_LABELS = ("task_name", "ml.googleapis.com/task_name")
JOB_LABEL = "ml.googleapis.com/job_id"
TRIAL_LABELS = ("trial_id", "ml.googleapis.com/trial_id")
VM_LABEL = "compute.googleapis.com/resource_id"
# A jsonPayload's text: the container runner's "message", else what other loggers name it
# (Go's, pino's and zap's "msg", "log", "text", "event").
TEXT_KEYS = ("message", "msg", "log", "text", "event")

NO_MESSAGE = "no message text"
AUDIT_ENTRY = "audit log entry (protoPayload)"
OTHER_RESOURCE = "other resource type: "


class EntryFields(NamedTuple):
    """What a record is made of, read from one LogEntry; ``time`` is still the raw string.

    A named tuple: made for every entry a reader reads, in a third of a frozen dataclass's
    time."""

    job_id: str | None
    task: str | None
    trial: str | None
    vm: str | None
    text: str
    time: str | None
    severity: str
    insert_id: str | None


# Where each field of a record is read, in order of precedence: the mapping as a table, which
# entry_fields reads and from which the fast scan builds its decoders
# (analyzer.classify._fastscan.blockdecode). A path is a LogEntry's JSON keys, outermost first.
EntryPath = tuple[str, ...]
LABEL_PATHS: dict[str, tuple[EntryPath, ...]] = {
    # A non-empty string at the first path that has one (a label).
    "job_id": (("resource", "labels", "job_id"), ("labels", JOB_LABEL)),
    # Worker identity in gcloud's order; container output names its replica in attrs.tag when
    # no label does.
    "task": (
        ("resource", "labels", "task_name"),
        *(("labels", key) for key in TASK_LABELS),
        ("jsonPayload", "attrs", "tag"),
    ),
    "trial": tuple(("labels", key) for key in TRIAL_LABELS),
    "vm": (("labels", VM_LABEL),),
}
# The paths of the labels that are ids, read as numbers by a table's writer or reader
# (pandas): :func:`id_text` gives their text.
ID_PATHS: frozenset[EntryPath] = frozenset((*LABEL_PATHS["job_id"], *LABEL_PATHS["trial"]))
# From here on a float is the image of more than one integer (2**53 + 1 rounds to 2**53).
_EXACT_IN_FLOAT = 2**53
# An id written from a float: "8.486479822100749e+18" (to_csv), "8.486479822e+18" (to_json
# keeps ten digits), "12.0". No job or trial id is written so: Vertex AI's are digits, AI
# Platform's letters, digits and underscores.
_FLOAT_WRITTEN = re.compile(r"[+-]?\d+\.\d*(?:[eE][+-]?\d+)?|[+-]?\d+[eE][+-]?\d+")


class LostDigits(ValueError):
    """An id in ``column`` that was a floating-point number past 2**53: its last digits are
    lost, so it names no job for sure (two jobs created the same second may share it)."""

    def __init__(self, value: object, column: str) -> None:
        super().__init__(
            f"the id {value} in {column} was written as a floating-point number (pandas"
            " makes a column of ids with an empty cell float64; to_json keeps ten digits):"
            " its last digits are lost and it names no job for sure; write the ids as text"
            f" (df.astype({{{column!r}: str}}) before saving, or read_csv(..., dtype=str))"
        )


def id_text(value: object, column: str) -> object:
    """An id cell of ``column`` as the mapping reads it: an integral number (a float too, or
    its text in float form) as its digits; anything else as it is. Raises
    :class:`LostDigits` for a float past 2**53 (or not integral): the id it stood for cannot
    be told."""
    number: float | None = None
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        number = value
    elif isinstance(value, str) and _FLOAT_WRITTEN.fullmatch(value):
        number = float(value)
    if number is None or number != number:  # not a number, or NaN (an empty cell)
        return value
    if not number.is_integer() or abs(number) >= _EXACT_IN_FLOAT:
        raise LostDigits(value, column)
    return str(int(number))


# The text: a string at the first of these (an empty one too), else the payload's other text
# keys (TEXT_KEYS) or its rendering (payload_text).
TEXT_PATHS: tuple[EntryPath, ...] = (("jsonPayload", TEXT_KEYS[0]), ("textPayload",))
# The time: the first of these that is set (truthy), if it is a string.
TIME_PATHS: tuple[EntryPath, ...] = (("timestamp",), ("receiveTimestamp",))
# Taken as they are when they are strings (else "DEFAULT" and None).
SEVERITY_PATH: EntryPath = ("severity",)
INSERT_ID_PATH: EntryPath = ("insertId",)
# What says an entry belongs to no job: an audit entry's payload, another resource's type.
AUDIT_PATH: EntryPath = ("protoPayload",)
RESOURCE_TYPE_PATH: EntryPath = ("resource", "type")
# The payload TEXT_KEYS are looked up in, and every path a text is read at in precedence
# order, the payload's rendering aside (TEXT_PATHS, then the payload's other text keys): what
# a reader of a table's columns (analyzer.engines.bigquery) reads, derived here so it follows the
# table.
PAYLOAD_PATH: EntryPath = TEXT_PATHS[0][:-1]
TEXT_KEY_PATHS: tuple[EntryPath, ...] = (
    *TEXT_PATHS,
    *((*PAYLOAD_PATH, key) for key in TEXT_KEYS if (*PAYLOAD_PATH, key) not in TEXT_PATHS),
)


# How tables name the mapping's paths (issue 29): a column is matched by its name with case and
# every character but letters and digits left out, against each path's keys joined, then its
# last key. One rule covers the dotted paths of the Logs Explorer's CSV and pandas'
# json_normalize (resource.labels.job_id), gcloud's csv headers (the last key in snake_case:
# job_id, text_payload, message) and table headers (TASK_NAME, ML.GOOGLEAPIS.COM/TASK_NAME),
# BigQuery sink columns (labels.ml_googleapis_com_trial_id) and Log Analytics' (json_payload).
def _column_paths() -> dict[str, EntryPath]:
    mapped = [
        *(path for paths in LABEL_PATHS.values() for path in paths),
        *TEXT_KEY_PATHS,
        *TIME_PATHS,
        SEVERITY_PATH,
        INSERT_ID_PATH,
        RESOURCE_TYPE_PATH,
        AUDIT_PATH,
    ]
    objects = sorted({path[:size] for path in mapped for size in range(1, len(path))}, key=len)
    names: dict[str, EntryPath] = {}
    for path in (*objects, *mapped):
        names.setdefault(column_key(".".join(path)), path)
    for path in mapped:  # in precedence order: "task_name" is resource.labels.task_name
        names.setdefault(column_key(path[-1]), path)
    return names


_NOT_IN_KEY = re.compile(r"[^0-9a-z]+")


def column_key(name: str) -> str:
    """A column's name as :func:`column_path` compares it: lower case, letters and digits."""
    return _NOT_IN_KEY.sub("", name.lower())


def field_path(name: str) -> EntryPath:
    """The keys of a dotted field path: ``labels."compute.googleapis.com/resource_id"`` is
    ``("labels", "compute.googleapis.com/resource_id")`` (the spreadsheet's text mark, a
    leading apostrophe, left out)."""
    name = name.removeprefix("'")
    keys: list[str] = []
    current: list[str] = []
    quoted = False
    for char in name:
        if char == '"':
            quoted = not quoted
        elif char == "." and not quoted:
            keys.append("".join(current))
            current = []
        else:
            current.append(char)
    keys.append("".join(current))
    return tuple(keys)


def column_path(name: str) -> EntryPath:
    """The LogEntry path a table's column named ``name`` holds: a path of the mapping by any
    of the names tables give it (see :data:`COLUMN_PATHS`), else the name read as a dotted
    field path (``jsonPayload.levelname``), kept as it is in the entry."""
    return COLUMN_PATHS.get(column_key(name.removeprefix("'"))) or field_path(name)


def object_paths() -> frozenset[EntryPath]:
    """The paths the mapping reads objects at (``resource``, ``jsonPayload.attrs``): a cell
    there holds the object, written out."""
    return frozenset(_OBJECTS[1:])


def _containers() -> tuple[tuple[EntryPath, ...], tuple[tuple[int, str], ...]]:
    """The objects the table's paths go through (the entry itself first), each after its
    parent; and, for each but the entry, its parent's index and its key."""
    paths = [
        *(path for paths in LABEL_PATHS.values() for path in paths),
        *TEXT_PATHS,
        *TIME_PATHS,
        SEVERITY_PATH,
        INSERT_ID_PATH,
        AUDIT_PATH,
        RESOURCE_TYPE_PATH,
    ]
    objects = sorted({path[:size] for path in paths for size in range(len(path))}, key=len)
    return tuple(objects), tuple((objects.index(o[:-1]), o[-1]) for o in objects[1:])


# Where the table's paths lead, as steps from object to object: an entry's objects are looked
# up once, then each field at its paths (the table, compiled: (object index, key) pairs).
_OBJECTS, _STEPS = _containers()
COLUMN_PATHS = _column_paths()


def _plan(paths: tuple[EntryPath, ...]) -> tuple[tuple[int, str], ...]:
    return tuple((_OBJECTS.index(path[:-1]), path[-1]) for path in paths)


_LABEL_PLANS = {field: _plan(paths) for field, paths in LABEL_PATHS.items()}
_TEXT_PLAN = _plan(TEXT_PATHS)
_RESOURCE_TYPE = _plan((RESOURCE_TYPE_PATH,))[0]
_PAYLOAD = _OBJECTS.index(TEXT_PATHS[0][:-1])
# Keys of the entry itself, read without the steps.
_TIME_KEYS = tuple(path[0] for path in TIME_PATHS)
(_AUDIT_KEY,), (_SEVERITY_KEY,), (_INSERT_ID_KEY,) = AUDIT_PATH, SEVERITY_PATH, INSERT_ID_PATH
assert all(len(path) == 1 for path in TIME_PATHS)


def _objects(entry: dict[str, Any]) -> list[Any]:
    """The objects of :data:`_OBJECTS` in ``entry``; None where one is missing or not an
    object."""
    found: list[Any] = [entry]
    for parent, key in _STEPS:
        above = found[parent]
        found.append(above.get(key) if isinstance(above, dict) else None)
    return found


def _value(objects: list[Any], step: tuple[int, str]) -> Any:
    above = objects[step[0]]
    return above.get(step[1]) if isinstance(above, dict) else None


def _label(objects: list[Any], plan: tuple[tuple[int, str], ...]) -> str | None:
    for index, key in plan:
        above = objects[index]
        if isinstance(above, dict):
            value = above.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def payload_text(payload: dict[str, Any]) -> str:
    """The text of a ``jsonPayload`` dict: the first string of :data:`TEXT_KEYS`, else a
    compact rendering of the whole payload (its keys are its text); "" for an empty one."""
    for key in TEXT_KEYS:
        value = payload.get(key)
        if isinstance(value, str):
            return value
    if not payload:
        return ""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)


def entry_fields(entry: dict[str, Any]) -> EntryFields | str:
    """The fields of one LogEntry (API JSON names), or the reason it belongs to no job, read
    as the table above (:data:`LABEL_PATHS`, :data:`TEXT_PATHS`, :data:`TIME_PATHS`) says.

    Only entries of :data:`JOB_RESOURCE_TYPES`, or without a resource type (some exports drop
    it), belong to training jobs: a project-wide sink's ``gce_instance`` line reading
    ``Job failed.`` is another machine's. An audit entry (``protoPayload``) carries no job
    output. The text is ``jsonPayload``'s (see :func:`payload_text`), else ``textPayload``.
    """
    if entry.get(_AUDIT_KEY) is not None:
        return AUDIT_ENTRY
    objects = _objects(entry)
    kind = _value(objects, _RESOURCE_TYPE)
    if isinstance(kind, str) and kind and kind not in JOB_RESOURCE_TYPES:
        return OTHER_RESOURCE + kind
    text: Any = None
    for step in _TEXT_PLAN:
        text = _value(objects, step)
        if isinstance(text, str):
            break
    else:
        payload = objects[_PAYLOAD]
        if isinstance(payload, dict) and payload:
            text = payload_text(payload)
        elif isinstance(payload, str):
            text = payload
        else:
            return NO_MESSAGE
    raw_time = None
    for key in _TIME_KEYS:
        raw_time = entry.get(key)
        if raw_time:
            break
    severity = entry.get(_SEVERITY_KEY)
    insert_id = entry.get(_INSERT_ID_KEY)
    plans = _LABEL_PLANS
    return EntryFields(
        job_id=_label(objects, plans["job_id"]),
        task=_label(objects, plans["task"]),
        trial=_label(objects, plans["trial"]),
        vm=_label(objects, plans["vm"]),
        text=text,
        time=raw_time if isinstance(raw_time, str) else None,
        severity=severity if isinstance(severity, str) else "DEFAULT",
        insert_id=insert_id if isinstance(insert_id, str) else None,
    )


def record_from_fields(fields: EntryFields, origin: Origin) -> LogRecord:
    """The record of :func:`entry_fields`' answer; ValueError when its time is no timestamp."""
    return LogRecord(
        timestamp=parse_timestamp(fields.time) if fields.time is not None else None,
        job_id=fields.job_id,
        task=fields.task,
        severity=fields.severity,
        text=fields.text,
        origin=origin,
        vm=fields.vm,
        trial=fields.trial,
        insert_id=fields.insert_id,
    )


def record_from_entry(entry: dict[str, Any], origin: Origin) -> LogRecord:
    """Turn one Cloud Logging ``LogEntry`` (API JSON) into a :class:`LogRecord`.

    Raises ValueError, with the skip reason as its message, when the entry belongs to no job
    or has no text (:func:`entry_fields`), or when its timestamp is not one.
    """
    fields = entry_fields(entry)
    if isinstance(fields, str):
        raise ValueError(fields)
    return record_from_fields(fields, origin)


# The legacy replica names of service messages (``master 0``, ``worker 2``) and the task names
# their workers log under (platform.md sections 3 and 5).
_LEGACY_REPLICA = re.compile(r"^(master|worker|ps|evaluator|chief)[\s_-]*(\d+)$")


def replica_task(replica: str) -> str:
    """The task name a replica named in a service message logs under.

    ``master 0`` becomes ``master-replica-0``; ``workerpool0-0`` stays as it is.
    """
    name = replica.strip()
    legacy = _LEGACY_REPLICA.match(name)
    if legacy:
        return f"{legacy.group(1)}-replica-{legacy.group(2)}"
    return name
