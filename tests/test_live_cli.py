"""The live commands end to end: the real google-cloud-logging client against a Cloud Logging
API server on 127.0.0.1 (tests/logging_server.py), through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analyzer.cli.app import app
from tests.logging_server import LoggingServer, load_entries

pytest.importorskip("google.cloud.logging")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_logs" / "user-code-exit1.jsonl"
runner = CliRunner()


@pytest.fixture
def server() -> LoggingServer:
    return LoggingServer(entries=load_entries(SAMPLE))


def job_of(server: LoggingServer) -> tuple[str, str]:
    labels = server.entries[0]["resource"]["labels"]
    return labels["project_id"], labels["job_id"]


def test_diagnose_live_states_the_window_and_the_verdict(server: LoggingServer) -> None:
    with server:
        project, job = job_of(server)
        result = runner.invoke(
            app,
            [
                "diagnose",
                "--format",
                "json",
                "--project",
                project,
                "--job-id",
                job,
                "--api-endpoint",
                server.url,
                "--start",
                "2024-04-01T00:00:00Z",
                "--end",
                "2024-04-10T00:00:00Z",
            ],
        )
        body = server.list_bodies[0]
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    (verdict,) = data["jobs"]
    assert (verdict["state"], verdict["cause"]["category"]) == (
        "JOB_STATE_FAILED",
        "user_code_exception",
    )
    assert "2024-04-01T00:00:00Z .. 2024-04-10T00:00:00Z" in data["notices"][0]
    assert body["filter"] == (
        f'resource.type="ml_job" AND resource.labels.job_id="{job}"'
        ' AND timestamp>="2024-04-01T00:00:00Z" AND timestamp<"2024-04-10T00:00:00Z"'
    )


def canonical(entry: dict[str, object]) -> str:
    """The entry with its times cut to microseconds, as google-cloud-logging returns them."""
    cut = dict(entry)
    for key in ("timestamp", "receiveTimestamp"):
        value = cut.get(key)
        if isinstance(value, str) and "." in value:
            head, _, fraction = value.rstrip("Z").partition(".")
            cut[key] = f"{head}.{fraction[:6]}Z"
    return json.dumps(cut, sort_keys=True)


def test_fetch_writes_what_the_server_holds(server: LoggingServer, tmp_path: Path) -> None:
    out = tmp_path / "job.jsonl"
    with server:
        project, job = job_of(server)
        result = runner.invoke(
            app,
            [
                "fetch",
                "--project",
                project,
                "--job-id",
                job,
                "--api-endpoint",
                server.url,
                "--since",
                "3650d",
                "-o",
                str(out),
            ],
        )
        # The client keeps microseconds, and the sample holds two deliveries of one entry.
        served = sorted({canonical(e) for e in server.entries})
    assert result.exit_code == 0, result.stderr
    written = sorted(canonical(json.loads(line)) for line in out.open())
    assert written == served
    offline = runner.invoke(app, ["diagnose", "--format", "json", str(out)])
    assert json.loads(offline.stdout)["jobs"][0]["state"] == "JOB_STATE_FAILED"


def test_follow_reports_changes_and_stops_when_the_job_ends(server: LoggingServer) -> None:
    with server:
        project, job = job_of(server)
        result = runner.invoke(
            app,
            [
                "diagnose",
                "--follow",
                "--project",
                project,
                "--job-id",
                job,
                "--api-endpoint",
                server.url,
                "--since",
                "3650d",
            ],
        )
    assert result.exit_code == 0, result.stderr
    assert "attempt 1 started" in result.stdout
    assert "final: FAILED" in result.stdout
    assert "the job has ended" in result.stderr


def test_live_options_need_project_and_job() -> None:
    result = runner.invoke(app, ["diagnose", "--project", "p"])
    assert result.exit_code == 2
    assert "needs both --project and --job-id" in result.stderr
