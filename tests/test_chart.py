"""The charts, tested on their data (marks, buckets, ticks), not on pixels."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from analyzer.api import diagnose
from analyzer.report.chart import (
    MarkKind,
    failure_buckets,
    failures_svg,
    time_ticks,
    timeline_marks,
    timeline_svg,
)
from analyzer.verdict.diagnosis import Diagnosis

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
T0 = datetime(2024, 4, 15, 12, 0, tzinfo=UTC)


def _one(name: str) -> Diagnosis:
    (diagnosis,) = diagnose(SAMPLES / name)
    return diagnosis


def _kinds(marks: list, lane: str, attempt: int) -> Counter[MarkKind]:  # type: ignore[type-arg]
    return Counter(m.kind for m in marks if m.lane == lane and m.attempt == attempt)


def test_restarts_then_a_retry_that_succeeds() -> None:
    marks = timeline_marks(_one("worker-restarts-exhausted.jsonl"))
    lanes = sorted({(m.row, m.lane) for m in marks})
    assert lanes == [(0, "attempt 1"), (1, "workerpool0-0"), (2, "attempt 2"), (3, "workerpool0-0")]
    first = _kinds(marks, "workerpool0-0", 1)
    assert first[MarkKind.START] == 1 and first[MarkKind.RESTART] == 5
    assert first[MarkKind.EXIT] >= 6
    assert _kinds(marks, "workerpool0-0", 2)[MarkKind.RESTART] == 0
    bars = {m.attempt: m.tone for m in marks if m.kind is MarkKind.ATTEMPT}
    assert bars == {1: "worker_restarts_exhausted", 2: "succeeded"}
    # Restarts after a non-zero exit take that exit's colour; the last exit of the
    # succeeded attempt is a clean one.
    assert {m.tone for m in marks if m.kind is MarkKind.RESTART} == {"worker_restarts_exhausted"}
    last_exit = max(
        (m for m in marks if m.kind is MarkKind.EXIT and m.attempt == 2), key=lambda m: m.start
    )
    assert last_exit.tone == "succeeded"


def test_failures_land_on_the_replica_they_name() -> None:
    marks = timeline_marks(_one("multi-replica-worker-failure.jsonl.gz"))
    failures = [m for m in marks if m.kind is MarkKind.FAILURE]
    assert failures and {m.tone for m in failures} == {"user_code_exception"}
    assert {m.lane for m in failures} == {"workerpool1-1"}
    assert "exited with a non-zero status" in failures[0].label
    workers = {m.lane for m in marks if m.kind is MarkKind.WORKER}
    assert workers == {"workerpool0-0", "workerpool1-0", "workerpool1-1", "workerpool1-2"}


def test_vm_moves_are_told_apart_from_restarts() -> None:
    marks = timeline_marks(_one("vm-maintenance-restart.json"))
    kinds = Counter(m.kind for m in marks)
    assert kinds[MarkKind.VM_MOVE] == 2 and kinds[MarkKind.RESTART] == 0
    assert {m.tone for m in marks if m.kind is MarkKind.VM_MOVE} == {"maintenance"}


def test_stockout_attempts_fail_before_any_worker() -> None:
    marks = timeline_marks(_one("stockout-exhausted.jsonl"))
    attempts = [m for m in marks if m.kind is MarkKind.ATTEMPT]
    assert [m.tone for m in attempts] == ["stockout"] * 4
    assert all(m.end is not None and m.end >= m.start for m in attempts)
    assert [m.row for m in attempts] == sorted(m.row for m in attempts)
    assert not [m for m in marks if m.kind is MarkKind.WORKER]


def test_marks_come_row_by_row_with_bars_first() -> None:
    marks = timeline_marks(_one("transient-sigsegv-retry.jsonl"))
    assert [m.row for m in marks] == sorted(m.row for m in marks)
    for row in {m.row for m in marks}:
        in_row = [m for m in marks if m.row == row]
        assert in_row[0].kind in (MarkKind.ATTEMPT, MarkKind.WORKER)


def test_timeline_svg_is_one_svg_with_a_title_per_mark() -> None:
    diagnosis = _one("worker-restarts-exhausted.jsonl")
    svg = timeline_svg(diagnosis)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("<title>") >= len(timeline_marks(diagnosis))
    assert "<script" not in svg and "href" not in svg


def test_failure_buckets_count_per_category_with_gaps() -> None:
    failures = [
        (T0, "stockout"),
        (T0 + timedelta(minutes=20), "stockout"),
        (T0 + timedelta(minutes=40), "oom"),
        (T0 + timedelta(hours=5), "stockout"),
    ]
    buckets = failure_buckets(failures, max_buckets=8)
    width = buckets[0].end - buckets[0].start
    assert width == timedelta(hours=1)  # 5 h in under 8 buckets: hourly, not half-hourly
    assert len(buckets) == 6
    assert buckets[0].counts == Counter({"stockout": 2, "oom": 1})
    assert [sum(b.counts.values()) for b in buckets] == [3, 0, 0, 0, 0, 1]
    assert all(b.end == n.start for b, n in itertools.pairwise(buckets))
    assert sum(sum(b.counts.values()) for b in buckets) == len(failures)


def test_failure_buckets_widen_for_long_spans_and_handle_nothing() -> None:
    failures = [(T0 + timedelta(days=d), "oom") for d in range(0, 60, 3)]
    buckets = failure_buckets(failures, max_buckets=36)
    assert len(buckets) <= 36
    assert buckets[0].end - buckets[0].start == timedelta(days=7)
    assert failure_buckets([]) == []
    assert "No failure" in failures_svg([])


def test_time_ticks_are_round_and_inside() -> None:
    start, end = T0 + timedelta(minutes=3), T0 + timedelta(minutes=58)
    ticks = time_ticks(start, end)
    assert 1 <= len(ticks) <= 8
    assert all(start <= t <= end for t in ticks)
    assert all(t.second == 0 and t.minute % 5 == 0 for t in ticks)
