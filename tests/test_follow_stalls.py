"""``diagnose --follow`` and a job that hangs: every poll is diagnosed, even one that brings
no line, so a worker's silence is seen to grow with the clock (issue 30, point 3).

The real google-cloud-logging client talks to tests/logging_server.py on 127.0.0.1.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from analyzer.engines.live import FollowEnd, LiveQuery, Window, follow
from analyzer.engines.live.client import ENDPOINT_ENV
from analyzer.ingest.records import LogRecord
from tests.logging_server import LoggingServer, load_entries

pytest.importorskip("google.cloud.logging")

FIXTURE = Path(__file__).parent / "fixtures" / "live" / "failed_job.jsonl"
PROJECT = "demo-project"
JOB = "8501620632646057984"
WINDOW = Window(datetime(2024, 5, 6, tzinfo=UTC), datetime(2024, 5, 7, tzinfo=UTC))


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
