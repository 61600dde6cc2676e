"""The two queries jobdoctor runs on a table, written once in BigQuery's SQL.

Query A (*candidates*) returns the entries Python must see: what the rule book's literal
prefilter selects, less the ASCII texts no rule's RE2 form matches. A text is returned

* when it holds a character outside ASCII and the prefilter's inert ranges (Python folds it
  per character, which SQL cannot reproduce);
* when it is ASCII, or ASCII and inert characters only (their probe is their lower case, as
  ``tests/test_prefilter_inert.py`` checks), and lower-cased holds a rule's literal word;
* and, if ASCII, when that template's RE2 pattern also matches it, whitespace folded as
  :func:`~analyzer.rulebook.normalize` folds it (a Python-only template: its word suffices).

Query B (*spans*) returns, per job, trial, task and VM, the first and last time and the number
of ALL entries with a message (the spans and record counts the timeline needs).

The window bounds every query (``@start`` <= timestamp < ``@end``, and the date suffixes of
a sharded wildcard), and only the columns the logical columns need are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from analyzer.engines.bigquery.tables import SINK_PREFIX, Adapter, TableInfo, TableRef
from analyzer.rulebook.prefilter import INERT_RANGES
from analyzer.rulebook.re2 import Re2Template

# Python's str.split() whitespace in ASCII: \t \n \v \f \r, the four separators, space.
_WHITESPACE = r"[\t-\r\x1c-\x1f ]+"
_NON_ASCII = r"[^\x00-\x7f]"
# A character outside ASCII and the prefilter's inert ranges (characters NFKC leaves alone,
# no invisible mark, their own lower case: Hebrew, kana, CJK, box drawing, ...). A text
# without one has the prefilter probe LOWER(text) exactly, so its literal test is exact in
# SQL too; a text with one is returned whole (SQL cannot fold it as Python does).
_NOT_INERT = (
    "[^\\x00-\\x7f"
    + "".join(f"\\x{{{first:x}}}-\\x{{{last:x}}}" for first, last in INERT_RANGES)
    + "]"
)


@dataclass(frozen=True, slots=True)
class Parameter:
    """A named query parameter: ``kind`` is the BigQuery type (``ARRAY<STRING>`` for lists)."""

    name: str
    kind: str
    value: object


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """The SQL texts (BigQuery dialect) and their parameters for one table and window."""

    table: TableRef
    adapter: Adapter
    candidates: str
    spans: str
    parameters: tuple[Parameter, ...]


def sql_string(text: str) -> str:
    """``text`` as a BigQuery raw string literal; quotes are written as ``\\x27`` (valid in
    RE2) so that one literal reads the same in BigQuery and, transpiled, in DuckDB."""
    if "\n" in text or "\r" in text:
        raise ValueError("a pattern with a raw line break")
    return "r'" + text.replace("'", r"\x27") + "'"


def folded(column: str) -> str:
    """SQL for :func:`~analyzer.rulebook.normalize` of an ASCII text in ``column``: each run
    of whitespace (as Python's str.split() sees it) one space, none at either end."""
    return (
        f"REGEXP_REPLACE(REGEXP_REPLACE({column}, {sql_string(_WHITESPACE)}, ' '),"
        f" {sql_string('^ | $')}, '')"
    )


def _regex_escape(word: str) -> str:
    return "".join(
        (c if c.isalnum() else "\\" + c) if c.isascii() else f"\\x{{{ord(c):x}}}" for c in word
    )


def _filters(ref: TableRef, info: TableInfo, window: str) -> list[str]:
    """The conditions on the table's own columns: what prunes partitions and tables."""
    where = [f"{window} >= @start", f"{window} < @end"]
    if info.ingestion_partitioned:
        # Entries are ingested after they happen: partitions before the window's first day
        # (and one day of margin for late clocks) cannot hold its entries.
        where.append(
            "_PARTITIONTIME >= TIMESTAMP_SUB(TIMESTAMP_TRUNC(@start, DAY), INTERVAL 1 DAY)"
        )
    if ref.wildcard and info.sharded:
        where.append("SUBSTR(_TABLE_SUFFIX, -8) BETWEEN @first_day AND @last_day")
    return where


def _entries(ref: TableRef, adapter: Adapter, info: TableInfo, jobs: Sequence[str]) -> str:
    """The subquery of the logical columns of every entry of the window (and of ``jobs``)."""
    inner = list(_filters(ref, info, adapter.window))
    outer = []
    if jobs:
        if ref.wildcard and ref.prefix == SINK_PREFIX:
            # The per-job tables are named after the job: only theirs are read.
            inner.append(
                "(_TABLE_SUFFIX IN UNNEST(@job_ids)"
                " OR SUBSTR(_TABLE_SUFFIX, 1, LENGTH(_TABLE_SUFFIX) - 9) IN UNNEST(@job_ids))"
            )
        outer.append(f"{adapter.job} IN UNNEST(@job_ids)")
    reads = ",\n      ".join(f"{path} AS {alias}" for alias, path in adapter.reads)
    columns = ",\n    ".join(f"{expression} AS {name}" for name, expression in adapter.columns())
    text = (
        f"  SELECT\n    {columns}\n  FROM (\n    SELECT\n      {reads}\n"
        f"    FROM {ref.sql()}\n    WHERE\n      " + "\n      AND ".join(inner) + "\n  )"
    )
    if outer:
        text += "\n  WHERE\n    " + "\n    AND ".join(outer)
    return text


def entries_query(
    ref: TableRef, adapter: Adapter, info: TableInfo, jobs: Sequence[str] = ()
) -> str:
    """The logical columns of every entry of the window: the rows both queries read from,
    one per entry (the tests compare them with the file reader's records, field by field)."""
    return f"SELECT *\nFROM (\n{_entries(ref, adapter, info, jobs)}\n)"


def _plain_string(text: str) -> str:
    # Literal words hold no quote, backslash or space (they are cut at punctuation).
    if any(c in text for c in "'\\\n\r"):
        raise ValueError(f"a literal word with a quote or a backslash: {text!r}")
    return f"'{text}'"


def _verdicts(templates: Sequence[Re2Template]) -> tuple[list[str], list[str]]:
    """The literal words to look for, and the per-template tests of ASCII texts: one test
    per template, on any of its words (a template without a word is tried on every text)."""
    words: dict[str, None] = {}
    grouped: dict[tuple[str, str | None, str], list[str | None]] = {}
    for template in templates:
        if template.literal is not None:
            words.setdefault(template.literal)
        if not template.ascii_literal:
            continue  # its word is not ASCII: no RE2 verdict, only non-ASCII texts hold it
        key = (template.rule, template.source, f"{template.location}")
        grouped.setdefault(key, []).append(template.literal)
    tests: dict[str, None] = {}
    for (_, source, _), literals in grouped.items():
        found = [f"STRPOS(lowered, {_plain_string(w)}) > 0" for w in literals if w is not None]
        literal_test = None
        if None not in literals and found:
            literal_test = found[0] if len(found) == 1 else "(" + " OR ".join(found) + ")"
        if source is None:
            tests.setdefault(literal_test or "TRUE")
            continue
        pattern = f"REGEXP_CONTAINS(folded, {sql_string(source)})"
        tests.setdefault(f"({literal_test} AND {pattern})" if literal_test else pattern)
    return list(words), list(tests)


def candidate_query(
    ref: TableRef,
    adapter: Adapter,
    info: TableInfo,
    templates: Sequence[Re2Template],
    jobs: Sequence[str] = (),
) -> str:
    """Query A: the entries the rule book may match (see the module docstring)."""
    words, tests = _verdicts(templates)
    if any(t.literal is None for t in templates):
        selected = "TRUE"  # a template with no literal word is tried on every text
    elif words:
        alternatives = "|".join(_regex_escape(word) for word in sorted(words))
        selected = (
            f"REGEXP_CONTAINS(text, {sql_string(_NOT_INERT)})"
            f"\n      OR REGEXP_CONTAINS(LOWER(text), {sql_string(alternatives)})"
        )
    else:
        selected = f"REGEXP_CONTAINS(text, {sql_string(_NOT_INERT)})"
    verdict = "\n    OR ".join(tests) if tests else "FALSE"
    return (
        "SELECT tbl, insert_id, time, severity, job, trial, task, vm, text\n"
        "FROM (\n"
        "  SELECT *,\n"
        f"    REGEXP_CONTAINS(text, {sql_string(_NON_ASCII)}) AS wide,\n"
        "    LOWER(text) AS lowered,\n"
        f"    {folded('text')} AS folded\n"
        "  FROM (\n"
        f"{_indent(_entries(ref, adapter, info, jobs))}\n"
        "  )\n"
        "  WHERE skip IS NULL\n"
        f"    AND ({selected})\n"
        ")\n"
        "WHERE wide\n"
        f"    OR {verdict}"
    )


def span_query(ref: TableRef, adapter: Adapter, info: TableInfo, jobs: Sequence[str] = ()) -> str:
    """Query B: first and last time and count per job, trial, task and VM of every entry
    that is a record (``skip`` NULL), and the count of the others by why they are not; and
    the minutes (since the epoch) they fell in, each worker's rhythm (issue 30,
    analyzer.classify.minutes: the same minutes a file gives)."""
    return (
        "SELECT job, trial, task, vm, skip, other_resource,\n"
        "  MIN(time) AS first, MAX(time) AS last, COUNT(*) AS records,\n"
        # (As text: STRING_AGG leaves out an untimed entry's NULL in every engine.)
        "  STRING_AGG(DISTINCT CAST(DIV(UNIX_SECONDS(TIMESTAMP_TRUNC(time, MINUTE)), 60)"
        " AS STRING), ',') AS minutes\n"
        "FROM (\n"
        f"{_entries(ref, adapter, info, jobs)}\n"
        ")\n"
        "GROUP BY job, trial, task, vm, skip, other_resource"
    )


def _indent(text: str) -> str:
    return "\n".join("  " + line if line else line for line in text.split("\n"))


def parameters(start: datetime, end: datetime, jobs: Sequence[str]) -> tuple[Parameter, ...]:
    """The named parameters both queries take."""
    found = [
        Parameter("start", "TIMESTAMP", start),
        Parameter("end", "TIMESTAMP", end),
        Parameter("first_day", "STRING", start.strftime("%Y%m%d")),
        Parameter("last_day", "STRING", end.strftime("%Y%m%d")),
    ]
    if jobs:
        found.append(Parameter("job_ids", "ARRAY<STRING>", list(jobs)))
    return tuple(found)


def plan(
    ref: TableRef,
    adapter: Adapter,
    info: TableInfo,
    templates: Sequence[Re2Template],
    start: datetime,
    end: datetime,
    jobs: Sequence[str] = (),
) -> QueryPlan:
    """Both queries for ``ref`` over ``[start, end)``, optionally only ``jobs``."""
    return QueryPlan(
        table=ref,
        adapter=adapter,
        candidates=candidate_query(ref, adapter, info, templates, jobs),
        spans=span_query(ref, adapter, info, jobs),
        parameters=parameters(start, end, jobs),
    )
