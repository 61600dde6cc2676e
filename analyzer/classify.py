"""The classify stage: stream records through the rule book and keep only what matters per job.

Most records match no rule. For those only cheap per-worker bookkeeping is kept (first and
last time seen on each VM), so memory grows with the number of jobs, workers and matched
events, never with the size of the input.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

import regex

from analyzer.events import Event, RuleMatch
from analyzer.records import SERVICE_TASK, InputStats, LogRecord, Origin, Source

# The console link in a service error names the job: ...&resource=ml_job%2Fjob_id%2F<id>&...
_JOB_LINK = regex.compile(r"ml_job(?:%2F|/)job_id(?:%2F|/)([A-Za-z0-9_\-]+)")


class Matcher(Protocol):
    """What classify needs of a rule book."""

    def match(self, text: str) -> tuple[RuleMatch, ...]: ...


@dataclass(frozen=True, slots=True)
class VmSpan:
    """The time one worker's records were seen on one VM (``vm`` None when unlabelled)."""

    vm: str | None
    first: datetime
    last: datetime
    records: int


@dataclass(frozen=True, slots=True)
class JobLog:
    """Everything the later stages need of one job, in time order.

    ``job_id`` is None when no input named the job (a stream-logs text without a console link).
    """

    job_id: str | None
    events: tuple[Event, ...]
    vm_spans: Mapping[str, tuple[VmSpan, ...]]
    records: int
    first_seen: datetime | None
    last_seen: datetime | None


@dataclass(slots=True)
class _Span:
    first: datetime
    last: datetime
    records: int = 0


@dataclass(slots=True)
class _JobAccumulator:
    events: list[Event] = field(default_factory=list)
    spans: dict[str, dict[str | None, _Span]] = field(default_factory=dict)
    records: int = 0
    first: datetime | None = None
    last: datetime | None = None

    def observe(self, record: LogRecord) -> None:
        self.records += 1
        when = record.timestamp
        if when is None:
            return
        if self.first is None or when < self.first:
            self.first = when
        if self.last is None or when > self.last:
            self.last = when
        task = record.task
        if task is None or task == SERVICE_TASK:
            return
        per_vm = self.spans.setdefault(task, {})
        span = per_vm.get(record.vm)
        if span is None:
            per_vm[record.vm] = _Span(when, when, 1)
        else:
            span.records += 1
            if when < span.first:
                span.first = when
            elif when > span.last:
                span.last = when

    def merge(self, other: _JobAccumulator) -> None:
        self.events.extend(other.events)
        self.records += other.records
        for when in (other.first, other.last):
            if when is not None:
                self.first = when if self.first is None else min(self.first, when)
                self.last = when if self.last is None else max(self.last, when)
        for task, per_vm in other.spans.items():
            mine = self.spans.setdefault(task, {})
            for vm, span in per_vm.items():
                if vm in mine:
                    current = mine[vm]
                    current.first = min(current.first, span.first)
                    current.last = max(current.last, span.last)
                    current.records += span.records
                else:
                    mine[vm] = span


def _event_order(event: Event) -> tuple[bool, datetime, str, int]:
    # Records without a time (plain text) keep their input order.
    when = event.timestamp or datetime.min
    return (event.timestamp is None, when, event.origin.path, event.origin.line)


def _linked_job_id(events: Iterable[Event]) -> str | None:
    for event in events:
        found = _JOB_LINK.search(event.text)
        if found:
            return found.group(1)
    return None


def _read_source(
    source: Source, book: Matcher, jobs: dict[tuple[str, str], _JobAccumulator]
) -> None:
    local: dict[str | None, _JobAccumulator] = {}
    for record in source.records():
        acc = local.get(record.job_id)
        if acc is None:
            acc = local[record.job_id] = _JobAccumulator()
        acc.observe(record)
        for match in book.match(record.text):
            acc.events.append(Event.from_record(record, match))
    # A stream-logs text has no job id: take it from the console link of the service error.
    anonymous = local.pop(None, None)
    if anonymous is not None:
        linked = _linked_job_id(anonymous.events)
        target = local.get(linked)
        if target is None:
            local[linked] = anonymous
        else:
            target.merge(anonymous)
    for job_id, acc in local.items():
        # A job without an id is only known inside its own input: never merge two of those.
        key = ("", job_id) if job_id is not None else ("\x00", source.stats.path)
        if key in jobs:
            jobs[key].merge(acc)
        else:
            jobs[key] = acc


def _identity(event: Event) -> tuple[object, ...]:
    """What makes two events the same entry, across exports of different precision."""
    if event.timestamp is None:
        return (event.insert_id, event.origin.path, event.origin.line)
    text = event.text.strip()
    head = " ".join(text.splitlines()[0].split()) if text else ""
    # stream-logs keeps whole seconds only: compare at that precision.
    second = event.timestamp.replace(microsecond=0)
    return (event.match.rule, event.task, head, second)


def _dedupe(events: list[Event], stats_by_path: Mapping[str, InputStats]) -> list[Event]:
    """Drop events of entries already seen: a sink may deliver an entry twice, and two
    exports of one job (a sink file and a stream-logs text) hold the same entries."""
    first_origin: dict[tuple[object, ...], Origin] = {}
    dropped: set[Origin] = set()
    kept: list[Event] = []
    for event in events:
        keys = [_identity(event)]
        if event.insert_id is not None:
            keys.append((event.insert_id, event.timestamp))
        duplicate = False
        for key in keys:
            origin = first_origin.setdefault(key, event.origin)
            duplicate = duplicate or origin != event.origin
        if duplicate:
            if event.origin not in dropped:
                dropped.add(event.origin)
                stats = stats_by_path.get(event.origin.path)
                if stats is not None:
                    stats.duplicates += 1
            continue
        kept.append(event)
    return kept


def classify_records(sources: Iterable[Source], book: Matcher) -> Iterator[Event]:
    """Every rule match in ``sources``, in input order (no grouping, no sorting)."""
    for source in sources:
        for record in source.records():
            for match in book.match(record.text):
                yield Event.from_record(record, match)


class Collector:
    """Reads sources into per-job accumulators; :meth:`logs` snapshots them as JobLogs.

    Reading may go on after a snapshot (``jobdoctor diagnose --follow`` feeds each poll's
    records and diagnoses again).
    """

    def __init__(self, book: Matcher) -> None:
        self._book = book
        self._jobs: dict[tuple[str, str], _JobAccumulator] = {}
        self._stats: dict[str, InputStats] = {}

    def read(self, source: Source) -> None:
        """Consume ``source`` entirely."""
        _read_source(source, self._book, self._jobs)
        self._stats.setdefault(source.stats.path, source.stats)

    @property
    def stats(self) -> list[InputStats]:
        """How each input was read, in reading order."""
        return list(self._stats.values())

    def logs(self) -> list[JobLog]:
        """One :class:`JobLog` per job: sorted by job id (unnamed jobs last), events in time
        order, duplicates dropped and counted on their inputs."""
        for stats in self._stats.values():
            stats.duplicates = 0
        logs = []
        for key in sorted(self._jobs):
            acc = self._jobs[key]
            job_id = key[1] if key[0] == "" else None
            events = _dedupe(sorted(acc.events, key=_event_order), self._stats)
            spans = {
                task: tuple(
                    sorted(
                        (VmSpan(vm, s.first, s.last, s.records) for vm, s in per_vm.items()),
                        key=lambda span: span.first,
                    )
                )
                for task, per_vm in sorted(acc.spans.items())
            }
            logs.append(JobLog(job_id, tuple(events), spans, acc.records, acc.first, acc.last))
        return logs


def collect(sources: Iterable[Source], book: Matcher) -> tuple[list[JobLog], list[InputStats]]:
    """Read every source through ``book`` and return one :class:`JobLog` per job."""
    collector = Collector(book)
    for source in sources:
        collector.read(source)
    return collector.logs(), collector.stats
