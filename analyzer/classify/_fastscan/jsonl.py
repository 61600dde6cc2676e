"""The fast reader of sink JSONL: full records only for lines a rule may match.

:func:`~analyzer.ingest.jsonl.read_jsonl` builds a :class:`~analyzer.ingest.records.LogRecord`
(with a
parsed ``datetime``) for every line. Of a large export, most lines are training chatter that no
rule matches, and all that the later stages need of them is who wrote them and when: job id,
task, VM and timestamp. :class:`JsonlScanner` keeps exactly that, per ``(job, task, vm)`` key, as
the earliest and latest timestamp *string* and a count, and hands out full records only for the
lines whose message a rule matches (the prefilter decides for a whole block of messages at once,
then the rule book, which remembers its answers).

A block is read one of two ways. Normally
:func:`~analyzer.classify._fastscan.blockdecode.decode_block`
decodes it in one msgspec call into small structs of just those fields (built from the one
LogEntry mapping, :data:`analyzer.ingest.records.LABEL_PATHS` and its neighbours), once Hyperscan
passes have proven that this reads every line as the line-by-line reader would; blank lines,
entries of other resources and audit entries come out decided (``Skipped``). A block it
declines (invalid UTF-8, a label that is not a string, no Hyperscan...) is read line by line
with :func:`~analyzer.ingest.entries.load_json`. Blocks come from :func:`read_blocks`, which
cuts each read at its last line end without copying it.

Timestamps are kept in one form, the sink's (UTC, nine digits, ``Z``), which compares like the
times: any RFC 3339 form with 0 to 9 digits and ``Z``, ``z`` or an offset is rewritten into it
(:func:`canonical_time`, offsets converted to UTC).

Equality with the plain reader is the contract (``tests/test_fastpath.py``): the same lines
counted the same way, the same records, the same first and last times. So a line takes the light
path only when the first path of each field in the mapping decides it; anything else (no text
there, a timestamp that is no RFC 3339 form above, not an object) goes through the plain
functions and comes out as a full record or the plain skip reason.
"""

from __future__ import annotations

import io
import operator
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, BinaryIO, NamedTuple

from analyzer.classify._fastscan.blockdecode import READ_WHOLE, Hints, Skipped, decode_block
from analyzer.classify.eventstore import JobEvents, Light
from analyzer.classify.minutes import KEY_MINUTES, MinuteMap, minute_of_key
from analyzer.ingest.entries import (
    CUT_SHORT,
    InvalidJson,
    invalid_reason,
    load_json_repairing,
    record_or_reason,
)
from analyzer.ingest.jsonl import BLANK_LINE
from analyzer.ingest.lines import BOM, LONGEST_LINE, read_past_line, skip_long_line
from analyzer.ingest.records import (
    BIGQUERY_UTC,
    LABEL_PATHS,
    EntryFields,
    InputStats,
    LogRecord,
    Origin,
    entry_fields,
    job_group,
    parse_timestamp,
    record_from_fields,
)
from analyzer.rulebook.events import RuleMatch

# Which texts of a block may match a rule: the indexes, in any order.
TextSelector = Callable[[Sequence[str]], Iterable[int]]

SpanKey = tuple[str | None, str | None, str | None]  # (job id, task, vm)
Candidate = tuple[LogRecord, tuple[RuleMatch, ...] | None]

# Blocks of about this many bytes are read at once: big enough to amortise the per-block work,
# small enough that a block and the objects decoded from it stay in the CPU's caches (half a
# megabyte measured 10% faster than 4 MB) and that memory stays flat whatever the input size.
BLOCK_BYTES = 1 << 19

# The sink's own timestamp form: nanoseconds, UTC. Equal-format strings compare like the times
# they name, so timestamps are kept as strings in this form (the key of a span); a timestamp in
# another RFC 3339 form is rewritten into it (_TimeKeys). ASCII digits only: parse_timestamp
# rejects other Nd digits in the seconds and the first six digits of the fraction, so a line
# carrying them must take the plain functions.
# Every character of the canonical form has a fixed width, so a string is canonical exactly
# when its first 17 characters (through the minute's colon) are a proven minute and the rest
# matches the tail: seconds, nine ASCII digits and Z, to the end.
_SECONDS_TO_Z = re.compile(r"[0-5]\d\.\d{9}Z", re.ASCII).fullmatch
# The tail of the next most common forms, microseconds at UTC: what Python's isoformat() and
# google-cloud-logging's to_api_repr() write.
_SIX_DIGITS_UTC = re.compile(r"[0-5]\d\.\d{6}(?:Z|\+00:00)", re.ASCII).fullmatch
# The tail of any RFC 3339 timestamp the scan reads itself, after its minute: seconds, 0 to 9
# fraction digits, and Z, z, a whole-minute offset, or BigQuery's " UTC" (a sink table
# exported to JSON: "2024-04-04 00:33:29.951169 UTC"). What parse_timestamp reads besides
# (more digits, "+0530", no seconds, other separators...) takes the plain functions.
_ANY_TAIL = re.compile(
    r"([0-5]\d)(?:\.(\d{1,9}))?(Z|z| UTC|[+-](?:[01]\d|2[0-3]):[0-5]\d)", re.ASCII
).fullmatch
# The zones that are UTC itself.
_UTC_ZONES = ("Z", "z", BIGQUERY_UTC)
# The minute of any such timestamp: date, "T" (or "t", or a space: RFC 3339 allows them and
# so does parse_timestamp), hour and minute.
# A run of empty lines (two line ends or more in a row).
_EMPTY_RUN = re.compile(rb"\n\n+")
_MINUTE = re.compile(r"\d{4}-\d\d-\d\d[Tt ](?:[01]\d|2[0-3]):[0-5]\d:", re.ASCII).fullmatch
# Zeros that make a fraction of n digits nine long.
_PAD = tuple("0" * (9 - digits) for digits in range(10))
# Where no minute is proven yet: lone surrogates, which no decoded string holds (msgspec refuses
# them), so no timestamp starts with it.
_NO_MINUTE = "\ud800" * 17
# Blocks read with each timestamp checked after one held a timestamp in another form, before
# taking them for canonical again.
_CAREFUL_BLOCKS = 16
# Bounds the memory of proven minutes (a year has 525,600): beyond it, the full check runs.
_MAX_MINUTES = 1 << 16

# The canonical minute ("2024-03-11T08:00:") of a timestamp's minute and zone as written
# ("2024-03-11T13:30:" "+05:30"), or None when it names no valid time; and the canonical
# minutes proven valid. Facts about strings, shared by every scanner of the process (a worker
# reads several ranges of one export, which mostly share their minutes).
_UTC_MINUTES: dict[str, str | None] = {}
_GOOD_MINUTES: set[str] = set()


# A block's timestamps checked at once (canonical_times): the canonical form with every digit
# made "0", and the seconds' first digit of each (at 17, every 31 characters of them joined).
# On the bytes (ASCII, checked first): a 256-byte table, a tenth of str.translate's cost per
# character, which goes through a dict (1.5% of the fleet scan's instructions).
_DIGITS_TO_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
# The forms a block's timestamps are taken in at once, their digits made "0": the canonical
# one, and microseconds at UTC (Python's isoformat(), google-cloud-logging's to_api_repr()),
# whose key is their first 26 characters and "000Z".
FORMS = (
    "0000-00-00T00:00:00.000000000Z",
    "0000-00-00T00:00:00.000000Z",
    "0000-00-00T00:00:00.000000+00:00",
)
# Where a form's digits must be zeros: its offset's.
_ZONE_DIGITS = {FORMS[2]: (27, 28, 30, 31)}
_MINUTE_OF = operator.itemgetter(slice(0, 17))


def _layouts(form: str, count: int) -> bytes:
    """``count`` times ``form`` joined by newlines, as bytes."""
    return ((form + "\n") * count)[:-1].encode()


# The layouts of up to this many timestamps, made once per form: a block's are their start
# (compared in place, with no copy of three times its timestamps' bytes to make them).
_LAYOUT_COUNT = 2048
_LAYOUT_STARTS: dict[str, bytes] = {}


def _in_layout(digits_zeroed: bytes, form: str, count: int) -> bool:
    """Whether ``digits_zeroed`` is ``_layouts(form, count)``."""
    if count > _LAYOUT_COUNT:
        return digits_zeroed == _layouts(form, count)
    start = _LAYOUT_STARTS.get(form)
    if start is None:
        start = _LAYOUT_STARTS[form] = _layouts(form, _LAYOUT_COUNT)
    # Of the right length (checked before), a prefix of the long layout is the short one.
    return start.startswith(digits_zeroed)


def canonical_times(times: list[str], form: str = FORMS[0]) -> bool:
    """Whether every string of ``times`` is a valid timestamp in ``form`` (one of
    :data:`FORMS`; the sink's canonical one by default): what checking each of them does
    (``_SECONDS_TO_Z`` after a proven minute, for the canonical form), in a few passes over
    all of them joined, each in C, and the minutes not proven yet checked each once."""
    if not times:
        return True
    joined = "\n".join(times)
    count = len(times)
    size = len(form) + 1
    if (
        # Each in the form's layout, of ASCII digits (a newline inside one: another layout).
        len(joined) != size * count - 1
        or not joined.isascii()
        or not _in_layout(joined.encode().translate(_DIGITS_TO_ZERO), form, count)
        # Seconds below 60.
        or joined[17::size].strip("012345")
        # The offset's digits zeros, as written (the layout check took any digit).
        or any(joined[at::size].strip("0") for at in _ZONE_DIGITS.get(form, ()))
    ):
        return False
    good = _GOOD_MINUTES
    first, last = min(times), max(times)
    if first[:11] == last[:11] and not joined[14::size].strip("012345"):
        # All of one day (a block mostly is): every string of this layout between the first
        # and the last shares their date, its hour lies between theirs (and so is valid when
        # theirs are: 00 to 23 is one range of two digits), and its minute's tens are below 6.
        # Those two minutes decide for all, without a set of every one (half of this check).
        minutes = {first[:17], last[:17]}
    else:
        minutes = set(map(_MINUTE_OF, times))
    for minute in minutes - good:
        if utc_minute(minute, "Z") != minute:
            return False
        if len(good) < _MAX_MINUTES:
            good.add(minute)
    return True


def utc_minute(minute: str, zone: str) -> str | None:
    """The canonical UTC minute (``2024-03-11T08:00:``) of the minute ``minute``
    (``2024-03-11T13:30:``, any separator :data:`_MINUTE` takes) written at ``zone`` (``Z``,
    ``z``, `` UTC`` or ``+HH:MM``/``-HH:MM``); None when it is no valid time or leaves the years
    datetime holds (parse_timestamp refuses those too)."""
    if _MINUTE(minute) is None:
        return None
    try:
        local = datetime.fromisoformat(f"{minute[:10]}T{minute[11:16]}")
        if zone not in _UTC_ZONES:
            # RFC 3339 offsets are whole minutes: the seconds and fraction stay as written.
            offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
            local = local - offset if zone[0] == "+" else local + offset
    except (ValueError, OverflowError):
        return None
    return (
        f"{local.year:04d}-{local.month:02d}-{local.day:02d}T{local.hour:02d}:{local.minute:02d}:"
    )


def canonical_time(when: str) -> str | None:
    """``when``, an RFC 3339 timestamp with 0 to 9 fraction digits and ``Z``, ``z`` or an
    offset, in the sink's canonical form (UTC, nine digits, ``Z``): a string that compares
    like the time, and that :func:`~analyzer.ingest.records.parse_timestamp` reads as the same
    moment as ``when``. None for any other string (the plain functions decide about it)."""
    found = _ANY_TAIL(when, 17)
    if found is None:
        return None
    seconds, fraction, zone = found.groups()
    written = when[:17]
    key = written + zone
    minute = _UTC_MINUTES.get(key, _NO_MINUTE)
    if minute is _NO_MINUTE:
        minute = utc_minute(written, zone)
        if len(_UTC_MINUTES) < _MAX_MINUTES:
            _UTC_MINUTES[key] = minute
    if minute is None:
        return None
    if len(_GOOD_MINUTES) < _MAX_MINUTES:
        # The lean check takes the canonical form of this minute from now on.
        _GOOD_MINUTES.add(minute)
    if fraction is None:
        return f"{minute}{seconds}.000000000Z"
    if minute == written and len(fraction) == 9 and zone == "Z":
        return when
    return f"{minute}{seconds}.{fraction}{_PAD[len(fraction)]}Z"


def time_key(moment: datetime) -> str:
    """The canonical timestamp string of an aware UTC ``moment`` (microseconds, 000 appended)."""
    m = moment
    return (
        f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}"
        f".{m.microsecond:06d}000Z"
    )


@dataclass(slots=True)
class SpanTally:
    """Earliest and latest timestamp key and how many timed records one key has, and the
    minutes they fell in (:class:`~analyzer.classify.minutes.MinuteMap`).

    ``lo`` is the key prefix of the minute of ``last`` (``2024-03-11T08:00``) and ``hi`` that
    prefix with ``;`` (after every ``:``); ``flo`` and ``fhi`` the same of ``first``. A key at
    or past ``hi`` is in a later minute than ``last``'s, one before ``flo`` in an earlier one
    than ``first``'s: a reader notes a minute (:meth:`note`) only then, or for a key between
    in neither minute, so a line in time order (or in reverse, as gcloud prints) costs one
    string compare more.
    """

    first: str
    last: str
    records: int
    minutes: MinuteMap = field(default_factory=MinuteMap)
    lo: str = "\uffff"
    hi: str = ""
    flo: str = "\uffff"
    fhi: str = ""

    @classmethod
    def at(cls, when: str, records: int = 0) -> SpanTally:
        """A span that begins with a line at ``when``."""
        span = cls(when, when, records)
        span.note(when)
        return span

    def count(self, when: str) -> None:
        """Count one more line at ``when`` (outside the hot loops, which inline this)."""
        self.records += 1
        if when > self.last:
            self.last = when
            if when >= self.hi:
                self.note(when)
        elif when < self.first:
            self.first = when
            if when < self.flo:
                self.note(when)
        elif when < self.lo and not self.flo <= when < self.fhi:
            self.note(when)

    def note(self, when: str) -> None:
        """Note the minute of ``when`` (a key outside the minutes of ``first`` and ``last``)."""
        prefix = when[:16]
        minute = KEY_MINUTES.get(prefix)
        if minute is None:
            minute = minute_of_key(prefix)
            if minute is None:
                return
        self.minutes.add(minute)
        if when >= self.hi:
            self.lo, self.hi = prefix, prefix + ";"
        if when < self.flo:
            self.flo, self.fhi = prefix, prefix + ";"

    def absorb(self, other: SpanTally) -> None:
        """Add ``other``'s records, times and minutes (the same key's, of other lines)."""
        self.records += other.records
        if other.first < self.first:
            self.first, self.flo, self.fhi = other.first, other.flo, other.fhi
        if other.last > self.last:
            self.last, self.lo, self.hi = other.last, other.lo, other.hi
        self.minutes.merge(other.minutes)


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
                mine.absorb(tally)
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
        sink: JobEvents | None = None,
    ) -> None:
        self.stats = stats
        # Where the events of a decoded block's candidates go straight away, when reading
        # thins: as the thinner's tuples (analyzer.classify.eventstore.Light), no record, no Event.
        self._sink = sink if matches is not None else None
        # With the rule book's match (which remembers its answers), a light line the prefilter
        # let through becomes a record only when a rule really matches it: about half of them.
        self._matches = matches
        # Only the first line of an input may carry a byte-order mark: not that of a later range.
        self._at_start = at_start
        self.tally = ScanTally()
        self._select = select
        # The canonical minutes ("2024-03-11T08:00:") proven valid (see canonical_time).
        self._good_minutes = _GOOD_MINUTES
        # What the last block showed (entries of other resources, blank lines): the next
        # is read so straight away.
        self._hints = Hints()
        # How many blocks more to read with each timestamp checked on its own (a block held
        # one in another form), and the form (of FORMS) the others are taken in.
        self._careful = 0
        self._form = 0
        # Whether only the timestamps of the form's length are taken in it (a block held
        # others: Go's trimmed fractions, a whole second in isoformat()).
        self._lengths = False
        # The skip reasons of the last block's lines decoded as Skipped (see _lean).
        self._skipped: list[str] = []

    def feed_block(self, data: bytes, first_number: int, end: int | None = None) -> int:
        """Scan the block ``data[:end]`` (whole lines, the last ``\\n`` optional), whose first
        line is ``first_number``; return how many lines it held."""
        entries = decode_block(data, end, hints=self._hints)
        if entries is not None:
            self._feed_decoded(data, entries, first_number)
            return len(entries)
        if end is not None and end != len(data):
            data = data[:end]  # what follows is read again with the next block
        if b"\n\n" in data:
            return self._feed_past_empty_runs(data, first_number)
        return self._feed_lines(data, first_number)

    def _feed_lines(self, data: bytes, first_number: int) -> int:
        """Scan the whole lines of ``data`` one by one; return how many it held."""
        lines = data.split(b"\n")
        open_end = lines[-1] != b""  # the input's last line, without its "\n"
        if not open_end and len(lines) > 1:
            lines.pop()  # after the last line's "\n"
        self.feed(lines, first_number, open_end)
        return len(lines)

    def _feed_past_empty_runs(self, data: bytes, first_number: int) -> int:
        """Scan ``data`` whose runs of empty lines are counted at once (skipped as blank), not
        split into a line each: a file padded with millions of newlines costs what its bytes
        do (issue 31, point 7)."""
        number, start = first_number, 0
        for run in _EMPTY_RUN.finditer(data):
            # The "\n" that starts the run ends the last line before it; the others end
            # empty lines.
            lines = data[start : run.start()].split(b"\n")
            self.feed(lines, number)
            empty = run.end() - run.start() - 1
            self.stats.lines += empty
            self.stats.skip(BLANK_LINE, empty)
            number += len(lines) + empty
            start = run.end()
        if start < len(data):
            number += self._feed_lines(data[start:], number)
        return number - first_number

    def _feed_decoded(self, data: bytes, entries: list[Any], first_number: int) -> None:
        """Scan a block decoded at once: the lean path, line by line only for odd lines.

        The block is the first ``len(entries)`` lines of ``data``. Its timestamps are first
        taken for canonical and checked all at once after (one Hyperscan search of them
        joined: a tenth of checking each); where one is not, the block is read again, each
        timestamp checked on its own, and so are the next blocks for a while."""
        careful = self._careful > 0
        if careful:
            self._careful -= 1
        else:
            form = self._form
            size = len(FORMS[form]) if self._lengths else 0
            local: dict[SpanKey, SpanTally] = {}
            texts, odd, times = self._lean(entries, local, careful=False, form=form, size=size)
            if not canonical_times(times, FORMS[form]):
                # The form most of the block's timestamps have (the next block's too,
                # likely), the others each checked on its own; else all of them so.
                lengths = Counter(map(len, times))
                common = lengths.most_common(1)
                forms = [f for f, text in enumerate(FORMS) if common and len(text) == common[0][0]]
                careful = True
                if forms:
                    form, size = forms[0], common[0][0]
                    local = {}
                    texts, odd, times = self._lean(
                        entries, local, careful=False, form=form, size=size
                    )
                    if canonical_times(times, FORMS[form]):
                        careful = False
                        # All of one length (google-cloud-logging's to_api_repr()): the next
                        # blocks take every one in the form; isoformat() drops a whole
                        # second's fraction, Go trims zeros: only those of its length then.
                        self._form, self._lengths = form, len(lengths) > 1
                if careful:
                    self._careful = _CAREFUL_BLOCKS
            if not careful:
                self._merge(local)
        if careful:
            texts, odd, _ = self._lean(entries, self.tally.spans, careful=True)
        self._after_lean(data, entries, first_number, texts, odd)

    def _merge(self, local: dict[SpanKey, SpanTally]) -> None:
        """Add a block's spans to the tally (in the block's order of first appearance)."""
        spans = self.tally.spans
        for key, tally in local.items():
            mine = spans.get(key)
            if mine is None:
                spans[key] = tally
            else:
                mine.absorb(tally)

    def _lean(
        self,
        entries: list[Any],
        spans: dict[SpanKey, SpanTally],
        *,
        careful: bool,
        form: int = 0,
        size: int = 0,
    ) -> tuple[list[str], list[int], list[str]]:
        """The lean reading of a block's entries into ``spans``: the light lines' texts, the
        indexes of the odd lines and, unless ``careful`` (each timestamp checked and made
        canonical on its own), the light lines' timestamps, taken unchecked in ``form`` (of
        :data:`FORMS`: canonical, or microseconds at UTC, whose key is their first 26
        characters and "000Z"). With ``size``, only those of its length: the others are
        checked on their own."""
        # One loop with its checks inline (McCabe 36 before, within the fast scan's bound of 40):
        # split to 19 (the spans tallied in a second pass over a row per light line, the
        # timestamp's fallback and the set-aside lines in functions), the scan took 2.9% more
        # instructions on the fleet (323.5M to 332.9M), 2.6% on ts-offset (356.2M to 365.3M),
        # 2.7% on ts-trimmed and 1.5% on dense-30 (bench/reader_instructions.py fast, callgrind,
        # on the rows' first 10 MB). A span's minutes kept inline (issue 30) made it McCabe 40,
        # the bound, and the scan of a 10 MB fleet 2.2% longer (337.2M to 344.6M).
        widen = form != 0
        # Every timestamp taken in the form, unchecked (checked after, all at once).
        taken = not careful and not size
        times: list[str] = []
        good_minutes = self._good_minutes
        minute = _NO_MINUTE
        seconds_to_z = _SECONDS_TO_Z
        six_utc = _SIX_DIGITS_UTC
        # The previous line's worker and span (none yet: no job id is None).
        last_job: str | None = None
        last_task: str | None = None
        last_vm: str | None = None
        span = SpanTally("", "", 0)
        # The light lines' texts, for the prefilter, and the indexes of the odd lines; the
        # skip reasons of the lines decided in the decoding (in their texts' places: "").
        texts: list[str] = []
        odd: list[int] = []
        skipped = self._skipped
        skipped.clear()
        for entry in entries:
            # The sink's common shape, read by attribute (named after the record's fields, at
            # the first of their paths in the mapping: see blockdecode): a part that is missing
            # (None) raises AttributeError, and the line goes to the plain functions like any
            # unusual one. A Skipped line reads as one without a job.
            try:
                rlabels = entry.resource.labels
                task = rlabels.task
                job = rlabels.job_id
                payload = entry.jsonPayload
                text = payload.text if payload is not None else entry.text_1
                labels = entry.labels
                vm = labels.vm
                trial = labels.trial or labels.trial_1
            except AttributeError:
                odd.append(len(texts) + len(odd))  # this line's index
                continue
            when = entry.time
            # A non-empty string at the first path of a label wins in the mapping
            # (analyzer.ingest.records.entry_fields), so task and job are final; a truthy timestamp
            # hides receiveTimestamp; a string message is the text. The decoder has checked
            # that these labels and the timestamp are strings (or missing), and has left a line
            # of another resource type and an audit entry Skipped.
            if not (
                task
                and job
                and when
                and type(text) is str
                # The canonical form, in two cheap pieces: a minute already proven valid, then
                # the tail. Any other form (and each new minute) is rewritten into it by
                # canonical_time, or is left to the plain functions.
                and (
                    taken
                    or (not careful and len(when) == size)
                    or (
                        # The last proven minute (most lines share their neighbour's) is
                        # checked without slicing; the set of proven ones otherwise.
                        (
                            when.startswith(minute)
                            or (when[:17] in good_minutes and (minute := when[:17]) != "")
                        )
                        and (
                            seconds_to_z(when, 17) is not None
                            # Microseconds at UTC (isoformat(), to_api_repr()): their key
                            # without the full rewriting.
                            or (six_utc(when, 17) is not None and (when := when[:26] + "000Z"))
                        )
                    )
                    or (when := canonical_time(when)) is not None
                )
            ):
                if type(entry) is Skipped:
                    # Decided already (a blank line, another resource's entry): counted with
                    # the block, and a text no one reads keeps the texts in line with the
                    # lines (the prefilter leaves it out but for rules without a literal,
                    # and the candidates are read without it).
                    skipped.append(entry.reason)
                    texts.append("")
                else:
                    odd.append(len(texts) + len(odd))  # this line's index
                continue
            if taken:
                # Widened to the canonical form once per span, after: all of this block's
                # are in one form of one width, and compare as the times do.
                times.append(when)
            elif not careful and len(when) == size:
                times.append(when)
                if widen:
                    when = when[:26] + "000Z"
            if trial:
                job = job_group(job, trial)
            if not vm:
                vm = None
            # Lines of one worker often come together: its span is looked up once a run.
            if job != last_job or task != last_task or vm != last_vm:
                key = (job, task, vm)
                known = spans.get(key)
                if known is None:
                    # Its first line is noted below: no minute is known yet (lo, flo).
                    known = spans[key] = SpanTally(when, when, 0)
                span = known
                last_job, last_task, last_vm = job, task, vm
            span.records += 1
            # A worker's lines mostly come in time order: the later end first. Its minutes
            # are noted only for a line outside the minutes of its first and last (SpanTally).
            if when > span.last:
                span.last = when
                if when >= span.hi:
                    span.note(when)
            elif when < span.first:
                span.first = when
                if when < span.flo:
                    span.note(when)
            elif when < span.lo and not span.flo <= when < span.fhi:
                span.note(when)
            texts.append(text)
        if taken and widen:
            for span in spans.values():  # a block's own spans (see _feed_decoded)
                span.first = span.first[:26] + "000Z"
                span.last = span.last[:26] + "000Z"
        return texts, odd, times

    def _after_lean(
        self, data: bytes, entries: list[Any], first_number: int, texts: list[str], odd: list[int]
    ) -> None:
        """Count a block read by :meth:`_lean`, and hand out its candidates."""
        self._count_block(entries, texts)
        sink = self._sink
        if sink is not None and not odd and self._matches is not None:
            sink.add_all(self._block_events(entries, first_number, texts))
            return
        # The line of each text: all of them in order, but for the odd ones.
        light: Sequence[int] = range(len(entries))
        if odd:
            oddities = set(odd)
            light = [index for index in light if index not in oddities]
        chosen = self._light_candidates(entries, first_number, texts, light)
        if odd:
            chosen += self._odd_candidates(data, len(entries), first_number, odd)
            chosen.sort(key=_line_of)
        self.tally.candidates.extend(chosen)

    def _count_block(self, entries: list[Any], texts: list[str]) -> None:
        """Count a block's lines, its skipped ones by reason and its light records."""
        stats = self.stats
        stats.lines += len(entries)
        skipped = self._skipped
        if skipped:
            for reason, count in Counter(skipped).items():
                stats.skip(reason, count)
        stats.used += len(texts) - len(skipped)
        stats.records += len(texts) - len(skipped)

    def _block_events(self, entries: list[Any], first_number: int, texts: list[str]) -> list[Light]:
        """The events of a block whose every line is light or decided, in line order, for
        the thinner."""
        matches = self._matches
        assert matches is not None
        skipped = self._skipped
        path = self.stats.path
        items: list[Light] = []
        add = items.append
        for index in self._select(texts):
            entry = entries[index]
            if skipped and type(entry) is Skipped:
                continue
            matched = matches(texts[index])
            if matched:
                labels = entry.labels
                rlabels = entry.resource.labels
                insert_id = entry.insert_id
                # What _record and Event.from_record make of it (the same fields).
                when = parse_timestamp(entry.time)
                job, task, text = rlabels.job_id, rlabels.task, texts[index]
                vm = labels.vm or None
                trial = labels.trial or labels.trial_1 or None
                insert = insert_id if type(insert_id) is str else None
                line = first_number + index
                for match in matched:
                    add((when, job, task, match, text, path, line, 0, vm, insert, trial))
        return items

    def _light_candidates(
        self, entries: list[Any], first_number: int, texts: list[str], light: Sequence[int]
    ) -> list[Candidate]:
        """The candidates among a block's light lines (``light``: the line of each text),
        with their matches where the scanner matches."""
        matches = self._matches
        skipped = self._skipped
        path = self.stats.path
        chosen: list[Candidate] = []
        for index in self._select(texts):
            entry = entries[light[index]]
            if skipped and type(entry) is Skipped:
                continue
            found = matches(texts[index]) if matches is not None else None
            if found is None or found:
                origin = Origin(path, first_number + light[index])
                chosen.append((_record(entry, texts[index], origin), found))
        return chosen

    def _odd_candidates(
        self, data: bytes, count: int, first_number: int, odd: list[int]
    ) -> list[Candidate]:
        """The records of a block's odd lines (of its ``count``), read one by one."""
        lines = data.split(b"\n", count)
        pending = _Pending()
        full: list[LogRecord] = []
        for index in odd:
            self._read_line(lines[index], first_number + index, pending, full)
        self._finish(pending, full)
        return [(record, None) for record in full]

    def skip_long_line(self, number: int) -> None:
        """Count line ``number``, longer than any log entry (read past, never held), as
        :func:`~analyzer.ingest.jsonl.read_jsonl` does."""
        self.stats.lines += 1
        skip_long_line(self.stats, number)

    def feed(self, lines: Sequence[bytes], first_number: int, open_end: bool = False) -> None:
        """Scan ``lines`` (without their line endings) one by one; the first is
        ``first_number``; ``open_end``: the last is the input's last and had no line end.
        The path for blocks :func:`decode_block` cannot prove."""
        if self._at_start and lines and first_number == 1 and lines[0].startswith(BOM):
            lines = [lines[0][len(BOM) :], *lines[1:]]
        self.stats.lines += len(lines)
        pending = _Pending()
        full: list[LogRecord] = []
        last = first_number + len(lines) - 1 if open_end else -1
        for number, raw in enumerate(lines, first_number):
            self._read_line(raw, number, pending, full, number == last)
        self._finish(pending, full)
        full.sort(key=_record_line)
        self.tally.candidates.extend((record, None) for record in full)

    def _read_line(
        self, raw: bytes, number: int, pending: _Pending, full: list[LogRecord], last: bool = False
    ) -> None:
        """Read one line as :func:`~analyzer.ingest.jsonl.read_jsonl` does: count it, and
        keep it as a light line (its text waiting for the prefilter) or as a full record.
        ``last``: the input's last line, without its line end."""
        stats = self.stats
        if not raw.strip():  # before the JSON parser, whose refusal costs ~50 times more
            stats.skip(BLANK_LINE)
            return
        try:
            entry, repaired = load_json_repairing(raw)
        except InvalidJson:
            reason = invalid_reason(raw, last)
            stats.skip(reason)
            if reason == CUT_SHORT:
                stats.cut_line = number
            return
        stats.invalid_utf8 += repaired
        if type(entry) is dict:
            fields = entry_fields(entry)
            if isinstance(fields, str):
                stats.skip(fields)
                return
            when = fields.time
            if when is not None and (key := canonical_time(when)):
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
            self.tally.spans[key] = SpanTally.at(when, 1)
        else:
            span.count(when)

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


# The decoder's attributes the scan reads of the fields it reads by every path (blockdecode's
# names for the mapping's paths: "trial" and "trial_1", "vm"): a path added to the table
# must be read here too, or the scan would read a line otherwise than the mapping.
_READ_WHOLE = {"trial": 2, "vm": 1}
if {field: len(LABEL_PATHS[field]) for field in READ_WHOLE} != _READ_WHOLE:
    raise ImportError("the fast scan does not read every path of the LogEntry mapping")


def _record(entry: Any, text: str, origin: Origin) -> LogRecord:
    """The record of a light line's decoded entry, made by the one mapping's
    :func:`~analyzer.ingest.records.record_from_fields`: the decoder's attributes are the record's
    fields at their paths in the mapping (see blockdecode), and for a light line the first
    path of the job and task decides (a non-empty string), as the text does (a string)."""
    labels = entry.labels
    rlabels = entry.resource.labels
    severity = entry.severity
    insert_id = entry.insert_id
    fields = EntryFields(
        job_id=rlabels.job_id,
        task=rlabels.task,
        trial=labels.trial or labels.trial_1 or None,
        vm=labels.vm or None,
        text=text,
        time=entry.time,
        severity=severity if type(severity) is str else "DEFAULT",
        insert_id=insert_id if type(insert_id) is str else None,
    )
    return record_from_fields(fields, origin)


def _line_of(candidate: Candidate) -> int:
    return candidate[0].origin.line


def _record_line(record: LogRecord) -> int:
    return record.origin.line


class Block(NamedTuple):
    """A block of whole lines: the first ``end`` bytes of ``data``; or, ``long_line`` True
    (``data`` empty), one line longer than any log entry, read past
    (:data:`~analyzer.ingest.lines.LONGEST_LINE`), which the scanner counts as skipped.

    ``data`` is what one read returned; it may go on with the start of the next line, which
    the next block reads again. Cutting a read at its last line end without copying it halves
    the cost of reading here (it saves a copy of half a megabyte per block, and the page faults
    of one more large allocation).
    """

    data: bytes
    end: int
    long_line: bool = False


LONG_LINE_BLOCK = Block(b"", 0, True)


def read_blocks(
    stream: BinaryIO, block_bytes: int = BLOCK_BYTES, limit: int = -1, longest: int = LONGEST_LINE
) -> Iterator[Block]:
    """``stream`` in blocks of about ``block_bytes`` that end at line ends (``\\n``), a line
    longer than ``longest`` bytes (without its ``\\n``) given as :data:`LONG_LINE_BLOCK`
    instead, read past without being held.

    Only the input's last line may lack its ``\\n``. With ``limit`` >= 0, reading stops at the
    first line end at or after ``limit`` bytes.
    """
    # No line longer than ``longest`` fits in one read: each is seen being carried over.
    cutter = _BlockCutter(stream, min(block_bytes, longest), limit, longest)
    while cutter.remaining != 0 or cutter.after:
        chunk = cutter.next_chunk()
        if not chunk:
            break
        if cutter.ends_long_line(chunk):
            yield LONG_LINE_BLOCK
            continue
        cut = chunk.rfind(b"\n") + 1
        if cutter.rewind:
            cutter.count(cut or len(chunk))
        if cut == 0:  # no line end: a line longer than a block, or the limit fell in it
            if cutter.carry_unended(chunk):
                yield LONG_LINE_BLOCK
            continue
        yield cutter.block(chunk, cut)
    yield from cutter.last_blocks()


class _BlockCutter:
    """What :func:`read_blocks` keeps from one read to the next: the start of a line a read
    ended inside, and the bytes still to read."""

    def __init__(self, stream: BinaryIO, block_bytes: int, limit: int, longest: int) -> None:
        self.stream = stream
        self.block_bytes = block_bytes
        self.longest = longest
        # A file is read again from the cut; a stream that cannot seek (stdin, gzip) carries
        # the start of the next line over and joins it to the next read.
        self.rewind = (
            isinstance(stream, io.BufferedReader | io.FileIO | io.BytesIO) and stream.seekable()
        )
        self.carried: list[bytes] = []  # the start of the line the last read ended inside
        self.held = 0  # its bytes
        self.remaining = limit
        # Read past a long line's end by a stream that cannot seek back, still to cut.
        self.after = b""

    def next_chunk(self) -> bytes:
        """The next bytes to cut: those left after a long line, else the next read (empty at
        the input's end)."""
        if self.after:
            chunk, self.after = self.after, b""  # counted in ``remaining`` when read
            return chunk
        remaining = self.remaining
        chunk = self.stream.read(
            self.block_bytes if remaining < 0 else min(self.block_bytes, remaining)
        )
        if chunk and remaining > 0 and not self.rewind:  # a stream's bytes count when read
            self.remaining = max(0, remaining - len(chunk))
        return chunk

    def count(self, consumed: int) -> None:
        """Count ``consumed`` bytes against the limit, if there is one."""
        if self.remaining > 0:
            self.remaining = max(0, self.remaining - consumed)

    def ends_long_line(self, chunk: bytes) -> bool:
        """Whether the carried line ends in ``chunk``, longer than a log entry can be: then
        dropped, and the rest of ``chunk`` left to read next."""
        if not self.carried:
            return False
        first = chunk.find(b"\n")
        if first == -1 or self.held + first <= self.longest:
            return False
        self.carried.clear()
        self.held = 0
        self.after = chunk[first + 1 :]
        if self.rewind:  # a file's count to where it is read again from
            self.count(first + 1)
            if self.after:
                self.stream.seek(-len(self.after), io.SEEK_CUR)
                self.after = b""
        return True

    def carry_unended(self, chunk: bytes) -> bool:
        """Carry ``chunk``, which holds no line end, over to the next read; True when the
        line is longer than a log entry can be: then read past without being held."""
        self.carried.append(chunk)
        self.held += len(chunk)
        if self.held <= self.longest:
            return False
        self.count(read_past_line(self.stream))
        self.carried.clear()
        self.held = 0
        return True

    def block(self, chunk: bytes, cut: int) -> Block:
        """The block of the lines ``chunk`` ends (at ``cut``), after those carried; what
        follows the cut read again (a file) or carried over (a stream)."""
        rest = len(chunk) - cut
        if rest and self.rewind:
            self.stream.seek(-rest, io.SEEK_CUR)
        if self.carried:
            self.carried.append(chunk)
            data = b"".join(self.carried)
            self.carried.clear()
        else:
            data = chunk
        self.held = 0
        if rest and not self.rewind:
            self.carried.append(chunk[cut:])
            self.held = rest
        return Block(data, len(data) - rest)

    def last_blocks(self) -> Iterator[Block]:
        """What is carried at the end: the last line, or a long line dropped."""
        carried = self.carried
        if self.remaining == 0 and carried:
            # The limit fell inside this line: finish it, unless it is too long to be an entry.
            end = self.stream.readline(self.longest - self.held + 1)
            carried.append(end)
            self.held += len(end) - end.endswith(b"\n")
            if self.held > self.longest:
                read_past_line(self.stream)
        if carried and self.held > self.longest:
            yield LONG_LINE_BLOCK
        elif carried:
            data = b"".join(carried)
            yield Block(data, len(data))
