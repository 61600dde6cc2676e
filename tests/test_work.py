"""Checkpoint gaps, lost work and parallel-start races on hand-built timelines."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from analyzer.classify.joblog import JobLog
from analyzer.ingest.records import Origin
from analyzer.rulebook.events import Category, Event, EventKind, RuleMatch
from analyzer.timeline.attempts import build_timeline
from analyzer.verdict.diagnosis import Diagnosis
from analyzer.verdict.policy import load_policy
from analyzer.verdict.predict import diagnose_timeline

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def event(
    at: timedelta,
    kind: EventKind,
    task: str = "service",
    category: Category | None = None,
    **fields: str | int,
) -> Event:
    match = RuleMatch(f"test.{kind}", kind, category, "en", fields)
    line = int(at.total_seconds()) + 1
    return Event(T0 + at, "7", task, match, str(kind), Origin("w.jsonl", line), "vm-1")


def diagnose(*events: Event) -> Diagnosis:
    ordered = tuple(sorted(events, key=lambda e: e.timestamp or T0))
    log = JobLog("7", ordered, {}, len(ordered), T0, None)
    return diagnose_timeline(build_timeline(log), load_policy())


def long_run(*checkpoint_hours: float) -> Diagnosis:
    hour = timedelta(hours=1)
    return diagnose(
        event(timedelta(0), EventKind.ATTEMPT_STARTED),
        event(timedelta(seconds=5), EventKind.WORKER_STARTED, "workerpool0-0"),
        event(timedelta(seconds=6), EventKind.JOB_RUNNING),
        *(event(h * hour, EventKind.CHECKPOINT, "workerpool0-0") for h in checkpoint_hours),
        event(9 * hour, EventKind.JOB_SUCCEEDED),
    )


def test_a_long_job_without_a_checkpoint_every_four_hours_gets_a_note() -> None:
    notes = " ".join(long_run(1).notes)
    assert "without a checkpoint" in notes and "every 4 hours" in notes


def test_checkpoints_every_three_hours_get_no_note() -> None:
    assert not any("without a checkpoint" in n for n in long_run(3, 6, 8.5).notes)


def test_a_failure_while_peers_still_start_is_a_parallel_start_race() -> None:
    diagnosis = diagnose(
        event(timedelta(0), EventKind.ATTEMPT_STARTED),
        event(timedelta(seconds=10), EventKind.WORKER_STARTED, "workerpool0-0"),
        event(
            timedelta(seconds=40),
            EventKind.ERROR,
            category=Category.USER_CODE_EXCEPTION,
            replica="workerpool0-0",
            exit_code=1,
        ),
        event(timedelta(seconds=130), EventKind.WORKER_STARTED, "workerpool1-0"),
        event(timedelta(seconds=200), EventKind.JOB_FAILED),
    )
    assert any("parallel-start race" in n for n in diagnosis.notes), diagnosis.notes
    assert diagnosis.to_dict()["attempt_log"][0]["startup_race"] is True


def test_no_race_when_every_worker_was_up_before_the_failure() -> None:
    diagnosis = diagnose(
        event(timedelta(0), EventKind.ATTEMPT_STARTED),
        event(timedelta(seconds=10), EventKind.WORKER_STARTED, "workerpool0-0"),
        event(timedelta(seconds=20), EventKind.WORKER_STARTED, "workerpool1-0"),
        event(
            timedelta(minutes=30),
            EventKind.ERROR,
            category=Category.USER_CODE_EXCEPTION,
            replica="workerpool0-0",
            exit_code=1,
        ),
        event(timedelta(minutes=32), EventKind.JOB_FAILED),
    )
    assert not any("race" in n for n in diagnosis.notes)


def test_lost_work_counts_from_the_last_checkpoint_to_the_failure() -> None:
    minute = timedelta(minutes=1)
    diagnosis = diagnose(
        event(timedelta(0), EventKind.ATTEMPT_STARTED),
        event(minute, EventKind.WORKER_STARTED, "workerpool0-0"),
        event(20 * minute, EventKind.CHECKPOINT, "workerpool0-0"),
        event(
            50 * minute,
            EventKind.ERROR,
            category=Category.USER_CODE_EXCEPTION,
            replica="workerpool0-0",
            exit_code=1,
        ),
        event(52 * minute, EventKind.JOB_FAILED),
    )
    assert diagnosis.to_dict()["lost_work_seconds"] == 30 * 60
