"""``gcloud ai custom-jobs list`` as a table (tests/real/gh-arr-coc-0-1-custom-jobs-list-V):
one recorded state per job, no cause, and the run says a list shows states, not causes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.ingest import MemorySource
from analyzer.ingest.jobs_list import NOT_A_ROW
from tests.clirun import run

CUSTOM = (
    "$ gcloud ai custom-jobs list --region=us-central1 --limit=3"
    ' --format="table(name.basename(),displayName,state,createTime)"\n'
    "\n"
    "NAME                 DISPLAY_NAME             STATE                CREATE_TIME\n"
    "2161270372761075712  major-wind-1762750552    JOB_STATE_FAILED     2025-11-10T04:58:03Z\n"
    "2339162558042210304  derpy-fog-1762749655     JOB_STATE_SUCCEEDED  2025-11-10T04:47:52Z\n"
)
# Whole resource names, a display name with spaces, an empty cell.
_NAME = "projects/123/locations/us-central1/customJobs/"
NAMES = (
    f"{'NAME':<65}  DISPLAY_NAME  STATE\n"
    f"{_NAME}2557938983690567680  nightly run   JOB_STATE_RUNNING\n"
    f"{_NAME}2557938983690567681                JOB_STATE_CANCELLED\n"
)
# Legacy AI Platform: gcloud ai-platform jobs list.
LEGACY = """\
JOB_ID                           STATUS     CREATED
census_20240101_120000           FAILED     2024-01-01T12:00:05Z
census_20240101_110000           SUCCEEDED  2024-01-01T11:00:04Z
census_20240101_100000           PREPARING  2024-01-01T10:00:04Z
"""

CASES = {
    "custom format": (
        CUSTOM,
        {"2161270372761075712": "JOB_STATE_FAILED", "2339162558042210304": "JOB_STATE_SUCCEEDED"},
    ),
    "resource names": (
        NAMES,
        {
            "2557938983690567680": "JOB_STATE_RUNNING",
            "2557938983690567681": "JOB_STATE_CANCELLED",
        },
    ),
    "legacy": (
        LEGACY,
        {
            "census_20240101_120000": "JOB_STATE_FAILED",
            "census_20240101_110000": "JOB_STATE_SUCCEEDED",
            "census_20240101_100000": "JOB_STATE_PENDING",
        },
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_row_is_its_jobs_recorded_state(name: str, tmp_path: Path) -> None:
    text, states = CASES[name]
    source = MemorySource(text, "jobs.txt")
    assert source.stats.format == "gcloud-jobs-list"
    rows = [r for r in source.records() if r.job_id is not None]
    assert {r.job_id: r.text for r in rows} == {job: f"state: {s}" for job, s in states.items()}
    assert all(r.timestamp is None for r in rows)  # a row says not when the state was reached
    stats = source.stats
    assert stats.lines == stats.used + stats.skipped == text.count("\n")
    path = tmp_path / "jobs.txt"
    path.write_text(text)
    found = {d.job_id: d for d in analyze([str(path)]).diagnoses}
    assert {job: d.state.value for job, d in found.items()} == states
    # A list shows no cause (a cancelled job's is its cancellation, as a describe's is).
    assert all(d.cause is None or d.cause.category.value == "cancelled" for d in found.values())


def test_the_run_says_a_list_shows_states_not_causes(tmp_path: Path) -> None:
    path = tmp_path / "jobs.txt"
    path.write_text(CUSTOM)
    code, out, _ = run("diagnose", str(path))
    assert code == 0
    assert "a list of jobs shows each job's state, not its cause" in " ".join(out.split())
    code, out, _ = run("diagnose", str(path), "--format", "json")
    assert json.loads(out)["inputs"][0]["format"] == "gcloud-jobs-list"


def test_a_stray_line_is_skipped_with_its_reason() -> None:
    source = MemorySource(CUSTOM + "Listed 2 items.\n", "jobs.txt")
    list(source.records())
    assert source.stats.skip_reasons[NOT_A_ROW] == 1


@pytest.mark.parametrize(
    "text",
    [
        # A header-like line over text that holds no job state; a log's own columns.
        "NAME   STATE\nfoo    bar\nbaz    qux\n",
        "INFO 2024-03-01T10:00:00Z [resource.labels.taskName: workerpool0-0] Job failed.\n",
        "The replica workerpool0-0 exited with a non-zero status of 1.\n",
    ],
)
def test_other_texts_are_no_jobs_list(text: str) -> None:
    assert MemorySource(text, "x.txt").stats.format != "gcloud-jobs-list"
