"""LogEntry dicts into tables shaped as Cloud Logging writes them: per-job sink tables
(date-sharded, LogEntry names, RECORD columns) and a Log Analytics view (snake_case, JSON).

:func:`as_stored` first makes an entry what Cloud Logging would store (a table holds typed
values: no label that is not a string, a timestamp always); the equality tests give the very
same stored entries to the file path, as JSONL. A sink table's schema is inferred from the
entries it holds, as a sink infers it: a column per path the entries have, the user's keys
renamed by the sink's rule (:func:`analyzer.engines.bigquery.columns.sink_column`); so an entry that
carries a value under a path of the mapping table only makes that column, and the queries
must read it.

:func:`path_cases` makes, from the mapping table of :mod:`analyzer.ingest.records`, one case per
path (every entry carries its value only there) and one per pair of paths with a precedence
(the first carries the value, the second a decoy; or the first an empty label): a path added
to the table is a new case.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Any
from urllib.parse import unquote

import orjson

from analyzer.engines.bigquery.columns import (
    STRING_MAPS,
    log_analytics_place,
    sink_column,
    sink_name,
)
from analyzer.ingest.records import (
    AUDIT_PATH,
    INSERT_ID_PATH,
    JOB_RESOURCE_TYPES,
    LABEL_PATHS,
    PAYLOAD_PATH,
    RESOURCE_TYPE_PATH,
    SEVERITY_PATH,
    TEXT_KEY_PATHS,
    TIME_PATHS,
    EntryPath,
    entry_fields,
    parse_timestamp,
)

# Every path of the mapping table.
TABLE_PATHS: tuple[EntryPath, ...] = (
    *(path for paths in LABEL_PATHS.values() for path in paths),
    *TEXT_KEY_PATHS,
    *TIME_PATHS,
    SEVERITY_PATH,
    INSERT_ID_PATH,
    AUDIT_PATH,
    RESOURCE_TYPE_PATH,
)
TIME_KEYS = tuple(path[0] for path in TIME_PATHS)
# What a stored entry keeps besides the table's paths: the log it is in (its table's name).
LOG_NAME = "logName"
# The Log Analytics view's schema (the LogEntry proto's names; the user's objects as JSON).
LOG_ANALYTICS_SCHEMA: dict[str, Any] = {
    "timestamp": "TIMESTAMP",
    "receive_timestamp": "TIMESTAMP",
    "log_name": "STRING",
    "severity": "STRING",
    "insert_id": "STRING",
    "resource": {"type": "STRING", "labels": "JSON"},
    "labels": "JSON",
    "json_payload": "JSON",
    "text_payload": "STRING",
    "proto_payload": "JSON",
}


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return parse_timestamp(value)
    except (ValueError, OverflowError):
        return None


def _encodable(entry: dict[str, Any]) -> bool:
    try:
        orjson.dumps(entry)
    except TypeError:
        return False
    return True


def _stamp(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _table_keys(parent: EntryPath) -> set[str]:
    return {path[len(parent)] for path in TABLE_PATHS if path[: len(parent)] == parent}


def _string_map(mapping: object, parent: EntryPath) -> dict[str, str]:
    """A map of strings as a sink stores it: string values, and no key the sink would rename
    onto another key's column (``Trial_ID`` onto ``trial_id``): BigQuery's rename loses the
    difference a file reader sees, so no file and table can agree on such an entry."""
    if not isinstance(mapping, dict):
        return {}
    read = {sink_name(key): key for key in _table_keys(parent)}
    kept: dict[str, str] = {}
    columns: set[str] = set()
    for key, value in mapping.items():
        column = sink_name(key)
        if not isinstance(value, str) or not column or column in columns:
            continue
        if read.get(column, key) != key:
            continue
        kept[key] = value
        columns.add(column)
    return kept


def _at(entry: object, path: EntryPath) -> Any:
    value = entry
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def as_stored(entry: object) -> dict[str, Any] | None:
    """``entry`` as Cloud Logging stores it, or None when it would not store it: its times
    (``timestamp`` always), the strings at the mapping table's paths, its maps of labels
    (strings) and its audit payload."""
    if not isinstance(entry, dict):
        return None
    times = [_time(entry.get(key)) for key in TIME_KEYS]
    # Cloud Logging sets an entry's timestamp (to when it received it) when the writer did not.
    when = next((moment for moment in times if moment is not None), None)
    if when is None:
        return None
    stored: dict[str, Any] = {TIME_KEYS[0]: _stamp(when)}
    for key, moment in zip(TIME_KEYS[1:], times[1:], strict=True):
        if moment is not None:
            stored[key] = _stamp(moment)
    if isinstance(entry.get(LOG_NAME), str):
        stored[LOG_NAME] = entry[LOG_NAME]
    for path in TABLE_PATHS:
        if path not in TIME_PATHS and path != AUDIT_PATH and isinstance(_at(entry, path), str):
            _put(stored, path, _at(entry, path))
    for keyed in STRING_MAPS:
        labels = _string_map(_at(entry, keyed), keyed)
        if labels:
            _put(stored, keyed, labels)
    # The payload keeps only the table's paths (its text keys, attrs.tag). With no text
    # anywhere a file reader gives the payload itself as the text, which a sink table cannot
    # give without reading every payload column (see analyzer.engines.bigquery.tables): then
    # nothing of it is kept.
    if not any(isinstance(_at(stored, path), str) for path in TEXT_KEY_PATHS):
        stored.pop(PAYLOAD_PATH[0], None)
    if isinstance(entry.get(AUDIT_PATH[0]), dict):
        stored[AUDIT_PATH[0]] = entry[AUDIT_PATH[0]]
    return stored if _encodable(stored) else None


def stored_entries(entries: Iterable[object]) -> list[dict[str, Any]]:
    """Every entry Cloud Logging would store, as it would store it."""
    return [stored for stored in map(as_stored, entries) if stored is not None]


def log_table(entry: dict[str, Any]) -> str:
    """The table a sink writes the entry to, before the date suffix (named after its log)."""
    log_name = entry.get(LOG_NAME) or ""
    log_id = unquote(log_name.rpartition("/logs/")[2]) if "/logs/" in log_name else ""
    if not log_id:
        job = entry.get("resource", {}).get("labels", {}).get("job_id") or "unknown"
        log_id = f"ml.googleapis.com/{job}"
    return re.sub(r"[^A-Za-z0-9_]", "_", log_id)


# A sink table's schema: column name -> "STRING", "TIMESTAMP", "JSON" or the RECORD's schema.
Schema = dict[str, Any]


def _leaves(value: Any, path: EntryPath) -> Iterator[tuple[EntryPath, Any]]:
    if isinstance(value, dict) and path != AUDIT_PATH:
        for key, inner in value.items():
            yield from _leaves(inner, (*path, key))
    else:
        yield path, value


def _kind(path: EntryPath) -> str:
    if path == AUDIT_PATH:
        return "JSON"  # a RECORD in a real sink (audit logs' own tables): JSON here
    return "TIMESTAMP" if path[0] in TIME_KEYS and len(path) == 1 else "STRING"


def sink_schema(entries: Iterable[dict[str, Any]]) -> Schema:
    """The schema a sink infers for a table of ``entries``: every path they have."""
    schema: Schema = {}
    for entry in entries:
        for path, _ in _leaves(entry, ()):
            names = sink_column(path).split(".")
            into = schema
            for name in names[:-1]:
                into = into.setdefault(name, {})
            into.setdefault(names[-1], _kind(path))
    return schema


def _sink_value(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` keyed as the sink table names its columns."""
    found: dict[str, Any] = {}
    for path, value in _leaves(entry, ()):
        names = sink_column(path).split(".")
        into = found
        for name in names[:-1]:
            into = into.setdefault(name, {})
        into[names[-1]] = value
    return found


def _fill(schema: Schema, value: Any, *, json_text: bool) -> Any:
    """A row of ``schema`` from the table-keyed ``value``: every field, None where absent;
    JSON values as their text when ``json_text`` (the emulator's insert), else as they are."""
    row: dict[str, Any] = {}
    for name, kind in schema.items():
        inner = value.get(name) if isinstance(value, dict) else None
        if isinstance(kind, dict):
            row[name] = None if inner is None else _fill(kind, inner, json_text=json_text)
        elif kind == "JSON" and inner is not None and json_text:
            row[name] = orjson.dumps(inner).decode()
        else:
            row[name] = inner
    return row


def _duckdb_type(kind: Any) -> str:
    if isinstance(kind, dict):
        return "STRUCT(" + ", ".join(f'"{n}" {_duckdb_type(k)}' for n, k in kind.items()) + ")"
    return {"STRING": "VARCHAR", "TIMESTAMP": "TIMESTAMPTZ", "JSON": "JSON"}[str(kind)]


def sink_tables(
    entries: Iterable[dict[str, Any]], *, sharded: bool = True
) -> dict[str, list[dict[str, Any]]]:
    """The per-log tables a sink writes the entries into: date-sharded (``_YYYYMMDD``), or
    one partitioned table per log."""
    tables: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        day = parse_timestamp(entry["timestamp"]).astimezone(UTC).strftime("_%Y%m%d")
        tables.setdefault(log_table(entry) + (day if sharded else ""), []).append(entry)
    return tables


def log_analytics_value(entry: dict[str, Any]) -> dict[str, Any]:
    """One stored entry keyed as the Log Analytics view names its columns."""
    found: dict[str, Any] = {}
    for path, _ in _leaves(entry, ()):
        column, inside = log_analytics_place(path)
        names = column.split(".")
        into = found
        for name in names[:-1]:
            into = into.setdefault(name, {})
        into[names[-1]] = _at(entry, path[: len(path) - len(inside)])
    return found


def _insert(connection: Any, table: str, schema: Schema, rows: list[dict[str, Any]]) -> None:
    """``rows`` into the DuckDB ``table`` of ``schema``, through newline-delimited JSON (a
    thousand times faster than binding nested values row by row)."""
    with tempfile.NamedTemporaryFile("wb", suffix=".json") as file:
        file.write(b"".join(orjson.dumps(row) + b"\n" for row in rows))
        file.flush()
        columns = ", ".join(f"'{name}': '{_duckdb_type(kind)}'" for name, kind in schema.items())
        connection.execute(
            f"INSERT INTO {table} SELECT * FROM read_json('{file.name}',"
            f" format = 'newline_delimited', columns = {{{columns}}})"
        )


def load_duckdb(
    connection: Any,
    project: str,
    dataset: str,
    entries: list[dict[str, Any]],
    *,
    sharded: bool = True,
) -> None:
    """The entries as per-job sink tables (each with the schema its own entries give) and as
    ``_AllLogs`` in ``project.dataset``."""
    connection.execute(f"ATTACH IF NOT EXISTS ':memory:' AS \"{project}\"")
    connection.execute(f'CREATE SCHEMA IF NOT EXISTS "{project}"."{dataset}"')
    where = f'"{project}"."{dataset}"'
    for name, rows in sink_tables(entries, sharded=sharded).items():
        schema = sink_schema(rows)
        columns = ", ".join(f'"{n}" {_duckdb_type(k)}' for n, k in schema.items())
        connection.execute(f'CREATE TABLE {where}."{name}" ({columns})')
        values = [_fill(schema, _sink_value(entry), json_text=False) for entry in rows]
        _insert(connection, f'{where}."{name}"', schema, values)
    schema = LOG_ANALYTICS_SCHEMA
    columns = ", ".join(f'"{n}" {_duckdb_type(k)}' for n, k in schema.items())
    connection.execute(f'CREATE TABLE {where}."_AllLogs" ({columns})')
    if entries:
        values = [_fill(schema, log_analytics_value(entry), json_text=False) for entry in entries]
        _insert(connection, f'{where}."_AllLogs"', schema, values)


def _fields(schema: Schema) -> list[Any]:
    from google.cloud.bigquery import SchemaField as Field

    return [
        Field(name, "RECORD", fields=_fields(kind)) if isinstance(kind, dict) else Field(name, kind)
        for name, kind in schema.items()
    ]


def load_emulator(
    client: Any, project: str, dataset: str, entries: list[dict[str, Any]]
) -> list[str]:
    """The entries as date-sharded per-job sink tables in the emulator; their names. Every
    table has the schema of all the entries: the emulator expands a wildcard as a positional
    ``UNION ALL`` (``scale.md``)."""
    from google.cloud import bigquery

    client.create_dataset(f"{project}.{dataset}", exists_ok=True)
    schema = sink_schema(entries)
    names = []
    for name, rows in sink_tables(entries).items():
        table = client.create_table(
            bigquery.Table(f"{project}.{dataset}.{name}", schema=_fields(schema))
        )
        for start in range(0, len(rows), 500):
            errors = client.insert_rows_json(
                table,
                [_fill(schema, _sink_value(e), json_text=True) for e in rows[start : start + 500]],
            )
            assert not errors, errors
        names.append(name)
    return names


def load_emulator_log_analytics(
    client: Any, project: str, dataset: str, entries: list[dict[str, Any]]
) -> None:
    """The entries as a Log Analytics ``_AllLogs`` table (JSON columns) in the emulator."""
    from google.cloud import bigquery

    schema = LOG_ANALYTICS_SCHEMA
    client.create_dataset(f"{project}.{dataset}", exists_ok=True)
    table = client.create_table(
        bigquery.Table(f"{project}.{dataset}._AllLogs", schema=_fields(schema))
    )
    rows = [_fill(schema, log_analytics_value(entry), json_text=True) for entry in entries]
    for start in range(0, len(rows), 500):
        errors = client.insert_rows_json(table, rows[start : start + 500])
        assert not errors, errors


# BigQuery's on-demand bytes of a value (the "data size calculation"): a STRING is 2 bytes
# and its UTF-8 length, a TIMESTAMP 8, JSON its text's length, NULL nothing.
def _size(value: Any, kind: Any) -> int:
    if value is None:
        return 0
    if isinstance(kind, dict):
        return sum(_size(value.get(name), inner) for name, inner in kind.items())
    if kind == "TIMESTAMP":
        return 8
    if kind == "JSON":
        return len(value.encode()) if isinstance(value, str) else len(orjson.dumps(value))
    return 2 + len(str(value).encode())


def scanned_bytes(entries: list[dict[str, Any]], columns: Iterable[str], shape: str) -> int:
    """The bytes BigQuery bills for reading ``columns`` (dotted paths, as an adapter's reads
    name them) of the sink tables (``shape`` "sink") or the view ("log-analytics") of
    ``entries`` (without the 10 MB minimum per table)."""
    if shape == "sink":
        schema = sink_schema(entries)
        values = [_sink_value(entry) for entry in entries]
    else:
        schema = LOG_ANALYTICS_SCHEMA
        values = [log_analytics_value(entry) for entry in entries]
    total = 0
    for column in columns:
        if column.startswith("_"):
            continue  # pseudo-columns (_TABLE_SUFFIX, _PARTITIONTIME) are not billed
        kind: Any = schema
        for name in column.split("."):
            kind = kind[name]
        for value in values:
            inner: Any = value
            for name in column.split("."):
                inner = inner.get(name) if isinstance(inner, dict) else None
            total += _size(inner, kind)
    return total


@dataclass(frozen=True, slots=True)
class PathCase:
    """Entries whose ``field`` is carried at ``paths`` only: the value at the first, and at
    the second (when there is one) ``other``, a decoy the first must win over, or "" (an
    empty label, which a reader passes over)."""

    field: str
    paths: tuple[EntryPath, ...]
    other: str = "decoy"

    @property
    def name(self) -> str:
        where = " over ".join(".".join(path) for path in self.paths)
        return f"{self.field}: {where}" + (" (empty)" if self.other == "" else "")


# The fields of the mapping table with their paths in precedence order, and the value a
# case gives those that may be unset in the base entries.
FIELDS: dict[str, tuple[EntryPath, ...]] = {
    **{field: paths for field, paths in LABEL_PATHS.items()},
    "text": TEXT_KEY_PATHS,
    "time": TIME_PATHS,
    "severity": (SEVERITY_PATH,),
    "insert_id": (INSERT_ID_PATH,),
}
_FILLED = {"trial": "3", "vm": "4242", "task": "workerpool0-0"}


def path_cases() -> list[PathCase]:
    """One case per path of :data:`FIELDS`, one per pair of neighbours in precedence order
    (which fixes the order: a reader agreeing on every neighbour pair reads the same order),
    and one per neighbour pair of a label with the first empty."""
    cases = []
    for field, paths in FIELDS.items():
        cases += [PathCase(field, (path,)) for path in paths]
        pairs = list(pairwise(paths))
        cases += [PathCase(field, pair) for pair in pairs]
        if field in LABEL_PATHS:
            cases += [PathCase(field, pair, "") for pair in pairs]
    return cases


def _drop(entry: dict[str, Any], path: EntryPath) -> None:
    into: Any = entry
    for key in path[:-1]:
        into = into.get(key)
        if not isinstance(into, dict):
            return
    into.pop(path[-1], None)


def _put(entry: dict[str, Any], path: EntryPath, value: str) -> None:
    into = entry
    for key in path[:-1]:
        into = into.setdefault(key, {})
    into[path[-1]] = value


def _decoy(field: str, value: str) -> str:
    if field == "time":
        return _stamp(parse_timestamp(value) + timedelta(hours=7))
    return f"{value}-decoy" if field != "text" else "decoy"


def apply_case(case: PathCase, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``entries`` (stored ones) with ``case.field`` moved to the case's paths."""
    found = []
    for entry in entries:
        fields = entry_fields(entry)
        if isinstance(fields, str):
            found.append(entry)
            continue
        value = getattr(fields, "time" if case.field == "time" else case.field)
        if value is None:
            value = _FILLED.get(case.field)
        changed = orjson.loads(orjson.dumps(entry))
        for path in FIELDS[case.field]:
            _drop(changed, path)
        if value is not None:
            _put(changed, case.paths[0], value)
            if len(case.paths) > 1:
                other = case.other if case.other == "" else _decoy(case.field, value)
                _put(changed, case.paths[1], other)
        found.append(changed)
    return stored_entries(found)


def resource_cases(entries: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """``entries`` as the entries of each job resource type, of another one, of an empty one
    and with every third an audit entry: what says an entry belongs to no job."""
    cases = {}
    for kind in (*sorted(JOB_RESOURCE_TYPES), "gce_instance", ""):
        changed = orjson.loads(orjson.dumps(entries))
        for entry in changed:
            _put(entry, RESOURCE_TYPE_PATH, kind)
        cases[f"resource type {kind!r}"] = stored_entries(changed)
    audited = orjson.loads(orjson.dumps(entries))
    for entry in audited[::3]:
        entry[AUDIT_PATH[0]] = {"@type": "type.googleapis.com/google.cloud.audit.AuditLog"}
    cases["audit entries"] = stored_entries(audited)
    return cases


def one_corpus(cases: dict[str, list[dict[str, Any]]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The entries of every case in one corpus, each case with jobs and insertIds of its own
    (its index put after each job id and before each insertId; the log names, so the tables,
    are kept); and the case names in index order. A row's insertId names its case."""
    names = sorted(cases)
    corpus: list[dict[str, Any]] = []
    for index, name in enumerate(names):
        jobs = {f.job_id for f in map(entry_fields, cases[name]) if not isinstance(f, str)}
        for entry in cases[name]:
            text = orjson.dumps({k: v for k, v in entry.items() if k != LOG_NAME}).decode()
            for job in sorted(jobs - {None}, key=len, reverse=True):
                text = text.replace(str(job), f"{job}{index:02d}")
            changed = orjson.loads(text)
            if LOG_NAME in entry:
                changed[LOG_NAME] = entry[LOG_NAME]
            changed["insertId"] = f"{index:02d}-{entry.get('insertId') or len(corpus)}"
            corpus.append(changed)
    return stored_entries(corpus), names


def case_of(insert_id: object, names: list[str]) -> str:
    """The case a row of :func:`one_corpus` is from."""
    return names[int(str(insert_id)[:2])]
