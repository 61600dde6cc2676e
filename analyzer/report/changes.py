"""What changed between two diagnoses of the same job (for ``diagnose --follow``)."""

from __future__ import annotations

from datetime import datetime

from analyzer.ingest.records import replica_task
from analyzer.verdict.diagnosis import Diagnosis, stall_phrase
from analyzer.verdict.hangs import duration_words
from analyzer.verdict.stall import Stall


def describe_changes(before: Diagnosis | None, after: Diagnosis) -> list[str]:
    """Human sentences for what ``after`` shows that ``before`` did not, oldest first."""
    lines: list[str] = []
    seen_attempts = len(before.attempt_log) if before else 0
    for attempt in after.attempt_log[seen_attempts:]:
        lines.append(f"attempt {attempt.attempt} started")
    old_restarts = dict(before.worker_restarts) if before else {}
    for worker, count in after.worker_restarts.items():
        if count > old_restarts.get(worker, 0):
            lines.append(f"{worker} restarted ({count} so far)")
    old_cause = before.cause if before else None
    if after.cause is not None and (
        old_cause is None
        or (old_cause.evidence, old_cause.category) != (after.cause.evidence, after.cause.category)
    ):
        lines.append(f"failure: {after.cause.category.value}: {after.cause.message}")
    lines += stall_changes(before.stalled if before else None, after)
    old_verdict = (before.state, before.observed_final, before.attempts) if before else None
    verdict = (after.state, after.observed_final, after.attempts)
    if verdict != old_verdict:
        how = "final" if after.observed_final else "predicted"
        state = after.state.value.removeprefix("JOB_STATE_")
        lines.append(f"{how}: {state} after {after.attempts} attempt(s), {after.retries} retries")
    return lines


def stall_changes(before: Stall | None, after: Diagnosis) -> list[str]:
    """A stall that begins (a worker's silence crossed its threshold, or a collective timed
    out), grows (another worker falls silent) or ends (the silent workers write again, or
    the job ended), in sentences."""
    stall = after.stalled
    if stall is not None and before is None:
        return [stall_phrase(stall)]
    if stall is not None and before is not None:
        was = {w.replica for w in before.workers}
        new = [w for w in stall.workers if w.replica not in was]
        return [f"{w.replica} silent too ({duration_words(w.silent_for)})" for w in new]
    if before is None:
        return []
    if after.observed_final:
        state = after.state.value.removeprefix("JOB_STATE_")
        return [f"stall over: the job ended ({state})"]
    back = _writing_again(before, after)
    if back:
        return [f"stall over: {', '.join(back)} {'writes' if len(back) == 1 else 'write'} again"]
    return ["stall over: no worker is silent past its rhythm any more"]


def _writing_again(before: Stall, after: Diagnosis) -> list[str]:
    """The workers silent in ``before`` whose own lines in ``after`` go on past their last."""
    latest: dict[str, datetime] = {}
    for attempt in after.timeline.attempts:
        for worker in attempt.workers:
            if worker.own_last is not None:
                latest[worker.task] = worker.own_last
    back = []
    for silent in before.workers:
        seen = latest.get(replica_task(silent.replica))
        if seen is not None and seen > silent.last_line:
            back.append(silent.replica)
    return back
