"""What changed between two diagnoses of the same job (for ``diagnose --follow``)."""

from __future__ import annotations

from analyzer.verdict.diagnosis import Diagnosis


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
    old_verdict = (before.state, before.observed_final, before.attempts) if before else None
    verdict = (after.state, after.observed_final, after.attempts)
    if verdict != old_verdict:
        how = "final" if after.observed_final else "predicted"
        state = after.state.value.removeprefix("JOB_STATE_")
        lines.append(f"{how}: {state} after {after.attempts} attempt(s), {after.retries} retries")
    return lines
