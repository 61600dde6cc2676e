"""What jobdoctor reads from BigQuery: table references and the adapters per table shape.

Three shapes hold Vertex AI logs (``scale.md``): a Log Router sink table (LogEntry names,
RECORD columns), a wildcard over the sink's per-job tables (``ml_googleapis_com_*``, date
sharded or partitioned), and a Log Analytics view (``_AllLogs``: snake_case, JSON columns).
Each :class:`Adapter` maps the same logical columns (text, job, trial, task, VM, time, id,
severity, table) to SQL expressions of its shape, written once for BigQuery. A sink table only
has the columns its entries had: paths absent from the schema read as NULL.

The expressions follow :func:`analyzer.records.record_from_entry` exactly (label precedence,
empty strings as absent, ``jsonPayload.message`` before ``textPayload``), so that the rows
become the records a file of the same entries gives.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from analyzer.errors import InputError
from analyzer.records import (
    AUDIT_ENTRY,
    JOB_RESOURCE_TYPES,
    NO_MESSAGE,
    OTHER_RESOURCE,
    TEXT_KEYS,
)

# Project ids hold letters, digits, '-', and maybe a domain prefix ("example.com:proj");
# datasets and tables letters, digits and '_' (a wildcard may end in '*').
_REFERENCE = re.compile(
    r"`?(?P<project>(?:[A-Za-z0-9.-]+:)?[A-Za-z0-9][A-Za-z0-9-]*)\.(?P<dataset>[A-Za-z0-9_]+)"
    r"\.(?P<table>[A-Za-z0-9_$-]+\*?)`?"
)
SINK_PREFIX = "ml_googleapis_com_"
_SHARD = re.compile(r"_(\d{8})$")
LOG_ANALYTICS_COLUMNS = frozenset({"log_name", "json_payload", "text_payload", "insert_id"})
SINK_COLUMNS = frozenset({"textPayload", "jsonPayload", "insertId", "logName"})


@dataclass(frozen=True, slots=True)
class TableRef:
    """``project.dataset.table`` (``table`` may end in ``*``: a wildcard)."""

    project: str
    dataset: str
    table: str

    @classmethod
    def parse(cls, text: str) -> TableRef:
        """Parse ``P.D.T`` (backquotes allowed); InputError with an example otherwise."""
        found = _REFERENCE.fullmatch(text.strip())
        if found is None:
            raise InputError(
                f"invalid --bigquery {text!r}: give PROJECT.DATASET.TABLE, e.g. "
                "my-project.logs.ml_googleapis_com_* or my-project.my_link._AllLogs"
            )
        return cls(found["project"], found["dataset"], found["table"])

    @property
    def wildcard(self) -> bool:
        return self.table.endswith("*")

    @property
    def prefix(self) -> str:
        """The table name before the wildcard's ``*`` (the whole name otherwise)."""
        return self.table.rstrip("*")

    @property
    def dataset_id(self) -> str:
        return f"{self.project}.{self.dataset}"

    def __str__(self) -> str:
        return f"{self.project}.{self.dataset}.{self.table}"

    def sql(self) -> str:
        """The reference as BigQuery SQL writes it (quoted with backquotes)."""
        return f"`{self}`"


@dataclass(frozen=True, slots=True)
class TableInfo:
    """What the schema and listing said about a table (or the newest table of a wildcard).

    ``paths`` are its field paths (``jsonPayload.message``); ``sharded`` is True when every
    table under a wildcard is date-sharded (``..._YYYYMMDD``), so the window prunes the
    suffixes; ``ingestion_partitioned`` when the table is partitioned on ``_PARTITIONTIME``;
    ``strings`` the paths of type STRING.
    """

    paths: frozenset[str]
    sharded: bool = False
    ingestion_partitioned: bool = False
    tables: int = 1
    strings: frozenset[str] = frozenset()


def is_sharded(names: Iterable[str]) -> bool:
    """True when there are names and each ends in ``_YYYYMMDD``."""
    names = list(names)
    return bool(names) and all(_SHARD.search(name) for name in names)


class _Reads:
    """The table's own columns an adapter reads, each selected alone under a flat alias.

    The logical expressions are computed one query level up, over those aliases: each
    nested path in an expression of its own reads the same on BigQuery, and also on the
    emulator, which cannot bind two RECORD paths inside one expression over a wildcard.
    """

    def __init__(self, paths: frozenset[str]) -> None:
        self.paths = paths
        self.selected: dict[str, str] = {}

    def column(self, path: str) -> str | None:
        """The alias of ``path`` (selected from now on), or None when the table lacks it."""
        if path not in self.paths:
            return None
        return self.raw(path, path)

    def raw(self, expression: str, name: str) -> str:
        alias = "c_" + "".join(c if c.isalnum() else "_" for c in name)
        self.selected[alias] = expression
        return alias

    def string(self, path: str) -> str:
        return self.column(path) or "CAST(NULL AS STRING)"

    def label(self, path: str) -> str | None:
        alias = self.column(path)
        return f"NULLIF({alias}, '')" if alias else None


def _first(parts: Iterable[str | None]) -> str:
    present = [part for part in parts if part is not None]
    if not present:
        return "CAST(NULL AS STRING)"
    return present[0] if len(present) == 1 else f"COALESCE({', '.join(present)})"


@dataclass(frozen=True, slots=True)
class Adapter:
    """The logical columns of one table shape, as BigQuery SQL expressions over ``reads``.

    ``reads`` are (alias, column path) of the table's own columns, selected first; the
    logical expressions use the aliases. ``kind`` is ``bigquery-sink`` or
    ``bigquery-log-analytics`` (the ``format`` of the input in the JSON report). The ``tbl``
    column is a table name once ``table_prefix`` is put before it. ``skip`` is NULL for an
    entry that is a record, else the reason a file reader gives for skipping it (an audit
    entry, another resource type, then named by ``other_resource``, no message text).
    """

    kind: str
    reads: tuple[tuple[str, str], ...]
    text: str
    job: str
    trial: str
    task: str
    vm: str
    time: str
    severity: str
    insert_id: str
    table: str
    skip: str = "CAST(NULL AS STRING)"
    other_resource: str = "CAST(NULL AS STRING)"
    table_prefix: str = ""

    def columns(self) -> list[tuple[str, str]]:
        """(name, expression) of every logical column, in the order the queries select them."""
        return [
            ("tbl", self.table),
            ("insert_id", self.insert_id),
            ("time", self.time),
            ("severity", self.severity),
            ("job", self.job),
            ("trial", self.trial),
            ("task", self.task),
            ("vm", self.vm),
            ("text", self.text),
            ("skip", self.skip),
            ("other_resource", self.other_resource),
        ]


def _skip(proto: str | None, resource_type: str | None, text: str) -> tuple[str, str]:
    """Why a file reader skips the entry (``records.entry_fields``), NULL when it does not;
    and the other resource type it belongs to, when that is why. (Python joins the two: the
    emulator fails a query that concatenates strings over a wildcard.)"""
    cases = []
    other = "CAST(NULL AS STRING)"
    if proto is not None:
        cases.append(f"WHEN {proto} IS NOT NULL THEN '{AUDIT_ENTRY}'")
    if resource_type is not None:
        kinds = ", ".join(f"'{kind}'" for kind in sorted(JOB_RESOURCE_TYPES))
        test = f"{resource_type} <> '' AND {resource_type} NOT IN ({kinds})"
        cases.append(f"WHEN {test} THEN '{OTHER_RESOURCE}'")
        other = f"CASE WHEN {test} THEN {resource_type} END"
    cases.append(f"WHEN {text} IS NULL THEN '{NO_MESSAGE}'")
    return "CASE " + " ".join(cases) + " END", other


def _time(reads: _Reads, received: str) -> str:
    entry = reads.raw("timestamp", "timestamp")
    late = reads.column(received)
    return f"COALESCE({entry}, {late})" if late else entry


def sink_adapter(ref: TableRef, paths: frozenset[str], strings: frozenset[str]) -> Adapter:
    """The sink table's columns (LogEntry names; labels as BigQuery rewrites their keys)."""
    reads = _Reads(paths)
    # A wildcard's table is its suffix, selected bare: the emulator fails a query applying
    # any function to _TABLE_SUFFIX's value; Python puts the prefix back (table_prefix).
    table = reads.raw("_TABLE_SUFFIX", "table_suffix") if ref.wildcard else f"'{ref.table}'"
    # The text as a file reader takes it: jsonPayload.message, textPayload, then the other
    # loggers' keys when they are strings. (A payload with none of them is given whole as its
    # text by a file reader; here it is "no message text": reading every payload column of
    # every entry to render it would cost what the queries are written to avoid.)
    others = [
        reads.column(f"jsonPayload.{key}") if f"jsonPayload.{key}" in strings else None
        for key in TEXT_KEYS[1:]
    ]
    text = _first([reads.column("jsonPayload.message"), reads.column("textPayload"), *others])
    skip, other = _skip(reads.column("protoPayload"), reads.column("resource.type"), text)
    return Adapter(
        kind="bigquery-sink",
        text=text,
        skip=skip,
        other_resource=other,
        job=_first(
            [reads.label("resource.labels.job_id"), reads.label("labels.ml_googleapis_com_job_id")]
        ),
        trial=_first(
            [reads.label("labels.trial_id"), reads.label("labels.ml_googleapis_com_trial_id")]
        ),
        task=_first(
            [
                reads.label("resource.labels.task_name"),
                reads.label("labels.task_name"),
                reads.label("labels.ml_googleapis_com_task_name"),
                reads.label("jsonPayload.attrs.tag"),
            ]
        ),
        vm=_first([reads.label("labels.compute_googleapis_com_resource_id")]),
        time=_time(reads, "receiveTimestamp"),
        severity=reads.string("severity"),
        insert_id=reads.string("insertId"),
        table=table,
        table_prefix=ref.prefix if ref.wildcard else "",
        reads=tuple(reads.selected.items()),
    )


def _json_string(expression: str) -> str:
    """A JSON value as a string when it is one, else NULL (``record_from_entry`` reads only
    string messages). DuckDB's JSON_TYPE says 'VARCHAR' (the BigQuery emulator, which runs
    this text on DuckDB, 'varchar') where BigQuery's says 'string': the test accepts each
    (BigQuery never answers 'varchar'), so the one text reads the same on all three."""
    kind = f"LOWER(JSON_TYPE({expression}))"
    return f"IF({kind} IN ('string', 'varchar'), JSON_VALUE({expression}), NULL)"


def _json_label(column: str | None, key: str) -> str | None:
    if column is None:
        return None
    return f"NULLIF(JSON_VALUE({column}, '$.\"{key}\"'), '')"


def log_analytics_adapter(ref: TableRef, paths: frozenset[str]) -> Adapter:
    """The Log Analytics view's columns (snake_case; payloads and labels as JSON)."""
    reads = _Reads(paths)
    payload = reads.column("json_payload")
    labels = reads.column("labels")
    resource_labels = reads.column("resource.labels")
    resource_type = reads.column("resource.type")
    whole = (
        f"IF(LOWER(JSON_TYPE({payload})) = 'object' AND TO_JSON_STRING({payload}) <> '{{}}',"
        f" TO_JSON_STRING({payload}), NULL)"
    )
    # As a file reader takes it: the payload's message, textPayload, the other loggers' keys,
    # then the whole payload as compact JSON (the column is read whole anyway).
    text = _first(
        [
            _json_string(f"{payload}.message") if payload else None,
            reads.column("text_payload"),
            *(_json_string(f"{payload}.{key}") if payload else None for key in TEXT_KEYS[1:]),
            whole if payload else None,
        ]
    )
    skip, other = _skip(reads.column("proto_payload"), resource_type, text)
    return Adapter(
        kind="bigquery-log-analytics",
        text=text,
        skip=skip,
        other_resource=other,
        job=_first(
            [
                _json_label(resource_labels, "job_id"),
                _json_label(labels, "ml.googleapis.com/job_id"),
            ]
        ),
        trial=_first(
            [_json_label(labels, "trial_id"), _json_label(labels, "ml.googleapis.com/trial_id")]
        ),
        task=_first(
            [
                _json_label(resource_labels, "task_name"),
                _json_label(labels, "task_name"),
                _json_label(labels, "ml.googleapis.com/task_name"),
                f"NULLIF({_json_string(f'{payload}.attrs.tag')}, '')" if payload else None,
            ]
        ),
        vm=_first([_json_label(labels, "compute.googleapis.com/resource_id")]),
        time=_time(reads, "receive_timestamp"),
        severity=reads.string("severity"),
        insert_id=reads.string("insert_id"),
        table=f"'{ref.table}'",
        reads=tuple(reads.selected.items()),
    )


def adapter_for(ref: TableRef, info: TableInfo) -> Adapter:
    """The adapter the schema calls for; InputError when it is neither shape."""
    top = {path.split(".", 1)[0] for path in info.paths}
    if "timestamp" not in top:
        raise InputError(
            f"{ref}: no 'timestamp' column; give a Cloud Logging sink table, a wildcard over "
            "them (ml_googleapis_com_*) or a Log Analytics view (_AllLogs)"
        )
    if top & LOG_ANALYTICS_COLUMNS and not top & SINK_COLUMNS:
        return log_analytics_adapter(ref, info.paths)
    if top & SINK_COLUMNS:
        return sink_adapter(ref, info.paths, info.strings)
    raise InputError(
        f"{ref}: neither a sink table (textPayload, jsonPayload, insertId) nor a Log "
        "Analytics view (text_payload, json_payload, insert_id): check the table name"
    )
