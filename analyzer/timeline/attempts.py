"""The timeline stage: split a job's events into attempts, and each attempt into worker timelines.

An *attempt* is one run of the whole job; a *restart* is one worker process started again inside
an attempt (platform.md section 8). Attempts begin at ``Waiting for job to be provisioned.``, or,
when those lines are missing, at a worker starting again after a job-level failure, or, in
worker-only logs, at a start past the per-worker restart limit.

Before anything is split, each event's provenance is settled (platform.md section 9): a message
only the service writes counts as the job's own only when the service wrote it; inside a
container's output it is that worker's evidence (:attr:`EventKind.ECHO`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import regex

from analyzer.classify.joblog import JobLog, VmSpan
from analyzer.classify.joined import BEGINS_JOB, ENDS_JOB, named_job
from analyzer.ingest.records import SERVICE_TASK, Origin, replica_task
from analyzer.rulebook.events import (
    LIFECYCLE_KINDS,
    WORKER_KINDS,
    Event,
    EventKind,
    Writer,
    other_service_text,
)
from analyzer.timeline.exitcodes import decode
from analyzer.timeline.rhythm import Rhythm, rhythm_of

# Legacy replica names in service messages ("master 0") map to legacy task names
# ("master-replica-0"); current ones ("workerpool0-0") are already task names.

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


# The primary replica: its exit 0 is the job's success (platform.md section 2).
_PRIMARY = regex.compile(r"^(?:workerpool0-0|master-replica-0|chief-replica-0)$")
# The service's lifecycle kinds and its failure messages: with none of them, a log holds only
# workers' output.
_SERVICE_KINDS = (LIFECYCLE_KINDS - WORKER_KINDS) | {EventKind.ERROR}
# A job's end: a later provisioning in the same id-less text is another job's (section 9).
_JOB_END = frozenset({EventKind.JOB_SUCCEEDED, EventKind.RETRIES_EXHAUSTED})
# Whether attempt N (its events, from its provisioning), which ended with ``Job failed.``,
# failed in a way the platform retries no more: the policy's to say
# (analyzer.verdict.policy.RetryPolicy.ends_job).
EndsJob = Callable[[Sequence[Event], int], bool]
# The service's lifecycle messages in the order one attempt writes them (platform.md section
# 4): a text without times whose messages mostly step backwards is written newest first.
_STEP_OF = {
    EventKind.JOB_QUEUED: 0,
    EventKind.ATTEMPT_STARTED: 0,
    EventKind.JOB_PROVISIONING: 1,
    EventKind.JOB_PREPARING: 2,
    EventKind.JOB_RUNNING: 3,
    EventKind.TEARDOWN: 4,
    EventKind.JOB_FAILED: 5,
    EventKind.JOB_SUCCEEDED: 5,
    EventKind.JOB_CANCELLED: 5,
    EventKind.RETRIES_EXHAUSTED: 6,
}
# The earliest time, aware, for sorting records that have none.
_NO_TIME = datetime.min.replace(tzinfo=UTC)


def is_primary(task: str | None) -> bool:
    """Whether ``task`` is the job's primary replica (``workerpool0-0``, legacy
    ``master-replica-0``)."""
    return task is not None and _PRIMARY.match(task) is not None


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
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class WorkerTimeline:
    """One worker (replica) within one attempt."""

    task: str
    starts: tuple[WorkerStart, ...]
    exits: tuple[WorkerExit, ...]
    first_seen: datetime | None
    last_seen: datetime | None
    # The worker's own last record (not a service message about it): where its lines in the
    # input end.
    own_last: datetime | None = None
    # The minutes it wrote in within the attempt (None: the input's engine gave none).
    rhythm: Rhythm | None = None

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

    @property
    def failures(self) -> tuple[WorkerExit, ...]:
        """Non-zero exits that count toward the restart limit: an exit followed by a start on
        another VM (often 143, SIGTERM) is a maintenance move, never charged (section 9)."""
        charged: list[WorkerExit] = []
        for gone in self.exits:
            if gone.exit_code in (None, 0):
                continue
            after = next(
                (
                    s
                    for s in self.starts
                    if s.time is not None and gone.time is not None and s.time >= gone.time
                ),
                None,
            )
            if after is None or not after.maintenance:
                charged.append(gone)
        return tuple(charged)


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
    # Where the service's own lines are in the input but no container line is: the container
    # stream is there and empty (True), or the input lacks it (False: a paste of service
    # lines, a text without a task column); see has_container_stream().
    service_records: int = 0
    # (k, n): job k of n that one id-less text holds (two stream-logs runs pasted together).
    pasted_part: tuple[int, int] | None = None
    # Where the input ends for this job, when it is one of several a text holds (its own
    # stream ends before the next job's begins); None: the log's (JobLog.input_end).
    input_end: datetime | None = None
    # The inputs whose lines hold no times and were read bottom up, being written newest
    # first (see oldest_first).
    reversed_paths: tuple[str, ...] = ()
    # API refusals of requests to Vertex AI's other services, set aside (other_service).
    other_service: int = 0
    # The attempt only its workers' lines show, on VMs first seen after the job-level
    # failure before it (_resumed_after_failure); None when every attempt's start is logged.
    resumed: int | None = None
    # States and errors of other kinds of Vertex AI jobs (batch prediction), set aside
    # (other_jobs).
    other_jobs: int = 0


def _fullest(events: Sequence[Event]) -> Sequence[Event]:
    """``events`` without a failure match that names nothing (no replica, no exit code: the
    last sentence of a replica-exit message, rule vertex.user-code-exception-tail) beside a
    match of the same category in the same record that does: one failure message, not two
    (one cause, one mark on the chart, one echo)."""
    named = {
        (e.origin, e.match.category)
        for e in events
        if e.kind is EventKind.ERROR and e.match.category is not None and e.match.fields
    }
    if not named:
        return events
    return tuple(
        e
        for e in events
        if not (
            e.kind is EventKind.ERROR
            and not e.match.fields
            and (e.origin, e.match.category) in named
        )
    )


def _settle_provenance(event: Event) -> Event:
    """``event`` as the job's own, or as an echo in a worker's output.

    platform.md section 9: only the service writes the platform's lifecycle and error
    messages; the same sentence in a container's output (a launcher printing a child job's
    failure) is evidence about another job. Records without a task (plain text) keep their
    reading. Legacy ``Task completed successfully.`` is written per task: only the primary's
    (or the service's) is the job's success.
    """
    task = event.task
    if task is None or task == SERVICE_TASK:
        return event
    echo = event.match.writer is Writer.SERVICE or (
        event.kind is EventKind.JOB_SUCCEEDED and not is_primary(task)
    )
    if not echo:
        return event
    return replace(event, match=replace(event.match, kind=EventKind.ECHO))


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


def _resumed_after_failure(
    events: list[Event], vm_spans: Mapping[str, tuple[VmSpan, ...]]
) -> datetime | None:
    """When a worker came up on a VM it had not used, after the service's failure message
    that ends ``events`` (the last attempt's) and before any line of a new attempt; None
    when none did.

    platform.md section 8 counts an attempt from a worker starting again after a job-level
    failure when the service's lines are absent. A failure the platform retries starts the
    next attempt on new VMs (a restart in place, VM maintenance, stay inside the attempt, and
    come before the failure message); a job that ended starts none. So a VM first seen after
    the failure message is the next attempt's, in an input without its lifecycle lines (a
    Logs Explorer export of severity>=ERROR keeps the failure and the containers' stderr).
    """
    failures = [
        e.timestamp
        for e in events
        if e.kind is EventKind.ERROR and e.task in (None, SERVICE_TASK) and e.timestamp is not None
    ]
    if not failures or any(e.kind in ENDS_JOB for e in events):
        return None
    failed = max(failures)
    firsts = [
        span.first
        for spans in vm_spans.values()
        for span in spans
        if span.vm is not None and span.first > failed
    ]
    return min(firsts, default=None)


def _later_bounds(
    events: list[Event], start: datetime, vm_spans: Mapping[str, tuple[VmSpan, ...]]
) -> tuple[datetime | None, datetime | None]:
    """The bounds of an attempt only its workers' lines show, from ``start``."""
    ends = [span.last for spans in vm_spans.values() for span in spans if span.last >= start]
    ends += [e.timestamp for e in events if e.timestamp is not None]
    return start, max(ends, default=start)


def _bounds(events: list[Event]) -> tuple[datetime | None, datetime | None]:
    times = [e.timestamp for e in events if e.timestamp is not None]
    return (min(times), max(times)) if times else (None, None)


def _overlaps(span: VmSpan, start: datetime | None, end: datetime | None) -> bool:
    return (start is None or span.last >= start) and (end is None or span.first < end)


@dataclass(slots=True)
class _StartLines:
    """Which runner start lines make one process start.

    platform.md section 9: a start writes several runner lines (``Updating master address to
    local address HOST``, ``Running run_module.py``, ``Running task with arguments: ...``,
    ``Running command: ...``, the last repeated with other commands), and a cut export may
    lack the first ones. A start line begins a new start when the process exited since the
    last start, when it came up on another VM (another ``resource_id`` label, or, only where
    the input has no such label, another local address: a maintenance move, which writes no
    exit; a restart on the same VM keeps its resource_id), when the same line was already
    written in the current start, or when it is the master-address line that opens a start.
    """

    started: bool = False
    exited: bool = False
    seen: set[str] = field(default_factory=set)
    vm: str | None = None
    host: str | None = None
    # The input labels the worker's records with their VM (resource_id): the VM is that
    # label, and a changed local address alone is no move (platform.md section 9).
    labelled: bool = False

    def begins_start(self, event: Event) -> tuple[bool, bool]:
        """Whether ``event`` (a start line) begins a new start, and whether on another VM."""
        key = " ".join(event.text.split())
        value = event.match.field("host")
        host = value if isinstance(value, str) else None
        moved = self.started and (
            (event.vm is not None and self.vm is not None and event.vm != self.vm)
            or (
                not self.labelled
                and host is not None
                and self.host is not None
                and host != self.host
            )
        )
        new = (
            not self.started
            or self.exited
            or moved
            or key in self.seen
            or (host is not None and bool(self.seen))
        )
        if new:
            self.started, self.exited, self.seen = True, False, {key}
        else:
            self.seen.add(key)
        self.vm = event.vm or self.vm
        self.host = host or self.host
        return new, moved


def _one_exit(last: WorkerExit, event: Event, exit_code: int | None) -> WorkerExit | None:
    """``last``, the runner's report that the command failed, and ``event``, the same
    runner's completion line, as one exit; None if they are two.

    A runner reports one exit in two lines: the prebuilt container's ``Command '[...]'
    returned non-zero exit status 1.`` then ``Task completed. Exit code (1). ...``, the legacy
    runner's ``... exit status -9`` then ``Module completed; cleaning up.`` (no code). The
    caller pairs them by fact, not by time (a loaded VM can put many seconds between them):
    the completion line is the same replica's next runner exit line after the report, with
    no start between. Two codes that differ are two exits. The exit keeps the later line when
    it gives a code (``Task completed``), else the report's.
    """
    if last.time is not None and event.timestamp is not None and event.timestamp < last.time:
        return None  # a completion before the report is of an earlier process
    known = exit_code is not None and last.exit_code is not None
    if known and not _same_exit(last.exit_code, exit_code):
        return None
    if exit_code is None:
        return last
    reason = event.match.field("reason")
    return WorkerExit(
        event.timestamp, exit_code, event.origin, reason if isinstance(reason, str) else None
    )


def _same_exit(first: int | None, second: int | None) -> bool:
    """Whether two exit codes report one exit: equal, or the same signal in two notations
    (the legacy runner's Python return code -9 and the service's ``9(SIGKILL)``)."""
    if first == second:
        return True
    if first is None or second is None or (first >= 0 and second >= 0):
        return False
    signal = decode(first).signal
    return signal is not None and signal == decode(second).signal


def _worker(
    task: str,
    events: list[Event],
    spans: tuple[VmSpan, ...],
    window: tuple[datetime | None, datetime | None],
) -> WorkerTimeline:
    """One worker in one attempt: its process starts and exits from its lines (platform.md
    sections 4 and 9), and its VM moves from the resource_id labels (section 9)."""
    # Section 9: the VM is the resource_id label where the input has one; then a changed
    # host in "Updating master address to local address HOST" is no move by itself.
    labelled = any(s.vm is not None for s in spans) or any(e.vm is not None for e in events)
    lines = _WorkerLines(_StartLines(labelled=labelled))
    for event in events:
        if event.kind is EventKind.WORKER_STARTED:
            lines.start(event)
        elif event.kind in (EventKind.WORKER_EXITED, EventKind.ERROR):
            lines.exit(event)
    inside = [s for s in spans if _overlaps(s, *window)]
    seen = [t for s in inside for t in (s.first, s.last)]
    seen += [e.timestamp for e in events if e.timestamp is not None]
    own = [s.last for s in inside] + [
        e.timestamp for e in events if e.timestamp is not None and e.task == task
    ]
    return WorkerTimeline(
        task=task,
        starts=tuple(_vm_moves(lines.starts, inside)),
        exits=tuple(lines.exits),
        first_seen=min(seen, default=None),
        last_seen=max(seen, default=None),
        own_last=max(own, default=None),
        rhythm=rhythm_of(inside, *window) if inside else None,
    )


def _vm_moves(starts: list[WorkerStart], inside: list[VmSpan]) -> list[WorkerStart]:
    """``starts`` with the VM changes inside the attempt: restarts on another VM
    (maintenance, platform.md section 9), unless a runner start line already recorded them;
    a container without runner lines has only these."""
    starts = list(starts)
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
    starts.sort(key=lambda s: s.time or _NO_TIME)
    return starts


@dataclass(slots=True)
class _WorkerLines:
    """A worker's process starts and exits, read line by line (_worker)."""

    lines: _StartLines
    starts: list[WorkerStart] = field(default_factory=list)
    exits: list[WorkerExit] = field(default_factory=list)
    # The exit the runner's "Command ... returned non-zero exit status N." reported, while
    # its completion line may still follow: no start and no other exit line of the replica
    # since.
    reported_by_runner: int | None = None
    # The last exit the replica's own lines logged, with no start since: the one a service
    # report without a time (a paste) can only be about, when the codes agree.
    runner_logged: int | None = None

    def start(self, event: Event) -> None:
        new, moved = self.lines.begins_start(event)
        if new:
            self.starts.append(WorkerStart(event.timestamp, event.vm, moved, event.origin))
            self.reported_by_runner = self.runner_logged = None

    def exit(self, event: Event) -> None:
        """An exit line of the runner, or the service's report of an exit (section 4)."""
        code = event.match.field("exit_code")
        exit_code = code if isinstance(code, int) else None
        report = event.match.field("command") is not None  # the runner's failure report
        if event.kind is EventKind.WORKER_EXITED and self._completes_report(
            event, exit_code, report
        ):
            return
        if event.kind is EventKind.ERROR and self._already_logged(event, exit_code):
            self.runner_logged = None
            return
        self.lines.exited = True
        if event.kind is EventKind.WORKER_EXITED and report:
            self.reported_by_runner = len(self.exits)
        elif event.kind is EventKind.ERROR:
            self.reported_by_runner = None  # another exit came between
        self.runner_logged = len(self.exits) if event.kind is EventKind.WORKER_EXITED else None
        reason = event.match.field("reason")
        self.exits.append(
            WorkerExit(
                event.timestamp,
                exit_code,
                event.origin,
                reason if isinstance(reason, str) else None,
            )
        )

    def _completes_report(self, event: Event, exit_code: int | None, report: bool) -> bool:
        """Whether ``event``, the runner's completion line, is the exit its failure report
        already logged (_one_exit), merged into it."""
        if self.reported_by_runner is None:
            return False
        pending, self.reported_by_runner = self.reported_by_runner, None
        if report:
            return False
        merged = _one_exit(self.exits[pending], event, exit_code)
        if merged is None:
            return False
        self.exits[pending] = merged
        return True

    def _already_logged(self, event: Event, exit_code: int | None) -> bool:
        """Whether the service's ``event`` reports an exit the runner already logged: within
        minutes of it, or, without times (a paste), just after the replica's lines logged it
        (platform.md section 9): one exit, not two."""
        timed = any(
            _same_exit(e.exit_code, exit_code)
            and e.time is not None
            and event.timestamp is not None
            and timedelta(0) <= event.timestamp - e.time <= _SAME_RESTART
            for e in self.exits
        )
        logged = self.runner_logged
        pasted = (
            event.timestamp is None
            and logged is not None
            and self.exits[logged].time is None
            and _same_exit(self.exits[logged].exit_code, exit_code)
        )
        return timed or pasted


def _event_task(event: Event) -> str | None:
    """The worker an event is about: its own task, or the replica a service message names."""
    replica = event.match.field("replica")
    if isinstance(replica, str) and replica:
        return replica_task(replica)
    if event.task is not None and event.task != SERVICE_TASK:
        return event.task
    return None


def _worker_only_groups(events: tuple[Event, ...], budget: int) -> list[list[Event]]:
    """Attempts of a log with no service line, from the runner's lines alone.

    platform.md section 2: a worker is restarted in place up to ``budget`` times; failing
    again after that retries the whole job. So a worker's start that follows ``budget + 1``
    failed runs in one attempt (the 7th start of a primary that failed 6 times, with the
    default 5) begins the next attempt, for every worker.
    """
    boundaries: list[datetime] = []
    by_task: dict[str, list[Event]] = {}
    for event in events:
        if event.task is not None and event.kind in WORKER_KINDS:
            by_task.setdefault(event.task, []).append(event)
    for task_events in by_task.values():
        failed = 0
        lines = _StartLines()
        for event in task_events:
            if event.kind is EventKind.WORKER_EXITED:
                code = event.match.field("exit_code")
                lines.exited = True
                failed += 1 if isinstance(code, int) and code != 0 else 0
            elif lines.begins_start(event)[0] and failed > budget:
                if event.timestamp is not None:
                    boundaries.append(event.timestamp)
                failed = 0
    groups: list[list[Event]] = [[]]
    cuts = iter(sorted(set(boundaries)))
    cut = next(cuts, None)
    for event in events:
        while cut is not None and event.timestamp is not None and event.timestamp >= cut:
            groups.append([])
            cut = next(cuts, None)
        groups[-1].append(event)
    return [g for g in groups if g]


def has_container_stream(timeline: JobTimeline) -> bool:
    """Whether the input holds the job's container stream, so that its absence means the
    container wrote nothing (rather than a paste holding only the service's lines).

    It does when the records carry tasks (a structured export), the service's lines are there
    and so is the attempt's start as the service logs it: an export of the job's logs, not a
    quoted message.
    """
    if timeline.service_records == 0:
        return False
    return any(
        attempt.has(EventKind.ATTEMPT_STARTED) or attempt.has(EventKind.JOB_RUNNING)
        for attempt in timeline.attempts
    )


def build_timeline(log: JobLog, restart_budget: int | None = None) -> JobTimeline:
    """Split ``log`` into attempts and worker timelines.

    ``restart_budget`` (the policy's restarts per worker) lets a log with no service line be
    split into attempts from the runner's lines alone.
    """
    events = tuple(_settle_provenance(e) for e in _fullest(log.events))
    groups = _attempt_groups(events, log, restart_budget)
    bounds = [_bounds(g) for g in groups]
    resumed = _resumed_after_failure(groups[-1], log.vm_spans) if groups else None
    if resumed is not None:
        # A worker came up on a new VM after the job-level failure: the next attempt, whose
        # service lines the input lacks (an export filtered by severity).
        last = groups.pop()
        groups += [
            [e for e in last if e.timestamp is None or e.timestamp < resumed],
            [e for e in last if e.timestamp is not None and e.timestamp >= resumed],
        ]
        bounds[-1:] = [_bounds(groups[-2]), _later_bounds(groups[-1], resumed, log.vm_spans)]
    attempts: list[Attempt] = []
    for index, group in enumerate(groups):
        start, end = bounds[index]
        # Worker records between two attempts' events belong to the earlier attempt.
        window_end = bounds[index + 1][0] if index + 1 < len(groups) else None
        window = (start if index > 0 else None, window_end)
        workers = _attempt_workers(group, log.vm_spans, window)
        attempts.append(Attempt(index + 1, tuple(group), workers, start, end))
    return JobTimeline(
        log.job_id,
        tuple(attempts),
        log.first_seen,
        log.last_seen,
        log.records,
        log.trial,
        service_records=log.service_records,
        resumed=len(attempts) if resumed is not None else None,
    )


def _attempt_groups(
    events: tuple[Event, ...], log: JobLog, restart_budget: int | None
) -> list[list[Event]]:
    """``events`` in attempts: by the service's lines, or by the runner's alone (with the
    restart budget) when no service line is there."""
    worker_only = not any(
        e.kind in _SERVICE_KINDS and e.task in (None, SERVICE_TASK) for e in events
    )
    if worker_only and restart_budget is not None:
        groups = _worker_only_groups(events, restart_budget)
    else:
        groups = _split_attempts(events)
    if not groups and log.vm_spans:
        groups = [[]]  # workers logged, but no lifecycle line matched: one attempt
    return groups


def _attempt_workers(
    group: list[Event],
    vm_spans: Mapping[str, tuple[VmSpan, ...]],
    window: tuple[datetime | None, datetime | None],
) -> tuple[WorkerTimeline, ...]:
    """The workers of one attempt: those its events name, and those with lines in its
    ``window``."""
    by_task: dict[str, list[Event]] = {}
    for event in group:
        task = _event_task(event)
        if task is not None:
            by_task.setdefault(task, []).append(event)
    tasks = set(by_task)
    tasks.update(
        task for task, spans in vm_spans.items() if any(_overlaps(s, *window) for s in spans)
    )
    return tuple(
        _worker(task, by_task.get(task, []), vm_spans.get(task, ()), window)
        for task in sorted(tasks)
    )


def job_timelines(
    log: JobLog, restart_budget: int | None = None, ends_job: EndsJob | None = None
) -> list[JobTimeline]:
    """The timeline of each job ``log`` holds (:func:`separate_jobs`), numbered when one
    id-less text held several; a text without times written newest first is read oldest
    first (:func:`oldest_first`)."""
    log, flipped = oldest_first(log)
    others = other_jobs(log.events)
    kept = tuple(e for e in log.events if not other_service(e) and e.origin not in others)
    # Counted, not inferred from what was dropped: another event on the line of another job's
    # state or error (the SDK's RuntimeError around "Job failed with:") goes with it, and is no
    # API refusal (tests/real/gh-jarokaz-vertex-ai-workshop-batch-predict-S).
    aside = sum(1 for e in log.events if other_service(e))
    told = sum(1 for e in log.events if e.origin in others and e.kind in _OTHER_JOB_LINES)
    if aside or others:
        log = replace(log, events=kept)
    logs = separate_jobs(log, ends_job)
    timelines = [build_timeline(part, restart_budget) for part in logs]
    if len(logs) > 1:
        timelines = [
            replace(t, input_end=part.input_end) for t, part in zip(timelines, logs, strict=True)
        ]
    if flipped or aside or others:
        timelines = [
            replace(timeline, reversed_paths=flipped, other_service=aside, other_jobs=told)
            for timeline in timelines
        ]
    if len(timelines) == 1:
        return timelines
    return [
        replace(timeline, pasted_part=(index, len(timelines)))
        for index, timeline in enumerate(timelines, start=1)
    ]


# What another job's lines tell of it: its states and its error (the lines the note counts).
_OTHER_JOB_LINES = (EventKind.JOB_STATE, EventKind.JOB_ERROR)


def other_jobs(events: Sequence[Event]) -> set[Origin]:
    """The records of the states and errors another kind of Vertex AI job printed: those that
    follow, in the input, a batch prediction job's name (rule sdk.other-job-named) with no
    training job named between (a listing of a project's batch prediction jobs prints each
    one's ``name:`` then its ``state: JobState.JOB_STATE_X``: not a training job's fate)."""
    aside: set[Origin] = set()
    other = False
    # A line that names the job before the state it prints (a listing: "NAME JobState.X").
    ordered = sorted(
        events,
        key=lambda e: (
            e.origin.path,
            e.origin.line,
            e.origin.entry,
            e.kind is not EventKind.JOB_NAMED,
        ),
    )
    for event in ordered:
        if event.kind is EventKind.JOB_NAMED:
            if event.match.field("other_job") is not None:
                other = True
            elif event.match.field("job_id") is not None:
                other = False
        elif other and event.kind in _OTHER_JOB_LINES:
            aside.add(event.origin)
    return aside | _tracebacks_ending_at(ordered, aside)


def _tracebacks_ending_at(ordered: Sequence[Event], ends: set[Origin]) -> set[Origin]:
    """The lines of each traceback in ``ordered`` whose exception line is one of ``ends``:
    the SDK's RuntimeError around another job's "Job failed with:" is the caller's report of
    that job, its header and frames with it (not a traceback left open when set aside)."""
    lines: set[Origin] = set()
    pending: list[Origin] = []
    for event in ordered:
        if event.kind is EventKind.TRACEBACK:
            pending = [event.origin]
        elif event.kind is EventKind.FRAME and pending:
            pending.append(event.origin)
        elif event.kind is EventKind.EXCEPTION:
            if event.origin in ends:
                lines.update(pending)
            pending = []
    return lines


def other_service(event: Event) -> bool:
    """Whether ``event`` is an API refusal of a request to another Vertex AI service (a
    generative model's, an endpoint's: :func:`~analyzer.rulebook.events.other_service_text`), not of
    a training job."""
    return event.kind is EventKind.CREATION_REFUSED and other_service_text(event.text)


def steps_down_up(values: Sequence[Any]) -> tuple[int, int]:
    """How many of the steps between neighbours of ``values`` go down, and how many up
    (equal neighbours count as neither): which way an input's times or lifecycle run."""
    down = up = 0
    for before, after in itertools.pairwise(values):
        if after < before:
            down += 1
        elif after > before:
            up += 1
    return down, up


def newest_first(events: Sequence[Event]) -> bool:
    """Whether ``events``, in input order, are written newest first: most steps between the
    service's lifecycle messages go backwards (at least two of them)."""
    steps = [
        _STEP_OF[e.kind] for e in events if e.kind in _STEP_OF and e.task in (None, SERVICE_TASK)
    ]
    down, up = steps_down_up(steps)
    return down >= 2 and down > up


def oldest_first(log: JobLog) -> tuple[JobLog, tuple[str, ...]]:
    """``log`` with the events of each input that holds no times and is written newest first
    read bottom up, and those inputs' paths.

    ``gcloud logging read`` prints newest first, and its ``value(textPayload)`` output keeps
    no time: read top down, "Job failed." comes before "Job is running." and a job with one
    attempt reads as three, the last one pending. Events with a time are in time order
    already (timed events sort first, the untimed ones follow by input and line:
    classify's order), so only the untimed run of each input is turned. Lines of one entry
    (a message's continuation lines) turn with it: the tracebacks they hold are read either
    way (tracebacks.exception_from_events)."""
    events = list(log.events)
    flipped: list[str] = []
    start = next((i for i, e in enumerate(events) if e.timestamp is None), len(events))
    while start < len(events):
        path = events[start].origin.path
        end = start
        while end < len(events) and events[end].origin.path == path:
            end += 1
        run = events[start:end]
        if all(e.timestamp is None for e in run) and newest_first(run):
            events[start:end] = run[::-1]
            flipped.append(path)
        start = end
    if not flipped:
        return log, ()
    return replace(log, events=tuple(events)), tuple(flipped)


def separate_jobs(log: JobLog, ends_job: EndsJob | None = None) -> list[JobLog]:
    """The jobs a log read from a text holds: a job that ended (success, or retries
    exhausted, or a failure ``ends_job`` says the platform does not retry) and a new
    provisioning after it are two jobs pasted together, not two attempts (section 9).

    A log whose lines carry its job id is one job, whatever it shows. One named by a line of
    a text without ids (``named_in_text``: a console link) keeps the id for the part that
    names it; the others are jobs without an id.
    """
    if log.job_id is not None and not log.named_in_text:
        return [log]
    parts = _job_parts(log.events, ends_job)
    if len(parts) == 1:
        return [log]
    named = [any(named_job(e) == log.job_id for e in part) for part in parts]
    starts = [_bounds(part)[0] for part in parts[1:]] + [None]
    # The part the id's line is in keeps it (the first when none holds it).
    return [
        _part_log(
            log, part, log.job_id if named[i] or (i == 0 and not any(named)) else None, starts[i]
        )
        for i, part in enumerate(parts)
    ]


def _job_parts(events: Sequence[Event], ends_job: EndsJob | None) -> list[list[Event]]:
    """``events`` cut where one job ends and another begins (:class:`_JobCutter`)."""
    parts: list[list[Event]] = [[]]
    cutter = _JobCutter(ends_job)
    for event in events:
        if cutter.begins_another(event):
            parts.append([])
        parts[-1].append(event)
    return parts


class _JobCutter:
    """Where a text's next job begins: a provisioning after the job ended (success, retries
    exhausted, a failure the policy retries no more by then: ``ends_job``), or after an
    attempt that ran with no failure since. The platform starts an attempt only after the
    last one's ``Job failed.`` (platform.md section 2): so the provisioning is another job's
    (a run whose stream-logs was stopped, then the next run's). The same provisioning line
    twice in one second is one line read twice (a log pasted or streamed again), not two."""

    def __init__(self, ends_job: EndsJob | None) -> None:
        self._ends_job = ends_job
        self._ended = False
        self._ran = False  # the current attempt ran, and has not failed
        self._attempt: list[Event] = []
        self._number = 0  # the attempts begun in the current job
        self._started: datetime | None = None  # its last provisioning's time

    def begins_another(self, event: Event) -> bool:
        """Take the next ``event``: whether it begins another job."""
        service = event.task in (None, SERVICE_TASK)
        starts = service and event.kind is EventKind.ATTEMPT_STARTED
        again = starts and event.timestamp is not None and event.timestamp == self._started
        another = not again and (
            (self._ended and service and event.kind in BEGINS_JOB) or (starts and self._ran)
        )
        if another:
            self._ended, self._ran, self._number = False, False, 0
        if starts and not again:
            self._attempt, self._number, self._started = [], self._number + 1, event.timestamp
        self._attempt.append(event)
        ran = self._ran or event.kind in _ACTIVITY
        self._ran = ran and event.kind is not EventKind.JOB_FAILED
        if service and event.kind is EventKind.JOB_FAILED and self._ends_job is not None:
            self._ended = self._ended or self._ends_job(self._attempt, max(self._number, 1))
        self._ended = self._ended or (service and event.kind in _JOB_END)
        return another


def _part_log(log: JobLog, part: list[Event], job_id: str | None, until: datetime | None) -> JobLog:
    """The log of one job of ``log``: its events, and the workers' spans in its time. Its
    input ends with its own lines, before the next job's (``until``): the text holds one
    stream after another (stream-logs of one run, then the next's), and another run's later
    lines say nothing of this one's silence (issue 30)."""
    first, last = _bounds(part)
    if until is not None:
        ends = [s.last for spans in log.vm_spans.values() for s in spans if s.last < until]
        input_end = max([t for t in (last, *ends) if t is not None], default=None)
    else:
        input_end = log.input_end
    spans = {
        task: tuple(s for s in task_spans if _overlaps(s, first, last))
        for task, task_spans in log.vm_spans.items()
    }
    return replace(
        log,
        events=tuple(part),
        vm_spans={task: found for task, found in spans.items() if found},
        records=len({e.origin for e in part}),
        first_seen=first,
        last_seen=last,
        job_id=job_id,
        input_end=input_end,
    )


def restarts_by_worker(timeline: JobTimeline) -> Mapping[str, int]:
    """Restarts per replica, summed over attempts (the contract's ``worker_restarts``)."""
    totals: dict[str, int] = {}
    for attempt in timeline.attempts:
        for worker in attempt.workers:
            totals[worker.task] = totals.get(worker.task, 0) + worker.restarts
    return dict(sorted(totals.items()))
