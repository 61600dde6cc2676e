"""Finding a hang from the logs alone (issue 30): a job still RUNNING whose workers went silent
past their own rhythm, or that logged a collective or rendezvous timeout.

The platform does not fail a hung job: it bills every VM until ``scheduling.timeout`` (7 days
by default, platform.md section 2). What shows the hang:

- a worker silent longer than its threshold (the policy's ``stall`` section: a high quantile
  of its gaps in this attempt, times a factor, never below a floor) when the input ends, while
  another still writes (:attr:`StallKind.STRAGGLER`), or every worker silent while the input
  goes on past them (:attr:`StallKind.ALL_SILENT`: another job's lines later in a project's
  sink, or now in a live read);
- a line of a detail rule the policy's ``hang_evidence`` names, with no worker started after
  it (:attr:`StallKind.COLLECTIVE_TIMEOUT`).

The input's end is the latest time the inputs holding the job's lines show, whichever job
wrote it (:class:`InputEnd`). A job that ended is
never stalled (its state is not RUNNING); a single job's export that stops with its own last
line cannot show every worker silent, and says so rather than guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from analyzer.ingest.records import Origin
from analyzer.rulebook.events import Event, EventKind
from analyzer.timeline.attempts import Attempt, JobTimeline, WorkerTimeline
from analyzer.verdict.findings import Finding, FindingKind, Provenance, finding
from analyzer.verdict.jobspec import JobSpec
from analyzer.verdict.policy import HangEvidence, StallPolicy
from analyzer.verdict.stall import SilentWorker, Stall, StallCost, StallKind

_MINUTE = timedelta(minutes=1)
_HOUR = timedelta(hours=1)
_NO_TIME = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class InputEnd:
    """Where the input ends for a job: the latest time the inputs holding its lines show (a
    project sink goes on after a hung job's last line; an unrelated export read beside it says
    nothing of it), or now for a live read (``live``)."""

    at: datetime
    live: bool = False


@dataclass(frozen=True, slots=True)
class StallReading:
    """What a job's lines say of a hang: the stall (None: not stalled) and the findings the
    advice and the notes are chosen from (a stall's, or what the input cannot tell)."""

    stall: Stall | None = None
    findings: tuple[Finding, ...] = ()


@dataclass(frozen=True, slots=True)
class _Timeout:
    """A hang-evidence line: the event, the collective it names, how long it waited."""

    event: Event
    collective: str | None
    waited: timedelta | None


def read_stall(
    timeline: JobTimeline,
    running: bool,
    policy: StallPolicy,
    end: InputEnd | None,
    spec: JobSpec | None = None,
) -> StallReading:
    """Whether the job of ``timeline``, ``running`` (its state RUNNING, observed or
    predicted), is stalled when the input ends (``end``; None: at this job's own last line)."""
    if not running or not timeline.attempts:
        return StallReading()
    attempt = timeline.attempts[-1]
    ends = end or (InputEnd(timeline.last_seen) if timeline.last_seen else None)
    if ends is None:
        return StallReading()  # no times: no silence to measure
    live = [w for w in attempt.workers if not _ended(w) and w.own_last is not None]
    timeouts = _hang_lines(attempt, policy, live)
    silent = [s for w in live if (s := _silent(attempt, w, policy, ends.at)) is not None]
    writing = [w.task for w in live if not _quiet(w, policy, ends.at)]
    kind = _kind(timeouts, silent, writing)
    if kind is None:
        return StallReading(findings=_untold(timeline, live, ends))
    timeout_at, source = _timeout_at(timeline, policy, spec)
    if timeout_at is not None and timeout_at <= ends.at:
        # The platform stops a job at its scheduling.timeout (platform.md section 2): by the
        # input's end this one was no longer running, hung or not.
        return StallReading()
    stall = Stall(
        since=_since(kind, timeouts, silent, live),
        kind=kind,
        workers=tuple(silent),
        evidence=_evidence(timeouts, silent),
        input_end=ends.at,
        timeout_at=timeout_at,
        timeout_source=source,
        cost_to_timeout=_cost(timeout_at, ends.at, len(attempt.workers), spec),
        waiting=tuple(writing) if kind is not StallKind.ALL_SILENT else (),
        collective=next((t.collective for t in timeouts if t.collective), None),
    )
    return StallReading(stall, (_stalled_finding(stall, timeouts),))


def _hang_lines(
    attempt: Attempt, policy: StallPolicy, live: Sequence[WorkerTimeline]
) -> list[_Timeout]:
    """The attempt's timeouts the job did not go on after, in time order, then by worker
    (lines of one instant come in another order from a table than from a file)."""
    return sorted(
        _went_on(_timeouts(attempt, policy.hang_evidence), live),
        key=lambda t: (t.event.timestamp or _NO_TIME, t.event.task or ""),
    )


def _evidence(timeouts: Sequence[_Timeout], silent: Sequence[SilentWorker]) -> tuple[Origin, ...]:
    """The timeout lines, then each silent worker's last line a rule read."""
    lines = [t.event.origin for t in timeouts]
    return tuple(lines + [w.last_origin for w in silent if w.last_origin is not None])


def threshold(worker: WorkerTimeline, policy: StallPolicy) -> timedelta | None:
    """How long ``worker`` may be silent within its rhythm: the policy's quantile of its gaps
    times its factor, never below the floor; None when it has no rhythm to judge (too few
    minutes with a line, or over less time than the threshold itself)."""
    rhythm = worker.rhythm
    if rhythm is None or rhythm.active < policy.min_active_minutes:
        return None
    minutes = max(policy.floor_minutes, policy.gap_factor * rhythm.quantile(policy.gap_quantile))
    if rhythm.span_minutes < minutes:
        return None
    return timedelta(minutes=minutes)


def _silent(
    attempt: Attempt, worker: WorkerTimeline, policy: StallPolicy, end: datetime
) -> SilentWorker | None:
    limit = threshold(worker, policy)
    last = worker.own_last
    if limit is None or last is None or end - last <= limit:
        return None
    return SilentWorker(worker.task, last, end - last, limit, _last_origin(attempt, worker))


def _quiet(worker: WorkerTimeline, policy: StallPolicy, end: datetime) -> bool:
    """Whether ``worker`` wrote nothing for longer than its threshold (the floor when it has
    no rhythm): it does not count as still writing."""
    last = worker.own_last
    limit = threshold(worker, policy) or timedelta(minutes=policy.floor_minutes)
    return last is None or end - last > limit


def _ended(worker: WorkerTimeline) -> bool:
    """Whether ``worker``'s process exited and was not started again (it is not silent: it
    is gone, and the job's fate says what follows)."""
    if not worker.exits:
        return False
    gone = worker.exits[-1].time
    started = worker.starts[-1].time if worker.starts else None
    return started is None or gone is None or gone >= started


def _last_origin(attempt: Attempt, worker: WorkerTimeline) -> Origin | None:
    """Where the worker's last line is, when a rule read that line (a line no rule reads is
    known only as a time, from its span): None rather than an earlier line."""
    last = worker.own_last
    own = (e for e in reversed(attempt.events) if e.task == worker.task and e.timestamp == last)
    return next((e.origin for e in own), None)


def _kind(
    timeouts: Sequence[_Timeout], silent: Sequence[SilentWorker], writing: Sequence[str]
) -> StallKind | None:
    if timeouts:
        return StallKind.COLLECTIVE_TIMEOUT
    if not silent:
        return None
    return StallKind.STRAGGLER if writing else StallKind.ALL_SILENT


def _since(
    kind: StallKind,
    timeouts: Sequence[_Timeout],
    silent: Sequence[SilentWorker],
    live: Sequence[WorkerTimeline],
) -> datetime:
    """When the hang began: the first silent worker's last line; with every worker silent,
    the last line any wrote; a timeout's line less the time it says it waited."""
    times = [w.last_line for w in silent]
    if kind is StallKind.ALL_SILENT:
        times = [max(w.own_last for w in live if w.own_last is not None)]
    for timeout in timeouts:
        when = timeout.event.timestamp
        if when is not None:
            try:
                times.append(when - (timeout.waited or timedelta()))
            except OverflowError:  # a time near year 1
                times.append(when)
    return min(times)


def _timeouts(attempt: Attempt, rows: Sequence[HangEvidence]) -> list[_Timeout]:
    """The attempt's hang-evidence lines with no worker started after them (a restart is
    the platform going on, not a hang)."""
    found: list[_Timeout] = []
    for event in attempt.events:
        if event.kind is EventKind.WORKER_STARTED and event.timestamp is not None:
            found = [t for t in found if (t.event.timestamp or event.timestamp) > event.timestamp]
        if event.kind is not EventKind.DETAIL or event.timestamp is None:
            continue  # (a line without a time cannot say since when the job hangs)
        if (timeout := _as_timeout(event, rows)) is not None:
            found.append(timeout)
    return found


def _went_on(timeouts: list[_Timeout], live: Sequence[WorkerTimeline]) -> list[_Timeout]:
    """The timeouts the job did not go on after: every worker wrote a minute or more after
    a timeout's line (the waiting ranks' own watchdog lines and tracebacks come within
    seconds), so the collective was left behind, not stuck in."""

    def passed(timeout: _Timeout) -> bool:
        when = timeout.event.timestamp
        return (
            when is not None
            and bool(live)
            and all(w.own_last is not None and w.own_last - when > _MINUTE for w in live)
        )

    return [t for t in timeouts if not passed(t)]


def _timeout(event: Event, row: HangEvidence) -> _Timeout | None:
    if row.text is not None and row.text.search(event.text) is None:
        return None
    groups: dict[str, str] = {}
    if row.fields is not None:
        for found in row.fields.finditer(event.text):
            groups.update((k, v) for k, v in found.groupdict().items() if v is not None)

    def value(name: str) -> str | None:
        given = event.match.field(name)
        return str(given) if given is not None else groups.get(name)

    collective = value("collective") or row.collective
    waited = None
    if (ms := value("timeout_ms")) is not None and ms.isdigit():
        waited = timedelta(milliseconds=int(ms))
    elif (seconds := value("timeout_s")) is not None and seconds.isdigit():
        waited = timedelta(seconds=int(seconds))
    return _Timeout(event, collective, waited)


def _timeout_at(
    timeline: JobTimeline, policy: StallPolicy, spec: JobSpec | None
) -> tuple[datetime | None, str]:
    """When the platform stops the job: ``scheduling.timeout`` (the job spec's, else the
    7-day default; platform.md section 2) from the job's start (its first RUNNING line,
    else its first line: the platform counts the job's running time)."""
    given = spec.timeout if spec is not None else None
    timeout = given or timedelta(hours=policy.default_timeout_hours)
    start = next(
        (
            e.timestamp
            for a in timeline.attempts
            for e in a.events
            if e.kind is EventKind.JOB_RUNNING and e.timestamp is not None
        ),
        timeline.first_seen,
    )
    source = "job_spec" if given else "default"
    try:
        return (None if start is None else start + timeout), source
    except OverflowError:  # a job's times near year 9999: past what a datetime holds
        return None, source


def _cost(
    timeout_at: datetime | None, end: datetime, workers: int, spec: JobSpec | None
) -> StallCost | None:
    """Machine-hours (workers seen × hours left) and, with the job spec, accelerator-hours
    (its pools' accelerators × hours left) from the input's end to the timeout."""
    if timeout_at is None:
        return None
    hours = max(timedelta(), timeout_at - end) / _HOUR
    accelerators = sum(p.replica_count * p.accelerator_count for p in spec.pools) if spec else 0
    kinds = sorted({p.accelerator_type for p in spec.pools if p.accelerator_type}) if spec else []
    return StallCost(
        hours_left=hours,
        machine_hours=workers * hours,
        accelerator_hours=accelerators * hours if spec is not None and accelerators else None,
        accelerator=", ".join(kinds) or None,
    )


def _untold(
    timeline: JobTimeline, live: Sequence[WorkerTimeline], end: InputEnd
) -> tuple[Finding, ...]:
    """What the input cannot tell of a hang: no rhythm from its engine (a query's summary),
    or a single job's export that stops with the job's own last line."""
    if not live:
        return ()
    if all(w.rhythm is None for w in live):
        return (finding(FindingKind.STALL_UNTOLD, Provenance.SERVICE, why="no-rhythm"),)
    last = timeline.last_seen
    if not end.live and last is not None and end.at <= last:
        return (finding(FindingKind.STALL_UNTOLD, Provenance.SERVICE, why="input-ends-with-job"),)
    return ()


def unknown_state_timeout(timeline: JobTimeline, policy: StallPolicy) -> tuple[Finding, ...]:
    """A hang-evidence line in a job whose state no line tells (a paste of the watchdog's
    lines alone): nothing after it shows the job ending or going on, so neither a stall nor a
    failure can be said. The platform bills a hung job until its scheduling.timeout
    (platform.md section 2), while a watchdog that takes the process down ends it: the finding
    says which lines would tell the two apart rather than guess."""
    if not timeline.attempts:
        return ()
    events = timeline.attempts[-1].events
    # A line that ends the process (an exception, an exit) may itself name the timeout
    # ("DistBackendError: NCCL communicator was aborted"): then it is an end, not a hang.
    ending = {e.origin for e in events if e.kind in _ENDS}
    last: _Timeout | None = None
    for event in events:
        if event.kind in _ENDS:
            last = None  # the timeout was not the last word: the job or a worker went on
        elif event.kind is EventKind.DETAIL and event.origin not in ending:
            last = _as_timeout(event, policy.hang_evidence) or last
    if last is None:
        return ()
    collective = collective_words(last.collective)
    return (
        finding(
            FindingKind.STALL_UNTOLD,
            Provenance.USER,
            why="timeout-state-unknown",
            collective=collective[0].upper() + collective[1:],
        ),
    )


def _as_timeout(event: Event, rows: Sequence[HangEvidence]) -> _Timeout | None:
    """``event`` as hang evidence (the first row of its detail that takes it), else None."""
    for row in rows:
        if row.detail == event.match.detail and (timeout := _timeout(event, row)) is not None:
            return timeout
    return None


# What ends a job or a worker after a timeout line, or shows its processes going on to an
# end (a traceback begins: a process raises, as the ranks a watchdog aborts do): then the
# timeout was not a hang's last word.
_ENDS = frozenset(
    {
        EventKind.TRACEBACK,
        EventKind.WORKER_EXITED,
        EventKind.JOB_FAILED,
        EventKind.JOB_SUCCEEDED,
        EventKind.JOB_CANCELLED,
        EventKind.RETRIES_EXHAUSTED,
        EventKind.ERROR,
        EventKind.EXCEPTION,
        EventKind.TEARDOWN,
        EventKind.JOB_STATE,
    }
)


def _stalled_finding(stall: Stall, timeouts: Sequence[_Timeout]) -> Finding:
    first = stall.workers[0] if stall.workers else None
    reporter = next((t.event.task for t in timeouts if t.event.task), None)
    replica = first.replica if first else reporter
    cost = stall.cost_to_timeout
    return finding(
        FindingKind.STALLED,
        Provenance.USER if not timeouts else Provenance.RUNNER,
        stall.evidence,
        how=stall.kind.value,
        replica=replica or "a worker",
        reporter=reporter or "a worker",
        silent=duration_words(first.silent_for) if first else None,
        collective=collective_words(stall.collective),
        since=clock(stall.since, stall.input_end),
        timeout_at=clock(stall.timeout_at, stall.input_end) if stall.timeout_at else None,
        machine_hours=round(cost.machine_hours) if cost else None,
        priced="accelerators" if cost and cost.accelerator_hours else "machines",
        accelerator_hours=round(cost.accelerator_hours)
        if cost and cost.accelerator_hours
        else None,
    )


def duration_words(delta: timedelta) -> str:
    """``47 min``, ``3 h 05 min``, ``2 d 4 h``: a silence as a person reads it."""
    minutes = int(delta.total_seconds() // 60)
    if minutes < 120:
        return f"{minutes} min"
    if minutes < 48 * 60:
        return f"{minutes // 60} h {minutes % 60:02d} min"
    return f"{minutes // 1440} d {minutes % 1440 // 60} h"


def clock(when: datetime, beside: datetime) -> str:
    """``14:02`` on the day of ``beside`` (the input's end), else ``2024-03-11 14:02`` (UTC)."""
    if when.date() == beside.date():
        return when.strftime("%H:%M")
    return when.strftime("%Y-%m-%d %H:%M")


# What a collective's name reads as in a sentence (NCCL's OpType names, the policy's rows').
_COLLECTIVE_WORDS = {
    "ALLREDUCE": "an all-reduce",
    "ALLGATHER": "an all-gather",
    "_ALLGATHER_BASE": "an all-gather",
    "ALLGATHER_COALESCED": "an all-gather",
    "REDUCE_SCATTER": "a reduce-scatter",
    "_REDUCE_SCATTER_BASE": "a reduce-scatter",
    "BROADCAST": "a broadcast",
    "REDUCE": "a reduce",
    "ALLTOALL": "an all-to-all",
    "ALLTOALL_BASE": "an all-to-all",
    "BARRIER": "a barrier",
    "SEND": "a send",
    "RECV": "a receive",
    "RENDEZVOUS": "a rendezvous",
}


def collective_words(name: str | None) -> str:
    """``an all-reduce`` for ``ALLREDUCE``; ``the collective NAME`` for a name of no known
    operation (a barrier's id, ``[Init]Wait_for_all_tasks_to_register::0``: kept as written,
    the words to search the logs for); ``a collective`` when unknown."""
    if not name:
        return "a collective"
    return _COLLECTIVE_WORDS.get(name.upper(), f"the collective {name}")
