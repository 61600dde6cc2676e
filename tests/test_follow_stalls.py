"""``diagnose --follow`` and a job that hangs: every poll is diagnosed, even one that brings
no line, so a worker's silence is seen to grow with the clock (issue 30, point 3).

The real google-cloud-logging client talks to tests/logging_server.py on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from analyzer.api import follow_job
from analyzer.cli.app import app
from analyzer.engines.live import FollowEnd, LiveQuery, Window, follow
from analyzer.engines.live.client import ENDPOINT_ENV
from analyzer.ingest.records import LogRecord
from analyzer.verdict.diagnosis import Diagnosis
from tests.logging_server import LoggingServer, load_entries
from tests.stalled import SILENT, STRAGGLER, scenario_file

pytest.importorskip("google.cloud.logging")

FIXTURE = Path(__file__).parent / "fixtures" / "live" / "failed_job.jsonl"
PROJECT = "demo-project"
JOB = "8501620632646057984"
WINDOW = Window(datetime(2024, 5, 6, tzinfo=UTC), datetime(2024, 5, 7, tzinfo=UTC))
runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENDPOINT_ENV, raising=False)


def test_a_poll_that_brings_nothing_is_handed_to_on_quiet() -> None:
    entries = load_entries(FIXTURE)
    delivered: list[int] = []
    quiet: list[int] = []

    def on_records(records: list[LogRecord]) -> bool:
        delivered.append(len(records))
        return False

    def on_quiet() -> bool:
        quiet.append(len(delivered))
        return len(quiet) == 2  # the second quiet poll: as if the diagnosis saw the job end

    with LoggingServer(entries[:6]) as server:
        query = LiveQuery(PROJECT, JOB, WINDOW, endpoint=server.url)
        end = follow(query, on_records, interval=0.01, max_polls=10, on_quiet=on_quiet)
        polls = len(server.list_bodies)
    assert end is FollowEnd.JOB_ENDED
    assert delivered == [6] and quiet == [1, 1] and polls == 3


# -- a hung job followed live: the clock is the input's end --


def _shifted(entries: list[dict[str, Any]], by: timedelta) -> list[dict[str, Any]]:
    """``entries`` moved in time by ``by`` (both their times), as if written now."""
    out = []
    for entry in entries:
        moved = dict(entry)
        for key in ("timestamp", "receiveTimestamp"):
            if key in moved:
                moved[key] = _rfc3339(_parse(moved[key]) + by)
        out.append(moved)
    return out


def _parse(text: str) -> datetime:
    whole, _, fraction = text.rstrip("Z").partition(".")
    return datetime.fromisoformat(f"{whole}.{fraction.ljust(6, '0')[:6]}+00:00")


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _live_straggler(tmp_path: Path) -> list[dict[str, Any]]:
    """The straggler scenario as if its last line were written a minute ago: workerpool1-2
    has been silent for 51 minutes now, the three others wrote a minute ago."""
    path = scenario_file(STRAGGLER, tmp_path)
    entries = load_entries(path)
    latest = max(_parse(e["timestamp"]) for e in entries)
    return _shifted(entries, datetime.now(UTC) - timedelta(minutes=1) - latest)


def _now_line(entry: dict[str, Any], insert_id: str, **changes: Any) -> dict[str, Any]:
    """``entry`` written again now (a new insertId), with ``changes``."""
    now = _rfc3339(datetime.now(UTC))
    return {**entry, "insertId": insert_id, "timestamp": now, "receiveTimestamp": now, **changes}


def test_follow_announces_the_stall_and_its_end(tmp_path: Path) -> None:
    entries = _live_straggler(tmp_path)
    labels = entries[0]["resource"]["labels"]
    project, job_id = labels["project_id"], labels["job_id"]
    silent_last = max(
        (e for e in entries if e["resource"]["labels"].get("task_name") == SILENT),
        key=lambda e: e["timestamp"],
    )
    service = next(e for e in entries if e["resource"]["labels"].get("task_name") == "service")
    said: list[list[str]] = []

    with LoggingServer(entries) as server:

        def on_change(changes: list[str], diagnosis: Diagnosis) -> None:
            said.append(changes)
            text = " | ".join(changes)
            if "stalled since" in text:
                # The silent worker writes again, at the next poll.
                server.add([_now_line(silent_last, "again")])
            elif "stall over" in text:
                server.add([_now_line(service, "done", textPayload="Job completed successfully.")])

        last = follow_job(
            project, job_id, on_change, since="1d", endpoint=server.url, interval=0.05
        )

    assert last is not None and last.observed_final and last.stalled is None
    first, second, third = said
    stalled = next(line for line in first if line.startswith("stalled since"))
    assert stalled.endswith(f"({SILENT} silent 51 min; the others still write)")
    assert second == [f"stall over: {SILENT} writes again"]
    assert third[-1].startswith("final: SUCCEEDED")


def test_a_live_read_ends_now_and_fails_on_the_stall(tmp_path: Path) -> None:
    entries = _live_straggler(tmp_path)
    labels = entries[0]["resource"]["labels"]
    with LoggingServer(entries) as server:
        args = ["diagnose", "--project", labels["project_id"], "--job-id", labels["job_id"]]
        args += ["--api-endpoint", server.url, "--since", "1d", "--no-job-record"]
        result = runner.invoke(app, [*args, "--format", "json", "--fail-on", "stalled"])
    assert result.exit_code == 1, result.stderr
    (job,) = json.loads(result.stdout)["jobs"]
    stall = job["stalled"]
    assert stall["kind"] == "straggler" and stall["workers"][0]["replica"] == SILENT
    # The input's end is now, a minute after the last line, not the last line itself.
    ends = _parse(stall["input_end"])
    assert timedelta(minutes=1) <= ends - _parse(job["last_seen"]) < timedelta(minutes=5)
    assert 51 * 60 <= stall["workers"][0]["silent_seconds"] < 56 * 60


def test_follow_announces_the_stall_when_the_silence_crosses_its_threshold(
    tmp_path: Path,
) -> None:
    # The straggler cut 29 minutes into workerpool1-2's silence and moved in time so that,
    # when the follow starts, that worker has been silent 10 seconds short of the 30 minutes
    # its rhythm allows; no line comes after: the stall is seen on a poll that brings none.
    path = scenario_file(STRAGGLER, tmp_path)
    entries = load_entries(path)
    silent_last = max(
        (e for e in entries if e["resource"]["labels"].get("task_name") == SILENT),
        key=lambda e: _parse(e["timestamp"]),
    )
    since = _parse(silent_last["timestamp"])
    kept = [e for e in entries if _parse(e["timestamp"]) <= since + timedelta(minutes=29)]
    start = datetime.now(UTC)
    live = _shifted(kept, start - timedelta(minutes=30) + timedelta(seconds=10) - since)
    labels = live[0]["resource"]["labels"]
    service = next(e for e in live if e["resource"]["labels"].get("task_name") == "service")
    said: list[tuple[datetime, list[str]]] = []

    with LoggingServer(live) as server:

        def end_the_job() -> None:
            server.add([_now_line(service, "done", textPayload="Job completed successfully.")])

        # Whatever happens, the job ends within 45 seconds: the follow cannot outlive it.
        deadline = threading.Timer(45, end_the_job)
        deadline.start()

        def on_change(changes: list[str], diagnosis: Diagnosis) -> None:
            said.append((datetime.now(UTC), changes))
            if any(line.startswith("stalled since") for line in changes):
                end_the_job()

        try:
            follow_job(
                labels["project_id"],
                labels["job_id"],
                on_change,
                since="1d",
                endpoint=server.url,
                interval=0.2,
            )
        finally:
            deadline.cancel()

    _, first = said[0]
    assert not any("stalled" in line for line in first)  # 29 min 50 s: within its rhythm
    when, stalled = next((t, c) for t, c in said if any("stalled since" in x for x in c))
    (line,) = stalled
    assert line.startswith("stalled since ")
    assert line.endswith(f"({SILENT} silent 30 min; the others still write)")
    # Announced once the 30 minutes passed, on a poll that brought no line.
    assert timedelta(seconds=9) < when - start < timedelta(seconds=40)
    assert said[-1][1][-1].startswith("stall over: the job ended") or any(
        "final: SUCCEEDED" in line for line in said[-1][1]
    )
