"""Diagnose where the logs already are: a BigQuery sink table, the wildcard of its per-job
tables, or a Log Analytics view; with the verdicts of the file path.

Needs the ``bigquery`` extra (``pip install 'jobdoctor[bigquery]'``: google-cloud-bigquery,
google-re2, sqlglot); nothing of it is imported until a table is read. Push down only what is
cheap and exact, Python stays the authority (``scale.md``):

* :mod:`.re2rules` compiles the rule book for RE2 (``\\Z`` -> ``\\z``, one-class
  look-behinds), a template RE2 refuses is *Python only*;
* :mod:`.tables` maps each table shape to the same logical columns, derived from the one
  LogEntry mapping table of :mod:`analyzer.ingest.records` through :mod:`.columns` (where each
  shape keeps a LogEntry path: the sink's renaming of the user's keys, the view's names);
* :mod:`.queries` writes query A (candidate entries) and B (spans) once, for BigQuery;
* :mod:`.dialects` transpiles them for DuckDB, the embedded engine of the tests;
* :mod:`.engines` runs them (dry run, ``maximum_bytes_billed``); :mod:`.cost` prices them;
* :mod:`.run` feeds the rows to the unchanged rule book, timeline, policy replay and reports.

>>> source = bigquery_source("my-project.logs.ml_googleapis_com_*", since="30d")
>>> analysis = analyze_bigquery(source)                      # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from analyzer.core.errors import InputError
from analyzer.engines.bigquery.cost import DEFAULT_MAX_BYTES, parse_bytes
from analyzer.engines.bigquery.engines import ENDPOINT_ENV, BigQueryEngine, DuckDBEngine, Engine
from analyzer.engines.bigquery.run import BigQuerySource, build_plan, collect_table, describe_window
from analyzer.engines.bigquery.tables import TableRef
from analyzer.engines.live.window import parse_window
from analyzer.rulebook import RuleBook

if TYPE_CHECKING:
    from analyzer.pipeline.analysis import Analysis
    from analyzer.verdict.jobspec import JobSpec
    from analyzer.verdict.policy import RetryPolicy


def bigquery_source(
    table: str,
    *,
    since: str | None = None,
    start: str | None = None,
    end: str | None = None,
    job_ids: Sequence[str] = (),
    billing_project: str | None = None,
    max_bytes: str | int = DEFAULT_MAX_BYTES,
    endpoint: str | None = None,
) -> BigQuerySource:
    """A :class:`BigQuerySource` from the CLI's option values.

    A window is required: ``since`` (``30d``) or ``start`` (with an optional ``end``).
    Raises InputError for a malformed table, size or missing window, SourceError for a
    malformed window.
    """
    if since is None and start is None:
        raise InputError(
            "reading BigQuery needs an explicit window: --since 30d, or --start (and --end)"
        )
    return BigQuerySource(
        table=TableRef.parse(table),
        window=parse_window(since, start, end),
        job_ids=tuple(dict.fromkeys(job_ids)),
        billing_project=billing_project,
        max_bytes=max_bytes if isinstance(max_bytes, int) else parse_bytes(max_bytes),
        endpoint=endpoint,
    )


def analyze_bigquery(
    source: BigQuerySource,
    *,
    engine: Engine | None = None,
    rules: RuleBook | None = None,
    policy: RetryPolicy | None = None,
    job_spec: JobSpec | None = None,
    lang: str = "en",
    say: Callable[[str], None] = lambda line: None,
    dry_run: bool = False,
) -> Analysis | None:
    """Diagnose every job of ``source`` (None for ``dry_run``, after ``say`` got the estimate).

    ``engine`` defaults to BigQuery itself (a :class:`DuckDBEngine` runs the same queries on
    DuckDB tables); ``job_spec`` and ``lang`` as for files. The window is the analysis' first
    notice.
    """
    from analyzer.pipeline.analysis import Analysis
    from analyzer.pipeline.stages import diagnose_collected

    book = rules if rules is not None else RuleBook.load()
    collector = collect_table(source, engine or source.engine(), book, say=say, dry_run=dry_run)
    if collector is None:
        return None
    found = diagnose_collected(collector, book, policy=policy, job_spec=job_spec, lang=lang)
    return Analysis(found.inputs, found.diagnoses, (describe_window(source), *found.notices))


def sql_text(
    source: BigQuerySource,
    *,
    dialect: str = "bigquery",
    engine: Engine | None = None,
    rules: RuleBook | None = None,
) -> str:
    """The queries a run would send, commented, in ``dialect`` (``bigquery`` or ``duckdb``).

    The table's schema is read (free) to pick its adapter; nothing is billed.
    """
    from analyzer.engines.bigquery.dialects import DIALECTS, to_duckdb

    if dialect not in DIALECTS:
        raise InputError(f"unknown --dialect {dialect!r}: choose one of {', '.join(DIALECTS)}")
    book = rules if rules is not None else RuleBook.load()
    query_plan = build_plan(source, engine or source.engine(), book)
    convert = to_duckdb if dialect == "duckdb" else (lambda sql: sql)
    sent = query_plan.spans + query_plan.candidates
    params = "\n".join(
        f"--   @{p.name} {p.kind} = {_shown(p.value)}"
        for p in query_plan.parameters
        if f"@{p.name}" in sent
    )
    head = (
        f"-- jobdoctor: {query_plan.adapter.kind} {source.table}, {describe_window(source)}\n"
        f"-- parameters:\n{params}\n"
    )
    return (
        f"{head}\n-- Query B: first, last and count per job, trial, task and VM\n"
        f"{convert(query_plan.spans)};\n\n"
        "-- Query A: the entries the rule book may match\n"
        f"{convert(query_plan.candidates)};\n"
    )


def _shown(value: object) -> str:
    from datetime import datetime

    from analyzer.engines.live.window import rfc3339

    if isinstance(value, datetime):
        return rfc3339(value)
    return repr(value)


__all__ = [
    "DEFAULT_MAX_BYTES",
    "ENDPOINT_ENV",
    "BigQueryEngine",
    "BigQuerySource",
    "DuckDBEngine",
    "Engine",
    "TableRef",
    "analyze_bigquery",
    "bigquery_source",
    "describe_window",
    "sql_text",
]
