"""What jobdoctor reads from BigQuery: table references and the adapters per table shape.

Three shapes hold Vertex AI logs (``scale.md``): a Log Router sink table (LogEntry names,
RECORD columns), a wildcard over the sink's per-job tables (``ml_googleapis_com_*``, date
sharded or partitioned), and a Log Analytics view (``_AllLogs``: snake_case, JSON columns).
Each :class:`Adapter` maps the same logical columns (text, job, trial, task, VM, time, id,
severity, table) to SQL expressions of its shape, written once for BigQuery. A sink table only
has the columns its entries had: paths absent from the schema read as NULL.

The expressions are derived from the mapping table of :mod:`analyzer.ingest.records`
(``LABEL_PATHS``,
``TEXT_KEY_PATHS``, ``TIME_PATHS``...): each path is found in the shape by its naming rule
(:mod:`analyzer.engines.bigquery.columns`) and the paths of one field are read in the table's order
of
precedence, with :func:`analyzer.ingest.records.entry_fields`' tests (a label is a non-empty string,
the text any string), so that the rows become the records a file of the same entries gives and
a path added to the table is read here too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from analyzer.core.errors import InputError
from analyzer.engines.bigquery.columns import (
    in_string_map,
    json_member,
    json_path,
    log_analytics_place,
    sink_column,
)
from analyzer.ingest.records import (
    AUDIT_ENTRY,
    AUDIT_PATH,
    INSERT_ID_PATH,
    JOB_RESOURCE_TYPES,
    LABEL_PATHS,
    NO_MESSAGE,
    OTHER_RESOURCE,
    PAYLOAD_PATH,
    RESOURCE_TYPE_PATH,
    SEVERITY_PATH,
    TEXT_KEY_PATHS,
    TEXT_PATHS,
    TIME_PATHS,
    EntryPath,
)

# Project ids hold letters, digits, '-', and maybe a domain prefix ("example.com:proj");
# datasets and tables letters, digits and '_' (a wildcard may end in '*').
_REFERENCE = re.compile(
    r"`?(?P<project>(?:[A-Za-z0-9.-]+:)?[A-Za-z0-9][A-Za-z0-9-]*)\.(?P<dataset>[A-Za-z0-9_]+)"
    r"\.(?P<table>[A-Za-z0-9_$-]+\*?)`?"
)
SINK_PREFIX = "ml_googleapis_com_"
_SHARD = re.compile(r"_(\d{8})$")
# The LogEntry's fields whose names tell the two shapes apart: as the LogEntry's JSON names
# them in a sink table, as its proto does (snake_case) in the view.
_TELLING: tuple[EntryPath, ...] = (*TEXT_PATHS, INSERT_ID_PATH, ("logName",))
SINK_COLUMNS = frozenset(sink_column(path).split(".")[0] for path in _TELLING)
LOG_ANALYTICS_COLUMNS = frozenset(log_analytics_place(path)[0] for path in _TELLING)
# The queries' label columns, each the field of records.LABEL_PATHS it reads (a field added
# there needs its column here, in the queries and in the record: refused until it has one).
LABEL_COLUMNS = {"job": "job_id", "trial": "trial", "task": "task", "vm": "vm"}
if set(LABEL_COLUMNS.values()) != set(LABEL_PATHS):
    raise AssertionError(f"records.LABEL_PATHS has fields {sorted(LABEL_PATHS)}: map each")


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
    column is a table name once ``table_prefix`` is put before it; ``window`` is the column
    the window bounds. ``skip`` is NULL for an entry that is a record, else the reason a file
    reader gives for skipping it (an audit entry, another resource type, then named by
    ``other_resource``, no message text).
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
    window: str
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


class _Columns(Protocol):
    """Where one table shape keeps the paths of the mapping table, as SQL over its reads."""

    def string(self, path: EntryPath) -> str | None:
        """The value at ``path`` when it is a string, else NULL; None when the table has no
        such column."""

    def value(self, path: EntryPath) -> str | None:
        """The column at ``path`` whatever its type (a time, the audit payload)."""

    def name(self, path: EntryPath) -> str:
        """The column path of ``path`` in the table (for a filter on the table's own rows)."""

    def payload(self) -> str | None:
        """The whole payload as compact JSON when it is a non-empty object, or None when the
        shape cannot render it."""


class _SinkColumns:
    """A sink table: a column per path (:func:`~analyzer.engines.bigquery.columns.sink_column`),
    string values read only from STRING columns (a file reader reads only strings)."""

    def __init__(self, reads: _Reads, strings: frozenset[str]) -> None:
        self.reads = reads
        self.strings = strings

    def string(self, path: EntryPath) -> str | None:
        column = sink_column(path)
        return self.reads.column(column) if column in self.strings else None

    def value(self, path: EntryPath) -> str | None:
        return self.reads.column(self.name(path))

    def name(self, path: EntryPath) -> str:
        return sink_column(path)

    def payload(self) -> str | None:
        # A file reader gives a payload with none of the text keys whole as its text; a sink
        # table would have to read every payload column of every entry to render it, the cost
        # the queries are written to avoid: such an entry is "no message text" here.
        return None


class _LogAnalyticsColumns:
    """A Log Analytics view: the LogEntry's fields as columns, the user's objects as JSON
    (:func:`~analyzer.engines.bigquery.columns.log_analytics_place`)."""

    def __init__(self, reads: _Reads, strings: frozenset[str]) -> None:
        self.reads = reads
        self.strings = strings

    def string(self, path: EntryPath) -> str | None:
        column, inside = log_analytics_place(path)
        if not inside:
            return self.reads.column(column) if column in self.strings else None
        alias = self.reads.column(column)
        if alias is None:
            return None
        if in_string_map(path):  # the LogEntry's labels are strings: no type to test
            return f"JSON_VALUE({alias}, {json_path(inside)})"
        return _json_string(json_member(alias, inside))

    def value(self, path: EntryPath) -> str | None:
        return self.reads.column(self.name(path))

    def name(self, path: EntryPath) -> str:
        column, inside = log_analytics_place(path)
        if inside:
            raise ValueError(f"{'.'.join(path)} is read inside a JSON column, not whole")
        return column

    def payload(self) -> str | None:
        # The column is read whole anyway: the rendering costs no byte more.
        column, _ = log_analytics_place(PAYLOAD_PATH)
        alias = self.reads.column(column)
        if alias is None:
            return None
        return (
            f"IF(LOWER(JSON_TYPE({alias})) = 'object' AND TO_JSON_STRING({alias}) <> '{{}}',"
            f" TO_JSON_STRING({alias}), NULL)"
        )


def _nonempty(expression: str | None) -> str | None:
    return None if expression is None else f"NULLIF({expression}, '')"


def _adapter(kind: str, reads: _Reads, columns: _Columns, table: str, prefix: str) -> Adapter:
    """The logical columns from the mapping table (``analyzer.ingest.records``), each read at its
    paths in their order of precedence, as :func:`~analyzer.ingest.records.entry_fields` reads them:
    a label is the first non-empty string, the text the first string (then the payload's
    rendering, where the shape has one), the time the first set."""
    insert_id = columns.string(INSERT_ID_PATH) or "CAST(NULL AS STRING)"
    # The window bounds the first time path's column (queries._filters): a row where it is
    # NULL is never read, so the later time paths never give the time and are not read (a
    # receiveTimestamp is 8 bytes billed a row; Cloud Logging sets every entry's timestamp).
    window = columns.name(TIME_PATHS[0])
    time = _first([columns.value(TIME_PATHS[0])])
    severity = columns.string(SEVERITY_PATH) or "CAST(NULL AS STRING)"
    labels = {
        name: _first([_nonempty(columns.string(path)) for path in LABEL_PATHS[field]])
        for name, field in LABEL_COLUMNS.items()
    }
    text = _first([*(columns.string(path) for path in TEXT_KEY_PATHS), columns.payload()])
    skip, other = _skip(columns.value(AUDIT_PATH), columns.string(RESOURCE_TYPE_PATH), text)
    return Adapter(
        kind=kind,
        text=text,
        skip=skip,
        other_resource=other,
        time=time,
        severity=severity,
        insert_id=insert_id,
        table=table,
        window=window,
        table_prefix=prefix,
        reads=tuple(reads.selected.items()),
        **labels,
    )


def sink_adapter(ref: TableRef, paths: frozenset[str], strings: frozenset[str]) -> Adapter:
    """The sink table's columns (LogEntry names; the user's keys as BigQuery renames them)."""
    reads = _Reads(paths)
    # A wildcard's table is its suffix, selected bare: the emulator fails a query applying
    # any function to _TABLE_SUFFIX's value; Python puts the prefix back (table_prefix).
    table = reads.raw("_TABLE_SUFFIX", "table_suffix") if ref.wildcard else f"'{ref.table}'"
    prefix = ref.prefix if ref.wildcard else ""
    return _adapter("bigquery-sink", reads, _SinkColumns(reads, strings), table, prefix)


def _json_string(expression: str) -> str:
    """A JSON value as a string when it is one, else NULL (``record_from_entry`` reads only
    string messages). DuckDB's JSON_TYPE says 'VARCHAR' (the BigQuery emulator, which runs
    this text on DuckDB, 'varchar') where BigQuery's says 'string': the test accepts each
    (BigQuery never answers 'varchar'), so the one text reads the same on all three."""
    kind = f"LOWER(JSON_TYPE({expression}))"
    return f"IF({kind} IN ('string', 'varchar'), JSON_VALUE({expression}), NULL)"


def log_analytics_adapter(ref: TableRef, paths: frozenset[str], strings: frozenset[str]) -> Adapter:
    """The Log Analytics view's columns (snake_case; payloads and labels as JSON)."""
    reads = _Reads(paths)
    columns = _LogAnalyticsColumns(reads, strings)
    return _adapter("bigquery-log-analytics", reads, columns, f"'{ref.table}'", "")


def adapter_for(ref: TableRef, info: TableInfo) -> Adapter:
    """The adapter the schema calls for; InputError when it is neither shape."""
    top = {path.split(".", 1)[0] for path in info.paths}
    if sink_column(TIME_PATHS[0]) not in top:  # the window's column, named so in both shapes
        raise InputError(
            f"{ref}: no 'timestamp' column; give a Cloud Logging sink table, a wildcard over "
            "them (ml_googleapis_com_*) or a Log Analytics view (_AllLogs)"
        )
    if top & LOG_ANALYTICS_COLUMNS and not top & SINK_COLUMNS:
        return log_analytics_adapter(ref, info.paths, info.strings)
    if top & SINK_COLUMNS:
        return sink_adapter(ref, info.paths, info.strings)
    raise InputError(
        f"{ref}: neither a sink table (textPayload, jsonPayload, insertId) nor a Log "
        "Analytics view (text_payload, json_payload, insert_id): check the table name"
    )
