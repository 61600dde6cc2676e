"""The classify stage: stream records through the rule book and keep only what matters per job.

Most records match no rule. For those only cheap per-worker bookkeeping is kept (first and
last time seen on each VM), so memory grows with the number of jobs, workers and matched
events, never with the size of the input. Matched events that repeat (a checkpoint at every
step, the same harmless traceback again and again) are thinned as they are read
(``analyzer.classify.eventstore``: the same diagnoses; ``thin=False`` keeps every event).

Sink JSONL files, stream-logs text and gcloud JSON files take the fast scan
(``analyzer.classify._fastscan``: the bookkeeping kept from light lines with timestamps as strings,
full
records only for lines a rule may match, large inputs read by several processes); this module
turns what it found into the same per-job accumulators as the plain reading. The result is
identical to the plain path's (``tests/test_fastpath.py``, ``tests/test_fast_readers.py``);
``fast=False`` reads record by record.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from itertools import islice
from typing import TYPE_CHECKING, Any

from analyzer.classify import eventstore, longtext
from analyzer.classify._fastscan import Cluster, Matcher, RangeScan, can_scan, scan
from analyzer.classify.joined import JOB_LINK, joined_jobs
from analyzer.classify.minutes import MinuteMap, minute_of
from analyzer.core.errors import InputError
from analyzer.ingest import FileSource
from analyzer.ingest.progress import meter_for, records_counted, source_size
from analyzer.ingest.records import (
    SERVICE_TASK,
    InputStats,
    LogRecord,
    Origin,
    Source,
    job_group,
    parse_timestamp,
    split_job_group,
)
from analyzer.ingest.sniff import Format
from analyzer.ingest.sources import StreamSource, damage_line
from analyzer.rulebook.derived import derived_fields
from analyzer.rulebook.events import Event, EventKind, RuleMatch

if TYPE_CHECKING:
    from analyzer.classify.joblog import JobLog, SpanSummary, VmSpan

__all__ = [
    "Cluster",
    "Collector",
    "JobLog",
    "Matcher",
    "SpanSummary",
    "VmSpan",
    "classify_records",
    "classify_sources",
    "collect",
]


def __getattr__(name: str) -> Any:
    # The stage types of what Collector.logs gives load with it: the scan, and the worker
    # processes forked for it, build none (their classes were 13M instructions of the start-up
    # before the fork of the 200 MB fleet, callgrind).
    if name in ("JobLog", "SpanSummary", "VmSpan"):
        import analyzer.classify.joblog

        return getattr(analyzer.classify.joblog, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# A text's first line: up to the first of the line boundaries str.splitlines() knows.
_FIRST_LINE = re.compile("[^\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]*")
# Records whose texts go through the prefilter at once (_matched): enough to amortise a
# Hyperscan scan, few enough that a batch of records stays small.
_MATCH_BATCH = 1024


@dataclass(slots=True)
class _Span:
    first: datetime
    last: datetime
    records: int = 0
    # The minutes with a line (None: an engine's summary, which has no rhythm). ``lo`` is the
    # start of the minute of ``last`` and ``hi`` the next; ``flo``, ``fhi`` the same of
    # ``first``: a minute is noted only for a time outside both (as the fast scan's SpanTally).
    minutes: MinuteMap | None = None
    lo: datetime | None = None
    hi: datetime | None = None
    flo: datetime | None = None
    fhi: datetime | None = None

    @classmethod
    def at(cls, when: datetime) -> _Span:
        start, end = _minute_of(when)
        span = cls(when, when, 1, MinuteMap(), start, end, start, end)
        span.minutes.add(minute_of(when))  # type: ignore[union-attr]
        return span

    def count(self, when: datetime) -> None:
        """One more record at ``when``."""
        self.records += 1
        if when > self.last:
            self.last = when
            if self.hi is not None and when >= self.hi:
                self.lo, self.hi = self._note(when)
        elif when < self.first:
            self.first = when
            if self.flo is not None and when < self.flo:
                self.flo, self.fhi = self._note(when)
        elif (
            self.lo is not None
            and when < self.lo
            and not (self.flo is not None and self.fhi is not None and self.flo <= when < self.fhi)
        ):
            self._note(when)

    def _note(self, when: datetime) -> tuple[datetime, datetime]:
        if self.minutes is not None:
            self.minutes.add(minute_of(when))
        return _minute_of(when)

    def absorb(self, other: _Span) -> None:
        """Add ``other``'s records of the same worker on the same VM; the minutes stay only
        when both have theirs (a summary's span has none)."""
        if other.first < self.first:
            self.first, self.flo, self.fhi = other.first, other.flo, other.fhi
        if other.last > self.last:
            self.last, self.lo, self.hi = other.last, other.lo, other.hi
        self.records += other.records
        if self.minutes is None or other.minutes is None:
            self.minutes = None
        else:
            self.minutes.merge(other.minutes)


_MINUTE = timedelta(minutes=1)


@dataclass(slots=True)
class _JobAccumulator:
    events: list[Event] = field(default_factory=list)
    spans: dict[str, dict[str | None, _Span]] = field(default_factory=dict)
    records: int = 0
    first: datetime | None = None
    last: datetime | None = None
    service_records: int = 0
    # The latest time shown by the inputs this job's lines came from (JobLog.input_end).
    input_end: datetime | None = None
    # What thinning dropped from ``events`` (analyzer.classify.eventstore); None when nothing was.
    dropped: eventstore.Thinned | None = None
    # Kept events still on disk (a worker's, eventstore.store_kept), each batch with its place
    # in ``events`` (before the event there): read back when the job's log is built, so that
    # the reading process holds one job's events at a time, not every job's.
    stored: list[tuple[int, eventstore.SpillRef]] = field(default_factory=list)
    # What thinning dropped, still on disk (eventstore.load_dropped), read with the events.
    dropped_stored: list[eventstore.SpillRef] = field(default_factory=list)
    # Named only by a line of a text without job ids (JobLog.named_in_text).
    named_in_text: bool = False

    def take(
        self,
        events: list[Event],
        dropped: eventstore.Thinned | None,
        stored: Iterable[tuple[int, eventstore.SpillRef]] = (),
        dropped_stored: Iterable[eventstore.SpillRef] = (),
    ) -> None:
        """Add the (kept) ``events`` of a thinned read, those of it still on disk (``stored``,
        placed among ``events``) and what it dropped (some of it on disk: ``dropped_stored``)."""
        at = len(self.events)
        self.stored.extend((place + at, ref) for place, ref in stored)
        self.dropped_stored.extend(dropped_stored)
        self.events.extend(events)
        if dropped is not None and (dropped.gaps or dropped.spills):
            if self.dropped is None:
                self.dropped = eventstore.Thinned()
            self.dropped.merge(dropped)

    @property
    def has_events(self) -> bool:
        """Whether any event is kept, in memory or on disk (or was, and its log was given)."""
        return bool(self.events or self.stored) or self is _GIVEN

    def event_batches(self) -> Iterator[list[Event]]:
        """The kept events in reading order, a batch at a time (those on disk read back)."""
        done = 0
        for place, ref in self.stored:
            if place > done:
                yield self.events[done:place]
                done = place
            yield eventstore.restore_kept(ref)
        if done < len(self.events) or not self.stored:
            yield self.events[done:]

    def load(self) -> list[Event]:
        """Every kept event in reading order, those on disk read back into memory (and what
        was dropped of them, in :attr:`dropped`)."""
        if self.stored:
            self.events = [event for batch in self.event_batches() for event in batch]
            self.stored = []
        for ref in self.dropped_stored:
            self.take([], eventstore.load_dropped(ref))
        self.dropped_stored = []
        return self.events

    def observe(self, record: LogRecord) -> None:
        self.records += 1
        if record.task == SERVICE_TASK:
            self.service_records += 1
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
            per_vm[record.vm] = _Span.at(when)
        else:
            span.count(when)

    def merge(self, other: _JobAccumulator) -> None:
        self.take(other.events, other.dropped, other.stored, other.dropped_stored)
        self.records += other.records
        self.service_records += other.service_records
        self.named_in_text = self.named_in_text and other.named_in_text
        self.input_end = _later(self.input_end, other.input_end)
        for when in (other.first, other.last):
            if when is not None:
                self.first = when if self.first is None else min(self.first, when)
                self.last = when if self.last is None else max(self.last, when)
        for task, per_vm in other.spans.items():
            mine = self.spans.setdefault(task, {})
            for vm, span in per_vm.items():
                if vm in mine:
                    mine[vm].absorb(span)
                else:
                    mine[vm] = span


def _summary_span(span: SpanSummary) -> _Span:
    """The span of a query engine's row (timed): its minutes when the query gave them."""
    assert span.first is not None and span.last is not None
    minutes = span.minutes.copy() if span.minutes is not None else None
    return _Span(span.first, span.last, span.records, minutes)


def _minute_of(when: datetime) -> tuple[datetime, datetime]:
    """The minute ``when`` falls in, as its start and the next minute's (_Span.lo, hi)."""
    start = when.replace(second=0, microsecond=0)
    try:
        return start, start + _MINUTE
    except OverflowError:  # the last minute of year 9999: no later one
        return start, datetime.max.replace(tzinfo=when.tzinfo)


# What a job's accumulator becomes once its log is given for good (Collector.logs_of with
# consume, let_go): one object for all such jobs, which without_jobs and has_logs still see
# as a job with events. 300,000 one-line jobs held 1.1 KB each to the end of the run.
_GIVEN = _JobAccumulator()


def _event_order(event: Event) -> tuple[bool, datetime, str, int]:
    # Records without a time (plain text) keep their input order.
    when = event.timestamp or datetime.min
    return (event.timestamp is None, when, event.origin.path, event.origin.line)


def _linked_job_id(acc: _JobAccumulator) -> str | None:
    """The job a text without job ids is about: the first line that names it (a rule's
    ``job_id`` field: the console link, ``customJobs/ID``, ``Job NAME is queued.``), else a
    console link inside any matched text (of ``acc``'s events, read a batch at a time)."""
    for batch in acc.event_batches():
        for event in batch:
            named = event.match.field("job_id")
            if isinstance(named, str) and named:
                return named
    for batch in acc.event_batches():
        for event in batch:
            found = JOB_LINK.search(event.text)
            if found:
                return found.group(1)
    return None


def _read_source(
    records: Iterable[LogRecord], book: Matcher, *, prefilter: bool = False, thin: bool = False
) -> dict[str | None, _JobAccumulator]:
    """The per-job accumulators of one input's ``records``."""
    local: dict[str | None, _JobAccumulator] = {}
    thinners: dict[str | None, eventstore.Thinner] = {}
    for record, matches in _matched(records, book, prefilter):
        group = job_group(record.job_id, record.trial)
        acc = local.get(group)
        if acc is None:
            acc = local[group] = _JobAccumulator()
            if thin:
                thinners[group] = eventstore.Thinner()
        acc.observe(record)
        if matches:
            add = thinners[group].add if thin else acc.events.append
            for match in matches:
                add(Event.from_record(record, match))
    for group, thinner in thinners.items():
        thinner.finish()
        local[group].take(thinner.kept, thinner.dropped)
    return local


def _matched(
    records: Iterable[LogRecord], book: Matcher, prefilter: bool
) -> Iterator[tuple[LogRecord, tuple[RuleMatch, ...]]]:
    """Each record with the rule matches of its text, in order.

    With ``prefilter`` (and a book that has one), the texts of a batch of records go through
    the prefilter at once and only its candidates are matched one by one: most texts of a log
    are new (a step counter, a loss), and matching each alone costs as much as reading it.
    """
    if not (prefilter and can_scan(book)):
        for record in records:
            yield record, derived_fields(book.match(record.text))
        return
    remaining = iter(records)
    batches = iter(lambda: list(islice(remaining, _MATCH_BATCH)), [])
    for batch in batches:
        chosen = set(book.may_match_texts([record.text for record in batch]))
        for index, record in enumerate(batch):
            yield record, derived_fields(book.match(record.text)) if index in chosen else ()


def _from_scan(scanned: RangeScan) -> dict[str | None, _JobAccumulator]:
    """The per-job accumulators the plain path would have built from the same lines."""
    local: dict[str | None, _JobAccumulator] = {}
    times: dict[str, datetime] = {}

    def moment(key: str) -> datetime:
        found = times.get(key)
        if found is None:
            found = times[key] = parse_timestamp(key)
        return found

    tally = scanned.tally
    for (job_id, task, vm), span in tally.spans.items():
        acc = local.get(job_id)
        if acc is None:
            acc = local[job_id] = _JobAccumulator()
        acc.records += span.records
        if task == SERVICE_TASK:
            acc.service_records += span.records
        first, last = moment(span.first), moment(span.last)
        acc.first = first if acc.first is None else min(acc.first, first)
        acc.last = last if acc.last is None else max(acc.last, last)
        if task is not None and task != SERVICE_TASK:
            acc.spans.setdefault(task, {})[vm] = _Span(
                first, last, span.records, span.minutes, *_minute_of(last), *_minute_of(first)
            )
    for job_id, count in tally.untimed.items():
        acc = local.get(job_id)
        if acc is None:
            acc = local[job_id] = _JobAccumulator()
        acc.records += count
    found = scanned.events
    if isinstance(found, eventstore.JobEvents):
        for group in dict.fromkeys([*found.kept, *found.stored, *found.dropped_stored]):
            acc = local.get(group)
            if acc is None:
                acc = local[group] = _JobAccumulator()
            stored = found.stored.get(group, ())
            dropped = found.dropped.get(group)
            acc.take(
                found.kept.get(group, []), dropped, stored, found.dropped_stored.get(group, ())
            )
        return local
    for event in found:
        local[job_group(event.job_id, event.trial)].events.append(event)
    return local


def _later(one: datetime | None, other: datetime | None) -> datetime | None:
    if one is None or other is None:
        return one if other is None else other
    return max(one, other)


def _settle(
    local: dict[str | None, _JobAccumulator],
    path: str,
    jobs: dict[tuple[str, str], _JobAccumulator],
) -> None:
    # Every job of this input is silent, if at all, against the input's last time, whichever
    # job wrote it (issue 30): another input's later lines say nothing of this job's.
    source_end = max((acc.last for acc in local.values() if acc.last is not None), default=None)
    # A text export has no job id: take it from the console link of the service error. Its
    # trials (legacy stream-logs' trial column) stay apart, and are trials of the job the
    # input names outside them (gcloud's "Job [NAME] submitted", "jobId: NAME").
    unnamed: dict[str, _JobAccumulator] = {}
    untried = local.get(None)
    named = _linked_job_id(untried) if untried is not None else None
    _split_sdk_jobs(local)
    _split_joined_jobs(local)
    for acc in local.values():
        acc.input_end = _later(acc.input_end, source_end)
    for group in [g for g in local if g is None or not split_job_group(g)[0]]:
        anonymous = local.pop(group)
        trial = None if group is None else split_job_group(group)[1]
        linked = _linked_job_id(anonymous) or (named if trial else None)
        if linked is None:
            # A job without an id is only known inside its own input: never merge two of those.
            unnamed[job_group(path, trial) or path] = anonymous
            continue
        target = local.get(job_group(linked, trial))
        if target is None:
            anonymous.named_in_text = True
            local[job_group(linked, trial)] = anonymous
        else:
            target.merge(anonymous)
    keyed = [(("", job_id), acc) for job_id, acc in local.items() if job_id is not None]
    keyed += [(("\x00", name), acc) for name, acc in unnamed.items()]
    for key, acc in keyed:
        if key in jobs:
            jobs[key].merge(acc)
        else:
            jobs[key] = acc


def _split_sdk_jobs(local: dict[str | None, _JobAccumulator]) -> None:
    """Give each job the SDK's output in an id-less input polls its own events: the job group
    of each job :func:`sdk_jobs` finds in ``local``'s records without a job id, in place of
    that group."""
    untried = local.get(None)
    parts = sdk_jobs(untried) if untried is not None else None
    if parts is None:
        return
    del local[None]
    for job_id, part in parts:
        target = local.get(job_id)
        if target is None:
            local[job_id] = part
        else:
            target.merge(part)


def _split_joined_jobs(local: dict[str | None, _JobAccumulator]) -> None:
    """Give each job an id-less text holds one after another (:func:`joined_jobs`: runs of
    ``stream-logs`` appended to one file, two runs pasted together) its own group, named by
    its own lines, in place of the text's one group. A thinned text stays one group."""
    untried = local.get(None)
    if untried is None or untried.dropped is not None or untried.stored or untried.dropped_stored:
        return
    parts = joined_jobs(untried.events)
    if parts is None:
        return
    del local[None]
    for name, events in parts:
        part = _part(events)
        part.input_end = untried.input_end
        part.service_records = len({e.origin for e in events if e.task in (None, SERVICE_TASK)})
        # A worker's span over several jobs (one replica name in each) goes with each of
        # them, copied: its lines cannot be told apart, and a job without its workers' lines
        # would read as one whose container wrote nothing.
        part.spans = _spans_within(untried.spans, part.first, part.last)
        part.named_in_text = name is not None
        target = local.get(name)
        if target is None:
            local[name] = part
        else:
            target.merge(part)


def _spans_within(
    spans: dict[str, dict[str | None, _Span]], first: datetime | None, last: datetime | None
) -> dict[str, dict[str | None, _Span]]:
    """Copies of the ``spans`` that overlap ``first`` .. ``last`` (all of them when either
    is unknown)."""
    found: dict[str, dict[str | None, _Span]] = {}
    for task, per_vm in spans.items():
        for vm, span in per_vm.items():
            if first is None or last is None or (span.first <= last and span.last >= first):
                found.setdefault(task, {})[vm] = replace(span, minutes=_copied(span.minutes))
    return found


def _copied(minutes: MinuteMap | None) -> MinuteMap | None:
    return minutes.copy() if minutes is not None else None


def sdk_jobs(acc: _JobAccumulator) -> list[tuple[str, _JobAccumulator]] | None:
    """The jobs whose states the SDK printed in a text without job ids, each with its events,
    or None when the text shows one such job at most (or its events were thinned).

    The SDK's state line names the job it is about (rule sdk.job-state's ``job_id``): a script
    that runs several jobs, one after another or side by side, prints each one's. An event
    belongs to the job that the last line naming one of them named (a state line, ``CustomJob
    created. Resource name: ...``, the console link in a failure), the events before the first
    to the first: the failure the SDK raises follows its job's last state line. The records
    that gave no event, the workers' spans and the service's count stay with the first job.
    """
    if acc.dropped is not None or acc.stored or acc.dropped_stored:
        return None
    stated = {
        str(job): None
        for event in acc.events
        if event.kind is EventKind.JOB_STATE and (job := event.match.field("job_id"))
    }
    if len(stated) < 2:
        return None
    current = next(iter(stated))
    events: dict[str, list[Event]] = {job: [] for job in stated}
    for event in acc.events:
        named = event.match.field("job_id")
        if named is not None and str(named) in events:
            current = str(named)
        events[current].append(event)
    parts = [(job, _part(found)) for job, found in events.items()]
    first = parts[0][1]
    first.records += acc.records - sum(part.records for _, part in parts)
    first.spans, first.service_records = acc.spans, acc.service_records
    return parts


def _part(events: list[Event]) -> _JobAccumulator:
    """The accumulator of a part of an input's events: its records, the distinct records of
    its events, its times, theirs."""
    times = [event.timestamp for event in events if event.timestamp is not None]
    return _JobAccumulator(
        events=events,
        records=len({event.origin for event in events}),
        first=min(times, default=None),
        last=max(times, default=None),
    )


def _identity(event: Event) -> tuple[object, ...]:
    """What makes two events the same entry, across exports of different precision."""
    if event.timestamp is None:
        return (event.insert_id, event.origin)
    # The first line, as splitlines() cuts it, without splitting a long traceback whole.
    head = " ".join(_FIRST_LINE.match(event.text.strip()).group().split())  # type: ignore[union-attr]
    # stream-logs keeps whole seconds only: compare at that precision.
    second = event.timestamp.replace(microsecond=0)
    return (event.match.rule, event.task, head, second)


def _with_derived(events: Iterable[Event]) -> list[Event]:
    """``events`` with the fields their rules' captures stand for
    (:mod:`analyzer.rulebook.derived`)."""
    found: list[Event] = []
    for event in events:
        (match,) = derived_fields((event.match,))
        found.append(event if match is event.match else replace(event, match=match))
    return found


def _dedupe(events: list[Event], stats_by_path: Mapping[str, InputStats]) -> list[Event]:
    """Drop events of entries already seen: a sink may deliver an entry twice (same insertId),
    and two exports of one job (a sink file and a stream-logs text) hold the same entries.

    Within one input, the same words in the same second are two entries (a process printing a
    line twice); so are two entries with different insertIds anywhere.
    """
    first: dict[tuple[object, ...], Event] = {}
    dropped: set[Origin] = set()
    kept: list[Event] = []
    inputs = _inputs_by_second(events)
    for event in events:
        duplicate = False
        if event.insert_id is not None:
            seen = first.setdefault(("insertId", event.insert_id, event.timestamp), event)
            duplicate = seen is not event and seen.origin != event.origin
        when = event.timestamp if inputs else None
        near = (event.match.rule, event.task, when.replace(microsecond=0)) if when else None
        if near is not None and inputs[near] is None:
            # (The words are entered for every such event, a duplicate by insertId too.)
            same = _same_words(event, first)
            duplicate = duplicate or same
        if duplicate:
            _count_duplicate(event, dropped, stats_by_path)
        else:
            kept.append(event)
    return kept


def _inputs_by_second(events: list[Event]) -> dict[tuple[object, ...], str | None]:
    """The input each (rule, task, second) of ``events`` comes from, None where several
    inputs give it; empty when ``events`` come from one input.

    The words of a line (_identity) matter only between inputs, and only where the same
    rule, task and second come from several: elsewhere the insertId (cheap) decides. A job
    read from one input (most are) needs no seconds at all: truncating each time made a new
    datetime to hash, twice an event, a third of the serial tail of the 200 MB fleet.
    """
    inputs: dict[tuple[object, ...], str | None] = {}
    if len({event.origin.path for event in events}) <= 1:
        return inputs
    for event in events:
        if event.timestamp is not None:
            second = (event.match.rule, event.task, event.timestamp.replace(microsecond=0))
            path = inputs.setdefault(second, event.origin.path)
            if path is not None and path != event.origin.path:
                inputs[second] = None  # several inputs
    return inputs


def _same_words(event: Event, first: dict[tuple[object, ...], Event]) -> bool:
    """Whether another input gave the entry of ``event`` already (the same words, rule,
    task and second: :func:`_identity`), without an insertId telling them apart."""
    seen = first.setdefault(_identity(event), event)
    if seen is event or seen.origin == event.origin:
        return False
    other_input = seen.origin.path != event.origin.path
    distinct_ids = None not in (seen.insert_id, event.insert_id) and (
        seen.insert_id != event.insert_id
    )
    return other_input and not distinct_ids


def _count_duplicate(
    event: Event, dropped: set[Origin], stats_by_path: Mapping[str, InputStats]
) -> None:
    """Count ``event``'s record once as a duplicate on its input."""
    if event.origin not in dropped:
        dropped.add(event.origin)
        stats = stats_by_path.get(event.origin.path)
        if stats is not None:
            stats.duplicates += 1


def classify_records(sources: Iterable[Source], book: Matcher) -> Iterator[Event]:
    """Every rule match in ``sources``, in input order (no grouping, no sorting); every text
    matched on its own (the reference :func:`classify_sources` is tested against)."""
    for source in sources:
        yield from _events(source.records(), book, prefilter=False)


def _events(records: Iterable[LogRecord], book: Matcher, prefilter: bool) -> Iterator[Event]:
    """The events of ``records``, in order (:func:`_matched`)."""
    for record, matches in _matched(records, book, prefilter):
        for match in matches:
            yield Event.from_record(record, match)


def classify_sources(
    sources: Iterable[Source],
    book: Matcher,
    *,
    fast: bool = True,
    processes: int | None = None,
    cluster: Cluster | None = None,
) -> Iterator[Event]:
    """:func:`classify_records`, the same rows in the same order, with sink JSONL files read by
    the fast scan (candidate lines only, several processes for large inputs, or the workers
    of ``cluster``)."""
    pending = list(sources)
    meter = meter_for(pending)
    scans = scan(pending, book, processes=processes, cluster=cluster, meter=meter) if fast else []
    for index, source in enumerate(pending):
        found = scans[index] if scans else None
        if found is not None:
            yield from _with_derived(found.events)
        else:
            records, share = records_counted(source, meter)
            yield from _events(records, book, prefilter=fast)
            if share is not None:
                share.finish()
            elif meter is not None:
                meter(source_size(source) or 0)


def _unread_line(path: str, error: Exception) -> str:
    if isinstance(error, OSError):
        return f"{path}: cannot be read ({error.strerror}), check the file"
    return str(error)


class Collector:
    """Reads sources into per-job accumulators; :meth:`logs` snapshots them as JobLogs.

    Reading may go on after a snapshot (``jobdoctor diagnose --follow`` feeds each poll's
    records and diagnoses again).
    """

    def __init__(
        self,
        book: Matcher,
        *,
        fast: bool = True,
        processes: int | None = None,
        cluster: Cluster | None = None,
        thin: bool = True,
    ) -> None:
        self._book = book
        self._fast = fast
        # A run's long texts in a store of its own: an earlier run's go with its diagnoses.
        longtext.new_run()
        # Dask's workers run elsewhere: they keep every event (thinning needs a spill file
        # this process can read back).
        self._thin = thin and cluster is None
        self.restored: list[str | None] = []
        """Jobs whose thinned events were read back (:mod:`analyzer.classify.eventstore`): their
        input was too far out of time order, or several inputs held them."""
        self._processes = processes
        self._cluster = cluster
        self._jobs: dict[tuple[str, str], _JobAccumulator] = {}
        self._stats: dict[str, InputStats] = {}
        self._naming: set[str] = set()  # inputs that gave a named job
        self.unread: list[str] = []
        """One line per input that failed while it was read (it gave nothing) or was cut
        short (a truncated ``.gz``: what came before the cut was read); the others were
        read."""

    def read(self, source: Source) -> None:
        """Consume ``source`` entirely."""
        self.read_all([source])

    def read_all(
        self, sources: Iterable[Source], *, while_waiting: Callable[[], None] | None = None
    ) -> None:
        """Consume every source, in order; large sink files are read by several processes.

        ``while_waiting`` is called while those processes read, if there are any.
        """
        book = self._book
        pending = list(sources)
        meter = meter_for(pending)
        scans: list[RangeScan | None] = [None] * len(pending)
        # The spill directory is made before the workers fork: they write into it.
        if self._thin and not eventstore.prepare():
            self._thin = False
        if self._fast:
            token = eventstore.thinning.set(self._thin)
            try:
                scans = scan(
                    pending,
                    book,
                    processes=self._processes,
                    while_waiting=while_waiting,
                    cluster=self._cluster,
                    meter=meter,
                )
            finally:
                eventstore.thinning.reset(token)
        for source, found in zip(pending, scans, strict=True):
            if found is not None:
                local = _from_scan(found)
            else:
                share = None
                try:
                    records, share = records_counted(source, meter)
                    # A notebook is read whole anyway, and thinning would keep its records'
                    # origins as a file's lines, without their cells (records.CellOrigin).
                    thin = self._thin and source.stats.format != Format.NOTEBOOK
                    local = _read_source(records, book, prefilter=self._fast, thin=thin)
                except (InputError, OSError) as error:
                    # A file gone since it was opened, an I/O error under it: a batch goes on.
                    # What another source (a frame, a live read) raises is its caller's.
                    if not isinstance(source, FileSource | StreamSource):
                        raise
                    self.unread.append(_unread_line(source.stats.path, error))
                    continue
                finally:
                    if share is not None:
                        share.finish()
                if meter is not None and share is None:
                    meter(source_size(source) or 0)
            _settle(local, source.stats.path, self._jobs)
            if local:  # what is left once settled: the named jobs it gave
                self._naming.add(source.stats.path)
            self._stats.setdefault(source.stats.path, source.stats)
            if (damage := damage_line(source.stats)) is not None:
                # Read up to the cut; what came after it is lost, which a batch must not hide.
                self.unread.append(damage)

    def read_summary(
        self, stats: InputStats, spans: Iterable[SpanSummary], events: Iterable[Event]
    ) -> None:
        """Take an input a query engine has already summarised (``analyzer.engines.bigquery``): the
        spans of all its records per job group, task and VM, and the events of the records
        the rule book matched. The same accumulators as reading its records one by one."""
        local: dict[str | None, _JobAccumulator] = {}
        for span in spans:
            acc = local.get(span.group)
            if acc is None:
                acc = local[span.group] = _JobAccumulator()
            acc.records += span.records
            if span.task == SERVICE_TASK:
                acc.service_records += span.records
            if span.first is None or span.last is None:
                continue
            acc.first = span.first if acc.first is None else min(acc.first, span.first)
            acc.last = span.last if acc.last is None else max(acc.last, span.last)
            if span.task is None or span.task == SERVICE_TASK:
                continue
            per_vm = acc.spans.setdefault(span.task, {})
            known = per_vm.get(span.vm)
            if known is None:
                per_vm[span.vm] = _summary_span(span)
            else:  # a trial label without a job id: grouped with the job's own records
                known.absorb(_summary_span(span))
        for event in events:
            group = job_group(event.job_id, event.trial)
            local.setdefault(group, _JobAccumulator()).events.append(event)
        _settle(local, stats.path, self._jobs)
        if local:
            self._naming.add(stats.path)
        self._stats.setdefault(stats.path, stats)

    @property
    def stats(self) -> list[InputStats]:
        """How each input was read, in reading order."""
        return list(self._stats.values())

    def without_jobs(self) -> list[str]:
        """Inputs that named no job and held no message a rule knows (a README in a folder
        of exports, say): there is nothing to diagnose in them. An input that gave a named job
        is not one of them, whatever else it holds (entries without a resource, a document
        cut short at its end)."""
        paths = (split_job_group(key[1])[0] for key in self._empty())
        return [path for path in dict.fromkeys(paths) if path not in self._naming]

    def _empty(self) -> list[tuple[str, str]]:
        return [
            key
            for key, acc in self._jobs.items()
            if key[0] != "" and not acc.has_events and not acc.spans
        ]

    def logs(self) -> list[JobLog]:
        """One :class:`JobLog` per job: sorted by job id (unnamed jobs last), events in time
        order, duplicates dropped and counted on their inputs. Inputs of
        :meth:`without_jobs` give none."""
        return list(self.each_log())

    def has_logs(self) -> bool:
        """Whether :meth:`logs` gives any (without building them)."""
        empty = set(self._empty())
        return any(key not in empty for key in self._jobs)

    def each_log(self, *, consume: bool = False) -> Iterator[JobLog]:
        """:meth:`logs` one at a time, each built when asked for: a job's events (read back
        from disk when a worker scanned them) are in memory only while its log is.

        ``consume``: each job's events are let go once its log is given (the collector reads
        nothing more after that). The duplicates counted on the inputs are complete once the
        last log is given."""
        yield from self.logs_of(self.log_keys(), consume=consume)

    def log_keys(self) -> list[tuple[str, str]]:
        """The jobs :meth:`each_log` gives, in its order: keys for :meth:`logs_of`."""
        empty = set(self._empty())
        return [key for key in sorted(self._jobs) if key not in empty]

    def logs_of(
        self, keys: Iterable[tuple[str, str]], *, consume: bool = False
    ) -> Iterator[JobLog]:
        """The logs of the jobs ``keys`` (some of :meth:`log_keys`, in its order) as
        :meth:`each_log` gives them; the duplicates counted on the inputs are those of these
        jobs (several processes diagnosing a collector's jobs each count theirs:
        ``analyzer.pipeline.diagnosing``)."""
        for stats in self._stats.values():
            stats.duplicates = 0
        for key in keys:
            log = self._log(key, self._jobs[key])
            if consume:
                self._jobs[key] = _GIVEN
            yield log

    def let_go(self, keys: Iterable[tuple[str, str]]) -> None:
        """Let go of what the jobs ``keys`` hold in memory (another process built their logs
        from the same accumulators: ``analyzer.pipeline.diagnosing``); the collector reads nothing
        more after that: without_jobs and has_logs still see each job as one."""
        for key in keys:
            self._jobs[key] = _GIVEN

    def kept_events(self) -> int:
        """About how many events the jobs hold, in memory and on disk: the work of building
        and diagnosing their logs (:mod:`analyzer.pipeline.diagnosing` decides by it)."""
        return sum(
            len(acc.events) + sum(ref.length for _, ref in acc.stored) // KEPT_EVENT_BYTES
            for acc in self._jobs.values()
        )

    def _log(self, key: tuple[str, str], acc: _JobAccumulator) -> JobLog:
        """The :class:`JobLog` of the job ``key`` (see :meth:`logs`)."""
        from analyzer.classify.joblog import JobLog, VmSpan

        named, trial = split_job_group(key[1])
        job_id = named if key[0] == "" else None
        events = acc.load()
        if acc.dropped is not None:
            # A worker's first record on a VM can start it (timeline._worker): a time
            # the later stages measure from, as an event's.
            firsts = [s.first for per_vm in acc.spans.values() for s in per_vm.values()]
            events, restored = eventstore.settled(events, acc.dropped, firsts)
            acc.events = events
            if restored:
                self.restored.append(job_id)
                acc.dropped = None
        # (The fast scan's events come from the rule book directly: their derived fields are
        # added here, as _matched adds them to the plain path's.)
        deduped = _with_derived(_dedupe(sorted(events, key=_event_order), self._stats))
        spans = {
            task: tuple(
                sorted(
                    (VmSpan(vm, s.first, s.last, s.records, s.minutes) for vm, s in per_vm.items()),
                    key=lambda span: span.first,
                )
            )
            for task, per_vm in sorted(acc.spans.items())
        }
        return JobLog(
            job_id,
            tuple(deduped),
            spans,
            acc.records,
            acc.first,
            acc.last,
            trial,
            acc.service_records,
            acc.input_end,
            acc.named_in_text,
        )


# What a kept event weighs on disk (msgpack, eventstore.store_kept): about 250 B on the bench's
# fleet (4,470 events in 1.1 MB of spill).
KEPT_EVENT_BYTES = 250


def collect(
    sources: Iterable[Source],
    book: Matcher,
    *,
    fast: bool = True,
    processes: int | None = None,
    thin: bool = True,
) -> tuple[list[JobLog], list[InputStats]]:
    """Read every source through ``book`` and return one :class:`JobLog` per job.

    ``fast`` False reads every line as a full record (the reference the fast path is tested
    against); ``processes`` None picks the number of processes by input size and cores;
    ``thin`` False keeps every event (the reference thinning is tested against:
    :mod:`analyzer.classify.eventstore`).
    """
    collector = Collector(book, fast=fast, processes=processes, thin=thin)
    collector.read_all(sources)
    return collector.logs(), collector.stats
