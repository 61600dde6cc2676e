"""The timeline stage: split a job's events into attempts, and each attempt into worker timelines.

An *attempt* is one run of the whole job; a *restart* is one worker process started again inside
an attempt (platform.md section 8). Attempts begin at ``Waiting for job to be provisioned.``, or,
when those lines are missing, at a worker starting again after a job-level failure.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

import regex

from analyzer.classify import JobLog, VmSpan
from analyzer.events import Event, EventKind
from analyzer.records import SERVICE_TASK, Origin

# Legacy replica names in service messages ("master 0") map to legacy task names
# ("master-replica-0"); current ones ("workerpool0-0") are already task names.
_LEGACY_REPLICA = regex.compile(r"^(master|worker|ps|evaluator|chief)[\s_-]*(\d+)$")

# How close a runner start line must be to a VM change to be the same restart.
_SAME_RESTART = timedelta(minutes=5)

# Kinds that show the job is past provisioning: a later "Waiting for job to be provisioned."
# then starts a new attempt.
_ACTIVITY = frozenset(
    {
        EventKind.JOB_RUNNING,
        EventKind.WORKER_STARTED,
        EventKind.WORKER_EXITED,
        EventKind.ERROR,
        EventKind.JOB_FAILED,
        EventKind.JOB_SUCCEEDED,
        EventKind.TEARDOWN,
        EventKind.RETRIES_EXHAUSTED,
        EventKind.JOB_CANCELLED,
    }
)
# Kinds that, after a job-level failure, show that the next attempt is under way.
_NEW_ATTEMPT_AFTER_FAILURE = frozenset(
    {
        EventKind.ATTEMPT_STARTED,
        EventKind.JOB_PROVISIONING,
        EventKind.JOB_PREPARING,
        EventKind.JOB_RUNNING,
        EventKind.WORKER_STARTED,
    }
)


def replica_task(replica: str) -> str:
    """The task name a replica named in a service message logs under.

    ``master 0`` becomes ``master-replica-0``; ``workerpool0-0`` stays as it is.
    """
    name = replica.strip()
    legacy = _LEGACY_REPLICA.match(name)
    if legacy:
        return f"{legacy.group(1)}-replica-{legacy.group(2)}"
    return name


@dataclass(frozen=True, slots=True)
class WorkerStart:
    """One start of a worker's process; ``maintenance`` when it came up on another VM."""

    time: datetime | None
    vm: str | None
    maintenance: bool
    origin: Origin | None


@dataclass(frozen=True, slots=True)
class WorkerExit:
    """One exit of a worker's process, from the runner's line or the service's error."""

    time: datetime | None
    exit_code: int | None
    origin: Origin


@dataclass(frozen=True, slots=True)
class WorkerTimeline:
    """One worker (replica) within one attempt."""

    task: str
    starts: tuple[WorkerStart, ...]
    exits: tuple[WorkerExit, ...]
    first_seen: datetime | None
    last_seen: datetime | None

    @property
    def restarts(self) -> int:
        """Starts after the first one, whatever the cause."""
        return max(0, len(self.starts) - 1)

    @property
    def maintenance_restarts(self) -> int:
        """Restarts on another VM (maintenance): they do not use up the restart budget."""
        return sum(1 for start in self.starts[1:] if start.maintenance)

    @property
    def budget_restarts(self) -> int:
        """Restarts that count toward the platform's per-worker limit."""
        return self.restarts - self.maintenance_restarts


@dataclass(frozen=True, slots=True)
class Attempt:
    """One run of the whole job, with its events and its workers."""

    number: int
    events: tuple[Event, ...]
    workers: tuple[WorkerTimeline, ...]
    start: datetime | None
    end: datetime | None

    def first(self, kind: EventKind) -> Event | None:
        """The first event of ``kind`` in this attempt."""
        return next((e for e in self.events if e.kind is kind), None)

    def has(self, kind: EventKind) -> bool:
        """Whether any event of ``kind`` happened in this attempt."""
        return any(e.kind is kind for e in self.events)

    @property
    def errors(self) -> tuple[Event, ...]:
        """Failure messages, earliest first."""
        return tuple(e for e in self.events if e.kind is EventKind.ERROR)

    @property
    def duration(self) -> timedelta | None:
        if self.start is None or self.end is None:
            return None
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class JobTimeline:
    """A job's attempts in order, and when it was seen at all (``trial``: see JobLog)."""

    job_id: str | None
    attempts: tuple[Attempt, ...]
    first_seen: datetime | None
    last_seen: datetime | None
    records: int
    trial: str | None = None


def _split_attempts(events: tuple[Event, ...]) -> list[list[Event]]:
    groups: list[list[Event]] = [[]]
    active = failed = False
    for event in events:
        kind = event.kind
        starts_new = (kind is EventKind.ATTEMPT_STARTED and active) or (
            failed and kind in _NEW_ATTEMPT_AFTER_FAILURE
        )
        if starts_new and groups[-1]:
            groups.append([])
            active = failed = False
        groups[-1].append(event)
        active = active or kind in _ACTIVITY
        failed = failed or kind is EventKind.JOB_FAILED
    return [g for g in groups if g]


def _bounds(events: list[Event]) -> tuple[datetime | None, datetime | None]:
    times = [e.timestamp for e in events if e.timestamp is not None]
    return (min(times), max(times)) if times else (None, None)


def _overlaps(span: VmSpan, start: datetime | None, end: datetime | None) -> bool:
    return (start is None or span.last >= start) and (end is None or span.first < end)


def _worker(
    task: str,
    events: list[Event],
    spans: tuple[VmSpan, ...],
    window: tuple[datetime | None, datetime | None],
) -> WorkerTimeline:
    starts: list[WorkerStart] = []
    exits: list[WorkerExit] = []
    last_vm: str | None = None
    for event in events:
        if event.kind is EventKind.WORKER_STARTED:
            moved = bool(starts) and event.vm is not None and last_vm is not None
            starts.append(
                WorkerStart(event.timestamp, event.vm, moved and event.vm != last_vm, event.origin)
            )
            last_vm = event.vm or last_vm
        elif event.kind in (EventKind.WORKER_EXITED, EventKind.ERROR):
            code = event.match.field("exit_code")
            exit_code = code if isinstance(code, int) else None
            # The service reports an exit the runner already logged: one exit, not two.
            reported = event.kind is EventKind.ERROR and any(
                e.exit_code == exit_code
                and e.time is not None
                and event.timestamp is not None
                and timedelta(0) <= event.timestamp - e.time <= _SAME_RESTART
                for e in exits
            )
            if not reported:
                exits.append(WorkerExit(event.timestamp, exit_code, event.origin))
    # VM changes inside the attempt are restarts on another VM (maintenance), unless a runner
    # start line already recorded them; a container without runner lines has only these.
    inside = [s for s in spans if _overlaps(s, *window)]
    if not starts and inside:
        # No runner line: the worker's first record marks its first start.
        starts.append(WorkerStart(inside[0].first, inside[0].vm, False, None))
    # Records without a VM label (text exports) say nothing about VM changes.
    labelled = [s for s in inside if s.vm is not None]
    for previous, span in itertools.pairwise(labelled):
        if span.vm == previous.vm:
            continue
        known = any(
            s.vm == span.vm and s.time is not None and abs(s.time - span.first) <= _SAME_RESTART
            for s in starts
        )
        if not known:
            starts.append(WorkerStart(span.first, span.vm, True, None))
    starts.sort(key=lambda s: s.time or datetime.min)
    seen = [t for s in inside for t in (s.first, s.last)]
    seen += [e.timestamp for e in events if e.timestamp is not None]
    return WorkerTimeline(
        task=task,
        starts=tuple(starts),
        exits=tuple(exits),
        first_seen=min(seen) if seen else None,
        last_seen=max(seen) if seen else None,
    )


def _event_task(event: Event) -> str | None:
    """The worker an event is about: its own task, or the replica a service message names."""
    replica = event.match.field("replica")
    if isinstance(replica, str) and replica:
        return replica_task(replica)
    if event.task is not None and event.task != SERVICE_TASK:
        return event.task
    return None


def build_timeline(log: JobLog) -> JobTimeline:
    """Split ``log`` into attempts and worker timelines."""
    groups = _split_attempts(log.events)
    if not groups and log.vm_spans:
        groups = [[]]  # workers logged, but no lifecycle line matched: one attempt
    bounds = [_bounds(g) for g in groups]
    attempts: list[Attempt] = []
    for index, group in enumerate(groups):
        start, end = bounds[index]
        # Worker records between two attempts' events belong to the earlier attempt.
        window_end = bounds[index + 1][0] if index + 1 < len(groups) else None
        window_start = start if index > 0 else None
        by_task: dict[str, list[Event]] = {}
        for event in group:
            task = _event_task(event)
            if task is not None:
                by_task.setdefault(task, []).append(event)
        tasks = set(by_task)
        tasks.update(
            task
            for task, spans in log.vm_spans.items()
            if any(_overlaps(s, window_start, window_end) for s in spans)
        )
        workers = tuple(
            _worker(
                task, by_task.get(task, []), log.vm_spans.get(task, ()), (window_start, window_end)
            )
            for task in sorted(tasks)
        )
        attempts.append(Attempt(index + 1, tuple(group), workers, start, end))
    return JobTimeline(
        log.job_id, tuple(attempts), log.first_seen, log.last_seen, log.records, log.trial
    )


def restarts_by_worker(timeline: JobTimeline) -> Mapping[str, int]:
    """Restarts per replica, summed over attempts (the contract's ``worker_restarts``)."""
    totals: dict[str, int] = {}
    for attempt in timeline.attempts:
        for worker in attempt.workers:
            totals[worker.task] = totals.get(worker.task, 0) + worker.restarts
    return dict(sorted(totals.items()))
