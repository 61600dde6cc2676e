"""``gcloud logging read --format=json``: one JSON array of LogEntry, newest first.

The array is scanned incrementally in chunks: a small state machine finds where
each top-level object starts and ends, and only that object's bytes are parsed,
so memory stays bounded by the largest entry. Every physical line is accounted
for: an entry's lines (from the line its ``{`` is on to the line its ``}`` is
on) are used if it gave a record, else skipped with the reason; lines holding
only array syntax (``[``, ``]``, commas) are used; other text between entries is
skipped; an unfinished entry at the end of the input is skipped as "truncated
JSON array".

The same state machine reads the Logging API's own answer (``entries:list``'s response body,
:func:`read_api_response`): ``{"entries": [LogEntry, ...], "nextPageToken": "..."}``, one such
response, several one after another (a line each, or pretty-printed), or a JSON array of them.
It steps into each response's ``entries`` array, whose elements are read as an array's are; the
response's own syntax (``{``, ``"entries": [``, ``],``, ``"nextPageToken": "..."``, ``}``) is
used; another field of a response is skipped, with its reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice
from typing import Any, BinaryIO

import orjson

from analyzer.ingest.entries import (
    INVALID_JSON,
    NOT_AN_ENTRY,
    InvalidJson,
    load_json_repairing,
    record_or_reason,
)
from analyzer.ingest.lines import BOM, LONGEST_LINE
from analyzer.ingest.loose import loose_object
from analyzer.ingest.records import TEXT_KEYS, TEXT_PATHS, InputStats, LogRecord, Origin

TRUNCATED = "truncated JSON array"
OUTSIDE = "text outside the JSON array"
# A response's field other than its entries and its nextPageToken: no part of entries:list's
# answer (ListLogEntriesResponse has those two), so what it holds is not known to be entries.
OTHER_FIELD = "not an entries:list response field"
# An ``error`` object where a response's fields are: the API refused the request (a page of
# a script's loop that failed, saved with the others).
API_ERROR = "Logging API error response"
_ENTRIES_KEY = b"entries"
_TOKEN_KEY = b"nextPageToken"
# A response level's string is kept only as long as a key of interest can be.
_KEY_LIMIT = 32
# An element longer than any log entry (ingest.lines.LONGEST_LINE): skipped, never held whole.
LONG_ENTRY = "entry longer than any log entry"

CHUNK_SIZE = 1 << 20

_STRUCTURE = re.compile(rb'[{}\[\]"]')
_STRING_STOP = re.compile(rb'["\\]')
_ARRAY_SYNTAX = b" \t\r\n,"
_BLANK = b" \t\r\n"
# Array syntax up to an element's "{" alone on its line, after its indentation.
_ELEMENT_START = re.compile(rb"[ \t\r\n,]*\n([ \t]*)\{(?=\r?\n)")
# Any other layout: array syntax, then an element's "{"; and where an element may end.
_ELEMENT_AT = re.compile(rb"[ \t\r\n,]*\{")
_ELEMENT_END = re.compile(rb"\}(?=[ \t\r\n]*(?:,[ \t\r\n]*\{|\]))")
_ELEMENT_TRIES = 8


class _Ledger:
    """Assigns each physical line once: to an entry's outcome, or to array syntax."""

    def __init__(self, stats: InputStats) -> None:
        self.stats = stats
        self.accounted = 0  # lines 1..accounted are counted in used or skipped
        self.stray: dict[int, str] = {}  # lines holding text that is not array syntax

    def syntax_until(self, line: int) -> None:
        """Lines up to ``line`` not yet accounted hold array syntax (used) or stray text."""
        if not self.stray:
            self.stats.used += max(0, line - self.accounted)
            self.accounted = max(self.accounted, line)
            return
        for number in range(self.accounted + 1, line + 1):
            reason = self.stray.pop(number, None)
            if reason is None:
                self.stats.used += 1
            else:
                self.stats.skip(reason)
        self.accounted = max(self.accounted, line)

    def entry(self, first: int, last: int, reason: str | None) -> None:
        """An element on lines ``first``..``last``: used when ``reason`` is None, else skipped.

        A line shared with the previous element (compact JSON) stays with it.
        """
        self.syntax_until(first - 1)
        start = max(first, self.accounted + 1)
        if last < start:
            return
        count = last - start + 1
        if reason is None:
            self.stats.used += count
        else:
            self.stats.skip(reason, count)
        if self.stray:
            for number in range(start, last + 1):
                self.stray.pop(number, None)
        self.accounted = last


class _Scanner:
    """The array's structure so far: nesting depth, string state, the element being read.

    ``api``: the input is the Logging API's responses (:func:`read_api_response`): the depths
    outside an element are then the top level, an array of responses, a response's fields and
    its ``entries`` array, whose elements are the entries.
    """

    def __init__(self, api: bool = False) -> None:
        self.api = api
        # The depth whose elements are entries: gcloud's array; for the API, a response's
        # entries array once stepped into (-1: none is open).
        self.entries_depth = -1 if api else 1
        self.response_depth = -1  # inside a response's braces, -1 when outside one
        self.pages_depth = -1  # inside an array of responses, -1 when outside one
        self.key_from = -1  # where a response level's string began in this chunk, -1: none
        self.key_pieces: list[bytes] = []  # its bytes from earlier chunks
        self.after_string: bytes | None = None  # a string just closed: a key if ":" follows
        self.key = b""  # the response field whose value comes next
        self.string_line = 0  # the line a response level's string began on
        self.token = False  # the last response has a nextPageToken (more pages were there)
        self.forced: str | None = None  # the open element's reason, given without reading it
        self.depth = 0
        self.in_string = False
        self.escaped = False  # a backslash ended the previous chunk inside a string
        self.pieces: list[bytes] = []  # the open element's bytes from earlier chunks
        self.held = 0  # their length, while no longer than a log entry can be
        self.start = -1  # offset of the open element in the current chunk, -1 if earlier/none
        self.open_depth = -1  # depth outside the open element, -1 when none is open
        self.open_line = 0
        self.newlines = 0  # newlines before ``counted`` in the input
        self.counted = 0  # offset in the current chunk up to which newlines are counted
        self.entry_line = 0  # the line the last element started on, and its entry there
        self.entry = 0

    def line_at(self, chunk: bytes, offset: int) -> int:
        self.newlines += chunk.count(b"\n", self.counted, offset)
        self.counted = offset
        return self.newlines + 1

    def origin(self, path: str, line: int) -> Origin:
        """The origin of the element that starts on ``line``: the next entry of that line when
        an element started there already (compact JSON)."""
        self.entry = self.entry + 1 if line == self.entry_line else 0
        self.entry_line = line
        return Origin(path, line, self.entry)


def read_gcloud_json(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per LogEntry object of the JSON array(s) in ``stream``."""
    return _read(stream, stats, _Scanner())


def read_api_response(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per LogEntry object of the Logging API responses in ``stream``:
    ``entries:list``'s response bodies, one or several (a line each, one after another, or in a
    JSON array), their ``entries`` read as an array's elements (see the module's docstring)."""
    return _read(stream, stats, _Scanner(api=True))


def _read(stream: BinaryIO, stats: InputStats, scan: _Scanner) -> Iterator[LogRecord]:
    ledger = _Ledger(stats)
    path = stats.path
    last_byte = b""
    first = True
    while chunk := stream.read(CHUNK_SIZE):
        if first and chunk.startswith(BOM):
            chunk = chunk[len(BOM) :]
        first = False
        if not chunk:
            continue
        last_byte = chunk[-1:]
        scan.counted = 0
        yield from _scan_chunk(chunk, scan, ledger, path)
        if scan.open_depth != -1:
            if scan.held <= LONGEST_LINE:
                piece = chunk[max(scan.start, 0) :]
                scan.pieces.append(piece)
                scan.held += len(piece)
            if scan.held > LONGEST_LINE:
                # Longer than a log entry can be: its bytes are let go as they come, and
                # the element is skipped with its reason when it closes.
                scan.pieces = []
                scan.forced = scan.forced or LONG_ENTRY
            scan.start = -1
        if scan.key_from != -1:
            _keep_key(scan, chunk[scan.key_from :])
            scan.key_from = 0
        scan.line_at(chunk, len(chunk))
    if not last_byte:
        return
    total = scan.newlines + (0 if last_byte == b"\n" else 1)
    stats.lines = total
    if scan.open_depth != -1:
        yield from _cut_element(scan, ledger, path, total)
    if scan.after_string is not None and scan.key == _TOKEN_KEY:
        scan.token = bool(scan.after_string)  # the input ends right after the token's value
    # The API had more entries than the input holds: its last response says where the next
    # page begins (entries:list's answer is not cut, it is one page of several).
    stats.more_pages = scan.token
    if scan.depth > 0:
        # gcloud and the Logs Explorer always close the array: an input that ends inside it
        # was cut short (a paste, a download stopped early), whatever entries were whole.
        stats.cut_line = total
    ledger.syntax_until(total)


def _cut_element(scan: _Scanner, ledger: _Ledger, path: str, total: int) -> Iterator[LogRecord]:
    """The element the input ends inside: a pasted entry (an object of its own, not an
    array's element: a download cut short is told as such) read for what it holds when its
    text is in it (its members before the cut, the text up to it; :func:`loose_object`),
    else skipped as :data:`TRUNCATED`."""
    pasted = scan.open_depth == 0 and not scan.api and scan.forced is None
    held = b"".join(scan.pieces) if pasted and scan.held <= LONGEST_LINE else b""
    entry = loose_object(held.decode("utf-8", "replace")) if held[:1] == b"{" else None
    if entry is not None and not _has_text(entry):
        entry = None
    outcome = TRUNCATED if entry is None else record_or_reason(entry, Origin(path, scan.open_line))
    if isinstance(outcome, str):
        ledger.entry(scan.open_line, total, TRUNCATED)
        return
    ledger.entry(scan.open_line, total, None)
    ledger.stats.records += 1
    yield outcome


def _has_text(entry: dict[str, Any]) -> bool:
    """Whether a cut entry holds its text (a textPayload, a jsonPayload's text key)."""
    payload = entry.get(TEXT_PATHS[0][0])
    return isinstance(entry.get(TEXT_PATHS[1][0]), str) or (
        isinstance(payload, dict) and any(isinstance(payload.get(k), str) for k in TEXT_KEYS)
    )


def _scan_chunk(chunk: bytes, scan: _Scanner, ledger: _Ledger, path: str) -> Iterator[LogRecord]:
    size = len(chunk)
    position = 0
    while position < size:
        if scan.after_string is not None:
            position = _after_string(chunk, position, scan, ledger)
            if position == size:
                return
        if scan.depth == scan.entries_depth and scan.open_depth == -1 and not scan.in_string:
            # Between two elements of the array: try the whole next element at once.
            element = _indented_element(chunk, position) or _next_element(chunk, position)
            if element is not None:
                record = _whole_element(chunk, element, scan, ledger, path)
                if record is not None:
                    yield record
                position = element[1] + 1
                continue
        if scan.in_string:
            position = _string_step(chunk, position, scan)
            if position < 0:
                return
            continue
        match = _STRUCTURE.search(chunk, position)
        stop = size if match is None else match.start()
        fields = scan.depth == scan.response_depth and scan.open_depth == -1
        if scan.open_depth == -1 and not fields:
            _mark_stray(chunk, position, stop, scan, ledger)
        if match is None:
            return
        position = match.end()
        yield from _structure(chunk, match, fields, scan, ledger, path)


def _after_string(chunk: bytes, position: int, scan: _Scanner, ledger: _Ledger) -> int:
    """Past a response level's string that just closed: a field's name when a ":" follows
    it. The position after the blank space that follows it (the chunk's end: decided in the
    next chunk)."""
    size = len(chunk)
    while position < size and chunk[position] in _BLANK:
        position += 1
    if position == size:
        return position
    assert scan.after_string is not None
    if chunk[position : position + 1] == b":":
        _field(scan.after_string, chunk, position, scan, ledger)
    elif scan.key == _TOKEN_KEY:
        scan.token = bool(scan.after_string)
    scan.after_string = None
    return position


def _whole_element(
    chunk: bytes, element: tuple[int, int, Any], scan: _Scanner, ledger: _Ledger, path: str
) -> LogRecord | None:
    """The record of an element read whole (its lines accounted), None when it gave none."""
    start, close, entry = element
    first_line, last_line = scan.line_at(chunk, start), scan.line_at(chunk, close)
    outcome = record_or_reason(entry, scan.origin(path, first_line))
    if isinstance(outcome, str):
        ledger.entry(first_line, last_line, outcome)
        return None
    ledger.entry(first_line, last_line, None)
    ledger.stats.records += 1
    return outcome


def _string_step(chunk: bytes, position: int, scan: _Scanner) -> int:
    """Read on inside a string: the position after its next escape or its end, -1 when the
    chunk ends inside it."""
    if scan.escaped:
        scan.escaped = False
        return position + 1
    match = _STRING_STOP.search(chunk, position)
    if match is None:
        return -1
    if match.group() == b"\\":
        scan.escaped = match.end() >= len(chunk)
        return match.end() + 1
    scan.in_string = False
    if scan.key_from != -1:
        _keep_key(scan, chunk[scan.key_from : match.start()])
        scan.after_string = b"".join(scan.key_pieces)
        scan.key_from, scan.key_pieces = -1, []
    return match.end()


def _structure(
    chunk: bytes,
    match: re.Match[bytes],
    fields: bool,
    scan: _Scanner,
    ledger: _Ledger,
    path: str,
) -> Iterator[LogRecord]:
    """Step over the quote or bracket ``match`` found outside any string."""
    char = match.group()
    position = match.end()
    if char == b'"':
        scan.in_string = True
        if fields:
            scan.key_from = position
        elif scan.open_depth == -1:
            ledger.stray.setdefault(scan.line_at(chunk, match.start()), _stray_reason(scan))
    elif scan.api and scan.open_depth == -1 and _api_structure(char, fields, scan):
        return
    elif char == b"[" and scan.depth == 0 and scan.open_depth == -1 and not scan.api:
        scan.depth = 1  # the array itself
    elif char in (b"{", b"["):
        if scan.open_depth == -1:
            scan.open_depth = scan.depth
            scan.start = match.start()
            scan.open_line = scan.line_at(chunk, match.start())
            if fields:
                scan.forced = _field_reason(scan.key)
        scan.depth += 1
    elif scan.depth == 0:
        ledger.stray.setdefault(scan.line_at(chunk, match.start()), OUTSIDE)
    else:
        scan.depth -= 1
        if scan.depth == scan.open_depth:
            yield from _close_element(chunk, match.start(), position, scan, ledger, path)


def _api_structure(char: bytes, fields: bool, scan: _Scanner) -> bool:
    """Step into or out of the API's levels for ``char`` (a bracket outside any element):
    whether it was one of theirs (else it opens or closes an element, or is stray)."""
    depth = scan.depth
    if char == b"{" and (depth == 0 or depth == scan.pages_depth):
        scan.depth = scan.response_depth = depth + 1  # a response
        scan.key = b""
        scan.token = False
        return True
    if char == b"[" and depth == 0:
        scan.depth = scan.pages_depth = 1  # an array of responses
        return True
    if char == b"[" and fields and scan.key == _ENTRIES_KEY:
        scan.depth = scan.entries_depth = depth + 1  # the response's entries
        return True
    if char == b"]" and depth == scan.entries_depth:
        scan.depth -= 1
        scan.entries_depth = -1
        scan.key = b""
        return True
    if char == b"}" and fields:
        scan.depth -= 1
        scan.response_depth = -1
        return True
    if char == b"]" and depth == scan.pages_depth:
        scan.depth -= 1
        scan.pages_depth = -1
        return True
    return False


def _keep_key(scan: _Scanner, piece: bytes) -> None:
    """Keep ``piece`` of a response level's string, up to what a field name of interest is."""
    if sum(map(len, scan.key_pieces)) <= _KEY_LIMIT:
        scan.key_pieces.append(piece[: _KEY_LIMIT + 1])


def _field(name: bytes, chunk: bytes, colon: int, scan: _Scanner, ledger: _Ledger) -> None:
    """A response's field ``name`` (its ``:`` at ``colon``): its value comes next; the line of
    a field that is no part of the response is skipped (a nested value's lines with it)."""
    scan.key = name
    reason = _field_reason(name)
    if reason is not None:
        ledger.stray.setdefault(scan.line_at(chunk, colon), reason)


def _field_reason(name: bytes) -> str | None:
    """Why a response's field ``name`` is skipped (None: it is one of the response's own; its
    entries are stepped into, its nextPageToken is the response's syntax)."""
    if name in (_ENTRIES_KEY, _TOKEN_KEY):
        return None
    return API_ERROR if name == b"error" else OTHER_FIELD


def _indented_element(chunk: bytes, position: int) -> tuple[int, int, dict[str, Any]] | None:
    """The next element of an indented array (gcloud's layout), read at once: its ``{`` and
    ``}`` offsets and its object; None when what follows is anything else.

    gcloud writes each element's ``{`` on a line of its own and its ``}`` on a line of its own
    with the same indentation, and nothing inside an element is that shallow. The first such
    ``}`` after the ``{`` ends the element if the bytes between them parse as one object: a
    ``}`` of a nested value would leave the object open. Whatever does not fit (compact JSON,
    another layout, a damaged element, one that runs past the chunk) is left to the byte-by-byte
    scanner, which gives the same answer for these.
    """
    found = _ELEMENT_START.match(chunk, position)
    if found is None:
        return None
    start = found.end() - 1
    close = chunk.find(b"\n" + found.group(1) + b"}", start)
    if close == -1:
        return None
    close += len(found.group(1)) + 1
    try:
        entry = orjson.loads(chunk[start : close + 1])
    except orjson.JSONDecodeError:
        return None
    return (start, close, entry) if type(entry) is dict else None


def _next_element(chunk: bytes, position: int) -> tuple[int, int, dict[str, Any]] | None:
    """The next element of an array of another layout (compact, or one element a line), read
    at once like :func:`_indented_element`; None when it cannot be.

    An element ends with a ``}`` followed by a comma and the next element's ``{``, or by the
    array's ``]``. The first such ``}`` whose bytes from the ``{`` parse as one object is the
    element's end: the bytes up to a ``}`` inside a string or closing a nested value never
    parse. A few are tried; after that (or when the element runs past the chunk, or does not
    parse) the byte-by-byte scanner decides, which gives the same answer.
    """
    found = _ELEMENT_AT.match(chunk, position)
    if found is None:
        return None
    start = found.end() - 1
    for end in islice(_ELEMENT_END.finditer(chunk, start), _ELEMENT_TRIES):
        close = end.start()
        try:
            entry = orjson.loads(chunk[start : close + 1])
        except orjson.JSONDecodeError:
            continue
        return (start, close, entry) if type(entry) is dict else None
    return None


def _mark_stray(chunk: bytes, start: int, stop: int, scan: _Scanner, ledger: _Ledger) -> None:
    gap = chunk[start:stop]
    if not gap.strip(_ARRAY_SYNTAX):
        return
    # Each line's first byte that is no array syntax marks that line: line by line, not byte
    # by byte (a 20 MB line of text between two entries took 4 CPU s byte by byte).
    reason = _stray_reason(scan)
    offset = start
    for piece in gap.split(b"\n"):
        text = piece.lstrip(_ARRAY_SYNTAX)
        if text:
            ledger.stray.setdefault(scan.line_at(chunk, offset + len(piece) - len(text)), reason)
        offset += len(piece) + 1


def _stray_reason(scan: _Scanner) -> str:
    return NOT_AN_ENTRY if scan.depth >= 1 else OUTSIDE


def _close_element(
    chunk: bytes, close: int, end: int, scan: _Scanner, ledger: _Ledger, path: str
) -> Iterator[LogRecord]:
    last = chunk[max(scan.start, 0) : end]
    if scan.held + len(last) > LONGEST_LINE:
        scan.forced = scan.forced or LONG_ENTRY
        raw = b""
    else:
        scan.pieces.append(last)
        raw = b"".join(scan.pieces)
    scan.pieces, scan.start, scan.open_depth, scan.held = [], -1, -1, 0
    first_line, last_line = scan.open_line, scan.line_at(chunk, close)
    outcome: LogRecord | str
    forced, scan.forced = scan.forced, None
    if forced is not None or (scan.api and scan.depth == scan.response_depth):
        # A response's field that is not its entries: not read (an entries value that is no
        # array is none of the response's either).
        outcome = forced or OTHER_FIELD
    elif raw[:1] != b"{":
        outcome = NOT_AN_ENTRY
    else:
        try:
            entry, repaired = load_json_repairing(raw)
            ledger.stats.invalid_utf8 += repaired
            outcome = record_or_reason(entry, scan.origin(path, first_line))
        except InvalidJson:
            # The old Logs Viewer's expanded view, or an entry copied as a JavaScript object.
            viewer = viewer_entry(raw) or loose_object(raw.decode("utf-8", "replace"))
            outcome = (
                INVALID_JSON
                if viewer is None
                else record_or_reason(viewer, scan.origin(path, first_line))
            )
    if isinstance(outcome, str):
        ledger.entry(first_line, last_line, outcome)
        return
    ledger.entry(first_line, last_line, None)
    ledger.stats.records += 1
    yield outcome


# A line of the old Logs Viewer's expanded entry: an unquoted key, a colon, spaces, a value.
_VIEWER_LINE = re.compile(r"^(?P<key>[^\s{}\"]+?):(?:[ \t]+(?P<value>.*?))?[ \t]*$")
_COLLAPSED = ("{…}", "{...}", "[…]", "[...]")


def viewer_entry(raw: bytes) -> dict[str, Any] | None:
    """The entry of an element copied from the old Stackdriver Logs Viewer's expanded view, or
    None when ``raw`` is not one.

    That view prints a LogEntry like JSON without the keys' quotes or the commas (``insertId:
    "abc"``, ``jsonPayload: {`` ... ``}``, two spaces after the colon, trailing spaces) and may
    collapse a nested value to ``{…}``; values are JSON (strings quoted, numbers bare).
    """
    text = raw.decode("utf-8", "replace")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) < 3 or lines[0] != "{" or lines[-1] != "}":
        return None
    root: dict[str, Any] = {}
    stack = [root]
    for line in lines[1:-1]:
        if line == "}":
            if len(stack) == 1:
                return None
            stack.pop()
            continue
        found = _VIEWER_LINE.match(line)
        if found is None:
            return None
        key, value = found["key"], found["value"] or ""
        if value == "{":
            child: dict[str, Any] = {}
            stack[-1][key] = child
            stack.append(child)
        elif value in _COLLAPSED:
            stack[-1][key] = {}
        else:
            try:
                stack[-1][key] = orjson.loads(value)
            except orjson.JSONDecodeError:
                stack[-1][key] = value
    return root if len(stack) == 1 else None
