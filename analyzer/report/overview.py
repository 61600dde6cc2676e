"""A fleet at a glance: the order jobs are shown in, the summary line and the one-row table.

Every terminal view of many jobs (the text report, ``--format table``, ``-q``) shows them in
:func:`fleet_order`: failures first, then the jobs still under way, successes last, and the
most recent first within a state, since that is what a person scanning a fleet looks for. The
JSON contract keeps its own order (by job id) for scripts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from analyzer.report.facts import (
    clock,
    counted,
    job_label,
    observed_attempts,
    observed_retries,
    outcome,
    plural,
    predicted_attempts,
    predicted_retries,
    short_state,
)
from analyzer.verdict.diagnosis import Diagnosis, JobState

# Worst first: what failed, what ended without succeeding, what is still under way, success.
_STATE_RANK: dict[JobState, int] = {
    state: rank
    for rank, state in enumerate(
        (
            JobState.FAILED,
            JobState.CANCELLED,
            JobState.EXPIRED,
            JobState.PARTIALLY_SUCCEEDED,
            JobState.CANCELLING,
            JobState.RUNNING,
            JobState.PENDING,
            JobState.QUEUED,
            JobState.PAUSED,
            JobState.UPDATING,
            JobState.UNSPECIFIED,
            JobState.SUCCEEDED,
        )
    )
}
_OLDEST = datetime.min.replace(tzinfo=UTC)


def fleet_order(diagnoses: Iterable[Diagnosis]) -> list[Diagnosis]:
    """``diagnoses`` failures first, most recent first within a state (then by job id), the
    stalled jobs first among those of their state."""
    by_id = sorted(diagnoses, key=lambda d: (d.job_id or "", d.trial or ""))
    by_time = sorted(by_id, key=lambda d: d.last_seen or d.first_seen or _OLDEST, reverse=True)
    # A stalled job is billed until its timeout (platform.md section 2): ahead of the jobs
    # of its state that are not.
    return sorted(
        by_time, key=lambda d: (_STATE_RANK.get(d.state, len(_STATE_RANK)), d.stalled is None)
    )


def summary_line(diagnoses: Sequence[Diagnosis]) -> str:
    """``132 jobs: 59 failed, 70 succeeded (12 after a failure), 3 running (1 stalled); 41
    retries (3 more predicted), 9 worker restarts spent``.

    States are named worst first; a predicted state counts as its state (the table and the
    verdicts say which are predicted). Retries are those the logs show; those the verdicts
    predict beyond them are said apart.
    """
    states = Counter(d.state for d in diagnoses)
    recovered = sum(1 for d in diagnoses if outcome(d) == "recovered")
    stalled = Counter(d.state for d in diagnoses if d.stalled is not None)
    named = ", ".join(
        f"{count} {state.value.removeprefix('JOB_STATE_').lower()}"
        # A success after a failure is counted apart: it cost what a failure costs.
        + (f" ({recovered} after a failure)" if state is JobState.SUCCEEDED and recovered else "")
        # So is a stalled job: billed until its timeout.
        + (f" ({stalled[state]} stalled)" if stalled[state] else "")
        for state, count in sorted(
            states.items(), key=lambda item: _STATE_RANK.get(item[0], len(_STATE_RANK))
        )
    )
    retries = sum(observed_retries(d) for d in diagnoses)
    predicted = sum(predicted_retries(d) for d in diagnoses)
    restarts = sum(sum(d.worker_restarts.values()) for d in diagnoses)
    spent = plural(retries, "retry").replace("retrys", "retries")
    if predicted:
        spent += f" ({predicted} more predicted)"
    if restarts:
        spent += f", {plural(restarts, 'worker restart')}"
    head = plural(len(diagnoses), "job")
    return f"{head}: {named}; {spent} spent" if diagnoses else "0 jobs"


@dataclass(frozen=True, slots=True)
class TableRow:
    """One job in the fleet table, every cell already text."""

    job: str
    state: JobState
    state_text: str
    attempts: str
    retries: str
    restarts: str
    last_seen: str
    cause: str
    detail: str | None = None
    stalled: bool = False


TABLE_HEADER = ("JOB", "STATE", "ATTEMPTS", "RETRIES", "RESTARTS", "LAST SEEN (UTC)", "CAUSE")


def table_rows(diagnoses: Iterable[Diagnosis]) -> list[TableRow]:
    """One row per job, in the order given; a predicted state ends with ``?``, and so do
    predicted attempts and retries, after those the logs show (``2+2?``); a stalled job's
    state is :data:`STALLED_MARK`."""
    rows = []
    for diagnosis in diagnoses:
        job = job_label(diagnosis)
        cause = diagnosis.cause
        if cause is None and diagnosis.recorded_error is not None:
            # The job's own error where no category fits: its first sentence, as the verdict.
            what = "error: " + diagnosis.recorded_error.message.split(". ")[0]
        elif cause is None:
            what = "-"
        else:
            what = cause.category.value + (f" ({cause.detail})" if cause.detail else "")
        detail = cause.detail if cause is not None else None
        if cause is not None and diagnosis.state is JobState.SUCCEEDED:
            # As the verdict line says it: a bare category beside SUCCEEDED reads as the
            # reason the job failed. The detail alone would drop that word, so a cell too
            # narrow is cut in its middle instead.
            what, detail = f"recovered from {what}", None
        rows.append(
            TableRow(
                job=job,
                state=diagnosis.state,
                state_text=_state_text(diagnosis),
                attempts=counted(observed_attempts(diagnosis), predicted_attempts(diagnosis)),
                retries=counted(observed_retries(diagnosis), predicted_retries(diagnosis)),
                restarts=str(sum(diagnosis.worker_restarts.values())),
                last_seen=clock(diagnosis.last_seen),
                cause=what,
                detail=detail,
                stalled=diagnosis.stalled is not None,
            )
        )
    return rows


# The state cell of a stalled job: one word (the column stays one token for awk), RUNNING
# implied (a job that ended is never stalled), the stall observed in the logs.
STALLED_MARK = "STALLED"


def _state_text(diagnosis: Diagnosis) -> str:
    """``FAILED``, ``RUNNING?`` (predicted), or ``STALLED``."""
    if diagnosis.stalled is not None:
        return STALLED_MARK
    return short_state(diagnosis) + ("" if diagnosis.observed_final else "?")


def row_cells(row: TableRow) -> tuple[str, ...]:
    """The cells of ``row`` in :data:`TABLE_HEADER` order."""
    return (
        row.job,
        row.state_text,
        row.attempts,
        row.retries,
        row.restarts,
        row.last_seen,
        row.cause,
    )
