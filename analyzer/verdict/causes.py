"""The cause an attempt's own lines name: its first failure message, read as evidence.

Used by the predict stage (which attempt's cause decides the job) and by
:mod:`analyzer.verdict.rootcause` (the cause in depth).
"""

from __future__ import annotations

from dataclasses import replace

import regex

from analyzer.ingest.records import Origin, replica_task
from analyzer.rulebook.events import Category, Event, EventKind, Writer
from analyzer.timeline.attempts import Attempt, WorkerTimeline
from analyzer.verdict.diagnosis import Cause
from analyzer.verdict.policy import RetryPolicy

MESSAGE_LIMIT = 400


# platform.md section 7: 137 (SIGKILL), or the raw signal 9 in legacy logs (-9 in the legacy
# runner's own line); alone they do not prove an OOM, beside the platform's memory message
# they confirm it.
_KILLED = frozenset({-9, 9, 137})


# The key and quote a tool printed the job's error message under (a describe's YAML
# `message: '...'`, a JSON body's `"message": "..."`, R's `$ errorMessage : chr "..."`, behind
# Cloud Build's `Step #4: `): the cause's message is the message itself.
_WRAPPER = regex.compile(
    r"""^(?:Step #\d+: ?)?(?:\$ ?errorMessage ?: ?chr |"?(?:message|errorMessage)"?: ?)(["'])"""
)


# The SDK's state message is two lines read as one record (ingest/sdklines.py): the resource
# name, then the state the message is about.
_STATE_HEAD_END = "current state:"


def _message(event: Event) -> str:
    lines = event.text.strip().splitlines()
    if len(lines) > 1 and lines[0].rstrip().endswith(_STATE_HEAD_END):
        lines[0] = f"{lines[0]} {lines[1]}"
    text = " ".join(lines[0].split()) if lines else ""
    wrapped = _WRAPPER.match(text)
    if wrapped is not None:
        text = text[wrapped.end() :]
        quote = wrapped.group(1)
        text = text.removesuffix(",").removesuffix(quote)
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"


def int_field(event: Event, name: str) -> int | None:
    value = event.match.field(name)
    return value if isinstance(value, int) else None


def str_field(event: Event, name: str) -> str | None:
    value = event.match.field(name)
    return value if isinstance(value, str) and value else None


def _supporting(attempt: Attempt, first: Event, task: str | None) -> tuple[Origin, ...]:
    """The lines that back a cause: the failure, the worker's exit, the job's end."""
    origins = [first.origin]
    merged = merged_exit_lines(attempt)
    for event in attempt.events:
        worker_exit = (
            event.kind is EventKind.WORKER_EXITED
            and task is not None
            and event.task == task
            and (int_field(event, "exit_code") or 0) != 0
            and event.origin not in merged
        )
        job_end = event.kind in (EventKind.JOB_FAILED, EventKind.RETRIES_EXHAUSTED)
        if (worker_exit or job_end) and event.origin not in origins:
            origins.append(event.origin)
    return tuple(origins)


def merged_exit_lines(attempt: Attempt) -> frozenset[Origin]:
    """The runner's exit lines that another line of the same exit stands for: a runner
    reports one exit in several lines (``Command '...' returned non-zero exit status 1.``
    then ``Task completed. Exit code (1). ...``), and the worker's timeline keeps one."""
    kept = {worker.task: {gone.origin for gone in worker.exits} for worker in attempt.workers}
    return frozenset(
        e.origin
        for e in attempt.events
        if e.kind is EventKind.WORKER_EXITED and e.task in kept and e.origin not in kept[e.task]
    )


def cause_from_event(attempt: Attempt, event: Event, category: Category) -> Cause:
    replica = str_field(event, "replica") or str_field(event, "pool")
    task = event.task if event.kind is EventKind.WORKER_EXITED else replica
    return Cause(
        category=category,
        rule=event.match.rule,
        lang=event.match.lang,
        replica=replica or (event.task if event.kind is EventKind.WORKER_EXITED else None),
        exit_code=int_field(event, "exit_code"),
        region=str_field(event, "region"),
        message=_message(event),
        evidence=_supporting(attempt, event, task),
        attempt=attempt.number,
        detail=event.match.detail,
        time=event.timestamp,
        signal=str_field(event, "signal"),
    )


def first_cause(attempt: Attempt) -> Cause | None:
    """The attempt's first failure message as a cause.

    platform.md section 7: an exit 137/9 of a replica next to the platform's out-of-memory
    message for its pool is that OOM (the memory message confirms the kill); otherwise the
    first failure is the initiating one.
    """
    found = [e for e in attempt.errors if e.match.category is not None]
    if not found:
        return None
    # The platform's failure messages are the service's (rules/errors.yaml); a user's error
    # rule on the job's own lines explains such a failure, it does not replace it: the cause
    # is the service's message, with the user's line as evidence. Alone, it is the cause.
    errors = [e for e in found if e.match.writer is Writer.SERVICE] or found
    first = errors[0]
    assert first.match.category is not None
    if found[0] is not first:
        cause = _first_of(attempt, errors, first)
        return replace(cause, evidence=with_origins(cause.evidence, [found[0].origin]))
    return _first_of(attempt, errors, first)


def _first_of(attempt: Attempt, errors: list[Event], first: Event) -> Cause:
    assert first.match.category is not None
    oom = next((e for e in errors if e.match.category is Category.OOM), None)
    killed = int_field(first, "exit_code") in _KILLED
    if oom is not None and first is not oom and killed and _same_pool(first, oom):
        cause = cause_from_event(attempt, oom, Category.OOM)
        return replace(
            cause,
            replica=str_field(first, "replica") or cause.replica,
            exit_code=cause.exit_code
            if cause.exit_code is not None
            else int_field(first, "exit_code"),
            evidence=with_origins(cause.evidence, [first.origin]),
            detail="oom-confirmed",
        )
    return cause_from_event(attempt, first, first.match.category)


def _same_pool(killed: Event, oom: Event) -> bool:
    """Whether the killed replica is in the pool (or is the replica) the OOM message names."""
    replica = str_field(killed, "replica")
    named = str_field(oom, "replica") or str_field(oom, "pool")
    if replica is None or named is None:
        return True
    task, other = replica_task(replica), replica_task(named)
    return task == other or task.startswith(f"{other}-")


def restarts_exhausted(attempt: Attempt, worker: WorkerTimeline, policy: RetryPolicy) -> Cause:
    last_exit = next((e for e in reversed(worker.failures) if e.exit_code), None)
    origin = last_exit.origin if last_exit else worker.starts[-1].origin
    return Cause(
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


def with_origins(origins: tuple[Origin, ...], more: list[Origin | None]) -> tuple[Origin, ...]:
    merged = list(origins)
    merged += [o for o in more if o is not None and o not in merged]
    return tuple(dict.fromkeys(merged))
