"""The real google-cloud-bigquery client against bqemulator on loopback: ``jobdoctor diagnose
--bigquery`` over a simulated project sink loaded into date-sharded per-job tables gives the
JSON ``diagnose`` gives on the same entries as a file; ``report`` and ``sql`` (golden files,
``JOBDOCTOR_UPDATE_GOLDEN=1`` to rewrite them) and the one-line errors.

The emulator runs every query through sqlglot into DuckDB: this checks the client path (REST,
named parameters, wildcard tables, paging), not BigQuery's own semantics; its dry run says 0
bytes (the cost guard's arithmetic is tested in test_bigquery_sql.py, against a server that
answers with sizes).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

pytest.importorskip("bqemulator", reason="bqemulator (test extra) is not installed")
pytest.importorskip("google.cloud.bigquery", reason="the bigquery extra is not installed")

from analyzer.cli.app import app
from analyzer.simulate import fleet, simulate
from tests.bq_tables import load_emulator, load_emulator_log_analytics, stored_entries
from tests.bqemulator_server import running_emulator
from tests.test_bigquery_duckdb import _file_document, _without_places
from tests.test_bigquery_paths import (
    WINDOW as PATHS_WINDOW,
)
from tests.test_bigquery_paths import (
    _table_record,
    corpus,
    covered,
    differences,
)

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "sql"
PROJECT, DATASET = "jd-test", "sink"
PATHS, PATHS_VIEW = "paths", "paths_link"
WINDOW = ("--start", "2024-01-01T00:00:00Z", "--end", "2025-01-01T00:00:00Z")
runner = CliRunner()


def _corpus() -> list[dict[str, Any]]:
    entries = [orjson.loads(line) for line in fleet(600_000, seed=21)]
    entries += list(simulate("project-wide", seed=4))
    return stored_entries(entries)


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import bigquery

    entries = _corpus()
    with running_emulator() as url:
        client = bigquery.Client(
            project=PROJECT,
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]
            client_options=ClientOptions(api_endpoint=url),
        )
        tables = load_emulator(client, PROJECT, DATASET, entries)
        load_emulator_log_analytics(client, PROJECT, "link", entries)
        path = tmp_path_factory.mktemp("sink") / "entries.jsonl"
        path.write_bytes(b"".join(orjson.dumps(entry) + b"\n" for entry in entries))
        # Every path of the mapping table (tests/test_bigquery_paths.py): its tables have a
        # column for each, so the golden SQL shows every path read.
        path_tables = load_emulator(client, PROJECT, PATHS, corpus()[0])
        load_emulator_log_analytics(client, PROJECT, PATHS_VIEW, corpus()[0])
        yield {
            "url": url,
            "entries": entries,
            "tables": tables,
            "file": path,
            "path_tables": path_tables,
        }


def run(emulator: dict[str, Any], *args: str) -> tuple[int, str, str]:
    previous = os.environ.get("JOBDOCTOR_BIGQUERY_ENDPOINT")
    os.environ["JOBDOCTOR_BIGQUERY_ENDPOINT"] = emulator["url"]
    try:
        result = runner.invoke(app, list(args))
    finally:
        if previous is None:
            os.environ.pop("JOBDOCTOR_BIGQUERY_ENDPOINT")
        else:
            os.environ["JOBDOCTOR_BIGQUERY_ENDPOINT"] = previous
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, result.stdout, result.stderr


def _file_json(emulator: dict[str, Any], *args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["diagnose", "--format", "json", str(emulator["file"]), *args])
    assert result.exit_code == 0, result.stderr
    entries = emulator["entries"]

    def cited(item: dict[str, Any]) -> tuple[object, ...]:
        entry = entries[item["line"] - 1]
        return (entry.get("insertId"), entry["timestamp"])

    return _without_places(json.loads(result.stdout), cited)


def _table_json(out: str) -> dict[str, Any]:
    def cited(item: dict[str, Any]) -> tuple[object, ...]:
        assert item["table"].startswith("ml_googleapis_com_")
        return (item["insert_id"], item["timestamp"])

    document = json.loads(out)
    # report --format json adds the fleet summary to the diagnosis document (its rows name
    # the table, not the file): the diagnoses are what is compared.
    document.pop("fleet", None)
    return _without_places(document, cited)


def test_the_sink_is_date_sharded_per_job(emulator: dict[str, Any]) -> None:
    tables = emulator["tables"]
    jobs = {name.rsplit("_", 1)[0] for name in tables}
    assert len(jobs) >= 5 and len(tables) > len(jobs)  # several jobs, some over several days


def test_diagnose_equals_the_file(emulator: dict[str, Any]) -> None:
    table = f"{PROJECT}.{DATASET}.ml_googleapis_com_*"
    code, out, err = run(emulator, "diagnose", "--bigquery", table, *WINDOW, "--format", "json")
    assert code == 0, err
    assert "window: 2024-01-01T00:00:00Z .. 2025-01-01T00:00:00Z (366d)" in err
    assert "dry run: the 2 queries will scan" in err
    document = json.loads(out)
    assert document["notices"][0].startswith("window: ")
    assert document["inputs"][0]["format"] == "bigquery-sink"
    assert len(document["jobs"]) >= 5
    assert _table_json(out) == _file_json(emulator)


def test_log_analytics_view_equals_the_file(emulator: dict[str, Any]) -> None:
    table = f"{PROJECT}.link._AllLogs"
    code, out, err = run(emulator, "diagnose", "--bigquery", table, *WINDOW, "--format", "json")
    assert code == 0, err
    document = json.loads(out)
    assert document["inputs"][0]["format"] == "bigquery-log-analytics"

    def cited(item: dict[str, Any]) -> tuple[object, ...]:
        assert item["table"] == "_AllLogs"
        return (item["insert_id"], item["timestamp"])

    # Every entry of the corpus is an ml_job entry: the view holds all of them for jobdoctor.
    assert _without_places(document, cited) == _file_json(emulator)


def test_only_the_jobs_asked_for(emulator: dict[str, Any]) -> None:
    table = f"{PROJECT}.{DATASET}.ml_googleapis_com_*"
    job = json.loads(run(emulator, "diagnose", "--bigquery", table, *WINDOW, "-f", "json")[1])[
        "jobs"
    ][2]["job_id"]
    code, out, err = run(
        emulator, "diagnose", "--bigquery", table, *WINDOW, "--job-id", job, "-f", "json"
    )
    assert code == 0, err
    found = _table_json(out)
    assert [j["job_id"] for j in found["jobs"]] == [job]
    assert found["jobs"] == _file_json(emulator, "--job", job)["jobs"]


def test_text_report_cites_table_insert_id_and_time(emulator: dict[str, Any]) -> None:
    table = f"{PROJECT}.{DATASET}.ml_googleapis_com_*"
    code, out, err = run(emulator, "diagnose", "--bigquery", table, *WINDOW)
    assert code == 0, err
    assert "insertId=" in out and "ml_googleapis_com_" in out


def test_a_window_without_the_entries_finds_no_job(emulator: dict[str, Any]) -> None:
    table = f"{PROJECT}.{DATASET}.ml_googleapis_com_*"
    window = ("--start", "2020-01-01T00:00:00Z", "--end", "2020-02-01T00:00:00Z")
    code, out, err = run(emulator, "diagnose", "--bigquery", table, *window, "-f", "json")
    assert code == 0, err
    assert json.loads(out)["jobs"] == []


def test_dry_run_stops_after_the_estimate(emulator: dict[str, Any]) -> None:
    table = f"{PROJECT}.{DATASET}.ml_googleapis_com_*"
    code, out, err = run(emulator, "diagnose", "--bigquery", table, "--since", "30d", "--dry-run")
    assert code == 0 and out == ""
    assert "window: " in err and "dry run: the 2 queries will scan 0 B" in err


@pytest.mark.parametrize("fmt", ["html", "markdown", "csv", "json"])
def test_report_from_the_sink(emulator: dict[str, Any], fmt: str, tmp_path: Path) -> None:
    table = f"{PROJECT}.{DATASET}.ml_googleapis_com_*"
    out_file = tmp_path / f"report.{fmt}"
    code, _, err = run(
        emulator, "report", "--bigquery", table, *WINDOW, "-f", fmt, "-o", str(out_file)
    )
    assert code == 0, err
    ours = out_file.read_text()
    theirs = tmp_path / f"file.{fmt}"
    result = runner.invoke(app, ["report", str(emulator["file"]), "-f", fmt, "-o", str(theirs)])
    assert result.exit_code == 0
    assert len(ours) > 500
    if fmt == "html":  # each job's card cites its evidence by table, insertId and time
        assert re.search(r"ml_googleapis_com_\d+_\d{8} insertId=\S+ 2024-", ours)
    if fmt == "csv":  # one row per job: the same bytes but for the column naming the source
        assert _without_path_column(ours) == _without_path_column(theirs.read_text())
    if fmt == "json":
        assert _table_json(ours) == _file_json(emulator)


def _without_path_column(text: str) -> list[list[str]]:
    rows = list(csv.reader(io.StringIO(text)))
    where = rows[0].index("path")
    return [row[:where] + row[where + 1 :] for row in rows]


def test_missing_table_is_one_line(emulator: dict[str, Any]) -> None:
    code, out, err = run(
        emulator, "diagnose", "--bigquery", f"{PROJECT}.{DATASET}.nosuch", "--since", "7d"
    )
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert lines[-1].startswith("jobdoctor: ") and "not found" in lines[-1]
    assert "Traceback" not in err


def test_no_table_under_the_wildcard(emulator: dict[str, Any]) -> None:
    code, _, err = run(
        emulator, "diagnose", "--bigquery", f"{PROJECT}.{DATASET}.other_*", "--since", "7d"
    )
    assert code == 2 and "no table in jd-test.sink matches other_*" in err


def test_a_window_is_required(emulator: dict[str, Any]) -> None:
    code, _, err = run(emulator, "diagnose", "--bigquery", f"{PROJECT}.{DATASET}.x_*")
    assert code == 2 and "explicit window" in err


GOLDENS = [
    ("wildcard.bigquery.sql", ("ml_googleapis_com_*",), ()),
    ("wildcard.duckdb.sql", ("ml_googleapis_com_*",), ("--dialect", "duckdb")),
    (
        "wildcard-jobs.bigquery.sql",
        ("ml_googleapis_com_*",),
        ("--job-id", "123", "--job-id", "456"),
    ),
    ("table.bigquery.sql", (None,), ()),
]


@pytest.mark.parametrize(("name", "table", "extra"), GOLDENS, ids=[g[0] for g in GOLDENS])
def test_sql_golden(
    emulator: dict[str, Any], name: str, table: tuple[str | None], extra: tuple[str, ...]
) -> None:
    chosen = table[0] or sorted(emulator["path_tables"])[0]
    code, out, err = run(
        emulator, "sql", "--bigquery", f"{PROJECT}.{PATHS}.{chosen}", *WINDOW, *extra
    )
    assert code == 0, err
    if table[0] is None:  # the table's name holds a random job id: keep the golden stable
        out = out.replace(chosen, "ml_googleapis_com_JOB_20240101")
    path = GOLDEN / name
    if os.environ.get("JOBDOCTOR_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(out)
    # The queries hold every rule's literal and RE2 form: a rule change changes them too.
    assert out == path.read_text(), (
        "the queries changed: review, then JOBDOCTOR_UPDATE_GOLDEN=1 pytest -k sql_golden"
        " tests/test_bigquery_emulator.py tests/test_bigquery_duckdb.py"
    )


def test_a_fleet_frame_straight_from_bigquery(
    emulator: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pandas.testing import assert_frame_equal

    from analyzer import diagnose_frame
    from analyzer.engines.bigquery import bigquery_source

    monkeypatch.setenv("JOBDOCTOR_BIGQUERY_ENDPOINT", emulator["url"])
    table = f"{PROJECT}.{DATASET}.ml_googleapis_com_*"
    frame = diagnose_frame(bigquery=table, start=WINDOW[1], end=WINDOW[3])
    assert len(frame) >= 5
    # Each row names where its job was read: the table here, the file there.
    assert frame["path"].str.startswith(f"bigquery:{table}").all()
    assert_frame_equal(
        frame.drop(columns="path"), diagnose_frame(emulator["file"]).drop(columns="path")
    )
    source = bigquery_source(table, start=WINDOW[1], end=WINDOW[3])
    assert_frame_equal(diagnose_frame(source), frame)


@pytest.mark.parametrize("shape", [f"{PATHS}.ml_googleapis_com_*", f"{PATHS_VIEW}._AllLogs"])
def test_every_path_reads_as_a_file_reads_it(emulator: dict[str, Any], shape: str) -> None:
    from analyzer.engines.bigquery.engines import BigQueryEngine
    from analyzer.engines.bigquery.queries import entries_query, parameters
    from analyzer.engines.bigquery.tables import TableRef, adapter_for

    engine = BigQueryEngine(PROJECT, emulator["url"])
    ref = TableRef.parse(f"{PROJECT}.{shape}")
    info = engine.describe(ref)
    adapter = adapter_for(ref, info)
    rows = engine.rows(entries_query(ref, adapter, info), parameters(*PATHS_WINDOW, ()), None)
    found = Counter(_table_record(dict(row)) for row in rows)
    wrong = differences(found, covered(ref.table, corpus()[0]))
    assert not wrong, f"{shape} reads these cases unlike a file: " + "; ".join(wrong)


@pytest.mark.parametrize("shape", [f"{PATHS}.ml_googleapis_com_*", f"{PATHS_VIEW}._AllLogs"])
def test_every_path_diagnoses_as_the_file(
    emulator: dict[str, Any], shape: str, tmp_path: Path
) -> None:
    table = f"{PROJECT}.{shape}"
    code, out, err = run(emulator, "diagnose", "--bigquery", table, *WINDOW, "--format", "json")
    assert code == 0, err
    found = _without_places(json.loads(out), lambda i: (i["insert_id"], i["timestamp"]))
    assert found == _file_document(covered(shape.split(".")[1], corpus()[0]), tmp_path)
