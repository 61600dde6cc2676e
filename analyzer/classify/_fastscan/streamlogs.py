"""The fast reader of stream-logs text: full records only for messages a rule may match.

:func:`~analyzer.ingest.stream_logs.read_stream_logs` builds a parsed line, a ``datetime`` and a
:class:`~analyzer.ingest.records.LogRecord` for every line. What the later stages need of the lines
no rule matches is only who wrote them and when (trial, task, the time), which
:class:`StreamLogsScanner` keeps in a :class:`~analyzer.classify._fastscan.jsonl.ScanTally` as the
sink
fast scan does: per key the earliest and latest time as a sink-form string and a count. Texts
go through the rule book's prefilter a block at a time; records are built for its candidates a
rule really matches.

A block is read at once when every line has gcloud's tab-separated shape (one regular
expression over the block, which must find as many lines as the block holds, no ``\\r``, valid
UTF-8); else line by line, each line that does not have that shape read by
:func:`~analyzer.ingest.stream_logs.parse_line` and the plain reader's rules. Multi-line service
messages are joined by the plain reader's own rule
(:func:`~analyzer.ingest.stream_logs.continues_message`). Equality with the plain reader is the
contract (``tests/test_fast_readers.py``).

A file can be cut into byte ranges read apart (:func:`safe_ranges`): a cut is made only before a
line that cannot go on the message before it (a worker's line, or a line whose severity, second,
task or trial differ from the line before it), so each range's records are the plain reader's.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import itertools
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import BinaryIO

from analyzer.classify._fastscan.jsonl import ScanTally, SpanKey, SpanTally, read_blocks, time_key
from analyzer.classify._fastscan.parallel import MAX_RANGE_BYTES
from analyzer.ingest.lines import BOM, read_past_line, skip_long_line
from analyzer.ingest.preamble import is_preamble
from analyzer.ingest.records import SERVICE_TASK, InputStats, LogRecord, Origin, parse_timestamp
from analyzer.ingest.sniff import SEVERITIES
from analyzer.ingest.stream_logs import (
    BLANK_LINE,
    ENDPOINT_BANNER,
    NOT_STREAM_LOGS,
    continues_message,
    parse_line,
    parse_time,
)
from analyzer.rulebook.events import Event, RuleMatch

# Which texts of a block may match a rule: the indexes, in any order.
TextSelector = Callable[[Sequence[str]], Iterable[int]]
Matches = Callable[[str], tuple[RuleMatch, ...]]

# gcloud's own shape: SEVERITY, time, task, an optional (legacy) trial column, the message,
# separated by single tabs. The digits of the time are ASCII (parse_line's accepts other
# digits too: such a line is read by it); the trial column's are parse_line's (\d).
_SHAPE = (
    r"(" + "|".join(sorted(SEVERITIES)) + r")\t"
    r"([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} [+-][0-9]{4})\t"
    r"([^\t\n]*)\t(?:(\d*)\t)?([^\n]*)"
)
_LINES = re.compile("^" + _SHAPE + "$", re.MULTILINE)
_LINE = re.compile(_SHAPE)
# Cloud ML Engine's name for the service's task (stream_logs._LEGACY_SERVICE_TASK).
_LEGACY_SERVICE_TASK = "unknown_task"
# Bounds the memory of the times in another zone already converted (one per distinct second),
# and of the dates known valid.
_MAX_TIMES = 1 << 12
# Where a cut may be looked for past its target before giving it up.
_CUT_SEARCH_BYTES = 1 << 20

Meta = tuple[int, str, str | None, str | None, str | None]  # line, severity, key, task, trial

# The bytes other than the separators of gcloud's columns, and a row's separators.
_NOT_SEPARATORS = bytes(byte for byte in range(256) if byte not in b"\t\n")
_ROW_SEPARATORS = b"\t\t\t\n"
# Distinct times, one a line, each a valid time of day in UTC (the date is checked apart).
_UTC_TIMES = re.compile(
    r"(?:[0-9]{4}-[0-9]{2}-[0-9]{2} (?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9] \+0000(?:\n|\Z))+"
)
_DATE_OF = operator.itemgetter(slice(0, 10))


def _utc_key(when: str) -> str:
    """The sink-form time key of a valid UTC time ``2024-05-08 16:47:59 +0000``."""
    return f"{when[:10]}T{when[11:19]}.000000000Z"


def _note_minutes(
    spans: dict[SpanKey, SpanTally], run: list[str], times: list[str], ordered: bool
) -> None:
    """Note the minutes each task of a block read by columns wrote in (its span's
    MinuteMap): in time order, the tasks of each minute's run of lines, found by bisection
    (a block holds a few minutes); else each distinct (task, time) once."""
    if ordered:
        pairs: set[tuple[str, str]] = set()
        for minute in {when[:16] for when in set(times)}:
            start = bisect.bisect_left(times, minute)
            end = bisect.bisect_left(times, minute + ";", start)
            pairs.update((name, minute) for name in set(run[start:end]))
    else:
        pairs = {(name, when[:16]) for name, when in set(zip(run, times, strict=True))}
    for name, minute in pairs:
        # The key form of the minute ("2024-05-08 16:47" to "2024-05-08T16:47").
        spans[(None, name or None, None)].note(f"{minute[:10]}T{minute[11:16]}")


def _indexes(values: list[str], value: str) -> Iterator[int]:
    """Where ``value`` is in ``values``, in order (a search in C for each)."""
    at = -1
    with contextlib.suppress(ValueError):
        while True:
            at = values.index(value, at + 1)
            yield at


class StreamLogsScanner:
    """Reads blocks of stream-logs text into a :class:`ScanTally` and events, counting every
    line as the plain reader does.

    ``select`` is the rule book's prefilter (it must never leave out a text a rule matches),
    ``matches`` the rule book's match. ``at_start`` is False for a byte range that does not
    begin the input (only the input's first line may carry a byte-order mark).
    """

    def __init__(
        self, stats: InputStats, select: TextSelector, matches: Matches, *, at_start: bool = True
    ) -> None:
        self.stats = stats
        self.tally = ScanTally()
        self.events: list[Event] = []
        self._select = select
        self._matches = matches
        self._at_start = at_start
        self._number = 0  # the last line read
        self._keys: dict[str, str | None] = {}
        self._dates: dict[str, bool] = {}
        # The records made since the prefilter last ran: their texts and what else they need.
        self._texts: list[str] = []
        # A line of the block read by columns is the index of its line there (_columns).
        self._metas: list[Meta | int] = []
        # The block read by columns: its lines' number before it, severities, times, tasks.
        self._columns: tuple[int, list[str], list[str], list[str]] | None = None
        # The service message being read (a service line may be followed by its next lines):
        # its first line's fields, messages, and line count.
        self._head: Meta | None = None
        self._messages: list[str] = []
        # The last span counted, looked up again only when the key changes.
        self._span_key: tuple[str | None, str | None] = (None, "\x00")
        self._span = SpanTally("", "", 0)

    def skip_long_line(self) -> None:
        """Count the next line, longer than any log entry (read past, never held), as the
        plain reader does: skipped, the message being read going on after it."""
        self._number += 1
        self.stats.lines += 1
        skip_long_line(self.stats, self._number)

    def feed_block(self, data: bytes, end: int) -> None:
        """Scan the whole lines of ``data[:end]`` (the last ``\\n`` optional)."""
        if not end:
            return
        view = memoryview(data)[:end]
        if self._at_start and self._number == 0 and data.startswith(BOM):
            self._feed_lines(view)
            return
        text: str | None = None
        if data.find(b"\r", 0, end) == -1:  # (not "in view": a memoryview looks byte by byte)
            with contextlib.suppress(UnicodeDecodeError):
                text = str(view, "utf-8")
        if text is None:
            self._feed_lines(view)
            return
        if not self._feed_columns(text, view):
            found = _LINES.findall(text)
            lines = text.count("\n") + (text[-1] != "\n")
            if len(found) == lines:
                self._feed_found(found)
            else:
                self._feed_mixed(text)
        self._prefilter()
        self._columns = None

    def _feed_columns(self, text: str, view: memoryview) -> bool:
        """Count a block of gcloud's shape without its trial column (every line four fields
        and three tabs, every time a valid one in UTC: gcloud's own output) by columns, a
        pass over the block for each rather than a loop over its lines; False, and nothing
        counted, for a block of another kind."""
        # Three tabs on every line, and no message holding a tab (which would make the columns
        # slide): the separators alone, in order, are "\t\t\t\n" repeated.
        separators = view.tobytes().translate(None, _NOT_SEPARATORS)
        ended = text[-1] == "\n"
        if not ended:  # the last line, without its line end
            separators += b"\n"
        lines = len(separators) // len(_ROW_SEPARATORS)
        if separators != _ROW_SEPARATORS * lines:
            return False
        fields = text.replace("\n", "\t").split("\t")
        severities, whens = fields[0::4], fields[1::4]
        tasks, messages = fields[2::4], fields[3::4]
        if ended:  # the empty field after the last line end
            del severities[-1]
        if not SEVERITIES.issuperset(severities):
            return False
        distinct = set(whens)
        if _UTC_TIMES.fullmatch("\n".join(distinct)) is None or not all(
            map(self._valid_date, set(map(_DATE_OF, distinct)))
        ):
            return False
        self._columns = (self._number, severities, whens, tasks)
        services = sorted(
            itertools.chain.from_iterable(
                _indexes(tasks, name) for name in (SERVICE_TASK, _LEGACY_SERVICE_TASK)
            )
        )
        at = 0
        for service in services:
            if service > at:
                self._feed_workers(at, service, whens, tasks, messages)
            number = self._number + service + 1
            key = _utc_key(whens[service])
            self._service_line(
                number, severities[service], key, SERVICE_TASK, None, messages[service]
            )
            at = service + 1
        if at < lines:
            self._feed_workers(at, lines, whens, tasks, messages)
        self._number += lines
        self.stats.lines += lines
        return True

    def _feed_workers(
        self, start: int, end: int, whens: list[str], tasks: list[str], messages: list[str]
    ) -> None:
        """Count the workers' lines ``start`` to ``end`` of a block read by columns: each is a
        record of its own, counted in the span of its task (no trial column: no trial)."""
        if self._head is not None:
            self._emit()
        run = tasks[start:end]
        times = whens[start:end]
        names = set(run)
        spans = self.tally.spans
        # Times in UTC: the order of the strings is the order of the times. In time order (as
        # gcloud prints them), a task's earliest and latest are at its first and last line.
        ordered = len(names) == 1 or all(map(operator.le, times, itertools.islice(times, 1, None)))
        # In order of first appearance, as line by line.
        backwards = run[::-1] if len(names) > 1 and ordered else run
        # In order of first appearance, as line by line.
        for name in sorted(names, key=run.index) if len(names) > 1 else names:
            if len(names) == 1:
                count, earliest, latest = len(run), min(times), max(times)
            elif ordered:
                count = run.count(name)
                earliest = times[run.index(name)]
                latest = times[len(run) - 1 - backwards.index(name)]
            else:
                mine = list(itertools.compress(times, map(name.__eq__, run)))
                count, earliest, latest = len(mine), min(mine), max(mine)
            first, last = _utc_key(earliest), _utc_key(latest)
            span_key = (None, name or None, None)
            span = spans.get(span_key)
            if span is None:
                span = spans[span_key] = SpanTally.at(first)
            span.count(first)
            span.count(last)
            span.records += count - 2
        _note_minutes(spans, run, times, ordered)
        self._span_key = (None, "\x00")  # looked up again by the next line read one by one
        count = end - start
        self._texts.extend(messages[start:end])
        self._metas.extend(range(start, end))
        self.stats.used += count
        self.stats.records += count

    def _feed_mixed(self, text: str) -> None:
        """Count the lines of a block of which some are not of gcloud's shape (a banner, a
        blank line, a paste's preamble): runs of lines of that shape the lean way, the others
        one by one."""
        at = 0
        run: list[tuple[str, str, str, str, str]] = []
        for shaped in _LINES.finditer(text):
            start = shaped.start()
            if start != at:  # whole lines, each with its "\n", between two shaped ones
                if run:
                    self._feed_found(run)
                    run = []
                self._feed_texts(text[at:start].split("\n")[:-1])
            run.append(shaped.groups(default=""))  # type: ignore[arg-type]
            at = shaped.end() + 1
        if run:
            self._feed_found(run)
        if at < len(text):
            rest = text[at:].split("\n")
            if rest[-1] == "":
                rest.pop()
            self._feed_texts(rest)

    def _feed_texts(self, lines: list[str]) -> None:
        """Count decoded lines (without their line ends) one by one."""
        stats = self.stats
        for text in lines:
            self._number += 1
            stats.lines += 1
            if text.strip():
                self._line(self._number, text)
            else:  # as _line would, without its patterns (a file padded with blank lines)
                stats.skip(BLANK_LINE)

    def _feed_found(self, found: list[tuple[str, str, str, str, str]]) -> None:
        """Count lines all of gcloud's shape (the lean path)."""
        # McCabe 24, within the fast scan's bound of 40: a span's minutes are kept inline
        # (SpanTally.count's checks); through that method the scan of a 1.2 MB stream-logs
        # fleet took 36.7-40.1 ms against 32.7-34.1 ms before the minutes, inline 34.0-34.2
        # (best of 5, three alternating runs).
        stats = self.stats
        keys = self._keys
        texts = self._texts
        metas = self._metas
        number = self._number
        last_time = ""
        key: str | None = None
        # The minute ("2024-05-08 16:47:") of the last UTC time converted, and its key's.
        minute, minute_key = "\x00", ""
        made = 0  # the workers' records
        # The last worker line's task and trial columns as written, and what they make: its
        # task and trial as records hold them, and its span (looked up again when they change
        # or a service line came between: those count spans of their own).
        last_task: str | None = None
        last_trial = ""
        worker: str | None = None
        trial_id: str | None = None
        span = self._span
        for severity, when, task, trial, message in found:
            number += 1
            if when != last_time:
                last_time = when
                if when.startswith(minute) and when[17:19] < "60" and when[19:] == " +0000":
                    # A second of the last minute seen (whose date, hour and minute are
                    # proven valid), in UTC: _key's answer without the call.
                    key = f"{minute_key}{when[17:19]}.000000000Z"
                else:
                    key = keys.get(when, "") or self._key(when)
                    if key is not None and when[19:] == " +0000":
                        minute, minute_key = when[:17], key[:17]
            if key is None:
                stats.skip(NOT_STREAM_LOGS)  # a date or time that is none
                continue
            if task in (SERVICE_TASK, _LEGACY_SERVICE_TASK):
                self._service_line(number, severity, key, SERVICE_TASK, trial or None, message)
                last_task = None
                continue
            if self._head is not None:
                self._emit()
                last_task = None
            # A worker's line is a record of its own: it cannot go on, nor be gone on.
            if task != last_task or trial != last_trial:
                last_task, last_trial = task, trial
                worker, trial_id = task or None, trial or None
                self._find_span(None if not trial else "\x1f" + trial, worker, key)
                span = self._span
            span.records += 1
            if key > span.last:
                span.last = key
                if key >= span.hi:
                    span.note(key)
            elif key < span.first:
                span.first = key
                if key < span.flo:
                    span.note(key)
            elif key < span.lo and not span.flo <= key < span.fhi:
                span.note(key)
            texts.append(message)
            metas.append((number, severity, key, worker, trial_id))
            made += 1
        self._number = number
        stats.lines += len(found)
        stats.used += made
        stats.records += made

    def _find_span(self, group: str | None, task: str | None, key: str) -> None:
        spans = self.tally.spans
        span_key = (group, task, None)
        known = spans.get(span_key)
        if known is None:
            known = spans[span_key] = SpanTally.at(key)
        self._span = known
        self._span_key = (group, task)

    def _key(self, when: str) -> str | None:
        """The sink-form time key of ``when`` (``2024-05-08 16:47:59 +0000``), None when it is
        not a time (parse_line's answer)."""
        if when.endswith(" +0000"):
            # UTC already, the digits ASCII (the shape's): what time_key(parse_time(when))
            # gives, without a datetime; remembering it would cost more than this.
            if (
                when[11:13] < "24"
                and when[14:16] < "60"
                and when[17:19] < "60"
                and self._valid_date(when[:10])
            ):
                return f"{when[:10]}T{when[11:19]}.000000000Z"
            return None
        moment = parse_time(when)
        key = None if moment is None else time_key(moment)
        if len(self._keys) >= _MAX_TIMES:
            self._keys.clear()
        self._keys[when] = key
        return key

    def _valid_date(self, date: str) -> bool:
        known = self._dates.get(date)
        if known is None:
            try:
                datetime.fromisoformat(date)
                known = True
            except ValueError:
                known = False
            if len(self._dates) < _MAX_TIMES:
                self._dates[date] = known
        return known

    def _service_line(
        self,
        number: int,
        severity: str,
        key: str,
        task: str | None,
        trial: str | None,
        message: str,
    ) -> None:
        """A line with a time and a task (``service`` or not) that may continue, or begin, a
        service message."""
        head = self._head
        if head is not None:
            if (
                head[3] == SERVICE_TASK
                and (head[1], head[2], head[3], head[4]) == (severity, key, task, trial)
                and continues_message(self._messages[0], len(self._messages), message)
            ):
                self._messages.append(message)
                return
            self._emit()
        self._head = (number, severity, key, task, trial)
        self._messages = [message]

    def _emit(self) -> None:
        """Count the pending message as a record."""
        head = self._head
        assert head is not None
        messages = self._messages
        stats = self.stats
        stats.used += len(messages) - 1  # the head's own line is counted with the record
        self._count(head, "\n".join(messages).rstrip("\n") if len(messages) > 1 else messages[0])
        self._head = None
        self._messages = []

    def _count(self, meta: Meta, text: str) -> None:
        """Count one timed record of one line (``meta``) or the head of several."""
        _, _, key, task, trial = meta
        assert key is not None
        group = None if not trial else "\x1f" + trial
        if (group, task) != self._span_key:
            self._find_span(group, task, key)
        span = self._span
        span.count(key)
        self.stats.used += 1
        self.stats.records += 1
        self._texts.append(text)
        self._metas.append(meta)

    def _feed_lines(self, view: memoryview) -> None:
        """Count the lines of ``view`` one by one, as the plain reader does."""
        data = bytes(view)
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()
        stats = self.stats
        for raw in lines:
            self._number += 1
            stats.lines += 1
            number = self._number
            if number == 1 and self._at_start and raw.startswith(BOM):
                raw = raw[len(BOM) :]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("utf-8", "replace")
                stats.invalid_utf8 += 1
            self._line(number, text.rstrip("\r\n"))
        self._prefilter()

    def _line(self, number: int, text: str) -> None:
        """One line, as ``read_stream_logs`` reads it."""
        stats = self.stats
        shaped = _LINE.fullmatch(text)
        if shaped is not None:
            severity, when, task, trial, message = shaped.groups(default="")
            key = self._keys.get(when, "") or self._key(when)
            if key is None:
                stats.skip(NOT_STREAM_LOGS)
                return
            if task == _LEGACY_SERVICE_TASK:
                task = SERVICE_TASK
            self._timed(number, severity, key, task or None, trial or None, message)
            return
        line = parse_line(text)
        if line is not None:
            key = time_key(line.timestamp)
            self._timed(number, line.severity, key, line.task, line.trial, line.message)
            return
        if text.startswith("Using endpoint ["):
            stats.skip(ENDPOINT_BANNER)
        elif is_preamble(text):
            if self._head is not None:
                self._emit()
            # gcloud's line: a record without time or task, kept for the rules that read ids.
            stats.used += 1
            stats.records += 1
            self.tally.untimed[None] += 1
            self._texts.append(text.strip())
            self._metas.append((number, "DEFAULT", None, None, None))
        elif not text.strip():
            stats.skip(BLANK_LINE)
        else:
            stats.skip(NOT_STREAM_LOGS)

    def _timed(
        self,
        number: int,
        severity: str,
        key: str,
        task: str | None,
        trial: str | None,
        message: str,
    ) -> None:
        if task == SERVICE_TASK:
            self._service_line(number, severity, key, task, trial, message)
            return
        if self._head is not None:
            self._emit()
        self._count((number, severity, key, task, trial), message)

    def _prefilter(self) -> None:
        """Match the candidates among the records counted since the last call."""
        texts = self._texts
        if not texts:
            return
        metas = self._metas
        path = self.stats.path
        matches = self._matches
        events = self.events
        times: dict[str, datetime] = {}
        for index in sorted(self._select(texts)):
            text = texts[index]
            found = matches(text)
            if not found:
                continue
            meta = metas[index]
            if isinstance(meta, int):
                assert self._columns is not None
                before, severities, whens, tasks = self._columns
                meta = (
                    before + meta + 1,
                    severities[meta],
                    _utc_key(whens[meta]),
                    tasks[meta] or None,
                    None,
                )
            number, severity, key, task, trial = meta
            when = None
            if key is not None:
                when = times.get(key)
                if when is None:
                    when = times[key] = parse_timestamp(key)
            record = LogRecord(
                timestamp=when,
                job_id=None,
                task=task,
                severity=severity,
                text=text,
                origin=Origin(path, number),
                trial=trial,
            )
            events.extend(Event.from_record(record, match) for match in found)
        self._texts = []
        self._metas = []

    def finish(self) -> None:
        """The end of the input (or range): count the pending message, match what is left."""
        if self._head is not None:
            self._emit()
        self._prefilter()


def scan_stream_logs(
    stream: BinaryIO,
    stats: InputStats,
    select: TextSelector,
    matches: Matches,
    *,
    at_start: bool = True,
    limit: int = -1,
    on_bytes: Callable[[int], None] | None = None,
) -> tuple[ScanTally, list[Event]]:
    """Scan ``stream`` (up to the first line end at or after ``limit`` bytes) into ``stats``:
    the tally and the events, lines numbered from 1."""
    scanner = StreamLogsScanner(stats, select, matches, at_start=at_start)
    # Scanning makes no reference cycles (see analyzer.classify._fastscan.parallel.scan_stream).
    collecting = gc.isenabled()
    gc.disable()
    try:
        for data, end, long_line in read_blocks(stream, limit=limit):
            if long_line:
                scanner.skip_long_line()
                continue
            scanner.feed_block(data, end)
            if on_bytes is not None:
                on_bytes(end)
        scanner.finish()
    finally:
        if collecting:
            gc.enable()
    return scanner.tally, scanner.events


def _prefix(line: bytes) -> tuple[str, str, str | None, str | None] | None:
    """The severity, time (UTC), task and trial of a line of gcloud's shape as the plain
    reader compares them (``same_entry_prefix``: times as instants, ``unknown_task`` as
    ``service``); None for a line of another shape."""
    try:
        text = line.rstrip(b"\n").decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\r" in text:
        return None
    shaped = _LINE.fullmatch(text)
    if shaped is None:
        return None
    severity, when, task, trial, _ = shaped.groups(default="")
    moment = parse_time(when)
    if moment is None:
        return None  # not a line the plain reader parses: a message may go on past it
    if task == _LEGACY_SERVICE_TASK:
        task = SERVICE_TASK
    return severity, time_key(moment), task or None, trial or None


def starts_record(previous: bytes, line: bytes) -> bool:
    """Whether ``line``, after ``previous``, begins a record whatever came before: it is of
    gcloud's shape with a task other than the service's (a worker's line is never joined to
    the one before it), or with a severity, time, task or trial other than ``previous``'s
    (a line joins only a message with its own prefix, begun on a line with that prefix)."""
    mine = _prefix(line)
    if mine is None:
        return False
    if mine[2] != SERVICE_TASK:
        return True
    theirs = _prefix(previous)
    return theirs is not None and theirs != mine


def safe_ranges(path: str, size: int, smallest: int, processes: int) -> list[tuple[int, int]]:
    """``[start, end)`` byte ranges covering the file at ``path``, each after the first
    starting at a line that :func:`starts_record` (so that the records of the ranges read
    apart are those of the whole), sized as
    :func:`~analyzer.classify._fastscan.parallel.line_ranges`
    sizes them."""
    cuts = [0]
    with open(path, "rb") as stream:
        while True:
            share = min(MAX_RANGE_BYTES, (size - cuts[-1]) // (2 * processes))
            target = cuts[-1] + max(smallest, share)
            if target >= size:
                break
            stream.seek(target - 1)
            read_past_line(stream)  # to the end of the line holding byte target - 1
            at = stream.tell()
            previous = b""
            if at < size:
                # The line before the candidate cut, to compare prefixes with.
                reach = max(0, at - (64 << 10))
                stream.seek(reach)
                before = stream.read(at - reach)
                start = before.rfind(b"\n", 0, len(before) - 1) + 1
                # (Longer than that: only its end is here, which is compared with nothing.)
                previous = before[start:] if start or not reach else b""
            cut = None
            while at < size and at - target < _CUT_SEARCH_BYTES:
                # (A line longer than the search ends it: no more of it is read.)
                line = stream.readline(_CUT_SEARCH_BYTES + 1)
                if starts_record(previous, line):
                    cut = at
                    break
                previous = line
                at += len(line)
            if cut is None:
                break  # no cut within reach: the rest is one range
            cuts.append(cut)
    cuts.append(size)
    return list(itertools.pairwise(cuts))
