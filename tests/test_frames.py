"""The pandas API: read_logs, diagnose_frame, the df.jobdoctor accessor, over sample_logs/."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from analyzer.api import diagnose
from analyzer.core.errors import InputError
from analyzer.frames import RECORD_COLUMNS, diagnose_frame, jobs_frame, read_logs
from analyzer.ingest import read_records
from analyzer.pipeline.analysis import DiagnosisList
from analyzer.report.fleet import JOB_COLUMNS
from analyzer.simulate import simulate, write

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
# The verdict each sample implies (written by the simulator that made the sample).
EXPECTED = json.loads(
    (Path(__file__).resolve().parent / "golden" / "expected.json").read_text(encoding="utf-8")
)


def _none(value: object) -> object:
    return None if value is None or (not isinstance(value, str) and pd.isna(value)) else value


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_diagnose_frame_matches_the_samples_expected_verdicts(name: str) -> None:
    frame = diagnose_frame(SAMPLES / name)
    assert list(frame.columns) == list(JOB_COLUMNS)
    # The frame counts what the logs show, and the predicted rest beside it (issue 33).
    got = sorted(
        (
            str(_none(r.job_id)),
            r.state,
            r.observed_final,
            r.attempts + r.attempts_predicted,
            r.retries + r.retries_predicted,
            _none(r.category),
        )
        for r in frame.itertuples()
    )
    want = sorted(
        (
            str(j["job_id"]),
            j["state"],
            j["observed_final"],
            j["attempts"],
            j["retries"],
            j["category"],
        )
        for j in EXPECTED[name]
    )
    assert got == want


def test_diagnose_frame_types_and_figures_agree_with_diagnose() -> None:
    frame = diagnose_frame(SAMPLES / "worker-restarts-exhausted.jsonl")
    (diagnosis,) = diagnose(SAMPLES / "worker-restarts-exhausted.jsonl")
    row = frame.iloc[0]
    assert str(frame["first_seen"].dtype).startswith("datetime64") and "UTC" in str(
        frame["first_seen"].dtype
    )
    assert str(frame["duration"].dtype).startswith("timedelta64")
    assert str(frame["lost_work"].dtype).startswith("timedelta64")
    assert frame["exit_code"].dtype == "Int64"
    assert row["job_id"] == diagnosis.job_id
    assert row["restarts"] == sum(diagnosis.worker_restarts.values()) == 5
    assert row["duration"] == diagnosis.duration
    assert row["first_seen"] == diagnosis.first_seen
    assert row["category"] == "worker_restarts_exhausted"
    # The failed first attempt is lost, the succeeded second is not.
    first, _second = diagnosis.attempt_log
    assert first.start is not None and first.end is not None
    assert timedelta() < row["lost_work"] <= first.end - first.start


def test_a_job_that_succeeded_first_time_lost_nothing() -> None:
    frame = diagnose_frame(SAMPLES / "success.jsonl")
    assert frame["lost_work"].tolist() == [timedelta()]
    assert pd.isna(frame["category"].iloc[0]) and pd.isna(frame["exit_code"].iloc[0])


def test_diagnose_frame_takes_directories_globs_and_many_paths(tmp_path: Path) -> None:
    for scenario in ("success", "oom", "stockout-exhausted"):
        with open(tmp_path / f"{scenario}.jsonl", "w", encoding="utf-8") as out:
            write(simulate(scenario, seed=7), "jsonl", out)
    by_dir = diagnose_frame(tmp_path)
    by_glob = diagnose_frame(str(tmp_path / "*.jsonl"))
    by_files = diagnose_frame(*sorted(tmp_path.glob("*.jsonl")))
    assert len(by_dir) == 3
    pd.testing.assert_frame_equal(by_dir, by_glob)
    pd.testing.assert_frame_equal(by_dir, by_files)
    assert sorted(by_dir["state"]) == [
        "JOB_STATE_FAILED",
        "JOB_STATE_FAILED",
        "JOB_STATE_SUCCEEDED",
    ]


def test_diagnose_frame_of_no_job_is_empty_with_the_columns(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n", encoding="utf-8")
    frame = diagnose_frame(tmp_path / "empty.jsonl")
    assert frame.empty and list(frame.columns) == list(JOB_COLUMNS)


def test_read_logs_has_one_row_per_record_citing_its_line() -> None:
    path = SAMPLES / "success.jsonl"
    frame = read_logs(path)
    assert list(frame.columns) == list(RECORD_COLUMNS)
    assert len(frame) == sum(1 for _ in read_records([str(path)]))
    assert "UTC" in str(frame["timestamp"].dtype)
    lines = path.read_text(encoding="utf-8").splitlines()
    for row in frame.sample(20, random_state=1).itertuples():
        entry = json.loads(lines[row.line - 1])
        payload = entry.get("jsonPayload") or {}
        assert row.text == payload.get("message", entry.get("textPayload"))
        assert row.path == str(path)


def test_read_logs_of_many_inputs_concatenates_them() -> None:
    one = read_logs(SAMPLES / "success.jsonl")
    two = read_logs(SAMPLES / "oom.stream-logs.txt")
    both = read_logs(SAMPLES / "success.jsonl", SAMPLES / "oom.stream-logs.txt")
    assert len(both) == len(one) + len(two)
    assert set(both["path"]) == {
        str(SAMPLES / "success.jsonl"),
        str(SAMPLES / "oom.stream-logs.txt"),
    }


def test_read_logs_of_a_missing_file_raises_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        read_logs(tmp_path / "nope.jsonl")


def test_accessor_over_read_logs_gives_the_same_jobs_as_diagnose_frame() -> None:
    records = read_logs(SAMPLES)
    pd.testing.assert_frame_equal(records.jobdoctor.diagnose(), diagnose_frame(SAMPLES))


def test_accessor_over_a_compact_json_array_gives_the_jobs_of_its_lines(tmp_path: Path) -> None:
    # Every record of a compact array is on line 1: the rows are still distinct records.
    sample = SAMPLES / "user-code-exit1.jsonl"
    array = tmp_path / "compact.json"
    array.write_bytes(b"[" + b",".join(sample.read_bytes().splitlines()) + b"]")
    records = read_logs(array)
    assert set(records["line"]) == {1}
    jobs = records.jobdoctor.diagnose()
    assert jobs["path"].tolist() == [str(array)]
    pd.testing.assert_frame_equal(
        jobs.drop(columns="path"), diagnose_frame(sample).drop(columns="path")
    )


def _bigquery_like() -> pd.DataFrame:
    """A frame as a BigQuery sink table gives it after renaming: no path, no line."""
    rows = []
    for entry in simulate("stockout-exhausted", seed=2):
        payload = entry.get("jsonPayload") or {}
        rows.append(
            {
                "timestamp": entry["timestamp"],  # RFC 3339 strings with nanoseconds
                "job_id": int(entry["resource"]["labels"]["job_id"]),  # numeric, as BigQuery has it
                "task": entry["resource"]["labels"].get("task_name"),
                "severity": entry.get("severity"),
                "text": payload.get("message", entry.get("textPayload")),
            }
        )
    return pd.DataFrame(rows)


def test_accessor_works_on_a_frame_from_elsewhere() -> None:
    frame = _bigquery_like()
    jobs = frame.jobdoctor.diagnose()
    assert len(jobs) == 1
    row = jobs.iloc[0]
    assert row["job_id"] == str(frame["job_id"].iloc[0])
    assert (row["state"], row["attempts"], row["category"]) == ("JOB_STATE_FAILED", 4, "stockout")
    diagnoses = frame.jobdoctor.diagnoses()
    assert isinstance(diagnoses, DiagnosisList)
    # Evidence cites the frame and the row, for want of a file.
    cause = diagnoses[0].cause
    assert cause is not None and cause.evidence[0].path == "<dataframe>"
    assert frame["text"].iloc[cause.evidence[0].line - 1] == cause.message or (
        cause.message in frame["text"].iloc[cause.evidence[0].line - 1]
    )


def test_accessor_classify_lists_rule_matches() -> None:
    matches = _bigquery_like().jobdoctor.classify()
    errors = matches[matches["kind"] == "error"]
    assert len(errors) == 4
    assert set(errors["category"]) == {"stockout"}
    assert set(errors["region"]) == {"us-central1"}
    assert {"attempt_started", "job_failed"} <= set(matches["kind"])


def test_accessor_skips_rows_without_text_and_counts_them() -> None:
    frame = _bigquery_like()
    frame.loc[0, "text"] = None
    (source,) = frame.jobdoctor.sources()
    records = list(source.records())
    assert len(records) == len(frame) - 1
    assert source.stats.skip_reasons == {"no text": 1}
    assert source.stats.lines == source.stats.used + source.stats.skipped


def test_accessor_names_missing_columns() -> None:
    frame = pd.DataFrame({"timestamp": [], "message": []})
    with pytest.raises(InputError, match="job_id, task, severity, text"):
        frame.jobdoctor.diagnose()


def test_accessor_rejects_unreadable_times() -> None:
    frame = _bigquery_like().head(3)
    frame["timestamp"] = "yesterday"
    with pytest.raises(InputError, match="timestamp"):
        frame.jobdoctor.diagnose()


def test_diagnosis_list_to_frame_is_the_job_frame() -> None:
    diagnoses = DiagnosisList(diagnose(SAMPLES / "oom.stream-logs.txt"))
    pd.testing.assert_frame_equal(diagnoses.to_frame(), jobs_frame(diagnoses))


def test_pandas_is_not_imported_by_the_package_the_cli_or_the_reports() -> None:
    code = (
        "import sys, analyzer, analyzer.api, analyzer.report.chart, analyzer.report.html, "
        "analyzer.report.fleet, analyzer.cli.report_command\n"
        "import analyzer.cli.app\n"
        "assert 'pandas' not in sys.modules, 'pandas imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
