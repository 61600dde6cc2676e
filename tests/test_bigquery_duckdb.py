"""Diagnosing from tables equals diagnosing from the file, whole: every corpus the tests have
(samples, simulator scenarios, damaged and Hypothesis texts), loaded into DuckDB tables shaped
like per-job sink tables (wildcard, date-sharded) and like a Log Analytics view, read by the
transpiled queries; compared with ``diagnose`` on the same entries as JSONL."""

from __future__ import annotations

import io
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

duckdb = pytest.importorskip("duckdb", reason="the bigquery extra is not installed")

from analyzer.api import analyze_sources  # noqa: E402
from analyzer.bigquery import DuckDBEngine, analyze_bigquery, bigquery_source  # noqa: E402
from analyzer.ingest import open_sources  # noqa: E402
from analyzer.ingest.entries import load_json  # noqa: E402
from analyzer.rulebook import RuleBook  # noqa: E402
from analyzer.simulate import SCENARIOS, simulate, write  # noqa: E402
from tests.bq_tables import load_duckdb, stored_entries  # noqa: E402

SAMPLES = sorted(Path(__file__).resolve().parent.parent.joinpath("sample_logs").glob("*.jsonl"))
PROJECT, DATASET = "test-project", "logs"
SHAPES = ("ml_googleapis_com_*", "_AllLogs")
BOOK = RuleBook.load()


def _without_places(document: dict[str, Any], evidence_of: Any) -> dict[str, Any]:
    """The analysis with each evidence replaced by the entry it cites (insertId, time) and
    the inputs without their names, so a file's and a table's documents compare whole."""
    for job in document["jobs"]:
        cause = job.get("cause")
        if cause:
            cause["evidence"] = [evidence_of(item) for item in cause["evidence"]]
    for stats in document["inputs"]:
        stats.pop("path")
        stats.pop("format")
    document["notices"] = [
        notice.split(": ", 1)[1] if notice.startswith(("bigquery:", "/")) else notice
        for notice in document["notices"]
        if not notice.startswith("window: ")
    ]
    return document


def _file_document(entries: list[dict[str, Any]], tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "entries.jsonl"
    path.write_bytes(b"".join(orjson.dumps(entry) + b"\n" for entry in entries))
    analysis = analyze_sources(open_sources([str(path)]), rules=BOOK)

    def cited(item: dict[str, Any]) -> tuple[object, ...]:
        entry = entries[item["line"] - 1]
        return (entry.get("insertId"), entry["timestamp"])

    return _without_places(analysis.to_dict(), cited)


def _table_document(entries: list[dict[str, Any]], shape: str, **options: Any) -> dict[str, Any]:
    connection = duckdb.connect()
    load_duckdb(connection, PROJECT, DATASET, entries)
    source = bigquery_source(
        f"{PROJECT}.{DATASET}.{shape}",
        start="2000-01-01T00:00:00Z",
        end="2100-01-01T00:00:00Z",
        **options,
    )
    analysis = analyze_bigquery(source, engine=DuckDBEngine(connection), rules=BOOK)
    assert analysis is not None
    assert analysis.notices[0].startswith("window: 2000-01-01T00:00:00Z .. 2100-01-01T00:00:00Z")

    def cited(item: dict[str, Any]) -> tuple[object, ...]:
        assert item["path"] == f"bigquery:{source.table}"
        assert item["table"]
        return (item["insert_id"], item["timestamp"])

    return _without_places(analysis.to_dict(), cited)


def assert_same(entries: list[dict[str, Any]], tmp_path: Path) -> None:
    stored = stored_entries(entries)
    expected = _file_document(stored, tmp_path)
    for shape in SHAPES:
        assert _table_document(stored, shape) == expected, shape


def _lines(path: Path) -> Iterator[object]:
    for line in path.read_bytes().splitlines():
        if line.strip():
            try:
                yield load_json(line)
            except ValueError:
                continue


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_samples(sample: Path, tmp_path: Path) -> None:
    assert_same(list(_lines(sample)), tmp_path)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenarios(scenario: str, tmp_path: Path) -> None:
    seed = random.Random(scenario).randrange(1_000_000)
    out = io.StringIO()
    write(simulate(scenario, seed), "jsonl", out, seed=seed)
    assert_same([orjson.loads(line) for line in out.getvalue().splitlines()], tmp_path)
