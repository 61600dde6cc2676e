"""Honest costs in the fleet report: time lost as its definition says, for every kind of
cause; machine- and accelerator-hours; the causes table's category totals; report's JSON,
what it says it wrote, and HTML refused on a terminal."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analyzer.api import analyze_sources
from analyzer.cli.app import app
from analyzer.cli.report_command import report_command
from analyzer.core.errors import InputError
from analyzer.ingest import open_sources
from analyzer.report.fleet import FLEET_SCHEMA, FleetSummary, job_summary, summarize
from analyzer.report.html import render_html
from analyzer.rulebook import RuleBook
from analyzer.verdict.diagnosis import Diagnosis
from analyzer.verdict.jobspec import JobSpec, parse_job_spec

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
runner = CliRunner()


def between(*pairs: tuple[str, str]) -> float:
    """Seconds from each start to its end (times as the logs print them), summed."""
    parse = datetime.fromisoformat
    return sum((parse(b) - parse(a)).total_seconds() for a, b in pairs)


# Each attempt runs from its first service line ("Waiting for job to be provisioned.") to its
# last ("Job failed.", or the last line of a worker), read off the files by hand.
STOCKOUT_ATTEMPTS = between(
    ("2024-03-14T15:46:55.580822", "2024-03-14T15:50:28.131685"),
    ("2024-03-14T15:51:26.732243", "2024-03-14T15:58:29.209506"),
    ("2024-03-14T16:00:02.075980", "2024-03-14T16:07:41.543871"),
    ("2024-03-14T16:09:21.264800", "2024-03-14T16:11:42.475485"),
)

QUOTA = """\
INFO\t2024-05-01 10:00:00 +0000\tservice\tWaiting for job to be provisioned.
ERROR\t2024-05-01 10:00:40 +0000\tservice\tThe following quota metrics exceed quota limits: \
aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus
INFO\t2024-05-01 10:00:42 +0000\tservice\tJob failed.
"""
CANCELLED = """\
INFO\t2024-05-02 09:00:00 +0000\tservice\tWaiting for job to be provisioned.
INFO\t2024-05-02 09:03:00 +0000\tservice\tJob is running.
INFO\t2024-05-02 09:03:05 +0000\tworkerpool0-0\tRunning command: python -m trainer.task
INFO\t2024-05-02 09:20:05 +0000\tworkerpool0-0\tepoch 3 loss 0.41
INFO\t2024-05-02 09:21:00 +0000\tservice\tJob was cancelled.
"""
# No built-in rule writes job_cancelled yet: a user rule says what a cancellation looks like.
CANCEL_RULE = """\
- id: test.job-cancelled
  event: job_cancelled
  whole: true
  templates:
    en: "Job was cancelled."
  examples:
    match:
      - text: "Job was cancelled."
        fields: {}
"""


def diagnoses_of(path: Path, rules: tuple[Path, ...] = ()) -> list[Diagnosis]:
    analysis = analyze_sources(open_sources([str(path)]), rules=RuleBook.load(rules))
    return list(analysis.diagnoses)


@pytest.mark.parametrize(
    ("kind", "sample", "lost"),
    [
        # Every attempt failed: all of their time, a stockout's wait for capacity included
        # (the report said 0 s for this job).
        ("stockout", "stockout-exhausted.jsonl", STOCKOUT_ATTEMPTS),
        # Three failed attempts of 56 minutes in all (the report said 22).
        ("internal_error", "internal-error-exhausted.logs-explorer.txt", 3353.261),
        ("user_code_exception", "user-code-exit1.jsonl", 790.823617),
        ("oom", "oom.stream-logs.txt", between(("2024-05-08T16:47:59", "2024-05-08T17:06:03"))),
        # Attempt 1 failed after its restarts; attempt 2 succeeded without one.
        ("worker_restarts_exhausted", "worker-restarts-exhausted.jsonl", 1663.180479),
        # A transient crash, retried: the first attempt's time is lost, the second is not.
        ("transient retry", "transient-sigsegv-retry.jsonl", 1889.197349),
        ("success", "success.jsonl", 0.0),
        ("running", "still-running.jsonl", 0.0),
    ],
)
def test_time_lost_per_cause_kind(kind: str, sample: str, lost: float) -> None:
    (diagnosis,) = diagnoses_of(SAMPLES / sample)
    assert job_summary(diagnosis).time_lost.total_seconds() == pytest.approx(lost, abs=0.002)


def test_a_success_with_restarts_loses_only_the_work_redone() -> None:
    # Moved twice by maintenance, then succeeded: not the attempt's hours, only the work
    # redone after each restart since its last checkpoint (analyzer.verdict.work's figure).
    (diagnosis,) = diagnoses_of(SAMPLES / "vm-maintenance-restart.json")
    (attempt,) = diagnosis.attempt_log
    assert attempt.outcome == "succeeded" and attempt.lost_work is not None
    assert attempt.start is not None and attempt.end is not None
    lost = job_summary(diagnosis).time_lost
    assert lost == attempt.lost_work
    assert timedelta(minutes=5) < lost < (attempt.end - attempt.start) / 4


def test_time_lost_of_a_quota_refusal(tmp_path: Path) -> None:
    path = tmp_path / "quota.stream-logs.txt"
    path.write_text(QUOTA)
    (diagnosis,) = diagnoses_of(path)
    row = job_summary(diagnosis)
    assert (row.category, row.time_lost) == ("quota", timedelta(seconds=42))


def test_a_job_refused_at_creation_lost_nothing() -> None:
    refusal = ROOT / "tests" / "fixtures" / "evidence" / "refused-at-creation.txt"
    (diagnosis,) = diagnoses_of(refusal)
    row = job_summary(diagnosis)
    assert (diagnosis.attempts, row.category) == (0, "quota")
    assert (row.time_lost, row.machine_hours) == (timedelta(), 0)


def test_time_lost_of_a_cancelled_job(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "cancel.yaml").write_text(CANCEL_RULE)
    path = tmp_path / "cancelled.stream-logs.txt"
    path.write_text(CANCELLED)
    (diagnosis,) = diagnoses_of(path, (rules,))
    row = job_summary(diagnosis)
    assert (row.state, row.category) == ("JOB_STATE_CANCELLED", "cancelled")
    assert row.time_lost == timedelta(minutes=21)


def spec_for(job_id: str, count: int, replicas: int = 1) -> JobSpec:
    return parse_job_spec(
        {
            "name": f"projects/p/locations/us-central1/customJobs/{job_id}",
            "state": "JOB_STATE_FAILED",
            "jobSpec": {
                "workerPoolSpecs": [
                    {
                        "machineSpec": {
                            "machineType": "a2-highgpu-2g",
                            "acceleratorType": "NVIDIA_TESLA_A100",
                            "acceleratorCount": count,
                        },
                        "replicaCount": str(replicas),
                    }
                ]
            },
        }
    )


def test_machine_and_accelerator_hours() -> None:
    (diagnosis,) = diagnoses_of(SAMPLES / "user-code-exit1.jsonl")
    plain = job_summary(diagnosis)
    # One worker, from its first line to its last: about 9.5 minutes.
    assert plain.machine_hours == pytest.approx(0.1579, abs=0.001)
    assert plain.accelerator_hours is None  # no record: accelerators unknown
    with_two = job_summary(diagnosis, spec_for("1597253863006895240", 2))
    assert with_two.accelerator_hours == pytest.approx(2 * plain.machine_hours, abs=0.001)
    other = job_summary(diagnosis, spec_for("42", 2))
    assert other.accelerator_hours is None
    # Stockouts never got a machine.
    (stockout,) = diagnoses_of(SAMPLES / "stockout-exhausted.jsonl")
    assert job_summary(stockout).machine_hours == 0


@pytest.fixture(scope="module")
def fleet() -> FleetSummary:
    analysis = analyze_sources(open_sources([str(SAMPLES)]))
    return summarize(analysis.diagnoses, analysis.inputs)


def test_worst_jobs_are_led_by_failures(fleet: FleetSummary) -> None:
    worst = fleet.worst
    failed = [j.state == "JOB_STATE_FAILED" for j in worst]
    assert failed[0] and failed == sorted(failed, reverse=True)


def test_the_causes_table_shows_category_totals_above_their_details(fleet: FleetSummary) -> None:
    html = render_html(fleet)
    jobs = len(fleet.jobs)
    # The failed jobs of that cause: those that recovered from it have their own table.
    users = [j for j in fleet.jobs if j.category == "user_code_exception" and j.outcome == "failed"]
    share = round(100 * len(users) / jobs)
    total = re.search(
        r"<tr class='jd-total'><td>.*?user_code_exception</td><td>all</td>"
        r"<td class='num'>(\d+)</td><td>.*?</span>(\d+)%</td>",
        html,
    )
    assert total is not None
    assert (int(total[1]), int(total[2])) == (len(users), share)
    # Its details follow it, each with fewer jobs than the total.
    after = html[total.end() :].split("jd-total", 1)[0]
    details = [int(n) for n in re.findall(r"jd-detail'>.*?<td class='num'>(\d+)</td>", after)]
    assert len(details) > 1 and sum(details) == len(users)


def test_report_json_for_dashboards(tmp_path: Path) -> None:
    out = tmp_path / "fleet.json"
    result = runner.invoke(app, ["report", "--format", "json", "-o", str(out), str(SAMPLES)])
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    # The diagnosis document scripts read, with the fleet summary added beside its jobs.
    assert data["schema"] == "jobdoctor.diagnosis/1" and len(data["jobs"]) == 25
    fleet = data["fleet"]
    assert fleet["schema"] == FLEET_SCHEMA
    assert fleet["totals"]["jobs"] == len(fleet["jobs"]) == 25
    lost = sum(j["time_lost_s"] for j in fleet["jobs"])
    assert fleet["totals"]["time_lost_s"] == pytest.approx(lost, abs=0.01)
    assert {"trial", "path", "duration_s", "machine_hours"} <= set(fleet["jobs"][0])
    shares = {c["category"]: c["share"] for c in fleet["by_category"]}
    # 11 jobs failed of it; 2 more recovered from it (fleet["recovered"]).
    assert shares["user_code_exception"] == pytest.approx(11 / 25)
    recovered = {c["category"]: c["jobs"] for c in fleet["recovered"]}
    assert recovered == {"user_code_exception": 2, "worker_restarts_exhausted": 1}
    assert f"wrote the json report of 25 jobs to {out}" in result.stderr


def test_html_is_refused_on_a_terminal() -> None:
    with pytest.raises(InputError, match=r"--out report\.html"):
        report_command([str(SAMPLES / "success.jsonl")], "html", None, terminal=True)


@pytest.mark.skipif(sys.platform == "win32", reason="no pseudo-terminals here")
def test_html_asked_for_is_refused_on_a_real_terminal() -> None:
    import pty

    leader, follower = pty.openpty()
    sample = str(SAMPLES / "success.jsonl")
    command = [sys.executable, "-m", "analyzer.cli", "report", "-f", "html", sample]
    with subprocess.Popen(command, stdout=follower, stderr=subprocess.PIPE) as proc:
        os.close(follower)
        _, err = proc.communicate(timeout=60)
    os.close(leader)
    assert proc.returncode == 2
    assert err.decode().count("\n") == 1 and "--out report.html" in err.decode()
