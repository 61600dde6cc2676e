"""A job's events, thinned as they come: flat memory whatever the event density.

A job's diagnosis reads its lifecycle lines, its failures and what surrounds them, not every
checkpoint line or every repeat of the same harmless traceback. So the events of the
program's own output (checkpoints, traceback lines, details: :data:`THIN_KINDS`) that repeat
(same task, VM, rule, fields, and text but for its numbers: :func:`thin_key`) are thinned
while they are read: per kind of repeat and per stretch between two other events (the
*anchors*: lifecycle lines, failures, anything else), the first occurrence is kept, the last
:data:`KEEP_LAST` before the next anchor, everything within :data:`DISORDER` before it (a sink
file is a little out of order) and, for details, within :data:`LAG` before it (rootcause
cites the first detail in the two minutes before a death). What lies between is dropped,
written to a spill file on disk (never kept in memory), and summed up as a :class:`Gap`.
Events that come within a second after an anchor, the first repeat after an anchor read out
of order, the copies of an entry delivered twice (same insertId and time, whatever their keys)
and one event every :data:`CAP` are kept too. Kept events share their equal strings, texts
and matches (:func:`compact`). A forked worker's kept events and what it dropped travel back
per job group and wait in the reading process's spill file until their job is built
(:func:`store_kept`, :func:`restore_kept`, :func:`load_dropped`): that process holds one
job's events at a time, not every job's.

Until it is kept, an event is a tuple (:data:`Light`): the sink scan hands its candidates
over so, without a record or an Event (:meth:`JobEvents.add_all`); only what is kept becomes
an Event. A complete traceback logged whole at every step (``Exception ignored in ...``) is
a repeat like any other: it used to be an anchor, and everything around each one was kept.

What is kept grows with the anchors and the density near them, not with the length of a
stretch of repeats. Not thinned: events without a time, job id or task, a multi-line
traceback that holds no complete one (:func:`thin_key`), ``jobdoctor classify`` (every match
is its output), Dask workers' scans (their spill files would be elsewhere), a query engine's
summary.

Dropping is exact only where the later stages cannot see it. :func:`settled` checks that for
every gap once the job is read whole (all inputs, every range of the fork pool), against
everything the stages measure from: no anchor and no VM-span boundary near or inside a gap
(attempt and worker bounds, the last checkpoint before a death, details within two minutes
of a death or after the last traceback header, the window a second past a death), no gap
longer than the checkpoint interval (the longest stretch without a checkpoint), and nothing
kept, nor any other input's event, where a dropped one could be its duplicate, and no dropped
event another copy of an entry (by the digests of their insertIds and times). When a check
fails (input far out of time order, two exports of one job) the job's dropped events are read
back from the spill: the result is then the unthinned one, at the unthinned memory cost.
``tests/test_eventstore.py`` compares whole diagnoses thinned and unthinned.
"""

from __future__ import annotations

import bisect
import os
import tempfile
import zlib
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Final, Protocol

from analyzer.classify.longtext import LONG_TEXT, stored
from analyzer.classify.tracebacks import NOT_KEPT, KeptFrames
from analyzer.ingest.records import SERVICE_TASK, Origin, replica_task
from analyzer.rulebook.events import (
    AFTER_DEATH,
    CHECKPOINT_INTERVAL,
    DETAIL_WINDOW,
    Event,
    EventKind,
    RuleMatch,
)

# The program's own output: what a diagnosis reads as evidence around a failure, never as a
# step of the job's life.
THIN_KINDS = frozenset(
    {
        EventKind.CHECKPOINT,
        EventKind.PROGRESS,
        EventKind.TRACEBACK,
        EventKind.FRAME,
        EventKind.EXCEPTION,
        EventKind.DETAIL,
    }
)
# How long a stretch before each anchor and before the latest repeat is kept whole: more than
# rootcause's detail window (2 minutes before a death) and a second past the death, with room
# for the local disorder of a sink file.
LAG = timedelta(seconds=240)
# Details are read up to two minutes before a death; the other kinds need only a margin for
# the disorder of a sink file before each anchor.
DISORDER = timedelta(seconds=10)
# Anchors that are never a death (rootcause reads details up to two minutes before a death,
# a cause's time or a worker's exit): starts and the steps before them.
_NOT_DEATHS = frozenset(
    {
        EventKind.WORKER_STARTED,
        EventKind.ATTEMPT_STARTED,
        EventKind.JOB_PROVISIONING,
        EventKind.JOB_PREPARING,
        EventKind.JOB_RUNNING,
        EventKind.JOB_QUEUED,
        EventKind.JOB_NAMED,
    }
)
# What rootcause reads before and after a death.
BEFORE_ANCHOR = DETAIL_WINDOW
AFTER_ANCHOR = AFTER_DEATH
# The longest gap: work.py reports stretches without a checkpoint longer than this, which a
# longer gap could invent.
CAP = CHECKPOINT_INTERVAL
# Of each repeat before an anchor, at least this many are kept (a traceback cut short
# after a complete one keeps the complete one).
KEEP_LAST = 2
# Where an origin's entry goes in an IdBatch place (below its line).
_ENTRY_BITS = 20
# How many insertIds are remembered (_recent_ids) before starting afresh: copies of one
# entry delivered twice come close together in a sink file.
_IDS_LIMIT = 4096
# Dropped events wait in memory until this many (of all jobs, in this process) are written to
# the spill file at once.
_SPILL_BATCH = 2048
_DIGITS = bytes.maketrans(b"0123456789", b"0000000000")

_FRAME = EventKind.FRAME

# Whether reading thins (set by the collector around its reads; forked workers inherit it).
# Off by default: ``jobdoctor classify`` lists every match.
thinning: ContextVar[bool] = ContextVar("thinning", default=False)

Key = tuple[object, ...]


def masked(text: str) -> bytes:
    """``text`` (as UTF-8) with every ASCII digit as ``0``: texts differing only in numbers
    share it. Bytes: translating them is 15 times cheaper than a str (no ASCII digit byte
    is part of a longer UTF-8 sequence)."""
    return text.encode("utf-8", "surrogatepass").translate(_DIGITS)


# An event as the thinner holds it until it keeps it: a tuple of the Event's fields, its
# origin's three in place of it (building an Event and its Origin costs more than the rest of
# thinning it, and most are dropped). The positions:
WHEN: Final = 0
JOB: Final = 1
TASK: Final = 2
MATCH: Final = 3
TEXT: Final = 4
PATH: Final = 5
LINE: Final = 6
ENTRY: Final = 7
VM: Final = 8
INSERT_ID: Final = 9
TRIAL: Final = 10
Light = tuple[
    datetime | None,  # timestamp
    str | None,  # job id
    str | None,  # task
    RuleMatch,
    str,  # text
    str,  # origin's path
    int,  # origin's line
    int,  # origin's entry
    str | None,  # vm
    str | None,  # insertId
    str | None,  # trial
]


def light(event: Event) -> Light:
    """``event`` as the thinner holds it."""
    origin = event.origin
    return (
        event.timestamp,
        event.job_id,
        event.task,
        event.match,
        event.text,
        origin.path,
        origin.line,
        origin.entry,
        event.vm,
        event.insert_id,
        event.trial,
    )


def thin_key(event: Event) -> Key | None:
    """What makes two events repeats of one another, or None for an event never thinned
    (an anchor): other kinds, untimed, without a job id or a task (a paste's lines are read in
    line order by rootcause), a multi-line traceback that holds no complete one."""
    return _light_key(light(event))


# The masks of the texts read lately, by text: the same text repeated exactly (a logger's
# "Exception ignored in ..." traceback at every step, a harmless warning) is masked once, and
# two matches of one line too. Bounded: cleared when full.
_MASKS_LIMIT = 1 << 12
_masks: dict[str, object] = {}


def _light_key(item: Light) -> Key | None:
    """:func:`thin_key` of an event held as :data:`Light`."""
    # The positions of Light written as numbers: this runs once per candidate, and each name
    # is a global lookup.
    match = item[3]
    kind = match.kind
    if kind not in THIN_KINDS or item[0] is None or item[1] is None:
        return None
    task = item[2]
    if task is None:
        return None
    text = item[4]
    mask = _masks.get(text)
    if mask is None:
        mask = masked(text)
        if len(mask) > _LONG_MASK:
            # A long text (a traceback of many kilobytes) is held by its length and hash:
            # the keys of its repeats and _complete stay small. Keys are compared within
            # one process only (the checks read no more than a gap's task and rule), where
            # str and bytes hashes agree.
            mask = (len(mask), hash(mask))
        if len(_masks) >= _MASKS_LIMIT:
            _masks.clear()
        _masks[text] = mask
    if kind is EventKind.TRACEBACK and not _thinnable_traceback(text, mask):
        return None
    # A rule's fields come in the order of its pattern's groups: no need to sort them.
    fields = match.fields
    if fields:
        return (task, item[8], item[10], match.rule, *fields.items(), mask)
    return (task, item[8], item[10], match.rule, mask)


# Masks longer than this are held by their length and hash.
_LONG_MASK = 256
# Whether a multi-line traceback text holds a complete traceback, by its digit mask (a
# logger's "Exception ignored in ..." written at every step, with other line numbers and
# addresses). Bounded: cleared when full.
_COMPLETE_LIMIT = 1 << 12
_complete: dict[object, bool] = {}


def _thinnable_traceback(text: str, mask: object) -> bool:
    r"""Whether a traceback event of ``text`` may be thinned: a header on one line (as the
    other kinds), or a multi-line text that holds a complete traceback.

    tracebacks.exception_from_events reads a multi-line header event whole: a complete
    traceback in it sets the exception found and forgets any frames read so far, so what
    lies between two kept repeats (same task, same mask) changes nothing after the later
    one, and the checks (:func:`inexact`) keep every window's end out of a gap. One without a
    complete traceback starts a header (frames from none) and keeps the exception found
    before it: frames of another traceback read between two of them would then count
    otherwise without the dropped ones, so it is never thinned. Whether it is complete is the
    same for every text of one digit mask: tracebacks' patterns take any digit alike (``\d``,
    ``\w``, classes with all of 0-9) and name none."""
    if "\n" not in text.strip():
        return True
    known = _complete.get(mask)
    if known is None:
        from analyzer.classify.tracebacks import parse_text

        if len(_complete) >= _COMPLETE_LIMIT:
            _complete.clear()
        known = _complete[mask] = parse_text(text) is not None
    return known


@dataclass(frozen=True, slots=True)
class Gap:
    """Dropped repeats of one key: ``count`` events from ``first`` to ``last``, between the
    kept events of the same key at ``before`` and ``after``, all from ``path``."""

    key: Key
    kind: EventKind
    path: str
    before: datetime
    first: datetime
    last: datetime
    after: datetime
    count: int


@dataclass(frozen=True, slots=True)
class SpillRef:
    """A batch of dropped events in a spill file; their lines count from ``line_base``."""

    path: str
    offset: int
    length: int
    line_base: int = 0

    def rebased(self, base: int) -> SpillRef:
        """The same batch, its lines counted after ``base`` more lines (a later range)."""
        return SpillRef(self.path, self.offset, self.length, self.line_base + base)


@dataclass(frozen=True, slots=True)
class IdBatch:
    """The dropped events of one thinner (one input or range) that have an insertId: the
    digest of each line's insertId and time (:func:`entry_digest`, one per line) and its
    place (``line << 20 | entry``, lines counted from ``line_base``) in ``path``, ``count``
    of each, in the spill file at ``stored`` (:meth:`arrays`). ``conflict``: two lines of it
    have one digest.

    On disk, not in memory: 16 bytes a dropped event, 6 MB of the 1 GB dense export's
    peak (every job's, held to the end), read back one job at a time by the checks."""

    path: str
    line_base: int
    stored: SpillRef
    count: int
    conflict: bool

    def arrays(self) -> tuple[array[int], array[int]]:
        """The digests and the places."""
        ref = self.stored
        adopt([ref])
        data = os.pread(_opened[ref.path], ref.length, ref.offset)
        digests, places = array("Q"), array("q")
        split = self.count * digests.itemsize
        digests.frombytes(data[:split])
        places.frombytes(data[split:])
        return digests, places


@dataclass(slots=True)
class Thinned:
    """What thinning dropped from a job's events: the gaps, where the events are, and the
    insertIds of those that have one (to tell copies of one entry delivered twice)."""

    gaps: list[Gap] = field(default_factory=list)
    spills: list[SpillRef] = field(default_factory=list)
    ids: list[IdBatch] = field(default_factory=list)

    def merge(self, other: Thinned | None) -> None:
        """Add ``other``'s gaps, spills and digests."""
        if other is not None:
            self.gaps.extend(other.gaps)
            self.spills.extend(other.spills)
            self.ids.extend(other.ids)

    def rebased(self, base: int) -> Thinned:
        """The same, the lines of its events counted after ``base`` lines (a later range)."""
        return Thinned(
            list(self.gaps),
            [s.rebased(base) for s in self.spills],
            [IdBatch(b.path, b.line_base + base, b.stored, b.count, b.conflict) for b in self.ids],
        )


_NAIVE_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)


def entry_digest(insert_id: str, when: datetime) -> int:
    """64 bits that tell the entry ``insert_id`` at ``when`` from others (what classify._dedupe
    takes for one entry delivered twice): equal for equal ones, the same in every process (a
    spawned worker hashes str otherwise). Two others rarely share it, and then the checks
    only read a job back."""
    if when.tzinfo is not None:
        # The time as a float, in C (a third of the cost of two datetime operations, once
        # per dropped event): equal times give equal floats, and two times a microsecond
        # apart that round alike only make the checks read a job back.
        moment = int(when.timestamp() * 1_000_000)
    else:
        moment = (when - _NAIVE_EPOCH) // _MICROSECOND
    return zlib.crc32(insert_id.encode("utf-8", "surrogatepass")) << 32 | moment & 0xFFFFFFFF


class _Segment:
    """The repeats of one key since the last anchor: the tail not yet decided."""

    __slots__ = (
        "cap_until",
        "gap",
        "horizon",
        "lag",
        "last_kept",
        "latest",
        "protect_until",
        "tail",
    )

    def __init__(self, first: Light, anchor: datetime | None) -> None:
        when = first[WHEN]
        assert when is not None
        self.lag = LAG if first[MATCH].kind is EventKind.DETAIL else DISORDER
        # Entries [time, event, sticky] in time order (a sink file is a little out of order):
        # sticky ones are kept whatever their place.
        self.tail: list[list[Any]] = []
        self.latest = self.last_kept = when
        # last_kept + CAP: a repeat after it ends a gap (kept), as no gap may be longer.
        self.cap_until = _shift(when, CAP)
        self.horizon = _shift(when, -self.lag)  # older tail entries are decided
        self.protect_until = _shift(anchor, AFTER_ANCHOR) if anchor is not None else None
        # An open gap: [before, first dropped, last dropped, count].
        self.gap: list[Any] | None = None


def _death_task(event: Event) -> str | None:
    """The worker whose death ``event`` may mark (rootcause reads that worker's details
    before it): the replica it names or its own task, as timeline._event_task; None for a
    start or a step before one, or a line about no worker."""
    if event.match.kind in _NOT_DEATHS:
        return None
    replica = event.match.field("replica")
    if isinstance(replica, str) and replica:
        return replica_task(replica)
    task = event.task
    return task if task is not None and task != SERVICE_TASK else None


def _entry_time(entry: list[Any]) -> datetime:
    when: datetime = entry[0]
    return when


class Thinner:
    """Thins one job group's events as they come (:meth:`add`), in reading order; :meth:`finish`
    when the input (or range) is read: :attr:`kept` and :attr:`dropped` are then final."""

    __slots__ = (
        "_anchor",
        "_digests",
        "_flushing",
        "_path",
        "_places",
        "_runs",
        "_segments",
        "_spilling",
        "dropped",
        "kept",
    )

    def __init__(self) -> None:
        self.kept: list[Event] = []
        self.dropped = Thinned()
        self._segments: dict[Key, _Segment] = {}
        self._anchor: datetime | None = None
        self._spilling: list[Light] = []
        self._path: str | None = None
        # The dropped events' insertId digests and places (IdBatch), as they come.
        self._digests: array[int] = array("Q")
        self._places: array[int] = array("q")
        # The frames of the tracebacks being read, by task and VM (_frame_held).
        self._runs: dict[tuple[str | None, str | None], KeptFrames[Light]] = {}
        self._flushing = False

    def add(self, event: Event) -> None:
        """Take the next event read."""
        self.add_light(light(event))

    def add_light(self, item: Light) -> None:
        """Take the next event read, as :data:`Light`."""
        if (self._runs or item[3].kind is _FRAME) and self._frame_held(item):
            return
        key = _light_key(item)
        when = item[0]
        if key is None:
            self._add_unthinned(item, when)
            return
        segment = self._segments.get(key)
        if segment is None:
            self._segments[key] = _Segment(item, self._anchor)
            self.kept.append(_event(item))
            self._seen(item, [when, None, True])
            return
        # A repeat: the cost of nearly every candidate of a dense input, so written inline
        # (no call per step) with Light's positions as numbers.
        assert when is not None
        protect = segment.protect_until
        entry = [when, item, protect is not None and when <= protect]
        tail = segment.tail
        if not tail or tail[-1][0] <= when:
            tail.append(entry)
        else:
            tail.insert(bisect.bisect_right(tail, when, key=_entry_time), entry)
        # The same entry delivered twice (same time, same insertId) is deduplicated later
        # (classify._dedupe), which must see both: keep both (_seen).
        insert_id = item[9]
        if insert_id is not None:
            ids = _recent_ids
            earlier = ids.get(insert_id)
            if earlier is not None and earlier[0] is self and _copies(earlier[1], item):
                earlier[2][2] = entry[2] = True
            elif len(ids) >= _IDS_LIMIT:
                ids.clear()
            ids[insert_id] = (self, item, entry)
        if when > segment.latest:
            segment.latest = when
            try:
                segment.horizon = when - segment.lag
            except OverflowError:
                segment.horizon = _shift(when, -segment.lag)
        # The oldest is decided once the next one is older than the margin too: an anchor
        # read later (at most the margin out of order) then comes after that next one, and
        # the oldest is never the last repeat before it. (Deciding in a method of its own
        # cost nothing measurable: dense-30's scan took 684.2M instructions before, 683.6M
        # after, by callgrind on its first 10 MB.)
        if len(tail) > KEEP_LAST and tail[1][0] < segment.horizon:
            self._decide_oldest(key, segment)

    def _frame_held(self, item: Light) -> bool:
        """Whether ``item`` waits in its process's traceback (:class:`KeptFrames`: past a
        traceback's first frames, only the last ones and the user's are kept, a count of the
        others, issue 31.8); any other event of that process ends the traceback, whose
        frames kept are then taken as read."""
        if self._flushing:
            return False
        stream = (item[TASK], item[VM])
        run = self._runs.get(stream)
        match = item[MATCH]
        if match.kind is _FRAME:
            if run is None:
                run = self._runs[stream] = KeptFrames()
            return not run.add(item, str(match.fields.get("file", "")))
        if run is not None:
            del self._runs[stream]
            self._flush(run)
        return False

    def _flush(self, run: KeptFrames[Light]) -> None:
        """Take the frames ``run`` kept past its head, the first of them telling how many
        were not kept (tracebacks.NOT_KEPT)."""
        rest, not_kept = run.rest()
        if rest and not_kept:
            first, match = rest[0], rest[0][MATCH]
            marked = replace(match, fields={**match.fields, NOT_KEPT: not_kept})
            rest[0] = (*first[:MATCH], marked, *first[MATCH + 1 :])  # type: ignore[assignment]
        self._flushing = True
        try:
            for item in rest:
                self.add_light(item)
        finally:
            self._flushing = False

    def _add_unthinned(self, item: Light, when: datetime | None) -> None:
        """Keep an event never thinned (an anchor); a timed one decides every segment's
        repeats older than it."""
        self.kept.append(_event(item))
        if when is not None:
            self._seen(item, [when, None, True])
            self._close_all(when)
            self._anchor = when if self._anchor is None else max(self._anchor, when)

    def _decide_oldest(self, key: Key, segment: _Segment) -> None:
        """Keep or drop the oldest repeats of ``segment`` while the next one is older than
        its horizon too: kept when sticky (a copy, or protected), out of order, past the
        cap since the last kept one, or the first after an anchor read later."""
        tail = segment.tail
        horizon = segment.horizon
        anchor = self._anchor
        while len(tail) > KEEP_LAST and tail[1][0] < horizon:
            old_when, old, sticky = tail.pop(0)
            last_kept = segment.last_kept
            if (
                sticky
                or old_when < last_kept
                or tail[0][0] > segment.cap_until
                # The first repeat after the latest anchor, when the segment began
                # before it (read out of order): a start's first checkpoint, say.
                or (anchor is not None and last_kept < anchor <= old_when)
            ):
                self._keep(key, segment, old)
            else:
                self._drop(segment, old)

    def _seen(self, item: Light, entry: list[Any]) -> None:
        """Remember ``item``'s tail ``entry`` by its insertId; both it and an earlier copy
        of the same entry (same insertId, same time, another line) become sticky."""
        insert_id = item[INSERT_ID]
        if insert_id is None:
            return
        ids = _recent_ids
        earlier = ids.get(insert_id)
        # Two matches of one line are one entry's (dedupe tells copies by their origin).
        if earlier is not None and earlier[0] is self and _copies(earlier[1], item):
            earlier[2][2] = entry[2] = True
        elif len(ids) >= _IDS_LIMIT:
            ids.clear()
        ids[insert_id] = (self, item, entry)

    def _keep(self, key: Key, segment: _Segment, item: Light) -> None:
        self.kept.append(_event(item))
        when = item[WHEN]
        assert when is not None
        gap = segment.gap
        if gap is not None:
            self.dropped.gaps.append(
                Gap(key, item[MATCH].kind, item[PATH], gap[0], gap[1], gap[2], when, gap[3])
            )
            segment.gap = None
        if when > segment.last_kept:
            segment.last_kept = when
            segment.cap_until = _shift(when, CAP)

    def _drop(self, segment: _Segment, item: Light) -> None:
        when = item[0]
        assert when is not None
        gap = segment.gap
        if gap is None:
            segment.gap = [segment.last_kept, when, when, 1]
        else:
            if when < gap[1]:
                gap[1] = when
            if when > gap[2]:
                gap[2] = when
            gap[3] += 1
        insert_id = item[9]
        if insert_id is not None:
            self._path = item[5]
            self._digests.append(entry_digest(insert_id, when))
            self._places.append(item[6] << _ENTRY_BITS | item[7])
        spilling = self._spilling
        if not spilling:
            _waiting[id(self)] = self
        spilling.append(item)
        count = _count
        count[0] += 1
        if count[0] >= _SPILL_BATCH:
            for thinner in list(_waiting.values()):
                thinner._spill()

    def _close_all(self, at: datetime | None = None) -> None:
        """An anchor at ``at`` (None: the end of the input) ends every repeat's stretch: of
        each tail, keep the last few and what lies within the margin before the anchor (a
        little disorder; for details, the two minutes before a death); drop the rest."""
        segments = self._segments
        if not segments:
            return
        anchor = self._anchor
        for key, segment in segments.items():
            tail = segment.tail
            last = len(tail) - KEEP_LAST
            # Details within two minutes before an anchor: it, or one a little out of order
            # after it, may be a death whose first such detail rootcause cites.
            since = _shift(at, -segment.lag) if at is not None else None
            for index, (when, item, sticky) in enumerate(tail):
                if (
                    since is None
                    or index >= last
                    or sticky
                    or when >= since
                    or when < segment.last_kept
                    or (anchor is not None and segment.last_kept < anchor <= when)
                    or tail[index + 1][0] - segment.last_kept > CAP
                ):
                    self._keep(key, segment, item)
                else:
                    self._drop(segment, item)
            if segment.gap is not None:  # never: a dropped event has a kept one after it
                raise AssertionError("a gap without a kept event after it")
        segments.clear()

    def _spill(self) -> None:
        if self._spilling:
            self.dropped.spills.append(_spill_file().write(self._spilling))
            _count[0] -= len(self._spilling)
            self._spilling = []
            del _waiting[id(self)]

    def finish(self) -> None:
        """The input is read: keep every undecided tail, spill what was dropped."""
        while self._runs:
            self._flush(self._runs.pop(next(iter(self._runs))))
        self._close_all()
        self._spill()
        # Nothing of this thinner is remembered past its input (a notebook reads again).
        _recent_ids.clear()
        if self._places:
            self.dropped.ids.append(self._id_batch())
            self._digests, self._places = array("Q"), array("q")

    def _id_batch(self) -> IdBatch:
        """The insertIds of the dropped events, one per line (two matches of one line are
        one entry's)."""
        by_digest: dict[int, int] = {}
        conflict = False
        for digest, place in zip(self._digests, self._places, strict=True):
            if by_digest.setdefault(digest, place) != place:
                conflict = True
        assert self._path is not None
        digests, places = array("Q", by_digest), array("q", by_digest.values())
        stored = _spill_file().write_bytes(digests.tobytes() + places.tobytes())
        return IdBatch(self._path, 0, stored, len(digests), conflict)


# The latest events read with an insertId, of every thinner: (thinner, event, tail entry
# [time, event or None once decided, sticky]). One entry delivered twice (same insertId,
# same time) is kept twice, for classify._dedupe to count, whatever the keys of its copies.
# Bounded (cleared when full): the digests of the dropped ones (Thinned.ids) let the checks
# find the copies this misses.
_recent_ids: dict[str, tuple[Thinner, Light, list[Any]]] = {}


def _copies(earlier: Light, item: Light) -> bool:
    """Whether ``earlier`` and ``item`` (of one insertId) may be two copies of one entry for
    classify._dedupe: the same time, other lines (two matches of one line are one entry's)."""
    return earlier[WHEN] == item[WHEN] and (
        earlier[LINE] != item[LINE] or earlier[PATH] != item[PATH] or earlier[ENTRY] != item[ENTRY]
    )


# The thinners with dropped events not yet written, and how many events they hold.
_waiting: dict[int, Thinner] = {}
_count = [0]


class EventSink(Protocol):
    """Where a scan puts the events it finds: a list, or :class:`JobEvents`."""

    def append(self, event: Event, /) -> None: ...


class JobEvents:
    """The events of one scan (an input or a range of it), thinned per job group.

    Iterating gives the kept events in reading order per group. :meth:`finish` once the scan
    is done.
    """

    def __init__(self) -> None:
        self._groups: dict[str | None, Thinner] = {}
        self._by_job: dict[tuple[str | None, str | None], Thinner] = {}
        self.kept: dict[str | None, list[Event]] = {}
        # Kept events waiting on disk (a worker's, sent back: see :func:`store_kept`), each
        # batch with its place among ``kept``'s events of its group (before the event there).
        self.stored: dict[str | None, list[tuple[int, SpillRef]]] = {}
        self.dropped: dict[str | None, Thinned] = {}
        # What thinning dropped, of a worker's groups that dropped any, waiting on disk too
        # (:func:`load_dropped`: the gaps are 2.7 MB of the 1 GB dense export's reading
        # process otherwise, and grow with the input).
        self.dropped_stored: dict[str | None, list[SpillRef]] = {}

    def append(self, event: Event) -> None:
        """Take the next event the scan found."""
        self.add_light(light(event))

    def add_all(self, items: Iterable[Light]) -> None:
        """:meth:`add_light` each of ``items``, in order."""
        by_job = self._by_job
        for item in items:
            thinner = by_job.get((item[JOB], item[TRIAL]))
            if thinner is None:
                self.add_light(item)
            else:
                thinner.add_light(item)

    def add_light(self, item: Light) -> None:
        """Take the next event the scan found, as :data:`Light` (built for it alone: no
        Event is made of what thinning drops)."""
        thinner = self._by_job.get((item[JOB], item[TRIAL]))
        if thinner is None:
            from analyzer.ingest.records import job_group

            group = job_group(item[JOB], item[TRIAL])
            thinner = self._groups.get(group)
            if thinner is None:
                thinner = self._groups[group] = Thinner()
            self._by_job[(item[JOB], item[TRIAL])] = thinner
        thinner.add_light(item)

    def finish(self) -> None:
        """The scan is done: each group's kept events and gaps are final."""
        for group, thinner in self._groups.items():
            thinner.finish()
            self.kept[group] = thinner.kept
            self.dropped[group] = thinner.dropped
        self._groups.clear()
        self._by_job.clear()

    def __iter__(self) -> Iterator[Event]:
        for events in self.kept.values():
            yield from events

    def __len__(self) -> int:
        return sum(len(events) for events in self.kept.values())

    def extend(self, later: JobEvents, base: int) -> None:
        """Add ``later``'s groups (a scan of the range right after this one; its events'
        lines already renumbered), its spilled events' lines counted after ``base``."""
        for group in dict.fromkeys([*later.kept, *later.stored]):
            events = self.kept.setdefault(group, [])
            at = len(events)
            stored = [(place + at, ref.rebased(base)) for place, ref in later.stored.get(group, ())]
            if stored:
                self.stored.setdefault(group, []).extend(stored)
            events.extend(later.kept.get(group, ()))
            if group in later.dropped:
                self.dropped.setdefault(group, Thinned()).merge(later.dropped[group].rebased(base))
        for group, refs in later.dropped_stored.items():
            self.dropped_stored.setdefault(group, []).extend(ref.rebased(base) for ref in refs)

    def packed(self) -> tuple[list[tuple[str | None, bytes]], bytes]:
        """What travels back from a worker: the kept events per group, each group's
        msgpack-encoded apart (:func:`store_kept`), and what was dropped: the spill files it
        is in, and each group's that dropped any pickled apart (:func:`load_dropped`)."""
        import pickle

        assert not self.stored and not self.dropped_stored  # a worker's own scan
        encode = _encoder().encode
        kept = [(group, encode(events)) for group, events in self.kept.items()]
        files = {
            ref.path
            for thinned in self.dropped.values()
            for ref in (*thinned.spills, *(batch.stored for batch in thinned.ids))
        }
        dropped = [
            (group, pickle.dumps(thinned, pickle.HIGHEST_PROTOCOL))
            for group, thinned in self.dropped.items()
            if thinned.gaps or thinned.spills
        ]
        return kept, pickle.dumps((sorted(files), dropped), pickle.HIGHEST_PROTOCOL)

    @classmethod
    def unpacked(cls, kept: list[tuple[str | None, bytes]], dropped: bytes) -> JobEvents:
        """:meth:`packed`'s parts back together, the kept events left on disk until their
        job is read (:func:`store_kept`)."""
        import pickle

        found = cls()
        refs = store_kept([data for _, data in kept])
        for (group, _), ref in zip(kept, refs, strict=True):
            found.kept[group] = []
            found.stored[group] = [(0, ref)]
        files, groups = pickle.loads(dropped)  # our own worker's bytes
        adopt(SpillRef(path, 0, 0) for path in files)
        refs = store_kept([data for _, data in groups])
        for (group, _), ref in zip(groups, refs, strict=True):
            found.dropped_stored[group] = [ref]
        return found


# What kept events share: equal strings (job, task, VM, path) and equal rule matches, as
# read each event has its own (half of an event's memory). Bounded: cleared when full.
_SHARED_LIMIT = 1 << 16
_strings: dict[str, str] = {}
_matches: dict[Key, RuleMatch] = {}


def _shared(text: str | None) -> str | None:
    return None if text is None else _strings.setdefault(text, text)


# Kept texts that repeat exactly (the harmless ModuleNotFoundError, a logger's "Exception
# ignored in ..." traceback at every step) share one string: at 1 GB of dense export, a
# tenth of the memory of what is kept. Apart from _strings, since most texts are new (a
# step's number) and would clear it often; bounded the same way.
_texts: dict[str, str] = {}


def _shared_text(text: str) -> str:
    if len(text) > LONG_TEXT:
        return text  # kept on disk (analyzer.classify.longtext), which writes equal texts once
    texts = _texts
    if len(texts) > _SHARED_LIMIT:
        texts.clear()
    return texts.setdefault(text, text)


def _event(item: Light) -> Event:
    """The Event of ``item``, sharing what :func:`compact` shares."""
    if len(_strings) > _SHARED_LIMIT or len(_matches) > _SHARED_LIMIT:
        _strings.clear()
        _matches.clear()
    match = item[MATCH]
    key = (
        match.rule,
        match.lang,
        match.kind,
        match.category,
        match.detail,
        match.writer,
        *match.fields.items(),
    )
    strings = _strings
    path = item[PATH]
    kept = Event(
        item[WHEN],
        _shared(item[JOB]),
        _shared(item[TASK]),
        _matches.setdefault(key, match),
        _shared_text(item[TEXT]),
        Origin(strings.setdefault(path, path), item[LINE], item[ENTRY]),
        _shared(item[VM]),
        item[INSERT_ID],
        _shared(item[TRIAL]),
    )
    # A long text waits on disk in the reading process, as compact does.
    if len(kept.text) > LONG_TEXT and os.getpid() == _owner[0]:
        return stored(kept)
    return kept


def compact(event: Event) -> Event:
    """``event`` with the strings and the match other kept events hold equal (the same
    values: shared objects)."""
    if len(_strings) > _SHARED_LIMIT or len(_matches) > _SHARED_LIMIT:
        _strings.clear()
        _matches.clear()
    match = event.match
    key = (
        match.rule,
        match.lang,
        match.kind,
        match.category,
        match.detail,
        match.writer,
        *match.fields.items(),
    )
    match = _matches.setdefault(key, match)
    origin = event.origin
    path = _strings.setdefault(origin.path, origin.path)
    kept = Event(
        event.timestamp,
        _shared(event.job_id),
        _shared(event.task),
        match,
        _shared_text(event.text),
        origin if origin.path is path else Origin(path, origin.line, origin.entry),
        _shared(event.vm),
        event.insert_id,
        _shared(event.trial),
    )
    # A long text waits on disk, in the reading process, which keeps the events to the end (a
    # worker sends them on); analyzer.classify.longtext.
    if len(kept.text) > LONG_TEXT and os.getpid() == _owner[0]:
        return stored(kept)
    return kept


def new_sink() -> list[Event] | JobEvents:
    """Where a scan puts its events: thinned per job when :data:`thinning` is on."""
    return JobEvents() if thinning.get() else []


# Spill files -----------------------------------------------------------------------------


class _SpillFile:
    """One process's spill file: msgpack batches of dropped events, appended.

    The reading process's own file is unlinked as soon as it is made, and a worker's once
    the reading process has opened it (:func:`adopt`): no file outlives the process, however
    it ends (the CLI leaves with ``os._exit``, skipping atexit).
    """

    def __init__(self) -> None:
        handle, self.path = tempfile.mkstemp(prefix=f"jobdoctor-spill-{os.getpid()}-")
        # A bare descriptor, as long as the process: no file object to warn "unclosed" when
        # the interpreter ends.
        self._fd = handle
        self._offset = 0
        if os.getpid() == _owner[0]:
            _opened[self.path] = handle
            os.unlink(self.path)

    def write(self, events: Sequence[Light]) -> SpillRef:
        # Each distinct rule match written once, the events naming it by its place in the
        # batch (_Spilled): nearly every dropped event holds one of a few shared matches,
        # whose fields and strings cost more to encode than the rest of the event.
        places: dict[int, int] = {}
        table: list[RuleMatch] = []
        rows: list[_Spilled] = []
        add = rows.append
        for item in events:
            match = item[3]
            at = places.get(id(match))
            if at is None:
                at = places[id(match)] = len(table)
                table.append(match)
            add((item[0], item[1], item[2], at, *item[4:]))
        return self.write_bytes(_encoder().encode((table, rows)))

    def write_bytes(self, data: bytes) -> SpillRef:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        ref = SpillRef(self.path, self._offset, len(data))
        self._offset += len(data)
        return ref


# The process that reads (and forks the workers), its spill files by path (open, unlinked),
# and each process's own file.
_owner = [0]
_opened: dict[str, int] = {}
_files: dict[int, _SpillFile] = {}


def reading_process() -> int:
    """The pid of the process that reads (0 before any): a worker hands its spill files to it."""
    return _owner[0]


def adopt_reading_process(pid: int) -> None:
    """Take ``pid`` as the reading process, in a spawned worker (a forked one inherits it):
    its spill files are then left for that process to read."""
    if not _owner[0]:
        _owner[0] = pid


def prepare() -> bool:
    """Make this process's spill file, before workers fork (they make their own): False when
    none can be made (no writable temporary directory), then nothing may be thinned."""
    pid = os.getpid()
    if pid not in _files:
        _owner[0] = pid
        try:
            _files[pid] = _SpillFile()
        except OSError:
            return False
    return True


def _spill_file() -> _SpillFile:
    pid = os.getpid()
    found = _files.get(pid)
    if found is None:
        if not _owner[0]:  # thinning outside a collector's read (a test's own thinner)
            _owner[0] = pid
        found = _files[pid] = _SpillFile()
    return found


def adopt(spills: Iterable[SpillRef]) -> None:
    """Open the workers' spill files ``spills`` point at and unlink them: they are this
    process's to read, and gone with it."""
    for ref in spills:
        if ref.path not in _opened:
            _opened[ref.path] = os.open(ref.path, os.O_RDONLY)
            os.unlink(ref.path)


# A spilled event: Light with the place of its match in its batch's table.
_Spilled = tuple[
    datetime | None,
    str | None,
    str | None,
    int,
    str,
    str,
    int,
    int,
    str | None,
    str | None,
    str | None,
]
_codec: list[Any] = []


def _encoder() -> Any:
    if not _codec:
        import msgspec

        _codec.extend(
            [
                msgspec.msgpack.Encoder(),
                msgspec.msgpack.Decoder(tuple[list[RuleMatch], list[_Spilled]]),
            ]
        )
    return _codec[0]


def store_kept(batches: Sequence[bytes]) -> list[SpillRef]:
    """Write ``batches`` (msgpack-encoded lists of a worker's kept events, one per job group,
    or what it dropped of them) to this process's spill file, in one write; where each is.

    The reading process keeps every job's events until that job is diagnosed: in memory,
    about 440 B an event, 30 MB of the 1 GB dense export's 67,000 (and growing with the
    input); on disk, 24 B a batch. :func:`restore_kept` reads a job's back when it is built.
    """
    if not batches:
        return []
    whole = _spill_file().write_bytes(b"".join(batches))
    refs = []
    offset = whole.offset
    for data in batches:
        refs.append(SpillRef(whole.path, offset, len(data)))
        offset += len(data)
    return refs


def load_dropped(ref: SpillRef) -> Thinned:
    """What a worker's thinning of one group dropped (:meth:`JobEvents.packed`), written at
    ``ref`` by :func:`store_kept`, its lines counted after ``ref.line_base``."""
    import pickle

    adopt([ref])
    thinned: Thinned = pickle.loads(os.pread(_opened[ref.path], ref.length, ref.offset))
    return thinned.rebased(ref.line_base) if ref.line_base else thinned


_kept_codec: list[Any] = []


def restore_kept(ref: SpillRef) -> list[Event]:
    """The kept events of the batch :func:`store_kept` wrote at ``ref``, their lines
    renumbered, sharing strings and matches as kept events do (:func:`compact`)."""
    if not _kept_codec:
        import msgspec

        _kept_codec.append(msgspec.msgpack.Decoder(list[Event]))
    adopt([ref])
    found: list[Event] = _kept_codec[0].decode(os.pread(_opened[ref.path], ref.length, ref.offset))
    base = ref.line_base
    if base:
        for event in found:
            origin = event.origin
            moved = Origin(origin.path, origin.line + base, origin.entry)
            object.__setattr__(event, "origin", moved)  # decoded here: nothing else holds it
    return [compact(event) for event in found]


def restore(spills: Iterable[SpillRef]) -> list[Event]:
    """The dropped events ``spills`` point at, their lines renumbered."""
    _encoder()
    decoder = _codec[1]
    events: list[Event] = []
    for ref in spills:
        adopt([ref])
        table: list[RuleMatch]
        found: list[_Spilled]
        table, found = decoder.decode(os.pread(_opened[ref.path], ref.length, ref.offset))
        base = ref.line_base
        events.extend(
            Event(
                item[WHEN],
                item[JOB],
                item[TASK],
                table[item[MATCH]],
                item[TEXT],
                Origin(item[PATH], item[LINE] + base, item[ENTRY]),
                item[VM],
                item[INSERT_ID],
                item[TRIAL],
            )
            for item in found
        )
    return events


# Checking ---------------------------------------------------------------------------------


def _shift(when: datetime, by: timedelta) -> datetime:
    """``when`` moved by ``by``, held at the calendar's ends (a log may say year 9999)."""
    try:
        return when + by
    except OverflowError:
        return (datetime.max if by > timedelta(0) else datetime.min).replace(tzinfo=when.tzinfo)


_TICK = timedelta(microseconds=1)


def _second(when: datetime) -> datetime:
    return when.replace(microsecond=0)


def _any_within(times: Sequence[datetime], low: datetime, high: datetime) -> bool:
    """Whether sorted ``times`` holds one in ``[low, high]``."""
    at = bisect.bisect_left(times, low)
    return at < len(times) and times[at] <= high


def exact(
    events: Sequence[Event],
    dropped: Thinned,
    span_times: Iterable[datetime],
) -> bool:
    """Whether the later stages read ``events`` (one job's, kept) as they would read them with
    ``dropped``'s events back: see the module docstring for what is checked and why."""
    return inexact(events, dropped, span_times) is None


def inexact(
    events: Sequence[Event],
    dropped: Thinned,
    span_times: Iterable[datetime],
) -> str | None:
    """Why :func:`exact` is False (the first gap that fails and the check), or None."""
    if not dropped.gaps:
        return None
    kept = _KeptTimes.of(events, span_times)
    if dropped.ids:
        reason = _duplicate_dropped(events, dropped.ids)
        if reason is not None:
            return reason
    header_gaps: dict[object, list[Gap]] = {}
    gaps_by_rule: dict[tuple[object, object], list[Gap]] = {}
    several = len({gap.path for gap in dropped.gaps}) > 1
    for gap in dropped.gaps:
        if gap.kind is EventKind.TRACEBACK:
            header_gaps.setdefault(gap.key[0], []).append(gap)
        if several:
            gaps_by_rule.setdefault((gap.key[3], gap.key[0]), []).append(gap)
    for gap in dropped.gaps:
        reason = _gap_out_of_place(gap, kept) or _gap_maybe_copies(gap, kept, gaps_by_rule)
        if reason is not None:
            return reason
        if gap.kind is EventKind.DETAIL and _header_inside(
            gap, kept.headers, header_gaps, kept.bounds
        ):
            return f"{gap}: a traceback header before the dropped details"
    return None


@dataclass(frozen=True, slots=True)
class _KeptTimes:
    """The times of one job's kept events that a gap is checked against, each list sorted."""

    anchors: list[datetime]
    # A worker's first record on a VM: a start at that time (timeline._worker), which the
    # stages compare inclusively (a window from it holds a record at it).
    firsts: list[datetime]
    bounds: list[datetime]  # where a death's window may end, or a run begin
    deaths: dict[str, list[datetime]]  # by task
    headers: dict[object, list[datetime]]  # traceback headers, by task
    paths: dict[tuple[object, object], list[tuple[datetime, str]]]  # by rule and task

    @classmethod
    def of(cls, events: Sequence[Event], span_times: Iterable[datetime]) -> _KeptTimes:
        """The times of ``events`` and of the VM spans' first records."""
        anchors: list[datetime] = []
        deaths: dict[str, list[datetime]] = {}
        headers: dict[object, list[datetime]] = {}
        paths: dict[tuple[object, object], list[tuple[datetime, str]]] = {}
        for event in events:
            when = event.timestamp
            if when is None:
                continue
            key = thin_key(event)
            if key is None:
                anchors.append(when)
                dead = _death_task(event)
                if dead is not None:
                    deaths.setdefault(dead, []).append(when)
            elif event.match.kind is EventKind.TRACEBACK:
                headers.setdefault(event.task, []).append(when)
            paths.setdefault((event.match.rule, event.task), []).append((when, event.origin.path))
        anchors.sort()
        firsts = sorted(span_times)
        for times in deaths.values():
            times.sort()
        for times in headers.values():
            times.sort()
        return cls(anchors, firsts, sorted(anchors + firsts), deaths, headers, paths)


def _gap_out_of_place(gap: Gap, kept: _KeptTimes) -> str | None:
    """Why ``gap`` is not a plain run of repeats between kept ones: read out of order, too
    long, or with an anchor, a VM span's start or (for details) a death near it; or None."""
    if not (gap.before <= gap.first and gap.last <= gap.after):
        return f"{gap}: read out of order, the dropped ones are not between kept ones"
    if gap.after - gap.before > CAP:
        return f"{gap}: longer than {CAP}"
    if _any_within(kept.anchors, min(gap.before, _shift(gap.first, -AFTER_ANCHOR)), gap.after):
        return f"{gap}: an anchor inside"
    # A VM's first record may be the kept one before the gap itself (the first line a
    # worker wrote there): a start at it then holds that one and the gap alike.
    low = min(_shift(gap.before, _TICK), _shift(gap.first, -AFTER_ANCHOR))
    if _any_within(kept.firsts, low, gap.after):
        return f"{gap}: a VM span's start inside"
    if gap.kind is EventKind.DETAIL and _any_within(
        kept.deaths.get(str(gap.key[0]), []),
        _shift(gap.first, -AFTER_ANCHOR),
        _shift(gap.last, BEFORE_ANCHOR),
    ):
        return f"{gap}: a death within {BEFORE_ANCHOR} after"
    return None


def _gap_maybe_copies(
    gap: Gap, kept: _KeptTimes, gaps_by_rule: dict[tuple[object, object], list[Gap]]
) -> str | None:
    """Why ``gap``'s dropped events may be copies of another input's events, kept or
    dropped, or None."""
    # A kept repeat among the dropped ones of the same input is no duplicate of one for
    # classify._dedupe, which tells one input's copies by insertId alone (the digests
    # checked above); another input's by their words too, below.
    rule, task = gap.key[3], gap.key[0]
    earliest, latest = _second(gap.first), _shift(_second(gap.last), timedelta(seconds=1))
    if any(
        path != gap.path and earliest <= when <= latest
        for when, path in kept.paths.get((rule, task), ())
    ):
        return f"{gap}: another input's event a dropped one could duplicate"
    if any(
        other.path != gap.path and other.first <= latest and earliest <= other.last
        for other in gaps_by_rule.get((rule, task), ())
    ):
        return f"{gap}: another input's dropped events, maybe copies of these"
    return None


def _duplicate_dropped(events: Iterable[Event], batches: Sequence[IdBatch]) -> str | None:
    """Why a dropped event may be one copy of an entry delivered twice (its insertId and time
    those of another line's event, kept or dropped: classify._dedupe counts such a copy), or
    None."""
    owner: dict[int, tuple[str, int]] = {}
    for batch in batches:
        if batch.conflict:
            return "two dropped lines of one insertId and time"
        path, base = batch.path, batch.line_base << _ENTRY_BITS
        for digest, place in zip(*batch.arrays(), strict=True):
            place_in = (path, place + base)
            if owner.setdefault(digest, place_in) != place_in:
                return "two dropped lines of one insertId and time"
    for event in events:
        insert_id, when = event.insert_id, event.timestamp
        if insert_id is None or when is None:
            continue
        known = owner.get(entry_digest(insert_id, when))
        origin = event.origin
        if known is not None and known != (origin.path, origin.line << _ENTRY_BITS | origin.entry):
            return f"a dropped copy of the entry {insert_id!r} at {when}"
    return None


def _header_inside(
    gap: Gap,
    headers: Mapping[object, Sequence[datetime]],
    header_gaps: Mapping[object, Sequence[Gap]],
    anchors: Sequence[datetime],
) -> bool:
    """Whether a traceback header of the task may be the last one before a death with a
    dropped detail after it: rootcause cites the first detail after that header."""
    task = gap.key[0]
    kept = headers.get(task, ())
    maybe = _any_within(kept, gap.before, gap.last) or any(
        other.first <= gap.last and gap.before <= other.last for other in header_gaps.get(task, ())
    )
    if not maybe:
        return False
    # A kept header after the dropped details and before the next anchor's window ends
    # is a later "last header": the dropped ones come before it.
    at = bisect.bisect_right(anchors, gap.after)
    until = (
        _shift(anchors[at], AFTER_ANCHOR)
        if at < len(anchors)
        else datetime.max.replace(tzinfo=gap.after.tzinfo)
    )
    later = bisect.bisect_right(kept, gap.last)
    return not (later < len(kept) and kept[later] <= until)


def settled(
    events: list[Event], dropped: Thinned | None, span_times: Iterable[datetime]
) -> tuple[list[Event], bool]:
    """``events`` as the later stages may read them: as they are when :func:`exact`, else
    with the dropped events read back. Also whether they were read back."""
    if dropped is None or not dropped.gaps:
        return events, False
    if exact(events, dropped, span_times):
        return events, False
    return events + [compact(event) for event in restore(dropped.spills)], True
