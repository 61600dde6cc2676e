"""The fast reader of sink JSONL: full records only for lines a rule may match.

:func:`~analyzer.ingest.jsonl.read_jsonl` builds a :class:`~analyzer.records.LogRecord` (with a
parsed ``datetime``) for every line. Of a large export, most lines are training chatter that no
rule matches, and all that the later stages need of them is who wrote them and when: job id,
task, VM and timestamp. :class:`JsonlScanner` keeps exactly that, per ``(job, task, vm)`` key, as
the earliest and latest timestamp *string* and a count, and hands out full records only for the
lines whose message a rule matches (the prefilter decides for a whole block of messages at once,
then the rule book, which remembers its answers).

A block is read one of two ways. Normally :func:`~analyzer._fastscan.blockdecode.decode_block`
decodes it in one msgspec call into small structs of just those fields, once two Hyperscan
passes have proven that this reads every line as the line-by-line reader would. A block it
declines (a blank line, invalid UTF-8, a label that is not a string, no Hyperscan...) is read
line by line with :func:`~analyzer.ingest.entries.load_json`. Blocks come from
:func:`read_blocks`, which cuts each read at its last line end without copying it.

Equality with the plain reader is the contract (``tests/test_fastpath.py``): the same lines
counted the same way, the same records, the same first and last times. So a line takes the light
path only when its shape is the common one; anything unusual (no text, a timestamp in another
format, not an object) goes through the plain functions and comes out as a full record or the
plain skip reason.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import BinaryIO, NamedTuple

from analyzer._fastscan.blockdecode import Entry, decode_block
from analyzer.events import RuleMatch
from analyzer.ingest.entries import (
    INVALID_JSON,
    InvalidJson,
    load_json_repairing,
    record_or_reason,
)
from analyzer.ingest.jsonl import BLANK_LINE
from analyzer.ingest.sniff import BOM
from analyzer.records import (
    InputStats,
    LogRecord,
    Origin,
    entry_fields,
    job_group,
    parse_timestamp,
)

# Which texts of a block may match a rule: the indexes, in any order.
TextSelector = Callable[[Sequence[str]], Iterable[int]]

SpanKey = tuple[str | None, str | None, str | None]  # (job id, task, vm)
Candidate = tuple[LogRecord, tuple[RuleMatch, ...] | None]

# Blocks of about this many bytes are read at once: big enough to amortise the per-block work,
# small enough that a block and the objects decoded from it stay in the CPU's caches (half a
# megabyte measured 10% faster than 4 MB) and that memory stays flat whatever the input size.
BLOCK_BYTES = 1 << 19

# The sink's own timestamp form: nanoseconds, UTC. Equal-format strings compare like the times
# they name, so they are kept as strings; the date part is checked once per distinct date.
# ASCII digits only: parse_timestamp rejects other Nd digits in the seconds and the first six
# digits of the fraction, so a line carrying them must take the plain functions.
_CANONICAL_TIME = re.compile(r"\d{4}-\d\d-\d\dT(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{9}Z", re.ASCII)
# Every character of that pattern has a fixed width, so a string matches exactly when its first
# 17 characters (through the minute's colon) are a proven minute and the rest matches the tail:
# seconds, nine ASCII digits and Z, to the end.
_SECONDS_TO_Z = re.compile(r"[0-5]\d\.\d{9}Z", re.ASCII).fullmatch
# Where no minute is proven yet: lone surrogates, which no decoded string holds (msgspec refuses
# them), so no timestamp starts with it.
_NO_MINUTE = "\ud800" * 17
# Bounds the memory of proven minutes (a year has 525,600) and of dates: beyond it, the full
# check runs.
_MAX_MINUTES = 1 << 16

_VALID_DATES: dict[str, bool] = {}
_GOOD_MINUTES: set[str] = set()


def time_key(moment: datetime) -> str:
    """The canonical timestamp string of an aware UTC ``moment`` (microseconds, 000 appended)."""
    m = moment
    return (
        f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}"
        f".{m.microsecond:06d}000Z"
    )


@dataclass(slots=True)
class SpanTally:
    """Earliest and latest timestamp key and how many timed records one key has."""

    first: str
    last: str
    records: int


@dataclass(slots=True)
class ScanTally:
    """What a scan keeps of its lines: per-key time spans, untimed counts, candidate records.

    ``spans`` and ``untimed`` are in order of first appearance (dicts keep insertion order),
    which is what the plain path's per-job accumulators see too.
    """

    spans: dict[SpanKey, SpanTally] = field(default_factory=dict)
    untimed: Counter[str | None] = field(default_factory=Counter)
    # Each with the rule matches already found for it, or None when not looked for yet.
    candidates: list[Candidate] = field(default_factory=list)

    def merge(self, later: ScanTally) -> None:
        """Add the tally of the input that follows this one."""
        spans = self.spans
        for key, tally in later.spans.items():
            mine = spans.get(key)
            if mine is None:
                spans[key] = tally
            else:
                mine.records += tally.records
                mine.first = min(mine.first, tally.first)
                mine.last = max(mine.last, tally.last)
        self.untimed.update(later.untimed)
        self.candidates.extend(later.candidates)


class JsonlScanner:
    """Reads blocks of sink JSONL lines into a :class:`ScanTally`, counting every line.

    ``select`` gets the message texts of a block and returns the indexes of those a rule may
    match (it must never leave out one that matches: it is the rule book's prefilter);
    ``matches``, when given, tells whether a rule matches a text, and the light lines no rule
    matches are not handed out.
    ``at_start`` is False for a byte range that does not begin the input.
    """

    def __init__(
        self,
        stats: InputStats,
        select: TextSelector,
        *,
        matches: Callable[[str], tuple[RuleMatch, ...]] | None = None,
        at_start: bool = True,
    ) -> None:
        self.stats = stats
        # With the rule book's match (which remembers its answers), a light line the prefilter
        # let through becomes a record only when a rule really matches it: about half of them.
        self._matches = matches
        # Only the first line of an input may carry a byte-order mark: not that of a later range.
        self._at_start = at_start
        self.tally = ScanTally()
        self._select = select
        # Which dates are real, and the minutes ("2024-03-11T08:00:") of timestamps that passed
        # the full check: facts about strings, shared by every scanner of the process (a
        # worker reads several ranges of one export, which mostly share their minutes).
        self._valid_dates = _VALID_DATES
        self._good_minutes = _GOOD_MINUTES

    def _valid_date(self, date: str) -> bool:
        known = self._valid_dates.get(date)
        if known is None:
            try:
                datetime.fromisoformat(date)
                known = True
            except ValueError:
                known = False
            if len(self._valid_dates) < _MAX_MINUTES:
                self._valid_dates[date] = known
        return known

    def _canonical_time(self, when: str) -> bool:
        """Whether ``when`` is a valid timestamp in the sink's canonical form.

        Also remembers its minute (the first 17 characters) as proven, for the lean path.
        """
        if _CANONICAL_TIME.fullmatch(when) is None or not self._valid_date(when[:10]):
            return False
        if len(self._good_minutes) < _MAX_MINUTES:
            self._good_minutes.add(when[:17])
        return True

    def _canonical_key(self, when: str) -> str | None:
        """``when`` in the sink's canonical form, if it is a valid timestamp in that form or
        in one of the shorter forms protobuf's JSON writes when the last digits of the
        fraction are zeros (none, 3 or 6 digits: ``...:05Z``, ``...:05.120Z``); else None.

        The key is the time :func:`time_key` gives the parsed timestamp, so lines read either
        way compare right.
        """
        size = len(when)
        if size != 30:
            if size == 20 and when[19] == "Z":
                when = when[:19] + ".000000000Z"
            elif (size == 24 or size == 27) and when[19] == "." and when[-1] == "Z":
                when = when[:-1] + "0" * (30 - size) + "Z"
            else:
                return None
        return when if self._canonical_time(when) else None

    def feed_block(self, data: bytes, first_number: int, end: int | None = None) -> int:
        """Scan the block ``data[:end]`` (whole lines, the last ``\\n`` optional), whose first
        line is ``first_number``; return how many lines it held."""
        entries = decode_block(data, end)
        if entries is not None:
            self._feed_decoded(data, entries, first_number)
            return len(entries)
        if end is not None and end != len(data):
            data = data[:end]  # what follows is read again with the next block
        lines = data.split(b"\n")
        if lines[-1] == b"" and len(lines) > 1:
            lines.pop()  # after the last line's "\n"
        self.feed(lines, first_number)
        return len(lines)

    def _feed_decoded(self, data: bytes, entries: list[Entry], first_number: int) -> None:
        """Scan a block decoded at once: the lean path, line by line only for odd lines.

        The block is the first ``len(entries)`` lines of ``data``."""
        spans = self.tally.spans
        good_minutes = self._good_minutes
        minute = _NO_MINUTE
        seconds_to_z = _SECONDS_TO_Z
        # The previous line's worker and span (none yet: no job id is None).
        last_job: str | None = None
        last_task: str | None = None
        last_vm: str | None = None
        span = SpanTally("", "", 0)
        # The light lines' texts, for the prefilter, and the indexes of the odd lines.
        texts: list[str] = []
        odd: list[int] = []
        for entry in entries:
            # The sink's common shape, read by attribute: a part that is missing (None) raises
            # AttributeError, and the line goes to the plain functions like any unusual one.
            try:
                rlabels = entry.resource.labels  # type: ignore[union-attr]
                task = rlabels.task_name  # type: ignore[union-attr]
                job = rlabels.job_id  # type: ignore[union-attr]
                payload = entry.jsonPayload
                text = payload.message if payload is not None else entry.textPayload
                labels = entry.labels
                vm = labels.vm  # type: ignore[union-attr]
                trial = labels.trial_id or labels.ml_trial_id  # type: ignore[union-attr]
            except AttributeError:
                odd.append(len(texts) + len(odd))  # this line's index
                continue
            when = entry.timestamp
            # Non-empty resource labels win over every other label in record_from_entry, so
            # task and job are final; a truthy timestamp hides receiveTimestamp. The decoder has
            # checked that these labels and the timestamp are strings (or missing).
            # decode_block leaves a line of another resource type and an audit entry to the
            # one mapping (analyzer.records.entry_fields); for the others, with task and job
            # set and a string text, its answer is the one read here.
            if not (
                task
                and job
                and when
                and type(text) is str
                # _CANONICAL_TIME plus the date check, in two cheap pieces: a minute already
                # proven valid, then the tail. Anything else (and each new minute) takes the
                # full check.
                and (
                    (
                        # The last proven minute (most lines share their neighbour's) is
                        # checked without slicing; the set of proven ones otherwise.
                        (
                            when.startswith(minute)
                            or (when[:17] in good_minutes and (minute := when[:17]) != "")
                        )
                        and seconds_to_z(when, 17) is not None
                    )
                    or (when := self._canonical_key(when)) is not None
                )
            ):
                odd.append(len(texts) + len(odd))  # this line's index
                continue
            if trial:
                job = job_group(job, trial)
            if not vm:
                vm = None
            # Lines of one worker often come together: its span is looked up once a run.
            if job != last_job or task != last_task or vm != last_vm:
                key = (job, task, vm)
                known = spans.get(key)
                if known is None:
                    known = spans[key] = SpanTally(when, when, 0)
                span = known
                last_job, last_task, last_vm = job, task, vm
            span.records += 1
            if when < span.first:
                span.first = when
            elif when > span.last:
                span.last = when
            texts.append(text)
        stats = self.stats
        stats.lines += len(entries)
        stats.used += len(texts)
        stats.records += len(texts)
        # The line of each text: all of them in order, but for the odd ones.
        light: Sequence[int] = range(len(entries))
        if odd:
            skipped = set(odd)
            light = [index for index in light if index not in skipped]
        path = stats.path
        matches = self._matches
        chosen: list[Candidate] = []
        for index in self._select(texts):
            found = matches(texts[index]) if matches is not None else None
            if found is None or found:
                origin = Origin(path, first_number + light[index])
                chosen.append((_record(entries[light[index]], texts[index], origin), found))
        if odd:
            lines = data.split(b"\n", len(entries))
            pending = _Pending()
            full: list[LogRecord] = []
            for index in odd:
                self._read_line(lines[index], first_number + index, pending, full)
            self._finish(pending, full)
            chosen += [(record, None) for record in full]
            chosen.sort(key=_line_of)
        self.tally.candidates.extend(chosen)

    def feed(self, lines: Sequence[bytes], first_number: int) -> None:
        """Scan ``lines`` (without their line endings) one by one; the first is
        ``first_number``. The path for blocks :func:`decode_block` cannot prove."""
        if self._at_start and lines and first_number == 1 and lines[0].startswith(BOM):
            lines = [lines[0][len(BOM) :], *lines[1:]]
        self.stats.lines += len(lines)
        pending = _Pending()
        full: list[LogRecord] = []
        for number, raw in enumerate(lines, first_number):
            self._read_line(raw, number, pending, full)
        self._finish(pending, full)
        full.sort(key=_record_line)
        self.tally.candidates.extend((record, None) for record in full)

    def _read_line(self, raw: bytes, number: int, pending: _Pending, full: list[LogRecord]) -> None:
        """Read one line as :func:`~analyzer.ingest.jsonl.read_jsonl` does: count it, and
        keep it as a light line (its text waiting for the prefilter) or as a full record."""
        stats = self.stats
        try:
            entry, repaired = load_json_repairing(raw)
        except InvalidJson:
            stats.skip(INVALID_JSON if raw.strip() else BLANK_LINE)
            return
        stats.invalid_utf8 += repaired
        if type(entry) is dict:
            fields = entry_fields(entry)
            if isinstance(fields, str):
                stats.skip(fields)
                return
            when = fields.time
            if when is not None and (key := self._canonical_key(when)):
                stats.used += 1
                stats.records += 1
                job = job_group(fields.job_id, fields.trial)
                self._count_span((job, fields.task, fields.vm), key)
                pending.numbers.append(number)
                pending.lines.append(raw)
                pending.texts.append(fields.text)
                return
        # Anything else: the plain functions decide, exactly as read_jsonl does.
        outcome = record_or_reason(entry, Origin(stats.path, number))
        if isinstance(outcome, str):
            stats.skip(outcome)
            return
        stats.used += 1
        stats.records += 1
        self._observe(outcome)
        full.append(outcome)

    def _finish(self, pending: _Pending, full: list[LogRecord]) -> None:
        """Add to ``full`` the full records of the pending light lines a rule may match."""
        for index in self._select(pending.texts):
            number = pending.numbers[index]
            record = record_or_reason(
                load_json_repairing(pending.lines[index])[0], Origin(self.stats.path, number)
            )
            # A light line is a well-formed entry, so this is always a record.
            assert not isinstance(record, str)
            full.append(record)

    def _count_span(self, key: SpanKey, when: str) -> None:
        span = self.tally.spans.get(key)
        if span is None:
            self.tally.spans[key] = SpanTally(when, when, 1)
        else:
            span.records += 1
            span.first = min(span.first, when)
            span.last = max(span.last, when)

    def _observe(self, record: LogRecord) -> None:
        job = job_group(record.job_id, record.trial)
        if record.timestamp is None:
            self.tally.untimed[job] += 1
        else:
            self._count_span((job, record.task, record.vm), time_key(record.timestamp))


@dataclass(slots=True)
class _Pending:
    """Light lines read one by one whose text the prefilter has yet to see.

    Their parsed entries are not kept: holding thousands of dicts costs more (allocation, GC)
    than parsing the few chosen lines again.
    """

    numbers: list[int] = field(default_factory=list)
    lines: list[bytes] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)


def _record(entry: Entry, text: str, origin: Origin) -> LogRecord:
    """The record :func:`~analyzer.records.record_from_entry` makes of a light line's entry."""
    labels = entry.labels
    rlabels = entry.resource.labels  # type: ignore[union-attr]
    assert labels is not None and rlabels is not None and entry.timestamp is not None
    severity = entry.severity
    insert_id = entry.insertId
    vm = labels.vm
    return LogRecord(
        timestamp=parse_timestamp(entry.timestamp),
        job_id=rlabels.job_id,
        task=rlabels.task_name,
        severity=severity if type(severity) is str else "DEFAULT",
        text=text,
        origin=origin,
        vm=vm if type(vm) is str and vm else None,
        trial=labels.trial_id or labels.ml_trial_id or None,
        insert_id=insert_id if type(insert_id) is str else None,
    )


def _line_of(candidate: Candidate) -> int:
    return candidate[0].origin.line


def _record_line(record: LogRecord) -> int:
    return record.origin.line


class Block(NamedTuple):
    """A block of whole lines: the first ``end`` bytes of ``data``.

    ``data`` is what one read returned; it may go on with the start of the next line, which
    the next block reads again. Cutting a read at its last line end without copying it halves
    the cost of reading here (it saves a copy of half a megabyte per block, and the page faults
    of one more large allocation).
    """

    data: bytes
    end: int


def read_blocks(
    stream: BinaryIO, block_bytes: int = BLOCK_BYTES, limit: int = -1
) -> Iterator[Block]:
    """``stream`` in blocks of about ``block_bytes`` that end at line ends (``\\n``).

    Only the input's last line may lack its ``\\n``. With ``limit`` >= 0, reading stops at the
    first line end at or after ``limit`` bytes.
    """
    # A file is read again from the cut; a stream that cannot seek (stdin, gzip) carries the
    # start of the next line over and joins it to the next read.
    rewind = isinstance(stream, io.BufferedReader | io.FileIO | io.BytesIO) and stream.seekable()
    carried: list[bytes] = []
    remaining = limit
    while remaining != 0:
        chunk = stream.read(block_bytes if remaining < 0 else min(block_bytes, remaining))
        if not chunk:
            break
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:  # no line end: a line longer than a block, or the limit fell in it
            carried.append(chunk)
            remaining = max(0, remaining - len(chunk)) if remaining > 0 else remaining
            continue
        rest = len(chunk) - cut
        if rest and rewind:
            stream.seek(-rest, io.SEEK_CUR)
        if remaining > 0:
            remaining = max(0, remaining - (cut if rewind else len(chunk)))
        if carried:
            carried.append(chunk)
            data = b"".join(carried)
            carried.clear()
        else:
            data = chunk
        if rest and not rewind:
            carried.append(chunk[cut:])
        yield Block(data, len(data) - rest)
    if remaining == 0 and carried:
        carried.append(stream.readline())  # the limit fell inside this line: finish it
    if carried:
        data = b"".join(carried)
        yield Block(data, len(data))
