"""The predict stage: replay the retry policy over a job's attempts.

It names the root cause (the first initiating failure of the attempt that decided the job's
fate), the final state (read from the logs, or predicted by replaying the policy forward when
the logs stop early, assuming the last failure repeats) and the retry count.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from analyzer.advice import advice_for
from analyzer.diagnosis import (
    AttemptOutcome,
    CascadeFailure,
    Cause,
    Diagnosis,
    JobState,
    SpecCheck,
)
from analyzer.events import Category, Event, EventKind
from analyzer.exitcodes import decode
from analyzer.jobspec import JobSpec
from analyzer.policy import RetryPolicy
from analyzer.records import Origin
from analyzer.timeline import (
    Attempt,
    JobTimeline,
    WorkerTimeline,
    replica_task,
    restarts_by_worker,
)
from analyzer.tracebacks import ExceptionInfo, exception_from_events, parse_text
from analyzer.work import CHECKPOINT_INTERVAL, AttemptWork, attempt_work

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
        signal=_str_field(event, "signal"),
    )


def _nonzero_exits(worker: WorkerTimeline) -> int:
    return sum(1 for e in worker.exits if e.exit_code not in (None, 0))


def _exhausted_worker(attempt: Attempt, policy: RetryPolicy) -> WorkerTimeline | None:
    """A worker that failed again after using up its restarts, if any."""
    budget = policy.worker_restart_budget
    for worker in attempt.workers:
        failed_again = _nonzero_exits(worker) > budget
        # Without exit lines (custom containers), used-up restarts and "Job failed." say it.
        used_up = 0 < budget <= worker.budget_restarts and attempt.has(EventKind.JOB_FAILED)
        if failed_again or used_up:
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
                f" (limit {policy.worker_restart_budget}) and failed again"
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


# Details that are usually the echo of another replica's failure, not a failure of their own.
_CASCADE_DETAILS = frozenset({"nccl-error", "rendezvous-timeout"})
# Without a traceback, detail lines this shortly before a death still count as its evidence.
_DETAIL_WINDOW = timedelta(minutes=2)
# Error codes the platform sets on the job object (platform.md section 6: 3 for a user exit,
# 8 for OOM and quota); other categories are not compared.
_ERROR_CODES = {Category.USER_CODE_EXCEPTION: 3, Category.OOM: 8, Category.QUOTA: 8}


@dataclass(frozen=True, slots=True)
class _Death:
    """When a replica's failing process started and died, and its non-zero exit line."""

    task: str
    run_start: datetime | None
    time: datetime | None
    origin: Origin | None


def _death(attempt: Attempt, task: str, before: datetime | None) -> _Death:
    worker = next((w for w in attempt.workers if w.task == task), None)
    if worker is None:
        return _Death(task, attempt.start, before, None)
    exits = [
        e
        for e in worker.exits
        if e.exit_code not in (None, 0)
        and e.time is not None
        and (before is None or e.time <= before)
    ]
    last = exits[-1] if exits else None
    time = last.time if last is not None else before
    starts = [
        s.time for s in worker.starts if s.time is not None and (time is None or s.time <= time)
    ]
    return _Death(
        task, starts[-1] if starts else attempt.start, time, last.origin if last else None
    )


def _window(attempt: Attempt, death: _Death) -> list[Event]:
    """The dying process's own matched lines, up to a second after its death."""
    end = death.time + timedelta(seconds=1) if death.time is not None else None
    return [
        e
        for e in attempt.events
        if e.task == death.task
        and (death.run_start is None or e.timestamp is None or e.timestamp >= death.run_start)
        and (end is None or e.timestamp is None or e.timestamp <= end)
    ]


def _details(window: list[Event], death: _Death, own: list[Event]) -> list[Event]:
    """Detail events that explain the death: inside its last traceback, or just before it."""
    headers = [e.timestamp for e in window if e.kind is EventKind.TRACEBACK and e.timestamp]
    since = max(headers) if headers else None
    if since is None and death.time is not None:
        since = death.time - _DETAIL_WINDOW
    found = [
        e
        for e in window
        if e.kind is EventKind.DETAIL
        and (since is None or e.timestamp is None or e.timestamp >= since)
    ]
    return found + [e for e in own if e.kind is EventKind.DETAIL]


def _with_origins(origins: tuple[Origin, ...], more: list[Origin | None]) -> tuple[Origin, ...]:
    merged = list(origins)
    merged += [o for o in more if o is not None and o not in merged]
    return tuple(dict.fromkeys(merged))


def _deepen_one(cause: Cause, attempt: Attempt, policy: RetryPolicy) -> tuple[Cause, _Death]:
    """``cause`` with its exception, finer detail and decoded exit code."""
    task = replica_task(cause.replica) if cause.replica else None
    own = [e for e in attempt.events if cause.evidence and e.origin == cause.evidence[0]]
    death = _death(attempt, task, cause.time) if task else _Death("", None, cause.time, None)
    window = _window(attempt, death) if task else []
    exception: ExceptionInfo | None = exception_from_events(window)
    if exception is None:
        exception = next((parse_text(e.text, e.origin) for e in own if "\n" in e.text), None)
    details = _details(window, death, own) if cause.category is not Category.OOM else []
    detail = cause.detail or (details[0].match.detail if details else None)
    decoded = decode(cause.exit_code, cause.signal) if cause.exit_code is not None else None
    if cause.category is Category.OOM:
        detail = detail or "host-oom"
    elif detail is None and decoded is not None and decoded.signal == "SIGKILL" and not exception:
        detail = "killed-no-traceback"
    if (
        detail is None
        and cause.category is Category.USER_CODE_EXCEPTION
        and not any(w.starts for w in attempt.workers)
    ):
        detail = "no-container-output"
    evidence = _with_origins(
        cause.evidence,
        [exception.origin if exception else None, *(e.origin for e in details[:1])],
    )
    deeper = replace(
        cause,
        detail=detail,
        exception=exception,
        evidence=evidence,
        signal=decoded.signal if decoded else cause.signal,
        exit_meaning=decoded.meaning if decoded else None,
        transient=policy.is_transient(cause.exit_code) if decoded else None,
    )
    return deeper, death


def _first_other_failure(attempt: Attempt, death: _Death) -> Event | None:
    """The earliest non-zero exit of another replica before ``death``: the initiating one."""
    if death.time is None:
        return None
    first: tuple[datetime, Origin] | None = None
    for worker in attempt.workers:
        if worker.task == death.task:
            continue
        for gone in worker.exits:
            if gone.exit_code in (None, 0) or gone.time is None:
                continue
            if gone.time < death.time - timedelta(seconds=1) and (
                first is None or gone.time < first[0]
            ):
                first = (gone.time, gone.origin)
    if first is None:
        return None
    return next((e for e in attempt.events if e.origin == first[1]), None)


def _deepen(cause: Cause, attempt: Attempt, policy: RetryPolicy) -> Cause:
    """The root cause in depth; an NCCL or rendezvous failure that followed another
    replica's earlier failure becomes that replica's failure, with the timeout as cascade."""
    deeper, death = _deepen_one(cause, attempt, policy)
    if deeper.detail not in _CASCADE_DETAILS:
        return deeper
    initiating = _first_other_failure(attempt, death)
    if initiating is None:
        return deeper
    root = _cause_from_event(attempt, initiating, Category.USER_CODE_EXCEPTION)
    if initiating.kind is EventKind.WORKER_EXITED:
        root = replace(root, replica=initiating.task)
    root, _ = _deepen_one(root, attempt, policy)
    what = f"exit {root.exit_code}" if root.exit_code is not None else "a failure"
    if root.exception is not None:
        what += f", {root.exception.type}: {root.exception.message}"
    message = (
        f"{root.replica} failed first ({what}); {deeper.replica} then failed with "
        f"{deeper.detail} (a cascade)"
    )
    return replace(
        root,
        message=message if len(message) <= _MESSAGE_LIMIT else message[: _MESSAGE_LIMIT - 1] + "…",
        evidence=_with_origins(root.evidence, list(deeper.evidence)),
        cascade=(CascadeFailure(deeper.replica, deeper.detail, deeper.exit_code, deeper.message),),
    )


def _work(
    attempt: Attempt, verdict: _AttemptVerdict, policy: RetryPolicy
) -> tuple[AttemptWork, Cause | None]:
    cause = verdict.cause
    failure: datetime | None = None
    deep: Cause | None = None
    if cause is not None:
        deep = _deepen(cause, attempt, policy)
        task = replica_task(deep.replica) if deep.replica else None
        failure = _death(attempt, task, deep.time).time if task else deep.time
    failed = verdict.status in ("failed", "cancelled")
    return attempt_work(attempt, failure, failed), deep


def _spec_check(spec: JobSpec, state: JobState, cause: Cause | None) -> SpecCheck | None:
    if spec.state is None:
        return None
    agrees = spec.state == state.value
    expected = _ERROR_CODES.get(cause.category) if cause is not None else None
    if agrees and spec.error_code is not None and expected is not None:
        agrees = spec.error_code == expected
    return SpecCheck(spec.state, spec.error_code, agrees)


def _span_text(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    return f"{minutes // 60}h{minutes % 60:02d}m"


_IN_PROGRESS = {
    "running": JobState.RUNNING,
    "pending": JobState.PENDING,
    "queued": JobState.QUEUED,
}


def diagnose_timeline(
    timeline: JobTimeline, policy: RetryPolicy, spec: JobSpec | None = None, lang: str = "en"
) -> Diagnosis:
    """Replay ``policy`` over ``timeline`` and conclude.

    ``spec`` (the job's own record, ``--job-spec``) changes the policy by its ``scheduling``
    settings, names machine types in the advice, and is compared with the prediction; it is
    ignored when it describes another job.
    """
    if spec is not None and not spec.applies_to(timeline.job_id):
        spec = None
    if spec is not None:
        policy = spec.policy(policy)
    verdicts = [_judge_attempt(a, policy) for a in timeline.attempts]
    works = [_work(a, v, policy) for a, v in zip(timeline.attempts, verdicts, strict=True)]
    attempt_log = tuple(
        AttemptOutcome(
            attempt=a.number,
            start=a.start,
            end=a.end,
            outcome=v.cause.category.value if v.cause else v.status,
            restarts=sum(w.restarts for w in a.workers),
            lost_work=work.lost,
            startup_skew=work.startup_skew,
            startup_race=work.startup_race,
        )
        for a, v, (work, _) in zip(timeline.attempts, verdicts, works, strict=True)
    )
    observed = len(verdicts)
    notes: list[str] = []
    cause = next((deep for _, deep in reversed(works) if deep is not None), None)
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
    for attempt, (work, _) in zip(timeline.attempts, works, strict=True):
        if (
            work.training is not None
            and work.training > CHECKPOINT_INTERVAL
            and work.checkpoint_gap is not None
            and work.checkpoint_gap > CHECKPOINT_INTERVAL
        ):
            notes.append(
                f"attempt {attempt.number} trained {_span_text(work.training)} with"
                f" {_span_text(work.checkpoint_gap)} without a checkpoint: save one at least"
                " every 4 hours so that a restart resumes instead of starting over"
            )
        if work.startup_race and work.startup_skew is not None:
            notes.append(
                f"attempt {attempt.number} failed while workers were still starting"
                f" ({int(work.startup_skew.total_seconds())} s between the first and the last"
                " worker start): a parallel-start race; wait for every peer before"
                " communicating"
            )
    timed = [w.lost for w, _ in works if w.lost is not None]
    check = _spec_check(spec, state, cause) if spec is not None else None
    if check is not None and not check.agrees:
        notes.append(
            f"the job's record says {check.state} (error code {check.error_code}),"
            f" jobdoctor concluded {state.value}"
        )
    return Diagnosis(
        job_id=timeline.job_id,
        state=state,
        observed_final=final,
        attempts=attempts,
        retries=retries,
        worker_restarts=restarts_by_worker(timeline),
        cause=cause,
        advice=advice_for(cause, state, policy, lang, spec=spec),
        attempt_log=attempt_log,
        timeline=timeline,
        notes=tuple(notes),
        lost_work=sum(timed, timedelta()) if timed else None,
        job_spec=check,
    )
