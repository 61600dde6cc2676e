"""The job's own record, live: the Vertex AI REST API's customJobs.get on a loopback server
(tests/vertex_server.py) beside the Cloud Logging one (tests/logging_server.py), through the
CLI, and the record used as --job-spec is (state check, machine types, scheduling)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from analyzer.cli.app import app
from analyzer.core.errors import SourceError
from analyzer.engines.live.errors import Backoff
from analyzer.engines.live.vertex import read_custom_job
from tests.logging_server import Failure, LoggingServer, load_entries
from tests.vertex_server import (
    VertexServer,
    api_disabled,
    custom_job,
    permission_denied,
    unavailable,
)

pytest.importorskip("google.cloud.logging")

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
PROJECT, JOB = "acme-ml-prod", "1597253863006895240"
WINDOW = ["--start", "2024-01-01T00:00:00Z", "--end", "2024-06-01T00:00:00Z"]
runner = CliRunner()


def entries_of(path: Path) -> list[dict[str, Any]]:
    return load_entries(path)


def diagnose_live(
    logs: LoggingServer, vertex: VertexServer | None, *args: str, env: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], str]:
    extra = ["--vertex-endpoint", vertex.url] if vertex is not None else []
    result = runner.invoke(
        app,
        ["diagnose", "--format", "json", "--api-endpoint", logs.url, *extra, *WINDOW, *args],
        env=env,
    )
    data = json.loads(result.stdout) if result.stdout.strip() else {}
    return result.exit_code, data, result.stderr


@pytest.fixture
def logs() -> LoggingServer:
    return LoggingServer(entries=entries_of(SAMPLES / "user-code-exit1.jsonl"))


def test_the_record_is_read_and_checked_against_the_logs(logs: LoggingServer) -> None:
    vertex = VertexServer()
    vertex.add(custom_job(PROJECT, "europe-west4", JOB))
    name = f"projects/{PROJECT}/locations/europe-west4/customJobs/{JOB}"
    with logs, vertex:
        code, data, err = diagnose_live(logs, vertex, "--job-id", name)
        asked = [r.path for r in vertex.requests]
        resources = logs.list_bodies[0]["resourceNames"]
    assert code == 0, err
    # The resource name gave the project (for Logging) and the region (for Vertex AI).
    assert resources == [f"projects/{PROJECT}"]
    assert asked == [f"/v1/{name}"]
    (job,) = data["jobs"]
    assert job["job_spec"] == {"state": "JOB_STATE_FAILED", "error_code": 3, "agrees": True}
    assert any("read the job's record from Vertex AI" in n for n in data["notices"])


def test_a_record_that_disagrees_says_so(logs: LoggingServer) -> None:
    vertex = VertexServer()
    vertex.add(
        custom_job(PROJECT, "us-central1", JOB, state="JOB_STATE_SUCCEEDED", error_code=None)
    )
    with logs, vertex:
        code, data, _ = diagnose_live(logs, vertex, "--project", PROJECT, "--job-id", JOB)
    assert code == 0
    assert data["jobs"][0]["job_spec"]["agrees"] is False


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (permission_denied(JOB), "ask for the Vertex AI Viewer (roles/aiplatform.viewer) role"),
        (api_disabled(), "gcloud services enable aiplatform.googleapis.com"),
        (None, "not found in project acme-ml-prod, region us-central1"),
    ],
)
def test_a_record_that_cannot_be_read_is_one_line_and_the_logs_still_diagnose(
    logs: LoggingServer, answer: tuple[int, dict[str, Any]] | None, said: str
) -> None:
    vertex = VertexServer()  # holds no job: a 404 unless a failure is scripted
    if answer is not None:
        vertex.fail_next(answer)
    with logs, vertex:
        code, data, err = diagnose_live(logs, vertex, "--project", PROJECT, "--job-id", JOB)
    assert code == 0
    assert data["jobs"][0]["state"] == "JOB_STATE_FAILED"
    assert data["jobs"][0]["job_spec"] is None
    lines = [line for line in err.splitlines() if "record was not read" in line]
    assert len(lines) == 1 and said in lines[0], err


def test_unavailable_is_retried() -> None:
    vertex = VertexServer()
    vertex.add(custom_job(PROJECT, "us-central1", JOB))
    vertex.fail_next(unavailable(), unavailable())
    with vertex:
        record = read_custom_job(
            PROJECT, "us-central1", JOB, endpoint=vertex.url, backoff=Backoff(initial=0.0)
        )
        count = len(vertex.requests)
    assert record["state"] == "JOB_STATE_FAILED" and count == 3


def test_plain_http_to_another_host_is_refused() -> None:
    with pytest.raises(SourceError, match="refusing plain http"):
        read_custom_job(PROJECT, "us-central1", JOB, endpoint="http://example.com")


def test_no_record_is_asked_for_when_told_not_to_or_when_logging_is_an_emulator(
    logs: LoggingServer,
) -> None:
    vertex = VertexServer()
    vertex.add(custom_job(PROJECT, "us-central1", JOB))
    with logs, vertex:
        code, data, _ = diagnose_live(
            logs, vertex, "--project", PROJECT, "--job-id", JOB, "--no-job-record"
        )
        # Logging on loopback and no Vertex AI endpoint: Google's real API is not called.
        code2, data2, _ = diagnose_live(logs, None, "--project", PROJECT, "--job-id", JOB)
        asked = len(vertex.requests)
    assert (code, code2, asked) == (0, 0, 0)
    assert data["jobs"][0]["job_spec"] is None and data2["jobs"][0]["job_spec"] is None


def test_the_project_defaults_to_gclouds(logs: LoggingServer, tmp_path: Path) -> None:
    config = tmp_path / "gcloud"
    (config / "configurations").mkdir(parents=True)
    (config / "active_config").write_text("work\n")
    (config / "configurations" / "config_work").write_text(
        f"[core]\naccount = me@example.com\nproject = {PROJECT}\n\n[ai]\nregion = asia-east1\n"
    )
    vertex = VertexServer()
    vertex.add(custom_job(PROJECT, "asia-east1", JOB))
    env = {"CLOUDSDK_CONFIG": str(config), "CLOUDSDK_CORE_PROJECT": "", "GOOGLE_CLOUD_PROJECT": ""}
    with logs, vertex:
        code, data, err = diagnose_live(logs, vertex, "--job-id", JOB, env=env)
        resources = logs.list_bodies[0]["resourceNames"]
        asked = [r.path for r in vertex.requests]
    assert code == 0, err
    assert resources == [f"projects/{PROJECT}"]
    assert asked == [f"/v1/projects/{PROJECT}/locations/asia-east1/customJobs/{JOB}"]
    assert data["jobs"][0]["job_spec"]["agrees"] is True


def simulated(tmp_path: Path, scenario: str) -> list[dict[str, Any]]:
    from analyzer.simulate import simulate, write

    path = tmp_path / f"{scenario}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        write(simulate(scenario, 0), "jsonl", out)
    return entries_of(path)


def test_the_records_machine_type_is_in_the_advice(tmp_path: Path) -> None:
    entries = simulated(tmp_path, "oom")
    labels = entries[0]["resource"]["labels"]
    project, job = labels["project_id"], labels["job_id"]
    vertex = VertexServer()
    vertex.add(custom_job(project, "us-central1", job, error_code=8))
    with LoggingServer(entries=entries) as logs, vertex:
        code, data, err = diagnose_live(logs, vertex, "--project", project, "--job-id", job)
    assert code == 0, err
    advice = " ".join(data["jobs"][0]["advice"])
    assert "n1-standard-4" in advice and "n1-standard-8" in advice


def test_the_records_scheduling_changes_the_replay(tmp_path: Path) -> None:
    # Stockouts seen on two attempts, then the logs end: the replay predicts the rest, and a
    # Spot job may be retried more often than a standard one.
    entries = simulated(tmp_path, "truncated-stockout")
    labels = entries[0]["resource"]["labels"]
    project, job = labels["project_id"], labels["job_id"]
    attempts = {}
    for strategy in ("STANDARD", "SPOT"):
        vertex = VertexServer()
        vertex.add(
            custom_job(
                project,
                "us-central1",
                job,
                state="JOB_STATE_RUNNING",
                error_code=None,
                scheduling={"strategy": strategy},
            )
        )
        with LoggingServer(entries=entries) as logs, vertex:
            code, data, err = diagnose_live(logs, vertex, "--project", project, "--job-id", job)
        assert code == 0, err
        attempts[strategy] = data["jobs"][0]["attempts"]
    assert attempts["SPOT"] > attempts["STANDARD"] == 4


@pytest.mark.parametrize(
    "answer",
    [Failure.raw_answer(200, b"<html>Sign in</html>"), Failure(200, [])],
    ids=["html", "list"],
)
def test_a_garbage_token_for_the_record_is_a_notice(
    logs: LoggingServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: Failure
) -> None:
    # The real credentials path (https, a service-account key): google-auth asks the key's
    # token endpoint first, and a garbage answer fails inside it before any connection.
    pytest.importorskip("cryptography")
    from tests.test_live_answers import _service_account

    with logs:
        logs.token_answers.append(answer)
        monkeypatch.setenv(
            "GOOGLE_APPLICATION_CREDENTIALS", str(_service_account(tmp_path, logs.token_uri))
        )
        vertex = logs.url.replace("http://", "https://")
        result = runner.invoke(
            app,
            ["diagnose", "--format", "json", "--api-endpoint", logs.url, "--vertex-endpoint",
             vertex, *WINDOW, "--project", PROJECT, "--job-id", JOB],
        )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["jobs"][0]["job_spec"] is None
    (line,) = [line for line in result.stderr.splitlines() if "record was not read" in line]
    assert "token endpoint answered with something that is not a token" in line


@pytest.mark.parametrize(
    "body",
    [[1, 2], {"error": "denied"}, {"error": {"code": 500, "details": ["x", None]}}],
    ids=["list", "string-error", "odd-details"],
)
def test_an_error_of_another_shape_is_still_one_line(body: object) -> None:
    vertex = VertexServer()
    vertex.fail_next((500, body))  # type: ignore[arg-type]
    with vertex, pytest.raises(SourceError, match=r"^Vertex AI error 500"):
        read_custom_job(
            PROJECT, "us-central1", JOB, endpoint=vertex.url, backoff=Backoff(attempts=0)
        )
