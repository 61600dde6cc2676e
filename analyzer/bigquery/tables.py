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

# Project ids hold letters, digits, '-', and maybe a domain prefix ("example.com:proj");
# datasets and tables letters, digits and '_' (a wildcard may end in '*').
_REFERENCE = re.compile(
    r"`?(?P<project>[A-Za-z0-9][A-Za-z0-9.:_-]*)\.(?P<dataset>[A-Za-z0-9_]+)"
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
    suffixes; ``ingestion_partitioned`` when the table is partitioned on ``_PARTITIONTIME``.
    """

    paths: frozenset[str]
    sharded: bool = False
    ingestion_partitioned: bool = False
    tables: int = 1


def is_sharded(names: Iterable[str]) -> bool:
    """True when there are names and each ends in ``_YYYYMMDD``."""
    names = list(names)
    return bool(names) and all(_SHARD.search(name) for name in names)


def _string(path: str, paths: frozenset[str]) -> str:
    return path if path in paths else "CAST(NULL AS STRING)"


def _label(path: str, paths: frozenset[str]) -> str | None:
    return f"NULLIF({path}, '')" if path in paths else None


def _first(parts: Iterable[str | None]) -> str:
    present = [part for part in parts if part is not None]
    if not present:
        return "CAST(NULL AS STRING)"
    return present[0] if len(present) == 1 else f"COALESCE({', '.join(present)})"


@dataclass(frozen=True, slots=True)
class Adapter:
    """The logical columns of one table shape, as BigQuery SQL expressions.

    ``kind`` is ``bigquery-sink`` or ``bigquery-log-analytics`` (the ``format`` of the input
    in the JSON report); ``where`` restricts the rows to Vertex AI jobs where the table holds
    every log of a project (Log Analytics).
    """

    kind: str
    text: str
    job: str
    trial: str
    task: str
    vm: str
    time: str
    severity: str
    insert_id: str
    table: str
    where: str | None = None

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
        ]


def sink_adapter(ref: TableRef, paths: frozenset[str]) -> Adapter:
    """The sink table's columns (LogEntry names; labels as BigQuery rewrites their keys)."""
    table = f"CONCAT('{ref.prefix}', _TABLE_SUFFIX)" if ref.wildcard else f"'{ref.table}'"
    received = "receiveTimestamp" if "receiveTimestamp" in paths else None
    return Adapter(
        kind="bigquery-sink",
        text=_first(
            [
                "jsonPayload.message" if "jsonPayload.message" in paths else None,
                "textPayload" if "textPayload" in paths else None,
            ]
        ),
        job=_first(
            [
                _label("resource.labels.job_id", paths),
                _label("labels.ml_googleapis_com_job_id", paths),
            ]
        ),
        trial=_first(
            [_label("labels.trial_id", paths), _label("labels.ml_googleapis_com_trial_id", paths)]
        ),
        task=_first(
            [
                _label("resource.labels.task_name", paths),
                _label("labels.task_name", paths),
                _label("labels.ml_googleapis_com_task_name", paths),
                _label("jsonPayload.attrs.tag", paths),
            ]
        ),
        vm=_first([_label("labels.compute_googleapis_com_resource_id", paths)]),
        time=f"COALESCE(timestamp, {received})" if received else "timestamp",
        severity=_string("severity", paths),
        insert_id=_string("insertId", paths),
        table=table,
    )


def _json_string(expression: str) -> str:
    """A JSON value as a string when it is one, else NULL (``record_from_entry`` reads only
    string messages). DuckDB's JSON_TYPE names the type differently: see ``dialects``."""
    return f"IF(JSON_TYPE({expression}) = 'string', JSON_VALUE({expression}), NULL)"


def _json_label(column: str, key: str) -> str:
    return f"NULLIF(JSON_VALUE({column}, '$.\"{key}\"'), '')"


def log_analytics_adapter(ref: TableRef, paths: frozenset[str]) -> Adapter:
    """The Log Analytics view's columns (snake_case; payloads and labels as JSON)."""
    has = paths.__contains__
    return Adapter(
        kind="bigquery-log-analytics",
        text=_first(
            [
                _json_string("json_payload.message") if has("json_payload") else None,
                "text_payload" if has("text_payload") else None,
            ]
        ),
        job=_first(
            [
                _json_label("resource.labels", "job_id") if has("resource.labels") else None,
                _json_label("labels", "ml.googleapis.com/job_id") if has("labels") else None,
            ]
        ),
        trial=_first(
            [
                _json_label("labels", "trial_id") if has("labels") else None,
                _json_label("labels", "ml.googleapis.com/trial_id") if has("labels") else None,
            ]
        ),
        task=_first(
            [
                _json_label("resource.labels", "task_name") if has("resource.labels") else None,
                _json_label("labels", "task_name") if has("labels") else None,
                _json_label("labels", "ml.googleapis.com/task_name") if has("labels") else None,
                f"NULLIF({_json_string('json_payload.attrs.tag')}, '')"
                if has("json_payload")
                else None,
            ]
        ),
        vm=_first(
            [_json_label("labels", "compute.googleapis.com/resource_id") if has("labels") else None]
        ),
        time=(
            "COALESCE(timestamp, receive_timestamp)" if has("receive_timestamp") else "timestamp"
        ),
        severity=_string("severity", paths),
        insert_id=_string("insert_id", paths),
        table=f"'{ref.table}'",
        # _AllLogs holds every log of the bucket: only training jobs' entries are read.
        where="resource.type IN ('ml_job', 'cloudml_job')" if has("resource.type") else None,
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
        return sink_adapter(ref, info.paths)
    raise InputError(
        f"{ref}: neither a sink table (textPayload, jsonPayload, insertId) nor a Log "
        "Analytics view (text_payload, json_payload, insert_id): check the table name"
    )
