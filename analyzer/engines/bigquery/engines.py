"""Where the queries run: BigQuery through google-cloud-bigquery, or DuckDB (embedded).

Both take the BigQuery SQL of :mod:`analyzer.engines.bigquery.queries`; DuckDB runs its transpiled
form (:mod:`analyzer.engines.bigquery.dialects`), so the tests run what users run. Both are imported
only when used: the core install has neither.

``JOBDOCTOR_BIGQUERY_ENDPOINT`` points the client at an emulator or a private endpoint;
a loopback ``http://`` endpoint gets anonymous credentials, another ``http://`` one is
refused (the user's token would travel in clear text).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

from analyzer.core.errors import InputError, SourceError
from analyzer.engines.bigquery.dialects import to_duckdb
from analyzer.engines.bigquery.errors import translate
from analyzer.engines.bigquery.queries import Parameter
from analyzer.engines.bigquery.tables import TableInfo, TableRef, is_sharded
from analyzer.rulebook.re2 import INSTALL_HINT

ENDPOINT_ENV = "JOBDOCTOR_BIGQUERY_ENDPOINT"
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}
_PAGE_ROWS = 10_000


class Engine(Protocol):
    """What running jobdoctor's queries needs of an engine."""

    @property
    def name(self) -> str: ...

    def describe(self, ref: TableRef) -> TableInfo: ...

    def estimate(self, sql: str, parameters: Sequence[Parameter]) -> int | None: ...

    def rows(
        self, sql: str, parameters: Sequence[Parameter], max_bytes: int | None
    ) -> Iterator[Mapping[str, Any]]: ...


def _used(sql: str, parameters: Sequence[Parameter]) -> list[Parameter]:
    # DuckDB refuses parameters a statement does not name; BigQuery is told only those too.
    return [p for p in parameters if f"@{p.name}" in sql]


def _paths(fields: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """The dotted paths of a google-cloud-bigquery schema with their types, RECORDs entered."""
    for field in fields:
        path = f"{prefix}{field.name}"
        yield path, str(field.field_type)
        if field.field_type in ("RECORD", "STRUCT"):
            yield from _paths(field.fields, path + ".")


def _info(schema: Any, **facts: Any) -> TableInfo:
    typed = dict(_paths(schema))
    strings = frozenset(path for path, kind in typed.items() if kind == "STRING")
    return TableInfo(frozenset(typed), strings=strings, **facts)


def is_local(endpoint: str | None) -> bool:
    """True for ``http://localhost``, ``http://127.0.0.1`` and ``http://[::1]`` URLs."""
    if not endpoint:
        return False
    parts = urlsplit(endpoint)
    return parts.scheme == "http" and (parts.hostname or "") in _LOOPBACK


class BigQueryEngine:
    """google-cloud-bigquery, billing queries to ``billing_project``."""

    name = "bigquery"

    def __init__(
        self, billing_project: str, endpoint: str | None = None, retry_seconds: float = 60.0
    ) -> None:
        self.billing_project = billing_project
        # The client retries a lost connection and rate limits for 10 minutes by default:
        # an endpoint that is down (an emulator not started) should say so sooner.
        self.retry_seconds = retry_seconds
        chosen = endpoint or os.environ.get(ENDPOINT_ENV) or None
        self.endpoint = chosen.rstrip("/") if chosen else None
        self._client: Any = None
        self._retry: Any = None
        self._table = ""

    def _connect(self) -> Any:
        if self._client is not None:
            return self._client
        try:
            from google.api_core.client_options import ClientOptions
            from google.auth.credentials import AnonymousCredentials
            from google.cloud import bigquery
        except ImportError:
            raise SourceError(
                f"reading BigQuery needs google-cloud-bigquery: {INSTALL_HINT}"
            ) from None
        kwargs: dict[str, Any] = {"project": self.billing_project}
        endpoint = self.endpoint
        if endpoint is not None:
            parts = urlsplit(endpoint)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise SourceError(
                    f"invalid {ENDPOINT_ENV} {endpoint!r}: give a URL such as"
                    " https://bigquery.googleapis.com or http://127.0.0.1:9050"
                )
            if parts.scheme == "http" and not is_local(endpoint):
                raise SourceError(
                    f"refusing plain http to {parts.hostname}: credentials would travel"
                    " unencrypted; use https, or http only for a localhost emulator"
                )
            kwargs["client_options"] = ClientOptions(api_endpoint=endpoint)
            if is_local(endpoint):
                anonymous: Any = AnonymousCredentials
                kwargs["credentials"] = anonymous()
        try:
            self._client = bigquery.Client(**kwargs)
        except Exception as exc:
            raise self._error(exc) from None
        self._retry = bigquery.DEFAULT_RETRY.with_deadline(self.retry_seconds)
        return self._client

    def _error(self, exc: Exception) -> Exception:
        error = translate(exc, self._table, self.billing_project, self.endpoint)
        return exc if error is None else error

    def describe(self, ref: TableRef) -> TableInfo:
        """The schema of ``ref`` (of the newest table under a wildcard, as BigQuery uses)."""
        client = self._connect()
        self._table = str(ref)
        try:
            if not ref.wildcard:
                table = client.get_table(str(ref), retry=self._retry)
                return _info(table.schema, ingestion_partitioned=_by_ingestion(table))
            listed = [
                item
                for item in client.list_tables(ref.dataset_id, page_size=1000, retry=self._retry)
                if item.table_id.startswith(ref.prefix)
            ]
            if not listed:
                raise InputError(
                    f"no table in {ref.dataset_id} matches {ref.table}: check the dataset,"
                    " and that the sink has written to it"
                )
            newest = max(listed, key=_created)
            table = client.get_table(newest.reference, retry=self._retry)
        except InputError:
            raise
        except Exception as exc:
            raise self._error(exc) from None
        names = [item.table_id for item in listed]
        return _info(
            table.schema,
            sharded=is_sharded(names),
            ingestion_partitioned=_by_ingestion(table),
            tables=len(names),
        )

    def _config(self, parameters: Sequence[Parameter], **options: Any) -> Any:
        from google.cloud import bigquery

        values: list[Any] = []
        scalar: Any = bigquery.ScalarQueryParameter
        for parameter in parameters:
            if parameter.kind.startswith("ARRAY<"):
                kind = parameter.kind[len("ARRAY<") : -1]
                values.append(bigquery.ArrayQueryParameter(parameter.name, kind, parameter.value))
            else:
                values.append(scalar(parameter.name, parameter.kind, parameter.value))
        return bigquery.QueryJobConfig(query_parameters=values, **options)

    def estimate(self, sql: str, parameters: Sequence[Parameter]) -> int | None:
        """The bytes the query would scan, by a (free) dry run."""
        client = self._connect()
        config = self._config(_used(sql, parameters), dry_run=True, use_query_cache=False)
        try:
            job = client.query(sql, job_config=config, retry=self._retry)
        except Exception as exc:
            raise self._error(exc) from None
        return int(job.total_bytes_processed or 0)

    def rows(
        self, sql: str, parameters: Sequence[Parameter], max_bytes: int | None
    ) -> Iterator[Mapping[str, Any]]:
        """The result rows, a page at a time (through REST: the Storage Read API is not
        asked for, which an emulator or a private endpoint may not serve)."""
        client = self._connect()
        config = self._config(_used(sql, parameters), maximum_bytes_billed=max_bytes)
        try:
            job = client.query(sql, job_config=config, retry=self._retry)
            result = job.result(page_size=_PAGE_ROWS, retry=self._retry)
            for row in result:
                yield dict(row.items())
        except Exception as exc:
            raise self._error(exc) from None


def _created(item: Any) -> tuple[float, str]:
    """The order of a wildcard's tables by age (BigQuery takes the newest one's schema)."""
    created = getattr(item, "created", None)
    return (created.timestamp() if isinstance(created, datetime) else 0.0, item.table_id)


def _by_ingestion(table: Any) -> bool:
    partitioning = getattr(table, "time_partitioning", None)
    return partitioning is not None and getattr(partitioning, "field", None) is None


class DuckDBEngine:
    """An embedded DuckDB connection whose catalogs and schemas stand for projects and
    datasets (``ATTACH ':memory:' AS "my-project"; CREATE SCHEMA "my-project".logs``).

    A wildcard ``P.D.prefix*`` is served by a view of that name: its tables ``UNION ALL BY
    NAME`` with their ``_TABLE_SUFFIX``, as BigQuery expands one.
    """

    name = "duckdb"

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        connection.execute("SET TimeZone = 'UTC'")

    def _tables(self, ref: TableRef) -> list[str]:
        rows = self.connection.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = ?"
            " AND table_schema = ? AND table_type = 'BASE TABLE' ORDER BY table_name",
            [ref.project, ref.dataset],
        ).fetchall()
        return [str(row[0]) for row in rows]

    def _paths(self, qualified: str) -> tuple[frozenset[str], frozenset[str]]:
        """The table's field paths, and those of them that are strings."""
        relation = self.connection.sql(f"SELECT * FROM {qualified} LIMIT 0")
        paths: set[str] = set()
        strings: set[str] = set()

        def walk(name: str, kind: Any) -> None:
            paths.add(name)
            if kind.id == "varchar":
                strings.add(name)
            if kind.id == "struct":
                for child, child_kind in kind.children:
                    walk(f"{name}.{child}", child_kind)

        for column, kind in zip(relation.columns, relation.types, strict=True):
            if column != "_TABLE_SUFFIX":
                walk(column, kind)
        return frozenset(paths), frozenset(strings)

    def describe(self, ref: TableRef) -> TableInfo:
        """The schema of ``ref``; for a wildcard, (re)creates its view first."""
        quote = _quote
        if not ref.wildcard:
            if ref.table not in self._tables(ref):
                raise InputError(f"table {ref} not found")
            qualified = f"{quote(ref.project)}.{quote(ref.dataset)}.{quote(ref.table)}"
            paths, strings = self._paths(qualified)
            return TableInfo(paths, strings=strings)
        names = [name for name in self._tables(ref) if name.startswith(ref.prefix)]
        if not names:
            raise InputError(f"no table in {ref.dataset_id} matches {ref.table}")
        schema = f"{quote(ref.project)}.{quote(ref.dataset)}"
        union = "\nUNION ALL BY NAME\n".join(
            f"SELECT *, '{name[len(ref.prefix) :]}' AS _TABLE_SUFFIX FROM {schema}.{quote(name)}"
            for name in names
        )
        self.connection.execute(f"CREATE OR REPLACE VIEW {schema}.{quote(ref.table)} AS {union}")
        paths, strings = self._paths(f"{schema}.{quote(ref.table)}")
        return TableInfo(paths, is_sharded(names), False, len(names), strings)

    def estimate(self, sql: str, parameters: Sequence[Parameter]) -> int | None:
        """None: DuckDB bills nothing and has no dry run."""
        return None

    def rows(
        self, sql: str, parameters: Sequence[Parameter], max_bytes: int | None
    ) -> Iterator[Mapping[str, Any]]:
        """The rows of the DuckDB form of ``sql``; timestamps as aware UTC datetimes."""
        values = {p.name: p.value for p in _used(sql, parameters)}
        cursor = self.connection.execute(to_duckdb(sql), values)
        names = [column[0] for column in cursor.description]
        while batch := cursor.fetchmany(_PAGE_ROWS):
            for row in batch:
                yield {
                    name: value.astimezone(UTC) if isinstance(value, datetime) else value
                    for name, value in zip(names, row, strict=True)
                }


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
