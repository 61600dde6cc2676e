"""The fast reader of ``gcloud logging read --format=json``: the sink scan, on gcloud's array.

gcloud prints the array as Python's ``json.dumps(entries, indent=2)`` does: ``[``, then each
LogEntry with its ``{`` and ``}`` on lines of their own, indented by two spaces, separated by
``,``, then ``]``. Nothing inside an entry is indented that little, so ``\n  },\n  {`` is only
ever found between two entries. Rewritten with that separator as a line end and every other
line end as a tab, a run of entries is sink JSONL, one entry
per line, which :class:`~analyzer.classify._fastscan.jsonl.JsonlScanner` reads: the entries decoded
lightly at once, records only for the candidates of the rule book's prefilter.

Every step is checked, and where an input is not so the plain reader reads it (in a range,
:class:`Unusual`: the caller reads the whole file again; a whole input, from the run where
the light scanner stopped: a run is kept only once all of it is read). The scanner must find
one entry per rewritten line (its block decoder proves it, or each line is read alone) and
skip none of them (a skipped entry's lines would count once here, each of its lines there). A
cut between two objects inside an entry leaves a line that is no object; a raw line end inside
a string, now a tab, leaves one that is no JSON. The array must open and close as gcloud
writes it. The plain reader accounts every line of such an input as used, and numbers an entry
by the line its ``{`` is on: so does this one.

A file can be cut into byte ranges read apart (:func:`entry_ranges`): at the start of a line
holding an entry's ``{``, after a line holding the previous entry's ``},``.

The Logging API's own answer (``entries:list``'s response bodies, :func:`scan_api_response`) is
read the same way. The API pretty-prints a response with an indent of 2: ``{``, ``"entries": [``,
each entry with its ``{`` and ``}`` on lines of their own indented by 4, ``],``, the
``"nextPageToken"`` line, ``}``. Several responses are one after another (a script's loop
appending each body) or, indented once more, a JSON array of them (``json.dump(pages,
indent=2)``). Between two responses' entries stand only their syntax lines, which the plain
reader counts as used: that page break, checked whole, is one more separator of a run.
Any other layout is the plain reader's, as above.
"""

from __future__ import annotations

import bisect
import dataclasses
import gc
import io
import itertools
import re
from collections.abc import Callable
from typing import Any, BinaryIO

from analyzer.classify._fastscan.jsonl import (
    Candidate,
    JsonlScanner,
    ScanTally,
    SpanTally,
    TextSelector,
    time_key,
)
from analyzer.classify._fastscan.parallel import MAX_RANGE_BYTES
from analyzer.ingest.lines import BOM, LONGEST_LINE
from analyzer.ingest.records import InputStats, LogRecord, Origin, job_group
from analyzer.rulebook.events import Event, RuleMatch

Matches = Callable[[str], tuple[RuleMatch, ...]]

# Read at once: a few hundred entries (as much as a sink block: the copies a run is rewritten
# through stay small).
CHUNK_BYTES = 1 << 19
# Where a cut may be looked for past its target before giving it up.
_CUT_SEARCH_BYTES = 4 << 20
# Records the plain reader made whose texts go through the prefilter at once (as classify's).
_MATCH_BATCH = 1024
# A response's nextPageToken: an opaque URL-safe string (the plain reader reads any other).
_TOKEN_CHARS = rb'([A-Za-z0-9_\-=+/.]*)"'


class _Layout:
    """Where the entries of one layout are: their indent, what stands between two of them, and
    for the API's responses what stands between two responses' entries and at the end.

    gcloud's array (``api`` False) indents its entries by 2; the API's responses by 4, or by 6
    in a JSON array of them (``outer``)."""

    def __init__(self, indent: int, *, api: bool = False, outer: bool = False) -> None:
        pad, key, page = (b" " * count for count in (indent, indent - 2, indent - 4))
        self.indent = indent
        self.api = api
        # Between two entries; and that separator without the next entry's line end.
        self.between = b"\n" + pad + b"},\n" + pad + b"{\n"
        self.separator = self.between[:-1]
        # The separator rewritten to the same length, once every line end is a tab: the
        # previous entry's "}" ends its line, the next one's "{" starts one. A tab, not a
        # space: between two tokens it is whitespace as the line end was, and inside a string
        # it is refused as the line end was (a string holds no raw control character), so the
        # rewritten line is JSON exactly when the entry was.
        self.as_line_end = b" " * (len(self.separator) - 3) + b"}\n"
        # A range's end when it is not the input's: the line of an entry's "}," (the
        # separator's first half); and a range's start, the line of an entry's "{".
        self.range_end = b"\n" + pad + b"},\n"
        self.range_start = pad + b"{\n"
        # The last entry's "}" and the array's "]": a line indented less than an entry is
        # found only where a response's entries end.
        last = b"\n" + pad + b"}\n" + (key + b"]" if api else b"]")
        self.array_end = b"\n" + (key + b"]" if api else b"]")
        token = (
            b"(?:" + re.escape(b",\n" + key + b'"nextPageToken": "') + _TOKEN_CHARS + b")?"
            if api
            else b""
        )
        # The response's end, and the next one's start up to its first entry's "{".
        after = b"\n" + page + b"}" + (b",\n" + page + b"{" if outer else b"\n{")
        after += b"\n" + key + b'"entries": [\n' + pad + b"{"
        self.page_break = re.compile(re.escape(last) + token + re.escape(after) + b"\n")
        ending = b"\n" + page + b"}" + (b"\n]" if outer else b"") if api else b""
        self.closing = re.compile(re.escape(last) + token + re.escape(ending) + rb"\n?\Z")
        # The plain reader's first line when it takes over inside the entries (standing for
        # the lines before): the array, or a response's opening, the array of them too.
        self.resume = (b"[{" if outer else b"{") + b'"entries": [\n' if api else b"[\n"
        self._finder: _Finder | None = None

    def find(self, run: bytes) -> tuple[list[int], list[int]]:
        """The offsets of the separators in ``run``, and of its responses' array ends (the
        API's layouts only), each in order: in one pass over it."""
        if self._finder is None:
            patterns = [self.separator, self.array_end] if self.api else [self.separator]
            self._finder = _Finder(patterns)
        found = self._finder(run)
        return found[0], found[1] if self.api else []


GCLOUD = _Layout(2)
# The API's layouts, by the opening of the input: its first entry's "{" ends it.
_API_OPENINGS = (
    (b'{\n  "entries": [\n    {\n', _Layout(4, api=True)),
    (b'[\n  {\n    "entries": [\n      {\n', _Layout(6, api=True, outer=True)),
)
# The array's first entry as gcloud writes it.
_OPENING = b"[\n  {\n"


class _Finder:
    """Where the separators of a run are (and, in the API's layouts, where a response's
    entries end): Hyperscan finds them five times faster than ``bytes.replace`` looks for
    them (whose search this long a pattern starting with a line end does not suit), all in
    one pass; the ``re`` module where Hyperscan is missing."""

    def __init__(self, patterns: list[bytes]) -> None:
        self._database: Any = None
        self._sizes = [len(pattern) for pattern in patterns]
        self._patterns = [re.compile(re.escape(pattern)) for pattern in patterns]
        try:
            import hyperscan
        except ImportError:
            return
        self._database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._database.compile(
            expressions=[re.escape(pattern) for pattern in patterns],
            ids=list(range(len(patterns))),
            flags=[0] * len(patterns),
        )

    def __call__(self, run: bytes) -> list[list[int]]:
        """The offsets of each pattern's matches in ``run``, in order."""
        if self._database is None:
            return [[found.start() for found in p.finditer(run)] for p in self._patterns]
        offsets: list[list[int]] = [[] for _ in self._sizes]
        sizes = self._sizes

        def note(pattern: int, _start: int, end: int, _flags: int, _context: object) -> None:
            offsets[pattern].append(end - sizes[pattern])

        self._database.scan(run, match_event_handler=note)
        return offsets


def bounded_reads(stream: BinaryIO, limit: int, size: int) -> Callable[[], bytes]:
    """A function giving the next ``size`` bytes of ``stream`` each call, ``limit`` bytes in
    all (a range's end), or to its end when ``limit`` is -1; empty when there are no more."""
    left = limit

    def read() -> bytes:
        nonlocal left
        if left < 0:
            return stream.read(size)
        chunk = stream.read(min(size, left))
        left -= len(chunk)
        return chunk

    return read


class Unusual(Exception):
    """The input is not in gcloud's layout (or holds an entry the plain reader skips): it is
    read by the plain reader instead."""


class GcloudJsonScanner:
    """Reads a gcloud JSON array (or a byte range of one, :func:`entry_ranges`) into a
    :class:`~analyzer.classify._fastscan.jsonl.ScanTally` and events; ``api``: the Logging API's
    responses instead (:func:`scan_api_response`).

    Where only the plain reader gives the right answer it raises :class:`Unusual` in a range;
    a whole input is read on from there by the plain reader (``resume``): a run of entries is
    kept only once all of it is read, so the plain reader takes it up from the line where the
    run begins, as it would have found it (between two entries of the array).
    """

    def __init__(
        self,
        stats: InputStats,
        select: TextSelector,
        matches: Matches,
        *,
        at_start: bool = True,
        resume: bool = False,
        api: bool = False,
    ) -> None:
        self.stats = stats
        self.tally = ScanTally()
        self._select = select
        self._matches = matches
        self._at_start = at_start
        self._resume = resume
        self._api = api
        self._layout = GCLOUD  # the API's: found by the opening (or a range's first line)
        self.events: list[Event] = []
        self._line = 1  # the line the next run of entries starts on
        self._entry = 1  # the number of its first entry
        self.resumed_at: int | None = None
        """The line from which the plain reader read the input, if it did."""

    def scan(self, stream: BinaryIO, limit: int = -1) -> None:
        """Scan ``stream``, up to ``limit`` bytes when not -1 (a range's end)."""
        read = bounded_reads(stream, limit, CHUNK_BYTES)
        first = read()
        try:
            data = self._opening(first)
        except Unusual:
            if not self._resume:
                raise
            self._read_plainly(first, stream, after=None)
            return
        layout = self._layout
        while True:
            cut = self._last_cut(data)
            more = read()
            try:
                if cut is None:
                    if not more:
                        # A range ends at an entry's "}," only where the file goes on: the
                        # last range ending there is an array cut short (the plain reader's).
                        self._closing(data, limit >= 0 and bool(stream.read(1)))
                        return
                    if len(data) > LONGEST_LINE + CHUNK_BYTES:
                        # No cut this far: an entry longer than any log entry (or no entry
                        # at all), the plain reader's to skip without holding it.
                        raise Unusual("no entry's end within the longest an entry can be")
                    data += more
                    continue
                # The entries up to the last cut's "}"; the rest begins with an entry's "{".
                close, opening = cut
                self._run(data[:close])
            except Unusual:
                if not self._resume:
                    raise
                # From the line of the run's first "{" (the plain reader's line 2, after the
                # line that stands for those before).
                head = layout.resume + b" " * layout.indent + data + more
                self._read_plainly(head, stream, after=self._line - 1)
                return
            self._between(data.count(b"\n", close, opening))
            data = data[opening:] + more

    def _last_cut(self, data: bytes) -> tuple[int, int] | None:
        """Where the last run of whole entries in ``data`` ends (after its last ``}``) and the
        next entry begins (its ``{``): at the last separator, or at a page break after it."""
        layout = self._layout
        found = data.rfind(layout.between)
        cut = None if found == -1 else (found + 2 + layout.indent, found + len(layout.between) - 2)
        if layout.api:
            # Only a page break after the last separator matters (those before are the run's).
            at = data.rfind(layout.array_end, max(found, 0))
            page = layout.page_break.match(data, at - layout.indent - 2) if at > found else None
            if page is not None:
                cut = (page.start() + 2 + layout.indent, page.end() - 2)
        return cut

    def _between(self, newlines: int) -> None:
        """From the line of a run's last ``}`` to that of the next entry's ``{``: ``newlines``
        line ends, the lines between them a response's syntax (none between two entries)."""
        self.stats.lines += newlines - 1
        self.stats.used += newlines - 1
        self._line += newlines

    def _read_plainly(self, head: bytes, rest: BinaryIO, after: int | None) -> None:
        """Read ``head`` then ``rest`` with the plain reader into the tally: the whole input
        (``after`` None), or what follows its line ``after``, ``head`` then beginning with a
        line of its own that stands for the lines before (the array's "[", a response's
        opening)."""
        from analyzer.ingest.gcloud_json import read_api_response, read_gcloud_json

        plain = read_api_response if self._api else read_gcloud_json
        shift = 0 if after is None else after - 1
        self.resumed_at = 1 if after is None else after + 1
        path = self.stats.path
        read = InputStats(path=path)
        batch: list[LogRecord] = []
        chained = io.BufferedReader(_Chained(head, rest), CHUNK_BYTES)
        for record in plain(chained, read):
            if shift:
                where = record.origin
                record = dataclasses.replace(
                    record, origin=Origin(path, where.line + shift, where.entry)
                )
            self._count(record)
            batch.append(record)
            if len(batch) == _MATCH_BATCH:
                self._match(batch)
                batch = []
        self._match(batch)
        if after is not None:
            read.lines -= 1  # the line read first, not the input's
            read.used -= 1
        if read.cut_line is not None:
            read.cut_line += shift
        self.stats.add(read)

    def _count(self, record: LogRecord) -> None:
        """Count a record the plain reader made, as the sink scan counts its full records."""
        group = job_group(record.job_id, record.trial)
        if record.timestamp is None:
            self.tally.untimed[group] += 1
            return
        key = (group, record.task, record.vm)
        when = time_key(record.timestamp)
        span = self.tally.spans.get(key)
        if span is None:
            self.tally.spans[key] = SpanTally.at(when, 1)
        else:
            span.count(when)

    def _match(self, records: list[LogRecord]) -> None:
        """The events of the records among ``records`` the prefilter lets through."""
        for index in sorted(self._select([record.text for record in records])):
            record = records[index]
            self.events.extend(Event.from_record(record, m) for m in self._matches(record.text))

    def _opening(self, data: bytes) -> bytes:
        """``data`` from its first entry's ``{``, once the array's (or the responses') opening
        is checked; a range's layout is told by its first line's indent."""
        if not self._at_start:
            indent = len(data) - len(data.lstrip(b" "))
            layouts = [layout for _, layout in _API_OPENINGS] if self._api else [GCLOUD]
            for layout in layouts:
                if layout.indent == indent and data.startswith(layout.range_start):
                    self._layout = layout
                    return data[indent:]
            raise Unusual("a range starts with an entry")
        if data.startswith(BOM):
            data = data[len(BOM) :]
        openings = _API_OPENINGS if self._api else ((_OPENING, GCLOUD),)
        for opening, layout in openings:
            if data.startswith(opening):
                self._layout = layout
                # The lines before the first entry's "{": syntax, used.
                before = opening.count(b"\n") - 1
                self._line = before + 1
                self.stats.used += before
                self.stats.lines += before
                return data[len(opening) - 2 :]
        raise Unusual("not the opening of gcloud's array or of the API's responses")

    def _closing(self, data: bytes, in_range: bool) -> None:
        """The last run of entries, and what ends it: the array's end (the last response's),
        or a range's."""
        layout = self._layout
        if in_range and data.endswith(layout.range_end):
            self._run(data[:-2])
            return
        at = data.rfind(layout.array_end) - layout.indent - 2
        ending = layout.closing.match(data, at) if at >= 0 else None
        if ending is None:
            raise Unusual("not the closing of gcloud's array or of the API's responses")
        close = at + 2 + layout.indent
        self._run(data[:close])
        if layout.api and ending.group(1):
            self.stats.more_pages = True  # the last response's nextPageToken
        # The lines after the last "}": the array's "]" (and a response's end), syntax.
        tail = len(data) - close
        after = data.count(b"\n", close) - (data.endswith(b"\n") and tail > 0)
        self.stats.lines += after
        self.stats.used += after

    def _run(self, run: bytes) -> None:
        """A run of whole entries, from the first one's ``{`` to the last one's ``}`` (page
        breaks between responses among them): kept once all of it is read (:class:`Unusual`
        leaves nothing of it)."""
        if not run.startswith(b"{"):
            raise Unusual("not a run of entries")
        layout = self._layout
        separators, ends = layout.find(run)
        # A response's entries: where they start and end in the run, and the line ends after
        # them (to the next response's first entry).
        pieces: list[tuple[int, int, int]] = []
        start = 0
        for at in ends:
            page = layout.page_break.match(run, at - layout.indent - 2)
            if page is None:
                raise Unusual("not a page break between two responses")
            close, start_next = page.start() + 2 + layout.indent, page.end() - 2
            pieces.append((start, close, run.count(b"\n", close, start_next)))
            start = start_next
        pieces.append((start, len(run), 0))
        read: list[tuple[bytes, JsonlScanner, InputStats, list[int], int]] = []
        entry = self._entry
        for begin, close, _ in pieces:
            low = bisect.bisect_left(separators, begin)
            high = bisect.bisect_left(separators, close)
            between = [at - begin for at in separators[low:high]]
            piece = run if close - begin == len(run) else run[begin:close]
            read.append((piece, *self._entries(piece, entry, between)))
            entry += read[-1][4]
        for (_, _, newlines), (piece, scanner, entries, between, count) in zip(
            pieces, read, strict=True
        ):
            self._keep(piece, scanner, entries, between, count)
            if newlines:
                self._between(newlines)

    def _entries(
        self, run: bytes, entry: int, between: list[int]
    ) -> tuple[JsonlScanner, InputStats, list[int], int]:
        """The entries of a run within one response (numbered from ``entry``; ``between``:
        where its separators are), read as sink lines: the scanner, their counts, the
        separators and how many entries there are."""
        layout = self._layout
        if len(run) > LONGEST_LINE:
            # An entry longer than any log entry is the plain reader's to skip (from its "{"
            # to its "}", as it measures them).
            starts = [0, *(at + len(layout.separator) - 1 for at in between)]
            ends = [*(at + layout.indent + 2 for at in between), len(run)]
            if any(end - start > LONGEST_LINE for start, end in zip(starts, ends, strict=True)):
                raise Unusual("an entry longer than any log entry")
        rewritten = bytearray(run.replace(b"\n", b"\t"))
        for at in between:
            rewritten[at : at + len(layout.as_line_end)] = layout.as_line_end
        # The entries, one per rewritten line, counted apart (lines are entries there).
        entries = InputStats(path=self.stats.path)
        scanner = JsonlScanner(entries, self._select, matches=self._matches, at_start=False)
        count = scanner.feed_block(bytes(rewritten), entry)
        if entries.lines != count or entries.skipped:
            # An entry the plain reader skips (its lines would count once here, each of them
            # there), or a line that is not one entry (a separator inside an entry, a raw
            # line end inside a string, now a tab: JSON refuses both).
            raise Unusual("an entry the plain reader skips, or a line that is no entry")
        return scanner, entries, between, count

    def _keep(
        self,
        run: bytes,
        scanner: JsonlScanner,
        entries: InputStats,
        between: list[int],
        count: int,
    ) -> None:
        """Count a run's entries (:meth:`_entries`) and match its candidates."""
        # Every line of the run is an entry's: used, as the plain reader counts them.
        physical = run.count(b"\n") + 1
        stats = self.stats
        stats.lines += physical
        stats.used += physical
        stats.records += entries.records
        stats.invalid_utf8 += entries.invalid_utf8
        self._place(run, between, scanner.tally.candidates)
        self.tally.merge(scanner.tally)
        self._line += physical - 1
        self._entry += count

    def _place(self, run: bytes, between: list[int], candidates: list[Candidate]) -> None:
        """Match the run's candidates, numbered by the line their entry starts on (its
        ``{``: after the separator before it, if any)."""
        if not candidates:
            return
        candidates.sort(key=_entry_number)
        path = self.stats.path
        line, counted = self._line, 0
        size = len(self._layout.separator)
        for record, found in candidates:
            index = record.origin.line - self._entry
            offset = between[index - 1] + size - 1 if index else 0
            line += run.count(b"\n", counted, offset)
            counted = offset
            placed = dataclasses.replace(record, origin=Origin(path, line))
            matches = self._matches(placed.text) if found is None else found
            self.events.extend(Event.from_record(placed, match) for match in matches)
        candidates.clear()


class _Chained(io.RawIOBase):
    """``head``, then what is left of ``rest``: the plain reader's input when it takes over."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self._head:
            size = min(len(buffer), len(self._head))
            buffer[:size] = self._head[:size]
            self._head = self._head[size:]
            return size
        data = self._rest.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _entry_number(candidate: Candidate) -> int:
    return candidate[0].origin.line


def scan_gcloud_json(
    stream: BinaryIO,
    stats: InputStats,
    select: TextSelector,
    matches: Matches,
    *,
    at_start: bool = True,
    limit: int = -1,
) -> tuple[ScanTally, list[Event]]:
    """Scan ``stream`` (``limit`` bytes of it, when not -1) into ``stats``: the tally and the
    events, lines numbered from 1. A whole input (``limit`` -1) is read on by the plain reader
    where the light scanner cannot read it; a range raises :class:`Unusual` (``stats`` is
    then partly filled: the caller reads the whole input again into fresh ones)."""
    scanner = GcloudJsonScanner(stats, select, matches, at_start=at_start, resume=limit < 0)
    return _scanned(scanner, stream, limit)


def scan_api_response(
    stream: BinaryIO,
    stats: InputStats,
    select: TextSelector,
    matches: Matches,
    *,
    at_start: bool = True,
    limit: int = -1,
) -> tuple[ScanTally, list[Event]]:
    """:func:`scan_gcloud_json` of the Logging API's entries:list responses (the plain reader:
    ``analyzer.ingest.gcloud_json.read_api_response``)."""
    scanner = GcloudJsonScanner(
        stats, select, matches, at_start=at_start, resume=limit < 0, api=True
    )
    return _scanned(scanner, stream, limit)


def _scanned(
    scanner: GcloudJsonScanner, stream: BinaryIO, limit: int
) -> tuple[ScanTally, list[Event]]:
    collecting = gc.isenabled()
    gc.disable()  # no reference cycles are made (see _fastscan.parallel.scan_stream)
    try:
        scanner.scan(stream, limit)
    finally:
        if collecting:
            gc.enable()
    return scanner.tally, scanner.events


def entry_ranges(path: str, size: int, smallest: int, processes: int) -> list[tuple[int, int]]:
    """``[start, end)`` byte ranges covering the file at ``path``, each after the first starting
    at the line of an entry's ``{`` that follows the line of the previous entry's ``},``, sized
    as :func:`~analyzer.classify._fastscan.parallel.line_ranges` sizes them. A range that does not
    begin
    with such a line (the file is not in gcloud's layout) makes its scan raise
    :class:`Unusual`."""
    return _cuts(path, size, smallest, processes, GCLOUD)


def response_ranges(path: str, size: int, smallest: int, processes: int) -> list[tuple[int, int]]:
    """:func:`entry_ranges` of a file of the Logging API's responses, cut between two entries
    of a response in the layout its opening shows; one range when it shows none."""
    with open(path, "rb") as stream:
        head = stream.read(64)
    if head.startswith(BOM):
        head = head[len(BOM) :]
    for opening, layout in _API_OPENINGS:
        if head.startswith(opening):
            return _cuts(path, size, smallest, processes, layout)
    return [(0, size)]


def _cuts(
    path: str, size: int, smallest: int, processes: int, layout: _Layout
) -> list[tuple[int, int]]:
    cuts = [0]
    with open(path, "rb") as stream:
        while True:
            share = min(MAX_RANGE_BYTES, (size - cuts[-1]) // (2 * processes))
            target = cuts[-1] + max(smallest, share)
            if target >= size:
                break
            stream.seek(target)
            ahead = stream.read(_CUT_SEARCH_BYTES)
            found = ahead.find(layout.between)
            if found == -1:
                break
            cut = target + found + len(layout.range_end)
            if cut >= size:
                break
            cuts.append(cut)
    cuts.append(size)
    return list(itertools.pairwise(cuts))
