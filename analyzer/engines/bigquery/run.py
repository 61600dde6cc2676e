"""Diagnose from a table: the queries' rows fed to the unchanged rule book, timeline, policy
replay and reports, so the verdicts are the file path's.

Query A's rows become the records Python matches (its own :class:`RuleBook`, not RE2, decides
every event); query B's rows become the per-worker spans and record counts. Both go into the
same :class:`~analyzer.classify.collector.Collector` a file fills, through ``read_summary``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from analyzer.classify.collector import Collector
from analyzer.classify.joblog import SpanSummary
from analyzer.classify.minutes import MinuteMap
from analyzer.engines.bigquery.cost import (
    DEFAULT_MAX_BYTES,
    check_estimate,
    describe_estimate,
    parse_bytes,
)
from analyzer.engines.bigquery.engines import BigQueryEngine, Engine
from analyzer.engines.bigquery.queries import QueryPlan, plan
from analyzer.engines.bigquery.tables import TableRef, adapter_for
from analyzer.engines.live.window import Window
from analyzer.ingest.records import InputStats, LogRecord, TableOrigin, job_group
from analyzer.rulebook import RuleBook
from analyzer.rulebook.events import Event
from analyzer.rulebook.re2 import compile_rules


@dataclass(frozen=True, slots=True)
class BigQuerySource:
    """A table to diagnose over an explicit window (the CLI's ``--bigquery``).

    ``table`` is a sink table, a wildcard over the per-job tables or a Log Analytics view;
    ``job_ids`` limits the reading to those jobs; queries are billed to ``billing_project``
    (the table's project when None) and refused over ``max_bytes``; ``endpoint`` overrides
    ``JOBDOCTOR_BIGQUERY_ENDPOINT``.
    """

    table: TableRef
    window: Window
    job_ids: tuple[str, ...] = ()
    billing_project: str | None = None
    max_bytes: int = parse_bytes(DEFAULT_MAX_BYTES)
    endpoint: str | None = None

    @property
    def path(self) -> str:
        """How the input is named in reports (``inputs[].path``, evidence ``path``)."""
        return f"bigquery:{self.table}"

    def engine(self) -> Engine:
        """The BigQuery client for this source."""
        return BigQueryEngine(self.billing_project or self.table.project, self.endpoint)


def describe_window(source: BigQuerySource) -> str:
    """The window line every run prints."""
    return f"window: {source.window} over {source.table}"


def build_plan(source: BigQuerySource, engine: Engine, book: RuleBook) -> QueryPlan:
    """Read the table's schema and write both queries for it."""
    info = engine.describe(source.table)
    adapter = adapter_for(source.table, info)
    templates = compile_rules(book.rules)
    window = source.window
    return plan(source.table, adapter, info, templates, window.start, window.end, source.job_ids)


def estimate(query_plan: QueryPlan, engine: Engine) -> int | None:
    """The bytes both queries would scan (a dry run each), or None when the engine bills
    nothing (DuckDB)."""
    sizes = [
        engine.estimate(sql, query_plan.parameters)
        for sql in (query_plan.spans, query_plan.candidates)
    ]
    known = [size for size in sizes if size is not None]
    return sum(known) if known else None


def collect_table(
    source: BigQuerySource,
    engine: Engine,
    book: RuleBook,
    *,
    say: Callable[[str], None] = lambda line: None,
    dry_run: bool = False,
) -> Collector | None:
    """Plan, dry-run, guard the cost, run both queries and collect their rows.

    ``say`` gets the estimate line before anything is billed. Returns None for ``dry_run``.
    Raises SourceError over ``max_bytes``.
    """
    query_plan = build_plan(source, engine, book)
    size = estimate(query_plan, engine)
    if size is not None:
        say(describe_estimate(size, 2))
        check_estimate(size, source.max_bytes)
    if dry_run:
        return None
    stats = InputStats(path=source.path, format=query_plan.adapter.kind)
    span_rows = engine.rows(query_plan.spans, query_plan.parameters, source.max_bytes)
    spans = list(_spans(span_rows, stats))
    rows = sorted(
        engine.rows(query_plan.candidates, query_plan.parameters, source.max_bytes),
        key=lambda row: (row["time"], row["tbl"] or "", row["insert_id"] or ""),
    )
    collector = Collector(book)
    prefix = query_plan.adapter.table_prefix
    collector.read_summary(stats, spans, _events(rows, source.path, prefix, book))
    return collector


def _spans(rows: Iterator[Mapping[str, Any]], stats: InputStats) -> Iterator[SpanSummary]:
    for row in rows:
        count = int(row["records"])
        stats.lines += count
        if row["skip"] is not None:
            stats.skip(row["skip"] + (row["other_resource"] or ""), count)
            continue
        stats.records += count
        stats.used += count
        yield SpanSummary(
            job_group(row["job"], row["trial"]),
            row["task"],
            row["vm"],
            row["first"],
            row["last"],
            count,
            _minutes(row.get("minutes")),
        )


def _minutes(found: Any) -> MinuteMap | None:
    """The minutes of a span row, ``"28502400,28502401"`` (None: a row without them)."""
    minutes = MinuteMap()
    if found is None:
        return minutes  # every entry untimed: no minute, as a file's span has none
    for minute in str(found).split(","):
        if minute:
            minutes.add(int(minute))
    return minutes


def _events(
    rows: list[Mapping[str, Any]], path: str, prefix: str, book: RuleBook
) -> Iterator[Event]:
    for line, row in enumerate(rows, start=1):
        matches = book.match(row["text"])
        if not matches:
            continue
        insert_id = row["insert_id"]
        origin = TableOrigin(path, line, 0, prefix + (row["tbl"] or ""), insert_id, row["time"])
        record = LogRecord(
            timestamp=row["time"],
            job_id=row["job"],
            task=row["task"],
            # As records.entry_fields: a severity that is not given is DEFAULT.
            severity="DEFAULT" if row["severity"] is None else row["severity"],
            text=row["text"],
            origin=origin,
            vm=row["vm"],
            trial=row["trial"],
            insert_id=insert_id,
        )
        for match in matches:
            yield Event.from_record(record, match)
