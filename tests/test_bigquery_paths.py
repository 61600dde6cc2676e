"""Every path of the mapping table (``analyzer.ingest.records``) reads from tables as from a file.

The cases of :func:`tests.bq_tables.path_cases` (a field carried at one path only, or at two
paths with a precedence) and the resource cases, each with jobs of its own, in one corpus:
the rows of the queries' entries (DuckDB, sink tables and the Log Analytics view) equal the
file reader's records field by field, naming the cases that differ; and the diagnoses equal
the file's. ``tests/test_bigquery_emulator.py`` runs the same corpus through the emulator. A
path added to the table is a new case here; a table change the SQL misses fails both.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import pytest

duckdb = pytest.importorskip("duckdb", reason="the bigquery extra is not installed")

from analyzer.engines.bigquery import DuckDBEngine  # noqa: E402
from analyzer.engines.bigquery.columns import log_analytics_place, sink_column  # noqa: E402
from analyzer.engines.bigquery.queries import entries_query, parameters  # noqa: E402
from analyzer.engines.bigquery.tables import TableRef, adapter_for  # noqa: E402
from analyzer.ingest.records import TIME_PATHS, entry_fields, parse_timestamp  # noqa: E402
from analyzer.simulate import simulate  # noqa: E402
from tests.bq_tables import (  # noqa: E402
    TABLE_PATHS,
    PathCase,
    apply_case,
    case_of,
    one_corpus,
    path_cases,
    resource_cases,
    stored_entries,
)
from tests.test_bigquery_duckdb import (  # noqa: E402
    DATASET,
    PROJECT,
    SHAPES,
    _loaded,
    assert_same,
    covered,
)

ROOT = Path(__file__).resolve().parent.parent
WINDOW = (parse_timestamp("2000-01-01T00:00:00Z"), parse_timestamp("2100-01-01T00:00:00Z"))


def _base() -> list[dict[str, Any]]:
    """A tuning job's trials (the trial labels) and a job whose worker moved (the VM label)
    and restarted: every field of the table has values that change a diagnosis."""
    trials = ROOT / "tests" / "fixtures" / "real_shapes" / "hp-tuning-trials.jsonl"
    entries: list[object] = [orjson.loads(line) for line in trials.read_bytes().splitlines()]
    entries += simulate("transient-sigsegv-retry", seed=7)
    return stored_entries(entries)


PATHS = {case.name: case for case in path_cases()}


@cache
def cases() -> dict[str, list[dict[str, Any]]]:
    """The entries of every case, by name (made once, when a test first asks)."""
    base = _base()
    return {
        **{name: apply_case(case, base) for name, case in PATHS.items()},
        **resource_cases(base),
    }


@cache
def corpus() -> tuple[list[dict[str, Any]], list[str]]:
    """:func:`tests.bq_tables.one_corpus` of every case."""
    return one_corpus(cases())


def _file_record(entry: dict[str, Any]) -> tuple[object, ...]:
    fields = entry_fields(entry)
    if isinstance(fields, str):
        return (entry.get("insertId"), fields)
    time = parse_timestamp(fields.time) if fields.time is not None else None
    return (
        fields.insert_id,
        fields.severity,
        time,
        fields.job_id,
        fields.trial,
        fields.task,
        fields.vm,
        fields.text,
    )


def _table_record(row: dict[str, Any]) -> tuple[object, ...]:
    if row["skip"] is not None:
        return (row["insert_id"], row["skip"] + (row["other_resource"] or ""))
    time: datetime = row["time"]
    return (
        row["insert_id"],
        "DEFAULT"
        if row["severity"] is None
        else row["severity"],  # as analyzer.engines.bigquery.run
        time,
        row["job"],
        row["trial"],
        row["task"],
        row["vm"],
        row["text"],
    )


def _carried(case: PathCase, entries: list[dict[str, Any]]) -> int:
    """How many entries carry a non-empty value at the case's first path."""
    found = 0
    for entry in entries:
        value: Any = entry
        for key in case.paths[0]:
            value = value.get(key) if isinstance(value, dict) else None
        found += isinstance(value, str) and value != ""
    return found


def test_a_case_per_path_and_per_neighbour_pair() -> None:
    names = set(PATHS)
    assert "trial: labels.trial_id over labels.ml.googleapis.com/trial_id" in names
    assert "text: jsonPayload.message over textPayload" in names
    assert "task: labels.ml.googleapis.com/task_name over jsonPayload.attrs.tag (empty)" in names
    assert "time: timestamp over receiveTimestamp" in names
    # Every case carries its value where it says: the stored entries (what a sink keeps)
    # keep every path of the table.
    for name, case in PATHS.items():
        assert _carried(case, cases()[name]) > len(_base()) // 2, name


def differences(found: Counter[tuple[object, ...]], entries: list[dict[str, Any]]) -> list[str]:
    """The cases whose rows are not the file reader's records (the table's, the file's)."""
    expected = Counter(map(_file_record, entries))
    names = corpus()[1]
    wrong = {case_of(row[0], names) for row in (found - expected) + (expected - found)}
    return sorted(wrong)


def test_table_rows_are_the_file_readers_records() -> None:
    entries = corpus()[0]
    engine = DuckDBEngine(_loaded(entries))
    for shape in SHAPES:
        ref = TableRef.parse(f"{PROJECT}.{DATASET}.{shape}")
        info = engine.describe(ref)
        adapter = adapter_for(ref, info)
        rows = engine.rows(entries_query(ref, adapter, info), parameters(*WINDOW, ()), None)
        found = Counter(_table_record(dict(row)) for row in rows)
        wrong = differences(found, covered(shape, entries))
        assert not wrong, f"{shape} reads these cases unlike a file: " + "; ".join(wrong)


def test_diagnoses_equal_the_file(tmp_path: Path) -> None:
    assert_same(list(corpus()[0]), tmp_path)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_queries_read_the_tables_paths_and_no_other_column(shape: str) -> None:
    """What is billed: the columns of the table's paths (the time at its first path only,
    the one the window bounds), never another of the table's columns."""
    entries = corpus()[0]
    engine = DuckDBEngine(_loaded(entries))
    ref = TableRef.parse(f"{PROJECT}.{DATASET}.{shape}")
    info = engine.describe(ref)
    read = {path for _, path in adapter_for(ref, info).reads}
    paths = [path for path in TABLE_PATHS if path not in TIME_PATHS[1:]]
    if ref.wildcard:
        assert read == {sink_column(path) for path in paths} | {"_TABLE_SUFFIX"}
    else:
        assert read == {log_analytics_place(path)[0] for path in paths}
    assert len(info.paths) > len(read)  # other columns were there to be read
