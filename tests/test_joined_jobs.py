"""Several jobs' logs in one text without job ids are several jobs, not one job's retries.

``gcloud ai custom-jobs stream-logs JOB >> logs.txt`` run for each job, or two runs pasted one
after the other: the text names its jobs only by the console link of each failure. Before,
the first link named the whole text, so two failed jobs read as one job with a retry, and a
failed job followed by another run's success read as a job that "recovered" from an error
the platform never retries. The texts here are the simulator's stream-logs writer's.
"""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from analyzer.api import analyze_sources
from analyzer.ingest import MemorySource
from analyzer.simulate import SCENARIOS, simulate
from analyzer.simulate.writers import write


def _written(entries: list[dict[str, Any]], fmt: str) -> bytes:
    out = io.StringIO()
    write(entries, fmt, out)
    return out.getvalue().encode()


def _stream_logs(scenario: str, seed: int) -> bytes:
    return _written(list(simulate(scenario, seed=seed)), "stream-logs")


def _jobs(data: bytes, name: str = "runs.txt") -> list[tuple[Any, ...]]:
    analysis = analyze_sources([MemorySource(data, name)])
    return [
        (d.job_id, d.state.value, d.attempts, d.cause.category.value if d.cause else None)
        for d in sorted(analysis.diagnoses, key=lambda d: (d.first_seen is None, d.first_seen))
    ]


def _alone(scenario: str, seed: int) -> tuple[Any, ...]:
    (job,) = _jobs(_stream_logs(scenario, seed))
    return job


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (("user-code-exit1", 1), ("cuda-oom", 5)),
        (("cuda-oom", 5), ("user-code-exit1", 1)),
        (("missing-module", 2), ("file-not-found", 3)),
    ],
)
def test_two_failed_runs_appended_are_two_jobs_with_their_own_ids(
    first: tuple[str, int], second: tuple[str, int]
) -> None:
    one, two = _alone(*first), _alone(*second)
    assert one[0] and two[0] and one[0] != two[0]  # each names its job by its link
    joined = _stream_logs(*first) + _stream_logs(*second)
    assert sorted(_jobs(joined), key=repr) == sorted([one, two], key=repr)


def test_a_success_after_a_failure_the_platform_does_not_retry_is_another_job() -> None:
    failed = _alone("user-code-exit1", 1)
    succeeded = _alone("success", 3)
    assert failed[1] == "JOB_STATE_FAILED" and succeeded[1] == "JOB_STATE_SUCCEEDED"
    jobs = _jobs(_stream_logs("user-code-exit1", 1) + _stream_logs("success", 3))
    assert [job[1:] for job in jobs] == [failed[1:], succeeded[1:]]
    assert jobs[0][0] == failed[0]  # the part its link is in keeps the id
    assert jobs[1][0] is None  # the other names none


@pytest.mark.parametrize(
    "scenario",
    [
        "transient-sigsegv-retry",
        "stockout-exhausted",
        "internal-error-exhausted",
        "worker-restarts-exhausted",
    ],
)
def test_a_retry_stays_one_job(scenario: str) -> None:
    # Job failed. then a new provisioning, after a failure the platform retries.
    (job,) = _jobs(_stream_logs(scenario, 1))
    assert job[2] > 1


def test_a_retried_run_then_another_run_are_two_jobs() -> None:
    retried = _alone("transient-sigsegv-retry", 1)
    other = _alone("user-code-exit1", 4)
    jobs = _jobs(_stream_logs("transient-sigsegv-retry", 1) + _stream_logs("user-code-exit1", 4))
    assert sorted(jobs, key=repr) == sorted([retried, other], key=repr)


def test_lines_that_carry_their_job_id_are_one_job_whatever_they_show() -> None:
    # A sink's lines name their job: a provisioning after a permanent failure stays that
    # job's (the id proves it), as the lines say.
    entries = list(simulate("user-code-exit1", seed=1))
    job = entries[0]["resource"]["labels"]["job_id"]
    later = [dict(e) for e in simulate("success", seed=3)]
    for entry in later:
        entry["resource"] = {**entry["resource"], "labels": {**entry["resource"]["labels"]}}
        entry["resource"]["labels"]["job_id"] = job
    data = b"".join(json.dumps(e).encode() + b"\n" for e in entries + later)
    (only,) = _jobs(data, "sink.jsonl")
    assert only[0] == job and only[2] == 2


# Every scenario's run read alone, then appended to another's (in both orders, the dates of
# the two runs in either order): the jobs are the two runs, each diagnosed as alone.
_ALONE = sorted(set(SCENARIOS) - {"project-wide", "silent-after-checkpoint"})
_PAIRS = [
    (first, _ALONE[(index + step) % len(_ALONE)], fmt)
    for index, first in enumerate(_ALONE)
    for step, fmt in ((1, "stream-logs"), (7, "stream-logs"), (12, "logs-explorer"))
]


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text[:26] + "+00:00")


def _after(entries: list[dict[str, Any]], start: datetime) -> list[dict[str, Any]]:
    """``entries`` moved in time to begin at ``start`` (the digits past microseconds kept)."""
    shift = start - _time(entries[0]["timestamp"])
    moved = []
    for entry in entries:
        entry = dict(entry)
        for key in ("timestamp", "receiveTimestamp"):
            if key in entry:
                when = _time(entry[key]) + shift
                entry[key] = f"{when:%Y-%m-%dT%H:%M:%S.%f}{entry[key][26:]}"
        moved.append(entry)
    return moved


def _verdicts(data: bytes) -> list[tuple[Any, ...]]:
    analysis = analyze_sources([MemorySource(data, "runs.txt")])
    found = [
        (d.state.value, d.attempts, d.cause.category.value if d.cause else None, bool(d.stalled))
        for d in analysis.diagnoses
    ]
    return sorted(found, key=repr)


@pytest.mark.parametrize(("first", "second", "fmt"), _PAIRS)
def test_two_runs_in_one_text_are_the_two_runs(first: str, second: str, fmt: str) -> None:
    # The second run begins an hour after the first one's last line, or a day before its
    # first (runs appended in either order of their dates). Runs at the same time are told
    # apart by nothing in an id-less text but their order in it, which is not read.
    earlier = list(simulate(first, seed=7))
    begin, end = _time(earlier[0]["timestamp"]), _time(earlier[-1]["timestamp"])
    later = list(simulate(second, seed=8))
    moved = _after(later, end + timedelta(hours=1) if len(first) % 2 else begin - timedelta(days=1))
    one, two = _written(earlier, fmt), _written(moved, fmt)
    assert _verdicts(one + two) == sorted(_verdicts(one) + _verdicts(two), key=repr)
