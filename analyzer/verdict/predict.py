"""The predict stage: replay the retry policy over a job's attempts.

It judges each attempt (:class:`AttemptStatus`, and its cause from :mod:`analyzer.verdict.causes`),
names the root cause in depth (:mod:`analyzer.verdict.rootcause`: the first initiating failure of
the
attempt that decided the job's fate), the final state (read from the logs, or predicted by
replaying the policy forward when the logs stop early, assuming the last failure repeats) and
the retry count. Each decision says which fact of platform.md it implements.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from analyzer.classify.tracebacks import (
    HEADER,
    ExceptionInfo,
    exception_from_events,
    last_exception_line,
    open_traceback,
)
from analyzer.ingest.records import SERVICE_TASK, InputStats, replica_task
from analyzer.rulebook.events import (
    AFTER_DEATH,
    CHECKPOINT_INTERVAL,
    LIFECYCLE_KINDS,
    Category,
    Event,
    EventKind,
    Writer,
)
from analyzer.timeline.attempts import (
    Attempt,
    JobTimeline,
    WorkerTimeline,
    has_container_stream,
    is_primary,
    restarts_by_worker,
    steps_down_up,
)
from analyzer.timeline.exitcodes import decode
from analyzer.verdict.advice import AdviceFacts, advice_for, builtin_note_rows, cause_finding
from analyzer.verdict.causes import (
    cause_from_event,
    first_cause,
    int_field,
    merged_exit_lines,
    restarts_exhausted,
    str_field,
)
from analyzer.verdict.diagnosis import (
    AttemptOutcome,
    Cause,
    Diagnosis,
    JobState,
    RecordedError,
    SpecCheck,
)
from analyzer.verdict.findings import (
    FieldValue,
    Finding,
    FindingKind,
    Findings,
    Provenance,
    collect,
    finding,
)
from analyzer.verdict.findings_job import (
    interrupted_wait,
    sdk_state_only,
    strongest,
)
from analyzer.verdict.hangs import InputEnd, StallReading, read_stall, unknown_state_timeout
from analyzer.verdict.jobspec import JobSpec
from analyzer.verdict.policy import RetryPolicy
from analyzer.verdict.rootcause import deepen, find_death
from analyzer.verdict.work import AttemptWork, attempt_work


class AttemptStatus(StrEnum):
    """How one attempt stands, as its lines show it (``attempt_log[].outcome`` when it has no
    cause)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    RUNNING = "running"
    PENDING = "pending"
    QUEUED = "queued"
    REFUSED = "refused"  # the API refused to create the job: no attempt ran


@dataclass(frozen=True, slots=True)
class _AttemptVerdict:
    """What one attempt shows: its status and, when it failed, why.

    ``failed_line``: the service wrote ``Job failed.``; ``exhausted_line``: it wrote ``Job will
    not be retried, ...``; ``recorded_end``: a tool reading the job object (the SDK) printed
    its final state or error code, so the job's fate is observed even without those lines.
    """

    status: AttemptStatus
    cause: Cause | None
    failed_line: bool
    exhausted_line: bool
    recorded_end: bool = False
    error_code: int | None = None
    running: bool = False  # the attempt reached JOB_STATE_RUNNING (or a worker started)
    refusal: str | None = None  # the API's status when it refused to create the job
    # Who wrote what decided the status (None: nothing did; issue 27, point 5).
    source: Provenance | None = None


# The SDK's JobState names for the attempt statuses they end or show.
_RECORDED_STATUS = {
    "SUCCEEDED": AttemptStatus.SUCCEEDED,
    "FAILED": AttemptStatus.FAILED,
    "CANCELLED": AttemptStatus.CANCELLED,
    "CANCELLING": AttemptStatus.CANCELLED,
    "RUNNING": AttemptStatus.RUNNING,
    "PENDING": AttemptStatus.PENDING,
    "QUEUED": AttemptStatus.QUEUED,
}
_FINAL_STATUSES = frozenset(
    {AttemptStatus.SUCCEEDED, AttemptStatus.FAILED, AttemptStatus.CANCELLED}
)
# Kinds that show a job was created and got going: with any of them, an API refusal in the
# same text is about something else (another request), not this job's creation.
_PROGRESS_KINDS = frozenset(
    {
        EventKind.ATTEMPT_STARTED,
        EventKind.JOB_PROVISIONING,
        EventKind.JOB_PREPARING,
        EventKind.JOB_RUNNING,
        EventKind.WORKER_STARTED,
        EventKind.WORKER_EXITED,
        EventKind.JOB_FAILED,
        EventKind.JOB_SUCCEEDED,
        EventKind.TEARDOWN,
    }
)


def _exhausted_worker(attempt: Attempt, policy: RetryPolicy) -> WorkerTimeline | None:
    """A worker that failed again after using up its restarts, if any.

    platform.md section 2: up to ``max_worker_restarts`` restarts per worker; VM-maintenance
    moves (an exit followed by a start on another VM) are not charged (section 9).
    """
    budget = policy.worker_restart_budget
    for worker in attempt.workers:
        failed_again = len(worker.failures) > budget
        # Without exit lines (custom containers), used-up restarts and "Job failed." say it.
        used_up = 0 < budget <= worker.budget_restarts and attempt.has(EventKind.JOB_FAILED)
        if failed_again or used_up:
            return worker
    return None


def _primary_succeeded(attempt: Attempt) -> bool:
    """The primary replica exited 0 (``Task completed. Exit code (0). Exit reason
    (SUCCEEDED)``) and no failure of the job followed: the job succeeded even when the
    service's final lines are missing (platform.md sections 2 and 9)."""
    events = attempt.events  # in time order
    for index, event in enumerate(events):
        if (
            event.kind is EventKind.WORKER_EXITED
            and is_primary(event.task)
            and int_field(event, "exit_code") == 0
        ):
            return not any(
                e.kind in (EventKind.JOB_FAILED, EventKind.ERROR) for e in events[index + 1 :]
            )
    return False


@dataclass(frozen=True, slots=True)
class _Recorded:
    """The job object's state and error code as a tool printed them in one attempt, and the
    line that gave the state."""

    status: AttemptStatus | None = None
    code: int | None = None
    event: Event | None = None


def _recorded(attempt: Attempt) -> _Recorded:
    """The job object's state and error code, as the SDK printed them in this attempt
    (platform.md section 10)."""
    found = _Recorded()
    for event in attempt.events:
        if event.kind is EventKind.JOB_STATE:
            status = _RECORDED_STATUS.get(str(event.match.field("state") or ""))
            if status is not None:
                found = _Recorded(status, found.code, event)
        elif event.kind is EventKind.JOB_ERROR and not _error_message(event):
            # (The error's message, "Replicas low on disk: workerpool0", is the failure
            # itself, not a tool's record of how the job ended: _judge_attempt reads it.)
            code = _error_code(event, found.code)
            found = _Recorded(_sdk_error_status(found.status, code), code, event)
    return found


def _error_code(event: Event, before: int | None) -> int | None:
    value = event.match.field("code")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return before


def _sdk_error_status(status: AttemptStatus | None, code: int | None) -> AttemptStatus:
    """platform.md section 10: the SDK raises "Job failed with:" for a job that ended FAILED
    or CANCELLED alike (aiplatform jobs._JOB_ERROR_STATES): after the CANCELLED state it
    printed, or with error code 1 (google.rpc CANCELLED), the job was cancelled."""
    if status is not AttemptStatus.CANCELLED and code != _RPC_CANCELLED:
        return AttemptStatus.FAILED
    return AttemptStatus.CANCELLED


# google.rpc.Code CANCELLED: the job object's error code of a cancelled job.
_RPC_CANCELLED = 1


# The API's status as the Python SDK names its exceptions (google.api_core.exceptions).
_SDK_STATUS = {"ResourceExhausted": "RESOURCE_EXHAUSTED", "InvalidArgument": "INVALID_ARGUMENT"}


def _refusal(attempt: Attempt) -> tuple[str | None, Cause | None]:
    """Whether the API refused to create the job, and the cause when it was quota.

    platform.md section 9: HTTP 429 / RESOURCE_EXHAUSTED (or legacy "Quota failure for
    project ...") at creation means the job was never created: no attempt, nothing retried.
    Other refusals (INVALID_ARGUMENT) are no category of the contract: no cause, the status
    is told. Returns the refusal's status (None: not refused) and the quota cause.
    """
    refused = attempt.first(EventKind.CREATION_REFUSED)
    if refused is None or any(e.kind in _PROGRESS_KINDS for e in attempt.events):
        return None, None
    if any(e.match.category is not Category.QUOTA for e in attempt.errors):
        return None, None  # another failure is in the text: the refusal is not this job's story
    quota = next((e for e in attempt.errors if e.match.category is Category.QUOTA), None)
    sdk = str_field(refused, "sdk_status")
    status = (
        str_field(refused, "status")
        or str_field(refused, "pipeline_status")
        or ("PERMISSION_DENIED" if str_field(refused, "denied") else None)
        or (_SDK_STATUS.get(sdk.split(":")[0]) if sdk else None)
        or "RESOURCE_EXHAUSTED"
    )
    if quota is None and status != "RESOURCE_EXHAUSTED":
        return status, None
    cause = cause_from_event(attempt, quota or refused, Category.QUOTA)
    return "RESOURCE_EXHAUSTED", replace(cause, detail="refused-at-creation")


@dataclass(frozen=True, slots=True)
class _AttemptLines:
    """What one attempt's lines say of its end, read once (_judge_attempt)."""

    failed_line: bool  # the service wrote "Job failed."
    exhausted_line: bool  # it wrote "Job will not be retried, ..."
    recorded: _Recorded
    # platform.md section 2: the job is RUNNING once all workers are available; a worker's
    # own start line shows at least that one ran.
    running: bool

    @classmethod
    def read(cls, attempt: Attempt) -> _AttemptLines:
        return cls(
            attempt.has(EventKind.JOB_FAILED),
            attempt.has(EventKind.RETRIES_EXHAUSTED),
            _recorded(attempt),
            attempt.has(EventKind.JOB_RUNNING) or any(w.starts for w in attempt.workers),
        )

    def verdict(
        self, status: AttemptStatus, cause: Cause | None, source: Provenance | None
    ) -> _AttemptVerdict:
        return _AttemptVerdict(
            status,
            cause,
            self.failed_line,
            self.exhausted_line,
            self.recorded.status in _FINAL_STATUSES,
            self.recorded.code,
            self.running,
            source=source,
        )


def _judge_attempt(attempt: Attempt, policy: RetryPolicy) -> _AttemptVerdict:
    """How one attempt stands and, when it failed, why: refused at creation, succeeded,
    cancelled, failed, else still in progress (platform.md sections 2, 4, 9 and 10)."""
    lines = _AttemptLines.read(attempt)
    refused, refusal = _refusal(attempt)
    if refused is not None:
        found = lines.verdict(AttemptStatus.REFUSED, refusal, Provenance.SDK)
        return replace(found, refusal=refused)
    success = _success(attempt, lines)
    if success is not None:
        return lines.verdict(AttemptStatus.SUCCEEDED, None, success)
    cause = _attempt_cause(attempt, policy, lines)
    cancelled = _cancelled(attempt, lines, cause)
    if cancelled is not None:
        return cancelled
    failed = _failure_source(attempt, lines, cause)
    if failed is not None:
        return lines.verdict(AttemptStatus.FAILED, cause, failed)
    return _in_progress(attempt, lines)


def _success(attempt: Attempt, lines: _AttemptLines) -> Provenance | None:
    """Who says the attempt succeeded: the service's line, the SDK's recorded state, or the
    primary's exit 0 with no failure after it (platform.md sections 2 and 9)."""
    said = [e for e in attempt.events if e.kind is EventKind.JOB_SUCCEEDED]
    if lines.recorded.status is AttemptStatus.SUCCEEDED and lines.recorded.event is not None:
        said.append(lines.recorded.event)
    if said:
        return strongest(said)
    if not lines.failed_line and _primary_succeeded(attempt):
        return Provenance.RUNNER
    return None


def _attempt_cause(attempt: Attempt, policy: RetryPolicy, lines: _AttemptLines) -> Cause | None:
    """The attempt's first failure; else a worker that used up its restarts (section 2);
    else, in a failed attempt without a service message, the runner's own non-zero exit."""
    cause = first_cause(attempt)
    if cause is None and (worker := _exhausted_worker(attempt, policy)) is not None:
        cause = restarts_exhausted(attempt, worker, policy)
    if cause is None and (lines.failed_line or lines.recorded.status is AttemptStatus.FAILED):
        merged = merged_exit_lines(attempt)
        exit_event = next(
            (
                e
                for e in attempt.events
                if e.kind is EventKind.WORKER_EXITED
                and (int_field(e, "exit_code") or 0) != 0
                and e.origin not in merged
            ),
            None,
        )
        if exit_event is not None:
            cause = cause_from_event(attempt, exit_event, Category.USER_CODE_EXCEPTION)
    return cause


def _cancelled(
    attempt: Attempt, lines: _AttemptLines, cause: Cause | None
) -> _AttemptVerdict | None:
    """A cancelled attempt: the service's line, else the state the SDK printed, else its
    error with code 1 (platform.md section 10)."""
    cancel = attempt.first(EventKind.JOB_CANCELLED)
    if cancel is None and lines.recorded.status is not AttemptStatus.CANCELLED:
        return None
    said = [
        e
        for e in attempt.events
        if e.kind is EventKind.JOB_STATE
        and _RECORDED_STATUS.get(str(e.match.field("state") or "")) is AttemptStatus.CANCELLED
    ]
    fallback = cancel or (said[-1] if said else attempt.events[-1])
    evidence = [cancel] if cancel is not None else [lines.recorded.event or fallback]
    return lines.verdict(
        AttemptStatus.CANCELLED,
        cause or cause_from_event(attempt, fallback, Category.CANCELLED),
        strongest(e for e in evidence if e is not None),
    )


def _failure_source(
    attempt: Attempt, lines: _AttemptLines, cause: Cause | None
) -> Provenance | None:
    """Who says the attempt failed (None: nothing does): the service's "Job failed." or
    "Job will not be retried", the SDK's record, the failure message of the cause, or the
    job's own error message that no category fits (platform.md sections 4, 6 and 10)."""
    said = [
        e
        for e in attempt.events
        if e.kind in (EventKind.JOB_FAILED, EventKind.RETRIES_EXHAUSTED) or _error_message(e)
    ]
    if lines.recorded.status is AttemptStatus.FAILED and lines.recorded.event is not None:
        said.append(lines.recorded.event)
    if cause is not None:
        said += [e for e in attempt.events if e.origin in cause.evidence[:1]]
    if said:
        return strongest(said)
    return Provenance.SERVICE if cause is not None else None


def _in_progress(attempt: Attempt, lines: _AttemptLines) -> _AttemptVerdict:
    """An attempt without an end: running once a worker ran or the service or SDK said so,
    else the state the SDK printed, else queued or pending (platform.md section 2)."""
    if lines.running:
        said = [
            e
            for e in attempt.events
            if e.kind is EventKind.JOB_RUNNING or (e.kind is EventKind.WORKER_STARTED)
        ]
        if lines.recorded.status is AttemptStatus.RUNNING and lines.recorded.event is not None:
            said.append(lines.recorded.event)
        source = strongest(said) if said else Provenance.RUNNER
        return lines.verdict(AttemptStatus.RUNNING, None, source)
    if lines.recorded.status is not None:
        event = lines.recorded.event
        return lines.verdict(lines.recorded.status, None, strongest([event] if event else []))
    if attempt.events and all(e.kind is EventKind.JOB_QUEUED for e in attempt.events):
        return lines.verdict(AttemptStatus.QUEUED, None, strongest(attempt.events))
    return lines.verdict(AttemptStatus.PENDING, None, None)


# Error codes the platform sets on the job object (platform.md section 6: 3 for a user exit,
# 8 for OOM and quota); other categories are not compared.
_ERROR_CODES = {Category.USER_CODE_EXCEPTION: 3, Category.OOM: 8, Category.QUOTA: 8}


def _work(
    attempt: Attempt, verdict: _AttemptVerdict, policy: RetryPolicy, stream: bool
) -> tuple[AttemptWork, Cause | None]:
    cause = verdict.cause
    failure: datetime | None = None
    deep: Cause | None = None
    if cause is not None:
        deep = deepen(cause, attempt, policy, stream)
        task = replica_task(deep.replica) if deep.replica else None
        failure = find_death(attempt, task, deep.time).time if task else deep.time
    failed = verdict.status in (AttemptStatus.FAILED, AttemptStatus.CANCELLED)
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
    AttemptStatus.RUNNING: JobState.RUNNING,
    AttemptStatus.PENDING: JobState.PENDING,
    AttemptStatus.QUEUED: JobState.QUEUED,
}
# The job object's error codes (google.rpc.Code) the SDK prints, in words. 8 is any resource
# run out: host memory, a quota, the boot disk ("Replicas low on disk"). 1 is a cancelled
# job's (platform.md section 10: the SDK raises "Job failed with: code: 1 message: CANCELED").
_ERROR_CODE_NAMES = {
    1: "CANCELLED: the job was cancelled",
    3: "INVALID_ARGUMENT: an error in the user's code or settings",
    8: "RESOURCE_EXHAUSTED: a resource ran out, such as memory, disk or a quota",
    9: "FAILED_PRECONDITION",
    13: "INTERNAL: an error on the platform's side",
    14: "UNAVAILABLE",
}


def _fate_finding(why: str, **fields: FieldValue) -> Finding:
    """How the job's state was reached (``why``: a note row's ``fate.why``), with what the
    note says of it (platform.md sections 2, 6, 8 and 9; rules/advice/notes.yaml)."""
    return finding(FindingKind.FATE, Provenance.SERVICE, (), why=why, **fields)


# platform.md section 8 (its text is note_texts.yaml's in-progress; kept for the tests).
IN_PROGRESS_NOTE = "logs end while the job is still in progress"
# platform.md section 9: the runner's start lines and "Task completed. Exit code (N)" mark a
# process on some worker; only the primary's exit 0 is the job's success. A print without task
# names (gcloud's value(timestamp,jsonPayload.message)) shows neither which one (issue 29).
# (The note's text is note_texts.yaml's taskless; kept here for the tests that look for it.)
TASKLESS_NOTE = (
    "the input names no task: its workers' start and exit lines cannot tell which replica"
    " exited or whether the primary finished, and no line of the service says how the job"
    " stands: its state is unknown"
)


@dataclass(frozen=True, slots=True)
class _Fate:
    """The job's state, whether it was read from the input, and its attempts in all."""

    state: JobState
    final: bool
    attempts: int
    # How the state was reached, each a fate finding the note rows say (rules/advice/notes.yaml).
    notes: tuple[Finding, ...] = ()
    # Where the state was read (Provenance.source), "predicted" when replayed forward, None
    # when unknown (the JSON's state_source).
    source: str | None = None


# A key and its quotes around a value, as a describe's YAML or a JSON body writes the job's
# error message (`  message: 'Replicas low on disk: ...`): not the message's own text.
_KEYED = re.compile(r"""^\s*(?:-\s*)?(?:"?(?:message|errorMessage)"?\s*:\s*)?["']?""")


def _error_message(event: Event) -> bool:
    """Whether ``event`` is the job object's error message (a ``job_error`` rule naming the
    pool, or capturing the ``message``), not the SDK's bare record that the job failed."""
    return event.kind is EventKind.JOB_ERROR and bool(
        str_field(event, "pool") or str_field(event, "message")
    )


def recorded_error(timeline: JobTimeline) -> RecordedError | None:
    """The job object's own error, quoted, when a rule read it as the job's error message in
    the last attempt (a ``job_error`` rule naming a pool, such as "Replicas low on disk:
    workerpool0", or capturing the ``message``, a legacy describe's ``errorMessage:``): the
    fact a describe gives when no category fits it. The SDK's bare ``Job failed with:``
    carries neither and is no such message."""
    if not timeline.attempts:
        return None
    found = next(
        (e for e in reversed(timeline.attempts[-1].events) if _error_message(e)),
        None,
    )
    if found is None:
        return None
    text = str_field(found, "message") or found.text.strip()
    text = " ".join(text.splitlines()[0].split()) if text.strip() else ""
    value = _KEYED.sub("", text)
    message = value.rstrip("'\",")
    opened = _KEYED.match(text)
    quote = opened.group(0)[-1:] if opened else ""
    if quote in ("'", '"') and not text.rstrip(",").endswith(quote):
        # A quoted value whose closing quote is not on its line: YAML folded the rest onto
        # the next one, which no rule reads: say the quote goes on.
        message += " …"
    return RecordedError(message, found.origin, found.match.rule, str_field(found, "pool"))


_PREDICTED = "predicted"


def _read_from(verdict: _AttemptVerdict) -> str:
    """The state_source of a state read off ``verdict``'s lines: the user's own output tells
    no state of the platform's (a user's error rule): a state resting on it is inferred."""
    source = verdict.source
    if source is None or source is Provenance.USER:
        return _PREDICTED
    return source.source


def _fate(timeline: JobTimeline, verdicts: list[_AttemptVerdict], policy: RetryPolicy) -> _Fate:
    """Replay the policy over the attempts' verdicts (platform.md sections 2 and 8)."""
    if not verdicts or not _shows_lifecycle(timeline):
        # Section 9: a verdict follows from evidence; a worker's traceback alone says
        # nothing of how the job stands.
        return _Fate(
            JobState.UNSPECIFIED,
            False,
            0,
            (_fate_finding("unknown-state"),),
        )
    last = verdicts[-1]
    if last.status is AttemptStatus.REFUSED:
        # Section 9: refused at creation, so no job exists: no attempt, nothing to retry.
        return _Fate(
            JobState.UNSPECIFIED,
            True,
            0,
            (_fate_finding("refused", refusal=last.refusal),),
            _read_from(last),
        )
    if last.status is AttemptStatus.SUCCEEDED:
        return _Fate(JobState.SUCCEEDED, True, len(verdicts), source=_read_from(last))
    if last.status is AttemptStatus.CANCELLED:
        return _Fate(JobState.CANCELLED, True, len(verdicts), source=_read_from(last))
    if last.status is not AttemptStatus.FAILED:
        return _still_going(timeline, last, len(verdicts))
    if last.exhausted_line:
        # "Job will not be retried, max error retry attempts reached." ends the last attempt.
        return _Fate(JobState.FAILED, True, len(verdicts), source=_read_from(last))
    if last.cause is None:
        return _failed_without_cause(timeline, verdicts)
    return _failed_replayed(timeline, verdicts, policy, last.cause)


def _failed_without_cause(timeline: JobTimeline, verdicts: list[_AttemptVerdict]) -> _Fate:
    """A failed job whose failure no category fits: the job's own error quoted when a tool
    printed it (platform.md section 6), else the bare failure."""
    last, observed = verdicts[-1], len(verdicts)
    error = recorded_error(timeline)
    if error is None:
        return _Fate(
            JobState.FAILED,
            last.recorded_end,
            observed,
            (_fate_finding("no-message"),),
            _read_from(last) if last.recorded_end else _PREDICTED,
        )
    notes = [_fate_finding("own-error", message=error.message, origin=str(error.origin))]
    final = last.recorded_end or last.failed_line
    lifecycle = any(e.kind in LIFECYCLE_KINDS for a in timeline.attempts for e in a.events)
    if not final:
        notes.append(_fate_finding("predicted"))
    elif not lifecycle:
        notes.append(_fate_finding("record-not-log"))
    return _Fate(
        JobState.FAILED, final, observed, tuple(notes), _read_from(last) if final else _PREDICTED
    )


def _failed_replayed(
    timeline: JobTimeline, verdicts: list[_AttemptVerdict], policy: RetryPolicy, cause: Cause
) -> _Fate:
    """A failed last attempt with a cause: the job's end when its record or the service
    says so, else predicted by replaying the policy forward, assuming the failure repeats
    (platform.md sections 2 and 8). disableRetries only stops retries of internal errors
    once the job was running."""
    last, observed = verdicts[-1], len(verdicts)
    allowed = policy.attempts_allowed(cause.category, cause.exit_code, last.running)
    if last.recorded_end:
        # The SDK read the job object: it has FAILED, whatever the lines in between show.
        if observed < allowed and not _shows_attempts(timeline):
            return _Fate(
                JobState.FAILED,
                True,
                allowed,
                (_fate_finding("record-attempts", allowed=allowed, category=cause.category.value),),
                _read_from(last),
            )
        return _Fate(JobState.FAILED, True, observed, source=_read_from(last))
    if observed < allowed:
        return _Fate(
            JobState.FAILED,
            False,
            allowed,
            (
                _fate_finding(
                    "replayed", observed=observed, allowed=allowed, category=cause.category.value
                ),
            ),
            _PREDICTED,
        )
    if last.failed_line:
        return _Fate(JobState.FAILED, True, observed, source=_read_from(last))
    return _Fate(
        JobState.FAILED,
        False,
        observed,
        (_fate_finding("predicted"),),
        _PREDICTED,
    )


def _service_lifecycle(timeline: JobTimeline) -> bool:
    """Whether the input holds any of the service's lifecycle messages of the job."""
    return any(
        e.kind in LIFECYCLE_KINDS and e.match.writer is Writer.SERVICE
        for a in timeline.attempts
        for e in a.events
    )


def refused_at_creation(verdicts: Sequence[_AttemptVerdict]) -> bool:
    """Whether the API refused to create the job (no job, no attempt: platform.md section 9)."""
    return any(v.refusal for v in verdicts)


def seen_exception(timeline: JobTimeline, state: JobState) -> ExceptionInfo | None:
    """The exception a job without a platform failure message shows in the input: its last
    whole traceback's; a bare exception line (a paste of a traceback's end) only when nothing
    else of the job is known, since in a job's log it is usually the harmless "Error in
    sitecustomize" ModuleNotFoundError. Told in a note and the advice, never made a cause
    (a refusal at creation is the story already: the exception is the API's answer)."""
    events = [e for a in timeline.attempts for e in a.events]
    seen = exception_from_events(events)
    if seen is None and state is JobState.UNSPECIFIED:
        seen = last_exception_line(events)
    return seen


@dataclass(frozen=True, slots=True)
class _Evidence:
    """What the notes on the evidence are written from (_evidence_notes)."""

    timeline: JobTimeline
    verdicts: list[_AttemptVerdict]
    cause: Cause | None
    state: JobState
    # The exception the input shows in a job without a failure message (seen_exception).
    seen: ExceptionInfo | None
    # The job's findings, beyond the cause (analyzer.verdict.findings).
    found: Findings

    @property
    def unexplained(self) -> bool:
        """No cause, not a success, not refused: what the input's end shows needs saying."""
        return (
            self.cause is None
            and self.state is not JobState.SUCCEEDED
            and not refused_at_creation(self.verdicts)
        )

    def events(self) -> list[Event]:
        return [e for a in self.timeline.attempts for e in a.events]


def _evidence_notes(evidence: _Evidence, more: Sequence[Finding] = ()) -> list[str]:
    """What the reader should know about the evidence itself: what the input lacks, what
    was set aside, and what a tool's record of the job adds. Each fact is a finding (one
    function per platform fact, :data:`_NOTE_FACTS`, and ``more``: the fate's, the input's
    cut, the work's, the record's); the rows of ``rules/advice/notes.yaml`` choose the note
    each one says, in their order (analyzer.verdict.notes_rows)."""
    found = [one for fact in _NOTE_FACTS for one in fact(evidence)]
    findings = Findings(evidence.found.items + tuple(more) + tuple(found))
    return builtin_note_rows().notes(findings, evidence.state.value.removeprefix("JOB_STATE_"))


def other_service_lines(evidence: _Evidence) -> list[Finding]:
    """platform.md section 9: another Vertex AI service's API error is no training job's."""
    if not evidence.timeline.other_service:
        return []
    return [finding(FindingKind.OTHER_SERVICE_LINES, Provenance.SDK)]


def other_jobs_lines(evidence: _Evidence) -> list[Finding]:
    """platform.md section 9: a batch prediction job's states are not a training job's."""
    if not evidence.timeline.other_jobs:
        return []
    return [
        finding(FindingKind.OTHER_JOBS_LINES, Provenance.SDK, count=evidence.timeline.other_jobs)
    ]


def newest_first(evidence: _Evidence) -> list[Finding]:
    """platform.md section 6: gcloud logging read prints newest first (one per input read
    bottom up)."""
    return [
        finding(FindingKind.NEWEST_FIRST, Provenance.SERVICE, path=path)
        for path in evidence.timeline.reversed_paths
    ]


def pasted_jobs(evidence: _Evidence) -> list[Finding]:
    """platform.md section 9: several jobs in one paste, without their ids."""
    if evidence.timeline.pasted_part is None:
        return []
    index, count = evidence.timeline.pasted_part
    return [finding(FindingKind.PASTED_JOBS, Provenance.SERVICE, index=index, count=count)]


def resumed(evidence: _Evidence) -> list[Finding]:
    """platform.md section 8: an attempt counted from workers starting again (on new VMs)
    after a job-level failure, the service's lines of it absent."""
    timeline = evidence.timeline
    if timeline.resumed is None:
        return []
    attempt = timeline.attempts[timeline.resumed - 1]
    return [
        finding(
            FindingKind.RESUMED,
            Provenance.RUNNER,
            attempt=attempt.number,
            previous=attempt.number - 1,
            at=f"{attempt.start:%Y-%m-%d %H:%M:%S} UTC" if attempt.start is not None else None,
        )
    ]


# What the service writes of a job after its start: a text holding one of them holds the
# service's stream.
_AFTER_START = frozenset(
    {
        EventKind.JOB_PREPARING,
        EventKind.JOB_RUNNING,
        EventKind.TEARDOWN,
        EventKind.JOB_FAILED,
        EventKind.JOB_SUCCEEDED,
        EventKind.RETRIES_EXHAUSTED,
        EventKind.JOB_CANCELLED,
    }
)


def begins_late(evidence: _Evidence) -> list[Finding]:
    """platform.md section 8 (attempts are counted from the service's lines): the input
    holds the service's stream but not the job's start (``Waiting for job to be
    provisioned.``, the queueing): it begins inside the job (Logs Explorer's time range, a
    paste of the end), and attempts before it, if any, are not in it."""
    attempts = evidence.timeline.attempts
    if not attempts or evidence.timeline.resumed is not None:
        return []
    service = [e for a in attempts for e in a.events if e.task in (None, SERVICE_TASK)]
    if not any(e.kind in _AFTER_START for e in service):
        return []
    if any(e.kind in (EventKind.ATTEMPT_STARTED, EventKind.JOB_QUEUED) for e in attempts[0].events):
        return []
    first = evidence.timeline.first_seen
    return [
        finding(
            FindingKind.BEGINS_LATE,
            Provenance.SERVICE,
            first=f"{first:%Y-%m-%d %H:%M:%S} UTC" if first is not None else "its first line",
        )
    ]


def named_jobs(evidence: _Evidence) -> list[Finding]:
    """platform.md section 10: an SDK's polling output names several jobs on lines without a
    job id: its lines cannot be told apart by job, so what they show is read as one job's."""
    shown = [
        e
        for e in evidence.events()
        if e.kind is EventKind.JOB_NAMED and e.job_id is None and e.match.field("job_id")
    ]
    named = list(dict.fromkeys(str(e.match.field("job_id")) for e in shown))
    if len(named) < 2:
        return []
    return [
        finding(
            FindingKind.NAMED_JOBS,
            Provenance.SDK,
            [e.origin for e in shown[:1]],
            count=len(named),
            # (The first three, then an ellipsis: a list's rendering, not a choice of words.)
            names=", ".join(named[:3]) + (", ..." if len(named) > 3 else ""),
            job=evidence.timeline.job_id or None,
        )
    ]


def error_code(evidence: _Evidence) -> list[Finding]:
    """platform.md section 9: the job object's error code (3 user, 8 resources, 13 internal)."""
    codes = [v.error_code for v in evidence.verdicts if v.error_code is not None]
    if not codes:
        return []
    name = _ERROR_CODE_NAMES.get(codes[-1], "see google.rpc.Code")
    return [finding(FindingKind.ERROR_CODE, Provenance.RECORD, code=codes[-1], name=name)]


def echoes(evidence: _Evidence) -> list[Finding]:
    """platform.md section 9: platform sentences in a container's output are evidence about
    another job, not this job's fate."""
    echoed = [e for e in evidence.events() if e.kind is EventKind.ECHO]
    if not echoed:
        return []
    return [finding(FindingKind.ECHOES, Provenance.USER, [echoed[0].origin], count=len(echoed))]


def wait_interrupted(evidence: _Evidence) -> list[Finding]:
    """platform.md section 10: a Ctrl-C in the SDK's wait stops the caller, not the job
    (where the input shows the exception, and the last state seen)."""
    wait = evidence.found.get(FindingKind.INTERRUPTED_WAIT)
    if wait is None:
        return []
    seen = evidence.seen
    at = str(seen.origin) if seen is not None and seen.origin else None
    state = wait.field("state")
    return [
        finding(
            FindingKind.WAIT_INTERRUPTED,
            Provenance.SDK,
            wait.evidence,
            at=at,
            state=str(state) if state else None,
        )
    ]


def unexplained_exception(evidence: _Evidence) -> list[Finding]:
    """platform.md section 9: an exception in the input with no platform message saying it
    ended the job (no cause, no success, no refusal)."""
    seen = evidence.seen
    if not evidence.unexplained or seen is None:
        return []
    return [
        finding(
            FindingKind.UNEXPLAINED_EXCEPTION,
            Provenance.USER,
            [seen.origin],
            type=seen.type,
            message=seen.message,
        )
    ]


def open_tracebacks(evidence: _Evidence) -> list[Finding]:
    """platform.md sections 3 and 9: a traceback the input cuts before its exception line:
    the failing replica's, or, in a job no cause explains and no exception or job error
    shows, any process's (beside the job's own error, a traceback is the tool's that
    printed it)."""
    cause = evidence.cause
    if cause is not None:
        if cause.exception is not None or not cause.replica:
            return []
        return _open_tracebacks(evidence.timeline, replica_task(cause.replica))
    if not evidence.unexplained or evidence.seen is not None:
        return []
    if recorded_error(evidence.timeline) is not None:
        return []
    return _open_tracebacks(evidence.timeline, None)


def unexplained_exit(evidence: _Evidence) -> list[Finding]:
    """platform.md section 2: a worker that exits non-zero is restarted, so an exit that
    ends the input is no failure of the job by itself."""
    if not evidence.unexplained:
        return []
    gone = last_worker_exit(evidence.timeline)
    if gone is None:
        return []
    return [
        finding(
            FindingKind.UNEXPLAINED_EXIT,
            Provenance.RUNNER,
            task=gone.task,
            exit_code=gone.exit_code,
            signal=decode(gone.exit_code).signal or None,
            time=f"{gone.time:%Y-%m-%d %H:%M:%S}" if gone.time is not None else None,
        )
    ]


def cut_message(evidence: _Evidence) -> list[Finding]:
    """platform.md sections 3 and 9: the traceback the service copied into its message about
    the failing replica stops before its exception line."""
    cause = evidence.cause
    if cause is None or cause.exception is not None:
        return []
    own = [e for e in evidence.events() if e.origin in cause.evidence[:1]]
    if not any(HEADER in e.text for e in own):
        return []
    return [
        finding(
            FindingKind.CUT_MESSAGE,
            Provenance.SERVICE,
            cause.evidence[:1],
            replica=cause.replica or None,
        )
    ]


def copied_exception(evidence: _Evidence) -> list[Finding]:
    """platform.md sections 3 and 9: the exception read from the service's copied tail."""
    cause = evidence.cause
    if cause is None or cause.exception is None:
        return []
    return _exception_source(evidence.timeline, cause)


def cause_detail(evidence: _Evidence) -> list[Finding]:
    """What the cause's finer detail says of the evidence (platform.md sections 7 and 9):
    an exit beside the platform's memory message, a replica's lines without an error, the
    service's lines without the container's output."""
    cause = evidence.cause
    if cause is None or not cause.detail:
        return []
    return [
        finding(
            FindingKind.CAUSE_DETAIL,
            Provenance.SERVICE,
            cause.evidence[:1],
            detail=cause.detail,
            exit_code=cause.exit_code,
            signal=cause.signal or None,
            replica=cause.replica or None,
        )
    ]


def frames_not_kept(evidence: _Evidence) -> list[Finding]:
    """A traceback longer than jobdoctor keeps (a runaway recursion pasted whole): the frames
    its exception is named from are its first, its last and the user's, the others counted
    (analyzer.classify.tracebacks.KeptFrames)."""
    cause = evidence.cause
    shown = cause.exception if cause is not None else evidence.seen
    if shown is None or not shown.frames_not_kept:
        return []
    return [
        finding(
            FindingKind.FRAMES_NOT_KEPT,
            Provenance.USER,
            [shown.origin],
            type=shown.type,
            frames=len(shown.frames) + shown.frames_not_kept,
            count=shown.frames_not_kept,
        )
    ]


# The facts the notes are chosen from, each found once per job (the order found; the notes'
# order is the rows').
_NOTE_FACTS: tuple[Callable[[_Evidence], list[Finding]], ...] = (
    other_service_lines,
    other_jobs_lines,
    newest_first,
    pasted_jobs,
    resumed,
    begins_late,
    named_jobs,
    error_code,
    echoes,
    wait_interrupted,
    unexplained_exception,
    open_tracebacks,
    unexplained_exit,
    cut_message,
    copied_exception,
    cause_detail,
    frames_not_kept,
)


def last_worker_exit(timeline: JobTimeline) -> WorkerExitSeen | None:
    """The non-zero exit that ends a worker's lines in the last attempt with no start after
    it, in a job whose input holds no later line of the service: the process ended, and the
    input does not show what followed (platform.md section 2: a worker that exits non-zero is
    restarted, so the exit alone is no failure of the job). The latest such exit."""
    if not timeline.attempts:
        return None
    attempt = timeline.attempts[-1]
    found: WorkerExitSeen | None = None
    for worker in attempt.workers:
        gone = worker.exits[-1] if worker.exits else None
        if gone is None or gone.exit_code in (None, 0) or gone.time is None:
            continue
        # (A start inferred from the worker's first record may share the exit's time.)
        if any(s.time is not None and s.time > gone.time for s in worker.starts):
            continue
        later = any(
            e.task is None or e.task == SERVICE_TASK
            for e in attempt.events
            if e.timestamp is not None and e.timestamp > gone.time
        )
        if not later and (found is None or (found.time is not None and gone.time > found.time)):
            found = WorkerExitSeen(worker.task, gone.exit_code, gone.time)
    return found


@dataclass(frozen=True, slots=True)
class WorkerExitSeen:
    """A worker's non-zero exit that ends what the input shows of it (last_worker_exit)."""

    task: str
    exit_code: int
    time: datetime | None


# platform.md section 6: exports written newest first (gcloud logging read's JSON array and
# YAML documents, the Logs Explorer's JSON and CSV downloads); a Download holds at most
# 10,000 entries. The order is also read from the job's own lines: `--order=asc` (or a paste
# turned the other way) writes oldest first, and then a cut loses the newest ones instead.
NEWEST_FIRST_FORMATS = frozenset({"gcloud-json", "gcloud-yaml", "logs-explorer-csv"})
DOWNLOAD_CAP = 10_000


def _written_newest_first(events: Sequence[Event]) -> bool:
    """Whether ``events`` of one input, in the input's order, step back in time more often
    than forward (at least once)."""
    times = [
        e.timestamp
        for e in sorted(events, key=lambda e: (e.origin.line, e.origin.entry))
        if e.timestamp is not None
    ]
    down, up = steps_down_up(times)
    return down > up


def oldest_entries_missing(timeline: JobTimeline, inputs: Sequence[InputStats]) -> list[Finding]:
    """A finding for each input written newest first that lost its oldest entries: cut short
    (``cut_line``), or holding exactly the Download's 10,000 entries (more probably existed).
    The oldest entries are a job's first attempts and restarts and its start: what the
    diagnosis counts of them is then a lower bound. Not said of a job whose creation line
    (queued, validated) is in the input: its beginning is there."""
    if not inputs or any(
        e.kind is EventKind.JOB_QUEUED for a in timeline.attempts for e in a.events
    ):
        return []
    by_path: dict[str, list[Event]] = {}
    for attempt in timeline.attempts:
        for event in attempt.events:
            by_path.setdefault(event.origin.path, []).append(event)
    found: list[Finding] = []
    for stats in inputs:
        events = by_path.get(stats.path)
        if not events or stats.format not in NEWEST_FIRST_FORMATS:
            continue
        if stats.cut_line is None and stats.records != DOWNLOAD_CAP:
            continue
        if not _written_newest_first(events):
            continue
        oldest = min((e.timestamp for e in events if e.timestamp is not None), default=None)
        found.append(
            finding(
                FindingKind.OLDEST_MISSING,
                Provenance.SERVICE,
                path=stats.path,
                cut_line=stats.cut_line,
                cap=DOWNLOAD_CAP,
                oldest=f"{oldest:%Y-%m-%d %H:%M:%S}" if oldest is not None else None,
            )
        )
    return found


def _exception_source(timeline: JobTimeline, cause: Cause) -> list[Finding]:
    """Where the cause's exception was read, when not from the replica's own lines: the
    traceback tail the service copied into its message (platform.md sections 3 and 9);
    ``top_cut`` when the message lacks the traceback's header."""
    exception = cause.exception
    if exception is None or exception.origin is None or exception.origin not in cause.evidence[:1]:
        return []
    own = next(
        (
            e
            for a in timeline.attempts
            for e in a.events
            if e.origin == exception.origin and e.match.writer is Writer.SERVICE
        ),
        None,
    )
    if own is None:
        return []
    return [
        finding(
            FindingKind.COPIED_EXCEPTION,
            Provenance.SERVICE,
            [exception.origin],
            type=exception.type,
            origin=str(exception.origin),
            replica=cause.replica or None,
            top_cut=HEADER not in own.text,
        )
    ]


def _exit_pair(timeline: JobTimeline) -> tuple[str, int] | None:
    gone = last_worker_exit(timeline)
    return (gone.task, gone.exit_code) if gone is not None else None


def _open_tracebacks(timeline: JobTimeline, task: str | None) -> list[Finding]:
    """A finding for each process (of ``task`` only, when given) whose last traceback in the
    input has no exception line: where it begins, and whether the input ends inside it
    (``ends: input``), the process's lines do (``ends: task``), or, with no ``task``, no
    exception line jobdoctor reads ends it (``ends: unread``)."""
    by_task: dict[str | None, list[Event]] = {}
    own_last: dict[str, datetime] = {}
    for attempt in timeline.attempts:
        for event in attempt.events:
            by_task.setdefault(event.task, []).append(event)
        for worker in attempt.workers:
            if worker.own_last is not None:
                own_last[worker.task] = max(
                    worker.own_last, own_last.get(worker.task, worker.own_last)
                )
    found: list[Finding] = []
    for name, events in by_task.items():
        if task is not None and name != task:
            continue
        found_tb = open_traceback(events)
        if found_tb is None:
            continue
        header, last = found_tb
        at = (
            f"{header.timestamp:%Y-%m-%d %H:%M:%S}"
            if header.timestamp is not None
            else str(header.origin)
        )
        ends = own_last.get(name) if name else None
        # A traceback is written at once: a process whose last record comes within a second
        # of the traceback's last frame (its source line, say) ends inside it in the input.
        if ends is not None and last.timestamp is not None and ends - last.timestamp <= AFTER_DEATH:
            whose = (
                "input"
                if timeline.last_seen is None or timeline.last_seen - ends <= AFTER_DEATH
                else "task"
            )
        elif task is None:
            whose = "unread"
        else:
            continue
        found.append(
            finding(
                FindingKind.OPEN_TRACEBACK,
                Provenance.USER,
                [header.origin],
                task=name or None,
                at=at,
                ends=whose,
            )
        )
    return found


# Kinds that say something of how the job stands: its lifecycle, a failure, what a tool
# records of it (state, error code, a refusal). The program's own output and its echoes do not.
_JOB_EVIDENCE = LIFECYCLE_KINDS | {
    EventKind.ERROR,
    EventKind.JOB_STATE,
    EventKind.JOB_ERROR,
    EventKind.CREATION_REFUSED,
}


def _shows_lifecycle(timeline: JobTimeline) -> bool:
    """Whether the input says anything of the job's lifecycle: a lifecycle or failure
    message, an SDK state, or a worker seen running."""
    return any(
        any(e.kind in _JOB_EVIDENCE for e in a.events) or any(w.starts for w in a.workers)
        for a in timeline.attempts
    )


def _still_going(timeline: JobTimeline, last: _AttemptVerdict, observed: int) -> _Fate:
    """Section 8: a job whose last attempt has not ended is in its last state seen, not its
    final one; unknown when only workers' lines without a task say anything of it (section 9:
    :data:`TASKLESS_NOTE`)."""
    if _taskless_workers_only(timeline):
        return _Fate(JobState.UNSPECIFIED, False, observed, (_fate_finding("taskless"),))
    return _Fate(
        _IN_PROGRESS[last.status],
        False,
        observed,
        (_fate_finding("in-progress"),),
        _read_from(last),
    )


def _taskless_workers_only(timeline: JobTimeline) -> bool:
    """Whether the job's only evidence is workers' start and exit lines naming no task."""
    evidence = [e for a in timeline.attempts for e in a.events if e.kind in _JOB_EVIDENCE]
    return bool(evidence) and all(
        e.kind in (EventKind.WORKER_STARTED, EventKind.WORKER_EXITED) and not e.task
        for e in evidence
    )


def _shows_attempts(timeline: JobTimeline) -> bool:
    """Whether the input marks its attempts (the service's provisioning line of each)."""
    return any(a.has(EventKind.ATTEMPT_STARTED) for a in timeline.attempts)


def _work_notes(timeline: JobTimeline, works: list[AttemptWork]) -> list[Finding]:
    """What the attempts' work shows: long stretches without a checkpoint (platform.md
    section 2: at least every 4 hours in jobs longer than 4 hours), and failures inside the
    parallel start of the workers (section 2: user code starts as soon as its worker is up)."""
    found: list[Finding] = []
    for attempt, work in zip(timeline.attempts, works, strict=True):
        if (
            work.training is not None
            and work.training > CHECKPOINT_INTERVAL
            and work.checkpoint_gap is not None
            and work.checkpoint_gap > CHECKPOINT_INTERVAL
        ):
            found.append(
                finding(
                    FindingKind.ATTEMPT_WORK,
                    Provenance.USER,
                    what="no-checkpoint",
                    attempt=attempt.number,
                    training=_span_text(work.training),
                    gap=_span_text(work.checkpoint_gap),
                )
            )
        if work.startup_race and work.startup_skew is not None:
            found.append(
                finding(
                    FindingKind.ATTEMPT_WORK,
                    Provenance.RUNNER,
                    what="startup-race",
                    attempt=attempt.number,
                    skew=int(work.startup_skew.total_seconds()),
                )
            )
    return found


def _hang(
    timeline: JobTimeline,
    state: JobState,
    policy: RetryPolicy,
    end: InputEnd | None,
    spec: JobSpec | None,
) -> StallReading:
    """What the job's lines say of a hang: a RUNNING job's stall, or, when no line tells the
    state, what a timeout alone cannot tell (analyzer.verdict.hangs)."""
    if state is JobState.UNSPECIFIED:
        return StallReading(findings=unknown_state_timeout(timeline, policy.stall))
    return read_stall(timeline, state is JobState.RUNNING, policy.stall, end, spec)


def diagnose_timeline(
    timeline: JobTimeline,
    policy: RetryPolicy,
    spec: JobSpec | None = None,
    lang: str = "en",
    inputs: Sequence[InputStats] = (),
    end: InputEnd | None = None,
) -> Diagnosis:
    """Replay ``policy`` over ``timeline`` and conclude.

    ``spec`` (the job's own record, ``--job-spec``) changes the policy by its ``scheduling``
    settings, names machine types in the advice, and is compared with the prediction; it is
    ignored when it describes another job. ``inputs``: what was read of each input (a cut,
    its format), for the notes on what the input lacks of the job. ``end``: where the
    inputs holding its lines end (or now for a live read), against which a running
    job's silence is a stall (:mod:`analyzer.verdict.hangs`); None: at this job's last line.
    """
    if spec is not None and not spec.applies_to(timeline.job_id):
        spec = None
    if spec is not None:
        policy = spec.policy(policy)
    stream = has_container_stream(timeline)
    verdicts = [_judge_attempt(a, policy) for a in timeline.attempts]
    works = [_work(a, v, policy, stream) for a, v in zip(timeline.attempts, verdicts, strict=True)]
    cause = next((deep for _, deep in reversed(works) if deep is not None), None)
    fate = _fate(timeline, verdicts, policy)
    state = fate.state
    error = recorded_error(timeline) if cause is None and state is JobState.FAILED else None
    facts = _advice_facts(timeline, verdicts, cause, state, spec, error)
    hang = _hang(timeline, state, policy, end, spec)
    stalled = [f for f in hang.findings if f.kind is FindingKind.STALLED]
    found = _job_findings(timeline, facts, fate, policy, stalled)
    evidence = _Evidence(
        timeline, verdicts, cause, state, _seen(timeline, verdicts, cause, state), found
    )
    check = _spec_check(spec, state, cause) if spec is not None else None
    untold = [f for f in hang.findings if f.kind is not FindingKind.STALLED]
    notes = _notes(timeline, fate, evidence, [work for work, _ in works], inputs, check, untold)
    timed = [w.lost for w, _ in works if w.lost is not None]
    return Diagnosis(
        job_id=timeline.job_id,
        state=state,
        observed_final=fate.final,
        attempts=fate.attempts,
        retries=max(0, fate.attempts - 1),
        worker_restarts=restarts_by_worker(timeline),
        cause=cause,
        advice=advice_for(
            cause,
            state,
            policy,
            lang,
            spec=spec,
            refused=facts.refused,
            job_id=timeline.job_id,
            other_service=facts.other_service,
            other_jobs=facts.other_jobs,
            last_exit=facts.last_exit,
            recorded=error,
            seen=facts.seen,
            found=found,
        ),
        # No attempt ran (the API refused the job, or nothing shows one began): the log of
        # attempts says so rather than listing a placeholder "#1" beside "0 attempts".
        attempt_log=_attempt_log(timeline, verdicts, works) if fate.attempts else (),
        timeline=timeline,
        notes=tuple(notes),
        lost_work=sum(timed, timedelta()) if timed else None,
        job_spec=check,
        recorded_error=error,
        state_source=fate.source,
        findings=found,
        stalled=hang.stall,
    )


def _attempt_log(
    timeline: JobTimeline,
    verdicts: list[_AttemptVerdict],
    works: list[tuple[AttemptWork, Cause | None]],
) -> tuple[AttemptOutcome, ...]:
    return tuple(
        AttemptOutcome(
            attempt=a.number,
            start=a.start,
            end=a.end,
            outcome=v.cause.category.value if v.cause else v.status.value,
            restarts=sum(w.restarts for w in a.workers),
            lost_work=work.lost,
            startup_skew=work.startup_skew,
            startup_race=work.startup_race,
        )
        for a, v, (work, _) in zip(timeline.attempts, verdicts, works, strict=True)
    )


def _seen(
    timeline: JobTimeline, verdicts: list[_AttemptVerdict], cause: Cause | None, state: JobState
) -> ExceptionInfo | None:
    """The exception a job without a failure shows (a refusal at creation is the story
    already: the exception is the API's answer)."""
    if cause is not None or state is JobState.SUCCEEDED or refused_at_creation(verdicts):
        return None
    return seen_exception(timeline, state)


def _advice_facts(
    timeline: JobTimeline,
    verdicts: list[_AttemptVerdict],
    cause: Cause | None,
    state: JobState,
    spec: JobSpec | None,
    error: RecordedError | None,
) -> AdviceFacts:
    """What the advice is chosen from. Nothing of a job is left once another service's
    refusal, or another kind of job's states, are set aside (platform.md section 9)."""
    lifecycle = any(e.kind in LIFECYCLE_KINDS for a in timeline.attempts for e in a.events)
    seen = _seen(timeline, verdicts, cause, state)
    return AdviceFacts(
        cause=cause,
        spec=spec,
        refused=next((v.refusal for v in reversed(verdicts) if v.refusal), None),
        job_id=timeline.job_id,
        other_service=bool(timeline.other_service) and not lifecycle,
        other_jobs=bool(timeline.other_jobs) and not lifecycle,
        last_exit=_exit_pair(timeline) if cause is None else None,
        recorded=error,
        # Only where nothing of the service's says how the job went: beside "Job is
        # running." and later lines, a traceback the job lived through (a data loader's
        # harmless one at shutdown) is not what the advice should start from.
        seen=None if _service_lifecycle(timeline) else seen,
    )


def _job_findings(
    timeline: JobTimeline,
    facts: AdviceFacts,
    fate: _Fate,
    policy: RetryPolicy,
    stalled: Sequence[Finding] = (),
) -> Findings:
    """The job's findings, each computed once: the advice's (analyzer.verdict.advice), an
    interrupted wait and a state the SDK's line alone shows (analyzer.verdict.findings_job)."""
    short = fate.state.value.removeprefix("JOB_STATE_")
    cause = facts.cause
    provenance = _cause_provenance(timeline, cause) if cause is not None else None
    found = facts.findings(
        policy,
        interrupted_wait(timeline, short, fate.final) if cause is None else None,
        sdk_state_only(timeline, fate.source),
        *stalled,
    )
    if provenance is None:
        return found
    # The cause's provenance: the line that shows it.
    return collect(
        *(f for f in found.items if f.kind is not FindingKind.CAUSE),
        cause_finding(cause, policy, provenance),
    )


def _cause_provenance(timeline: JobTimeline, cause: Cause) -> Provenance:
    shown = [e for a in timeline.attempts for e in a.events if e.origin in cause.evidence[:1]]
    return strongest(shown) or Provenance.SERVICE


def _notes(
    timeline: JobTimeline,
    fate: _Fate,
    evidence: _Evidence,
    works: list[AttemptWork],
    inputs: Sequence[InputStats],
    check: SpecCheck | None,
    untold: Sequence[Finding] = (),
) -> list[str]:
    """The diagnosis's notes: the fate's, the evidence's, the input's cut, the work's, and
    the job's record when it disagrees (their order is rules/advice/notes.yaml's)."""
    return _evidence_notes(
        evidence,
        (
            *fate.notes,
            *oldest_entries_missing(timeline, inputs),
            *_work_notes(timeline, works),
            *_disagreement(check, evidence.state),
            *untold,
        ),
    )


def _disagreement(check: SpecCheck | None, state: JobState) -> list[Finding]:
    """The job's record (``--job-spec``) says another state than the one concluded
    (platform.md section 6: the record is the job's own)."""
    if check is None or check.agrees:
        return []
    return [
        finding(
            FindingKind.RECORD_DISAGREES,
            Provenance.RECORD,
            state=check.state,
            error_code=check.error_code,
            concluded=state.value,
        )
    ]
