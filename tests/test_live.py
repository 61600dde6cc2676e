"""Live Cloud Logging, tested with the real google-cloud-logging client.

The client talks REST to ``tests/logging_server.py`` on 127.0.0.1: nothing
here mocks the client, and nothing reaches the network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from analyzer.core.errors import SourceError
from analyzer.engines.live import (
    Backoff,
    FollowEnd,
    LiveQuery,
    LiveSource,
    Window,
    build_filter,
    fetch_to_file,
    follow,
    parse_window,
)
from analyzer.engines.live.client import ENDPOINT_ENV
from analyzer.engines.live.source import SKIP_NO_TEXT, Cursor
from analyzer.ingest.records import LogRecord, Origin, record_from_entry
from tests.logging_server import Failure, LoggingServer, load_entries

FIXTURE = Path(__file__).parent / "fixtures" / "live" / "failed_job.jsonl"
PROJECT = "demo-project"
JOB = "8501620632646057984"
WINDOW = Window(datetime(2024, 5, 6, tzinfo=UTC), datetime(2024, 5, 7, tzinfo=UTC))
FAST = Backoff(attempts=3, initial=0.001, maximum=0.01)


def _no_sleep(_: float) -> None:
    return None


@pytest.fixture(autouse=True)
def _no_ambient_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    # A developer's own JOBDOCTOR_LOGGING_ENDPOINT must not redirect these tests.
    monkeypatch.delenv(ENDPOINT_ENV, raising=False)


@pytest.fixture
def entries() -> list[dict[str, Any]]:
    return load_entries(FIXTURE)


@pytest.fixture
def server(entries: list[dict[str, Any]]) -> Iterator[LoggingServer]:
    with LoggingServer(list(entries)) as running:
        yield running


def _query(server: LoggingServer, window: Window = WINDOW) -> LiveQuery:
    return LiveQuery(PROJECT, JOB, window, endpoint=server.url)


def _micros(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with timestamps cut to microseconds, as the client library returns them."""
    out = dict(entry)
    for key in ("timestamp", "receiveTimestamp"):
        if key in out:
            whole, _, fraction = out[key].rstrip("Z").partition(".")
            out[key] = f"{whole}.{fraction.ljust(6, '0')[:6]}Z"
    return out


def _unplaced(record: LogRecord) -> tuple[object, ...]:
    return (
        record.timestamp,
        record.job_id,
        record.task,
        record.severity,
        record.text,
        record.vm,
        record.trial,
        record.insert_id,
    )


# -- the window and the filter --


NOW = datetime(2024, 5, 8, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("since", "start", "end", "expected"),
    [
        (None, None, None, (NOW - timedelta(days=7), NOW)),
        ("12h", None, None, (NOW - timedelta(hours=12), NOW)),
        ("1d12h", None, None, (NOW - timedelta(hours=36), NOW)),
        (
            "30m",
            None,
            "2024-05-06T10:30:00Z",
            (datetime(2024, 5, 6, 10, tzinfo=UTC), datetime(2024, 5, 6, 10, 30, tzinfo=UTC)),
        ),
        (None, "2024-05-06T10:00:00+02:00", None, (datetime(2024, 5, 6, 8, tzinfo=UTC), NOW)),
        (
            None,
            "2024-05-06T10:00:00",
            "2024-05-06T11:00:00.5Z",
            (
                datetime(2024, 5, 6, 10, tzinfo=UTC),
                datetime(2024, 5, 6, 11, 0, 0, 500000, tzinfo=UTC),
            ),
        ),
    ],
)
def test_parse_window(
    since: str | None, start: str | None, end: str | None, expected: tuple[datetime, datetime]
) -> None:
    window = parse_window(since, start, end, now=NOW)
    assert (window.start, window.end) == expected
    assert window.start.tzinfo is UTC and window.end.tzinfo is UTC


@pytest.mark.parametrize(
    ("since", "start", "end", "message"),
    [
        ("7d", "2024-05-01T00:00:00Z", None, "either --since or --start"),
        ("7 days", None, None, "invalid --since"),
        ("0h", None, None, "more than zero"),
        (None, "yesterday", None, "invalid --start"),
        (None, "2024-05-06T10:00:00Z", "2024-05-06T09:00:00Z", "empty time window"),
    ],
)
def test_parse_window_refuses(
    since: str | None, start: str | None, end: str | None, message: str
) -> None:
    with pytest.raises(SourceError, match=message):
        parse_window(since, start, end, now=NOW)


def test_window_states_itself() -> None:
    assert str(WINDOW) == "2024-05-06T00:00:00Z .. 2024-05-07T00:00:00Z (1d)"
    assert WINDOW.to_dict() == {"start": "2024-05-06T00:00:00Z", "end": "2024-05-07T00:00:00Z"}


def test_build_filter_is_explicit_and_quotes_the_job_id() -> None:
    assert build_filter(LiveQuery(PROJECT, JOB, WINDOW)) == (
        f'resource.type="ml_job" AND resource.labels.job_id="{JOB}"'
        ' AND timestamp>="2024-05-06T00:00:00Z" AND timestamp<"2024-05-07T00:00:00Z"'
    )
    assert 'job_id="a\\"b"' in build_filter(LiveQuery(PROJECT, 'a"b', WINDOW))


# -- reading through the real client --


def test_source_reads_every_page_in_order(
    server: LoggingServer, entries: list[dict[str, Any]]
) -> None:
    source = LiveSource(_query(server), page_size=4)
    records = list(source.records())

    assert [r.text for r in records] == [
        e.get("textPayload") or e["jsonPayload"]["message"] for e in entries
    ]
    assert [r.origin for r in records] == [
        Origin(f"cloudlogging://{PROJECT}/{JOB}", n) for n in range(1, len(entries) + 1)
    ]
    assert records[0].task == "service" and records[2].task == "workerpool0-0"
    assert records[-1].text == "Job failed."
    stats = source.stats
    assert (stats.format, stats.lines, stats.records, stats.used, stats.skipped) == (
        "cloud-logging-api",
        13,
        13,
        13,
        0,
    )
    bodies = server.list_bodies
    assert len(bodies) == 4  # 13 entries, 4 a page
    assert [b.get("pageToken") is None for b in bodies] == [True, False, False, False]


def test_empty_pages_with_a_token_are_followed(server: LoggingServer) -> None:
    server.empty_pages = 2
    assert len(list(LiveSource(_query(server), page_size=5).records())) == 13
    assert len(server.list_bodies) == 2 + 3


def test_default_window_ends_on_a_whole_second() -> None:
    window = parse_window(None, None, None, now=datetime(2024, 5, 8, 12, 0, 0, 250, tzinfo=UTC))
    assert window.end == datetime(2024, 5, 8, 12, 0, 1, tzinfo=UTC)
    assert str(window) == "2024-05-01T12:00:01Z .. 2024-05-08T12:00:01Z (7d)"


def test_server_receives_exactly_the_filter_and_window(server: LoggingServer) -> None:
    query = _query(server)
    list(LiveSource(query).records())

    (body,) = server.list_bodies
    assert body["filter"] == build_filter(query)
    # The library's silent 24-hour default appends a third timestamp clause; there is none.
    assert body["filter"].count("timestamp") == 2
    assert body["resourceNames"] == [f"projects/{PROJECT}"]
    assert body["orderBy"] == "timestamp asc"
    assert body["pageSize"] == 1000
    # Anonymous credentials for a loopback endpoint: no token is sent.
    assert "authorization" not in server.requests[0].headers
    assert server.requests[0].headers["user-agent"].startswith("jobdoctor/")


def test_window_bounds_what_comes_back(server: LoggingServer) -> None:
    narrow = Window(
        datetime(2024, 5, 6, 10, 2, 20, tzinfo=UTC), datetime(2024, 5, 6, 10, 2, 27, tzinfo=UTC)
    )
    texts = [r.text for r in LiveSource(_query(server, narrow)).records()]
    assert texts == [
        "Epoch 1/10",
        "loading dataset gs://demo-bucket/train",
        "Traceback (most recent call last):",
        "ValueError: bad learning rate",
    ]


def test_endpoint_from_environment(server: LoggingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENDPOINT_ENV, server.url)
    records = list(LiveSource(LiveQuery(PROJECT, JOB, WINDOW)).records())
    assert len(records) == 13


def test_entry_without_text_is_counted_as_skipped(server: LoggingServer) -> None:
    server.add(
        [
            {
                "insertId": "proto1",
                "logName": f"projects/{PROJECT}/logs/x",
                "resource": {"type": "ml_job", "labels": {"job_id": JOB, "project_id": PROJECT}},
                "timestamp": "2024-05-06T10:05:00Z",
            }
        ]
    )
    source = LiveSource(_query(server))
    assert len(list(source.records())) == 13
    assert (source.stats.lines, source.stats.skipped) == (14, 1)
    assert source.stats.skip_reasons == {SKIP_NO_TEXT: 1}
    assert source.stats.lines == source.stats.used + source.stats.skipped


# -- fetch --


def test_fetch_writes_the_source_entries(
    server: LoggingServer, entries: list[dict[str, Any]], tmp_path: Path
) -> None:
    out = tmp_path / "job.jsonl"
    assert fetch_to_file(_query(server), out, page_size=5) == len(entries)

    # Field for field, nanoseconds and receiveTimestamp included.
    assert load_entries(out) == entries
    assert not (tmp_path / "job.jsonl.part").exists()


def test_log_entry_objects_give_the_same_records(entries: list[dict[str, Any]]) -> None:
    """The ``list_entries`` fallback path: LogEntry objects back to API JSON."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.logging import Client, Resource
    from google.cloud.logging_v2._helpers import entry_from_resource

    from analyzer.engines.live.source import api_json

    client = Client(project=PROJECT, credentials=AnonymousCredentials(), _use_grpc=False)
    # Loggers given up front: building one otherwise probes the GCE metadata server.
    here = Resource(type="global", labels={})
    loggers = {e["logName"]: client.logger(e["logName"], resource=here) for e in entries}
    got = [api_json(entry_from_resource(dict(e), client, loggers)) for e in entries]

    # LogEntry objects keep microseconds only; the records are the same.
    assert got == [_micros(e) for e in entries]
    origin = Origin("x", 1)
    assert [_unplaced(record_from_entry(e, origin)) for e in got] == [
        _unplaced(record_from_entry(e, origin)) for e in entries
    ]


def test_failed_fetch_leaves_no_file(server: LoggingServer, tmp_path: Path) -> None:
    server.fail_on(2, Failure.permission_denied())
    out = tmp_path / "job.jsonl"
    with pytest.raises(SourceError):
        fetch_to_file(_query(server), out, page_size=5)
    assert list(tmp_path.iterdir()) == []


# -- errors --


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        (
            Failure.permission_denied(),
            f"permission denied reading logs of project {PROJECT}: ask for the Logs Viewer role "
            f"(roles/logging.viewer) on project {PROJECT}",
        ),
        (
            Failure.api_disabled(),
            f"the Cloud Logging API is disabled in project {PROJECT}: enable it with "
            f"`gcloud services enable logging.googleapis.com --project {PROJECT}`",
        ),
        (
            Failure.project_not_found(),
            f"project {PROJECT} not found in Cloud Logging: check --project",
        ),
    ],
    ids=["403-permission", "403-api-disabled", "404-project"],
)
def test_errors_are_one_clear_line(server: LoggingServer, failure: Failure, message: str) -> None:
    server.fail_next(failure)
    with pytest.raises(SourceError) as caught:
        list(LiveSource(_query(server), backoff=FAST).records())
    assert str(caught.value).startswith(message)
    assert "\n" not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert len(server.list_bodies) == 1  # permanent errors are not retried


def test_rate_limited_once_then_success(server: LoggingServer) -> None:
    server.fail_next(Failure.rate_limited())
    waits: list[float] = []
    records = list(LiveSource(_query(server), backoff=FAST, sleep=waits.append).records())

    assert len(records) == 13
    assert len(waits) == 1
    first, second = server.list_bodies
    assert first == second  # nothing was delivered yet: the same request again


def test_unavailable_mid_read_resumes_after_the_last_entry(
    server: LoggingServer, entries: list[dict[str, Any]]
) -> None:
    server.fail_on(2, Failure.unavailable())  # the second page
    records = list(LiveSource(_query(server), page_size=5, backoff=FAST, sleep=_no_sleep).records())

    assert [r.insert_id for r in records] == [e["insertId"] for e in entries]  # none twice
    resumed = server.list_bodies[2]
    assert "pageToken" not in resumed
    assert 'timestamp>="2024-05-06T10:02:15.605309Z"' in resumed["filter"]  # 5th entry
    assert resumed["filter"].count("timestamp") == 2


def test_retries_are_bounded(server: LoggingServer) -> None:
    server.fail_next(*[Failure.unavailable()] * 10)
    with pytest.raises(SourceError, match="retries ran out"):
        list(LiveSource(_query(server), backoff=FAST, sleep=_no_sleep).records())
    assert len(server.list_bodies) == FAST.attempts + 1


def test_no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing = tmp_path / "secret-key.json"
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(missing))
    with pytest.raises(SourceError) as caught:
        list(LiveSource(LiveQuery(PROJECT, JOB, WINDOW)).records())
    message = str(caught.value)
    assert message.startswith(
        "no credentials for Cloud Logging: run `gcloud auth application-default login`"
    )
    assert str(missing) not in message and "secret-key" not in message


def test_no_credentials_anywhere(tmp_path: Path) -> None:
    # google-auth reads NO_GCE_CHECK when imported, so this runs in a fresh interpreter:
    # no key file, no gcloud config, and no metadata-server probe (it would reach the network).
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GOOGLE_APPLICATION_CREDENTIALS", ENDPOINT_ENV)
    }
    env.update(CLOUDSDK_CONFIG=str(tmp_path), NO_GCE_CHECK="true")
    script = (
        "from datetime import UTC, datetime\n"
        "from analyzer.core.errors import SourceError\n"
        "from analyzer.engines.live import LiveQuery, LiveSource, Window\n"
        "w = Window(datetime(2024, 5, 6, tzinfo=UTC), datetime(2024, 5, 7, tzinfo=UTC))\n"
        "try:\n"
        f"    list(LiveSource(LiveQuery({PROJECT!r}, {JOB!r}, w)).records())\n"
        "except SourceError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert done.stdout.startswith("no credentials for Cloud Logging"), done.stderr


def test_plain_http_is_only_for_loopback() -> None:
    query = LiveQuery(PROJECT, JOB, WINDOW, endpoint="http://logging.example.com")
    with pytest.raises(SourceError, match="refusing plain http"):
        list(LiveSource(query).records())


def test_missing_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import google.cloud

    # As if the extra were not installed: the import machinery finds no module.
    monkeypatch.setitem(sys.modules, "google.cloud.logging", None)
    monkeypatch.delattr(google.cloud, "logging", raising=False)
    with pytest.raises(SourceError, match=r"pip install 'jobdoctor\[gcp\]'"):
        list(LiveSource(LiveQuery(PROJECT, JOB, WINDOW, endpoint="http://127.0.0.1:9")).records())


# -- follow --


def test_follow_picks_up_new_entries_and_stops_when_told(
    entries: list[dict[str, Any]],
) -> None:
    batches: list[list[LogRecord]] = []
    with LoggingServer(entries[:6]) as server:

        def on_records(records: list[LogRecord]) -> bool:
            batches.append(records)
            if len(batches) == 1:
                server.add(entries[6:])  # the job goes on between polls
            return any(r.text == "Job failed." for r in records)

        end = follow(_query(server), on_records, interval=0.01, max_polls=50)

    assert end is FollowEnd.JOB_ENDED
    assert [len(b) for b in batches] == [6, 7]
    delivered = [r for b in batches for r in b]
    assert [r.insert_id for r in delivered] == [e["insertId"] for e in entries]
    assert [r.origin.line for r in delivered] == list(range(1, 14))
    bodies = server.list_bodies
    assert len(bodies) == 2
    # Following has no end bound, but always a start, so the 24-hour default never applies.
    assert bodies[0]["filter"].count("timestamp") == 1
    assert 'timestamp>="2024-05-06T00:00:00Z"' in bodies[0]["filter"]
    # The second poll starts a minute before the newest entry seen (10:02:20.1).
    assert 'timestamp>="2024-05-06T10:01:20.100000Z"' in bodies[1]["filter"]


def test_follow_delivers_late_entries_once(entries: list[dict[str, Any]]) -> None:
    late = entries[-2]  # 1.3 s before the newest entry already shown, within the overlap
    batches: list[list[LogRecord]] = []
    with LoggingServer([e for e in entries if e is not late]) as server:

        def on_records(records: list[LogRecord]) -> bool:
            batches.append(records)
            if len(batches) == 1:
                server.add([late])
            return len(batches) == 2

        end = follow(_query(server), on_records, interval=0.01, max_polls=50)

    assert end is FollowEnd.JOB_ENDED
    assert [len(b) for b in batches] == [12, 1]
    assert batches[1][0].insert_id == late["insertId"]


def test_follow_stops_cleanly_on_ctrl_c(server: LoggingServer) -> None:
    def interrupt(_: float) -> None:
        raise KeyboardInterrupt

    seen: list[int] = []
    end = follow(_query(server), lambda r: seen.append(len(r)) is not None, sleep=interrupt)
    assert end is FollowEnd.INTERRUPTED
    assert seen == [13]


def test_follow_max_polls(server: LoggingServer) -> None:
    end = follow(_query(server), lambda r: False, interval=0.001, max_polls=3)
    assert end is FollowEnd.MAX_POLLS
    assert len(server.list_bodies) == 3


# -- the cursor --


def test_cursor_drops_entries_already_delivered() -> None:
    cursor = Cursor(overlap=timedelta(seconds=10))
    first = {"insertId": "a", "logName": "l", "timestamp": "2024-05-06T10:00:00.000001Z"}
    assert cursor.admit(first)
    assert not cursor.admit(dict(first))
    assert cursor.admit({**first, "insertId": "b"})
    assert cursor.resume_from(WINDOW.start) == datetime(2024, 5, 6, 9, 59, 50, 1, tzinfo=UTC)
    assert cursor.resume_from(datetime(2024, 5, 6, 10, tzinfo=UTC)) == datetime(
        2024, 5, 6, 10, tzinfo=UTC
    )


def test_fetched_file_is_sink_shaped(server: LoggingServer, tmp_path: Path) -> None:
    out = tmp_path / "job.jsonl"
    fetch_to_file(_query(server), out)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 13
    assert all(json.loads(line)["resource"]["type"] == "ml_job" for line in lines)
