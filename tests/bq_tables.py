"""LogEntry dicts into tables shaped as Cloud Logging writes them: per-job sink tables
(date-sharded, LogEntry names, RECORD columns) and a Log Analytics view (snake_case, JSON).

:func:`as_stored` first makes an entry what Cloud Logging would store (a table holds typed
values: no label that is not a string, a timestamp always); the equality tests give the very
same stored entries to the file path, as JSONL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

import orjson

from analyzer.records import TEXT_KEYS, parse_timestamp

SINK_LABELS = (
    "compute_googleapis_com_resource_id",
    "ml_googleapis_com_job_id",
    "ml_googleapis_com_task_name",
    "ml_googleapis_com_trial_id",
    "task_name",
    "trial_id",
)
RESOURCE_LABELS = ("job_id", "task_name", "project_id")
SINK_DDL = (
    "insertId VARCHAR, logName VARCHAR, severity VARCHAR, textPayload VARCHAR,"
    " timestamp TIMESTAMPTZ, receiveTimestamp TIMESTAMPTZ,"
    " jsonPayload STRUCT(message VARCHAR, msg VARCHAR, log VARCHAR, text VARCHAR,"
    " event VARCHAR, attrs STRUCT(tag VARCHAR)), protoPayload JSON,"
    " resource STRUCT(type VARCHAR, labels STRUCT("
    + ", ".join(f"{name} VARCHAR" for name in RESOURCE_LABELS)
    + ")), labels STRUCT("
    + ", ".join(f"{name} VARCHAR" for name in SINK_LABELS)
    + ")"
)
LOG_ANALYTICS_DDL = (
    "timestamp TIMESTAMPTZ, receive_timestamp TIMESTAMPTZ, log_name VARCHAR, severity VARCHAR,"
    " insert_id VARCHAR, resource STRUCT(type VARCHAR, labels JSON), labels JSON,"
    " json_payload JSON, text_payload VARCHAR, proto_payload JSON"
)


def _strings(mapping: object) -> dict[str, str]:
    if not isinstance(mapping, dict):
        return {}
    return {key: value for key, value in mapping.items() if isinstance(value, str)}


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


def as_stored(entry: object) -> dict[str, Any] | None:
    """``entry`` as Cloud Logging stores it, or None when it would not store it."""
    if not isinstance(entry, dict):
        return None
    when = _time(entry.get("timestamp")) or _time(entry.get("receiveTimestamp"))
    if when is None:
        return None
    stored: dict[str, Any] = {"timestamp": when.isoformat().replace("+00:00", "Z")}
    received = _time(entry.get("receiveTimestamp"))
    if received is not None:
        stored["receiveTimestamp"] = received.isoformat().replace("+00:00", "Z")
    for key in ("insertId", "logName", "severity", "textPayload"):
        if isinstance(entry.get(key), str):
            stored[key] = entry[key]
    labels = _strings(entry.get("labels"))
    if labels:
        stored["labels"] = labels
    resource = entry.get("resource")
    if isinstance(resource, dict):
        shaped: dict[str, Any] = {"labels": _strings(resource.get("labels"))}
        if isinstance(resource.get("type"), str):
            shaped["type"] = resource["type"]
        stored["resource"] = shaped
    payload = entry.get("jsonPayload")
    if isinstance(payload, dict):
        # The payload keys a sink table of these tests has: the loggers' text keys (strings)
        # and the runner's attrs.tag. With no text anywhere, a file reader would give the
        # payload itself as the text, which a sink table cannot give without reading every
        # payload column (see analyzer.bigquery.tables): the tag goes too, so the stored
        # payload is empty, no message for both.
        kept: dict[str, Any] = {k: payload[k] for k in TEXT_KEYS if isinstance(payload.get(k), str)}
        tag = _strings(payload.get("attrs")).get("tag")
        if tag is not None and (kept or "textPayload" in stored):
            kept["attrs"] = {"tag": tag}
        stored["jsonPayload"] = kept
    if isinstance(entry.get("protoPayload"), dict):
        stored["protoPayload"] = entry["protoPayload"]
    return stored if _encodable(stored) else None


def stored_entries(entries: Iterable[object]) -> list[dict[str, Any]]:
    """Every entry Cloud Logging would store, as it would store it."""
    return [stored for stored in map(as_stored, entries) if stored is not None]


def sink_key(name: str) -> str:
    """A label key as the BigQuery sink writes it."""
    return re.sub(r"[^a-z0-9_]", "_", name.lower())


def log_table(entry: dict[str, Any]) -> str:
    """The table a sink writes the entry to, before the date suffix (named after its log)."""
    log_name = entry.get("logName") or ""
    log_id = unquote(log_name.rpartition("/logs/")[2]) if "/logs/" in log_name else ""
    if not log_id:
        job = entry.get("resource", {}).get("labels", {}).get("job_id") or "unknown"
        log_id = f"ml.googleapis.com/{job}"
    return re.sub(r"[^A-Za-z0-9_]", "_", log_id)


def sink_row(entry: dict[str, Any]) -> tuple[object, ...]:
    """One stored entry as a row of :data:`SINK_DDL`."""
    labels = {sink_key(key): value for key, value in entry.get("labels", {}).items()}
    resource = entry.get("resource")
    payload = entry.get("jsonPayload")
    return (
        entry.get("insertId"),
        entry.get("logName"),
        entry.get("severity"),
        entry.get("textPayload"),
        parse_timestamp(entry["timestamp"]),
        parse_timestamp(entry["receiveTimestamp"]) if "receiveTimestamp" in entry else None,
        None if payload is None else {key: payload.get(key) for key in (*TEXT_KEYS, "attrs")},
        _json(entry.get("protoPayload")),
        None
        if resource is None
        else {
            "type": resource.get("type"),
            "labels": {name: resource["labels"].get(name) for name in RESOURCE_LABELS},
        },
        {name: labels.get(name) for name in SINK_LABELS} if "labels" in entry else None,
    )


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


def _json(value: object) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def log_analytics_row(entry: dict[str, Any]) -> tuple[object, ...]:
    """One stored entry as a row of :data:`LOG_ANALYTICS_DDL`."""
    resource = entry.get("resource")
    return (
        parse_timestamp(entry["timestamp"]),
        parse_timestamp(entry["receiveTimestamp"]) if "receiveTimestamp" in entry else None,
        entry.get("logName"),
        entry.get("severity"),
        entry.get("insertId"),
        None
        if resource is None
        else {"type": resource.get("type"), "labels": _json(resource.get("labels"))},
        _json(entry.get("labels")),
        _json(entry.get("jsonPayload")),
        entry.get("textPayload"),
        _json(entry.get("protoPayload")),
    )


def load_duckdb(
    connection: Any,
    project: str,
    dataset: str,
    entries: list[dict[str, Any]],
    *,
    sharded: bool = True,
) -> None:
    """The entries as per-job sink tables and as ``_AllLogs`` in ``project.dataset``."""
    connection.execute(f"ATTACH IF NOT EXISTS ':memory:' AS \"{project}\"")
    connection.execute(f'CREATE SCHEMA IF NOT EXISTS "{project}"."{dataset}"')
    where = f'"{project}"."{dataset}"'
    for name, rows in sink_tables(entries, sharded=sharded).items():
        connection.execute(f'CREATE TABLE {where}."{name}" ({SINK_DDL})')
        connection.executemany(
            f'INSERT INTO {where}."{name}" VALUES ({", ".join("?" * 10)})',
            [sink_row(entry) for entry in rows],
        )
    connection.execute(f'CREATE TABLE {where}."_AllLogs" ({LOG_ANALYTICS_DDL})')
    if entries:
        connection.executemany(
            f'INSERT INTO {where}."_AllLogs" VALUES ({", ".join("?" * 10)})',
            [log_analytics_row(entry) for entry in entries],
        )


def _sink_json(entry: dict[str, Any]) -> dict[str, Any]:
    """One stored entry as the JSON row of a sink table (streaming insert)."""
    row = dict(
        zip(("insertId", "logName", "severity", "textPayload"), sink_row(entry)[:4], strict=True)
    )
    row["timestamp"] = entry["timestamp"]
    row["receiveTimestamp"] = entry.get("receiveTimestamp")
    _, _, _, _, _, _, payload, _, resource, labels = sink_row(entry)
    row["jsonPayload"] = payload
    row["resource"] = resource
    row["labels"] = labels
    return row


def sink_schema() -> list[Any]:
    """The BigQuery schema of :data:`SINK_DDL`."""
    from google.cloud.bigquery import SchemaField as Field

    def strings(names: Iterable[str]) -> list[Any]:
        return [Field(name, "STRING") for name in names]

    return [
        *strings(("insertId", "logName", "severity", "textPayload")),
        Field("timestamp", "TIMESTAMP"),
        Field("receiveTimestamp", "TIMESTAMP"),
        Field(
            "jsonPayload",
            "RECORD",
            fields=[*strings(TEXT_KEYS), Field("attrs", "RECORD", fields=strings(["tag"]))],
        ),
        Field(
            "resource",
            "RECORD",
            fields=[
                Field("type", "STRING"),
                Field("labels", "RECORD", fields=strings(RESOURCE_LABELS)),
            ],
        ),
        Field("labels", "RECORD", fields=strings(SINK_LABELS)),
    ]


def load_emulator(
    client: Any, project: str, dataset: str, entries: list[dict[str, Any]]
) -> list[str]:
    """The entries as date-sharded per-job sink tables in the emulator; their names."""
    from google.cloud import bigquery

    client.create_dataset(f"{project}.{dataset}", exists_ok=True)
    names = []
    for name, rows in sink_tables(entries).items():
        table = client.create_table(
            bigquery.Table(f"{project}.{dataset}.{name}", schema=sink_schema())
        )
        for start in range(0, len(rows), 500):
            errors = client.insert_rows_json(
                table, [_sink_json(e) for e in rows[start : start + 500]]
            )
            assert not errors, errors
        names.append(name)
    return names


def load_emulator_log_analytics(
    client: Any, project: str, dataset: str, entries: list[dict[str, Any]]
) -> None:
    """The entries as a Log Analytics ``_AllLogs`` table (JSON columns) in the emulator."""
    from google.cloud import bigquery
    from google.cloud.bigquery import SchemaField as Field

    strings = [Field(name, "STRING") for name in ("log_name", "severity", "insert_id")]
    schema = [
        Field("timestamp", "TIMESTAMP"),
        Field("receive_timestamp", "TIMESTAMP"),
        *strings,
        Field("resource", "RECORD", fields=[Field("type", "STRING"), Field("labels", "JSON")]),
        Field("labels", "JSON"),
        Field("json_payload", "JSON"),
        Field("text_payload", "STRING"),
    ]
    client.create_dataset(f"{project}.{dataset}", exists_ok=True)
    table = client.create_table(bigquery.Table(f"{project}.{dataset}._AllLogs", schema=schema))
    rows = []
    for entry in entries:
        _, _, log_name, severity, insert_id, resource, labels, payload, text, _ = log_analytics_row(
            entry
        )
        rows.append(
            {
                "timestamp": entry["timestamp"],
                "receive_timestamp": entry.get("receiveTimestamp"),
                "log_name": log_name,
                "severity": severity,
                "insert_id": insert_id,
                "resource": resource,
                "labels": labels,
                "json_payload": payload,
                "text_payload": text,
            }
        )
    for start in range(0, len(rows), 500):
        errors = client.insert_rows_json(table, rows[start : start + 500])
        assert not errors, errors
