"""The predict stage: replay the retry policy over a job's attempts.

It names the root cause (the first initiating failure of the attempt that decided the job's
fate), the final state (read from the logs, or predicted by replaying the policy forward when
the logs stop early, assuming the last failure repeats) and the retry count.
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.advice import advice_for
from analyzer.diagnosis import AttemptOutcome, Cause, Diagnosis, JobState
from analyzer.events import Category, Event, EventKind
from analyzer.policy import RetryPolicy
from analyzer.records import Origin
from analyzer.timeline import Attempt, JobTimeline, WorkerTimeline, restarts_by_worker

_MESSAGE_LIMIT = 400


@dataclass(frozen=True, slots=True)
class _AttemptVerdict:
    """What one attempt shows: its status and, when it failed, why."""

    status: str  # succeeded | failed | cancelled | running | pending | queued
    cause: Cause | None
    failed_line: bool  # "Job failed." was written
    exhausted_line: bool  # "Job will not be retried, ..." was written


def _message(event: Event) -> str:
    text = " ".join(event.text.strip().splitlines()[0].split()) if event.text.strip() else ""
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


def _int_field(event: Event, name: str) -> int | None:
    value = event.match.field(name)
    return value if isinstance(value, int) else None


def _str_field(event: Event, name: str) -> str | None:
    value = event.match.field(name)
    return value if isinstance(value, str) and value else None


def _supporting(attempt: Attempt, first: Event, task: str | None) -> tuple[Origin, ...]:
    """The lines that back a cause: the failure, the worker's exit, the job's end."""
    origins = [first.origin]
    for event in attempt.events:
        worker_exit = (
            event.kind is EventKind.WORKER_EXITED
            and task is not None
            and event.task == task
            and (_int_field(event, "exit_code") or 0) != 0
        )
        job_end = event.kind in (EventKind.JOB_FAILED, EventKind.RETRIES_EXHAUSTED)
        if (worker_exit or job_end) and event.origin not in origins:
            origins.append(event.origin)
    return tuple(origins)


def _cause_from_event(attempt: Attempt, event: Event, category: Category) -> Cause:
    replica = _str_field(event, "replica") or _str_field(event, "pool")
    task = event.task if event.kind is EventKind.WORKER_EXITED else replica
    return Cause(
        category=category,
        rule=event.match.rule,
        lang=event.match.lang,
        replica=replica or (event.task if event.kind is EventKind.WORKER_EXITED else None),
        exit_code=_int_field(event, "exit_code"),
        region=_str_field(event, "region"),
        message=_message(event),
        evidence=_supporting(attempt, event, task),
        attempt=attempt.number,
        detail=event.match.detail,
        time=event.timestamp,
    )


def _nonzero_exits(worker: WorkerTimeline) -> int:
    return sum(1 for e in worker.exits if e.exit_code not in (None, 0))


def _exhausted_worker(attempt: Attempt, policy: RetryPolicy) -> WorkerTimeline | None:
    """A worker that failed again after using up its restarts, if any."""
    for worker in attempt.workers:
        failed_again = _nonzero_exits(worker) > policy.max_worker_restarts
        if worker.budget_restarts >= policy.max_worker_restarts and (
            failed_again or attempt.has(EventKind.JOB_FAILED)
        ):
            return worker
    return None


def _judge_attempt(attempt: Attempt, policy: RetryPolicy) -> _AttemptVerdict:
    failed_line = attempt.has(EventKind.JOB_FAILED)
    exhausted_line = attempt.has(EventKind.RETRIES_EXHAUSTED)
    if attempt.has(EventKind.JOB_SUCCEEDED):
        return _AttemptVerdict("succeeded", None, failed_line, exhausted_line)
    cause: Cause | None = None
    errors = attempt.errors
    if errors:
        first = errors[0]
        if first.match.category is not None:
            cause = _cause_from_event(attempt, first, first.match.category)
    if cause is None and (worker := _exhausted_worker(attempt, policy)) is not None:
        last_exit = next((e for e in reversed(worker.exits) if e.exit_code), None)
        origin = last_exit.origin if last_exit else worker.starts[-1].origin
        cause = Cause(
            category=Category.WORKER_RESTARTS_EXHAUSTED,
            rule="jobdoctor.worker-restarts-exhausted",
            lang="en",
            replica=worker.task,
            exit_code=last_exit.exit_code if last_exit else None,
            region=None,
            message=(
                f"{worker.task} restarted {worker.budget_restarts} times"
                f" (limit {policy.max_worker_restarts}) and failed again"
            ),
            evidence=tuple(o for o in (origin,) if o is not None),
            attempt=attempt.number,
            time=last_exit.time if last_exit else None,
        )
    if cause is None and failed_line:
        # No service message: the runner's own non-zero exit is the best evidence left.
        exit_event = next(
            (
                e
                for e in attempt.events
                if e.kind is EventKind.WORKER_EXITED and (_int_field(e, "exit_code") or 0) != 0
            ),
            None,
        )
        if exit_event is not None:
            cause = _cause_from_event(attempt, exit_event, Category.USER_CODE_EXCEPTION)
    if attempt.has(EventKind.JOB_CANCELLED):
        cancel = attempt.first(EventKind.JOB_CANCELLED)
        assert cancel is not None
        return _AttemptVerdict(
            "cancelled",
            cause or _cause_from_event(attempt, cancel, Category.CANCELLED),
            failed_line,
            exhausted_line,
        )
    if cause is not None or failed_line or exhausted_line:
        return _AttemptVerdict("failed", cause, failed_line, exhausted_line)
    if attempt.has(EventKind.JOB_RUNNING) or any(w.starts for w in attempt.workers):
        return _AttemptVerdict("running", None, False, False)
    if attempt.events and all(e.kind is EventKind.JOB_QUEUED for e in attempt.events):
        return _AttemptVerdict("queued", None, False, False)
    return _AttemptVerdict("pending", None, False, False)


_IN_PROGRESS = {
    "running": JobState.RUNNING,
    "pending": JobState.PENDING,
    "queued": JobState.QUEUED,
}


def diagnose_timeline(timeline: JobTimeline, policy: RetryPolicy) -> Diagnosis:
    """Replay ``policy`` over ``timeline`` and conclude."""
    verdicts = [_judge_attempt(a, policy) for a in timeline.attempts]
    attempt_log = tuple(
        AttemptOutcome(
            attempt=a.number,
            start=a.start,
            end=a.end,
            outcome=v.cause.category.value if v.cause else v.status,
            restarts=sum(w.restarts for w in a.workers),
        )
        for a, v in zip(timeline.attempts, verdicts, strict=True)
    )
    observed = len(verdicts)
    notes: list[str] = []
    cause = next((v.cause for v in reversed(verdicts) if v.cause is not None), None)
    if not verdicts:
        state, final, attempts = JobState.UNSPECIFIED, False, 0
        notes.append("no lifecycle or failure message of this job was found")
    else:
        last = verdicts[-1]
        attempts = observed
        if last.status == "succeeded":
            state, final = JobState.SUCCEEDED, True
        elif last.status == "cancelled":
            state, final = JobState.CANCELLED, True
        elif last.status == "failed":
            state = JobState.FAILED
            if last.exhausted_line:
                final = True
            elif last.cause is None:
                final = False
                notes.append("the attempt failed without a failure message the rules know")
            else:
                allowed = policy.attempts_allowed(last.cause.category, last.cause.exit_code)
                if observed >= allowed:
                    final = last.failed_line
                else:
                    final = False
                    attempts = allowed
                    notes.append(
                        f"logs end after attempt {observed}; the policy allows {allowed}"
                        f" attempts for {last.cause.category.value}: predicted assuming"
                        " the failure repeats"
                    )
                if not last.failed_line and final is False and observed >= allowed:
                    notes.append("logs end before the job's last line; outcome predicted")
        else:
            state, final = _IN_PROGRESS[last.status], False
            notes.append("logs end while the job is still in progress")
    retries = max(0, attempts - 1)
    return Diagnosis(
        job_id=timeline.job_id,
        state=state,
        observed_final=final,
        attempts=attempts,
        retries=retries,
        worker_restarts=restarts_by_worker(timeline),
        cause=cause,
        advice=advice_for(cause, state, policy),
        attempt_log=attempt_log,
        timeline=timeline,
        notes=tuple(notes),
    )
