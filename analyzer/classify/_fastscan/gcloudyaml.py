"""The fast reader of ``gcloud logging read`` without ``--format``: YAML, a document an entry.

gcloud's printer (ruamel.yaml, block style, indent 2, width 80) writes each LogEntry as a
block mapping after a ``---`` line: nested mappings two spaces in, scalars plain, quoted
(``'...'``, ``"..."``, folded onto continuation lines past 80 columns) or literal blocks
(``|``, ``|-``: every text holding a line end). PyYAML reads ~42 nodes an entry through its
Python constructor (~105 us an entry); this reader reads that layout itself, line by line:
the mapping's keys and the scalars the record is made of
(:data:`~analyzer.ingest.records.LABEL_PATHS`,
the text's and the time's paths), into a partial entry that
:func:`~analyzer.ingest.records.entry_fields` reads as it reads a whole one. Only the documents
whose
text the rule book's prefilter may match (candidates) are read again by the plain reader, so
that their records (and events) are exactly its own.

What it buys, measured by ``bench/library_choices.py yaml`` (``jobdoctor diagnose -f json`` of
22 MB of ``gcloud logging read``'s YAML, 32,443 entries of the bench's fleet; CPU medians of
3 interleaved runs on the 2-core host, loaded): 1.68 s with this reader, 4.81 s with it
turned off (every document through PyYAML's ``CSafeLoader``, the plain reader), and the same
report; ``yaml.load_all(CSafeLoader)`` of the file alone, no record made and no rule run, takes
3.02 s.

Plain scalars are resolved as the plain reader resolves them, by YAML 1.2's core schema
(:data:`~analyzer.ingest.gcloud_yaml.CORE_SCHEMA`), the API's string fields taken as written
(:data:`~analyzer.ingest.gcloud_yaml.TEXT_FIELDS`). What it reads is a strict subset of YAML:
where a document holds anything else (a comment, a sequence, an anchor, a tab, a folded block,
an odd escape, a plain scalar that is no string where the record reads it, a duplicate key, a
key that is no LogEntry field at the top...), the whole document is handed to the plain reader
(:class:`~analyzer.ingest.gcloud_yaml.DocumentReader`), so the records, counts, skip reasons
and line numbers are always the plain reader's.

Documents are separated by ``---`` at the start of a line, which YAML forbids inside one (a
block scalar's lines are indented): a file can be cut into byte ranges at those lines
(:func:`document_ranges`), read apart, each range's documents the same as in the whole. A
directive (``%YAML 1.1``, which ``--format='yaml(version=1.1)'`` writes before every entry)
changes how the document after it is read: an input holding one is read by the plain reader
from there (a range of it: the whole file), which reads 1.1's documents as 1.1.
"""

from __future__ import annotations

import gc
import itertools
import re
from typing import Any, BinaryIO

from analyzer.classify._fastscan.gcloudjson import Matches, Unusual, bounded_reads
from analyzer.classify._fastscan.jsonl import ScanTally, SpanTally, TextSelector, time_key
from analyzer.classify._fastscan.parallel import MAX_RANGE_BYTES
from analyzer.ingest.entries import INVALID_TIMESTAMP
from analyzer.ingest.gcloud_yaml import DocumentReader, EntryLoader, is_text_field
from analyzer.ingest.lines import BOM, LONGEST_LINE, skip_long_line
from analyzer.ingest.records import (
    AUDIT_PATH,
    INSERT_ID_PATH,
    JOB_RESOURCE_TYPES,
    LABEL_PATHS,
    NO_MESSAGE,
    OTHER_RESOURCE,
    PAYLOAD_PATH,
    RESOURCE_TYPE_PATH,
    SEVERITY_PATH,
    TEXT_KEY_PATHS,
    TEXT_KEYS,
    TEXT_PATHS,
    TIME_PATHS,
    EntryFields,
    InputStats,
    LogRecord,
    entry_fields,
    job_group,
    parse_timestamp,
)
from analyzer.ingest.sniff import LOGENTRY_KEYS
from analyzer.rulebook.events import Event

# Read at once: ~700 entries; a run of documents is cut at its last "---" line.
CHUNK_BYTES = 1 << 19
# A document this large without a "---" after it: the rest is read by the plain reader.
_LONGEST_DOCUMENT = 8 << 20
_CUT_SEARCH_BYTES = 4 << 20
_MARKER = re.compile(rb"^---\n", re.MULTILINE)
_BETWEEN = b"\n---\n"

# Where the record is read (LABEL_PATHS, the texts, the times, ...) and every mapping on the
# way: a plain scalar there must be a string (else hand it over), or one of the API's string
# fields, taken as written unless it is a null (as the plain reader takes it).
_LEAVES = (
    *(path for paths in LABEL_PATHS.values() for path in paths),
    *TEXT_KEY_PATHS,
    *TIME_PATHS,
    SEVERITY_PATH,
    INSERT_ID_PATH,
    AUDIT_PATH,
    RESOURCE_TYPE_PATH,
)
_READ = frozenset(path[:size] for path in _LEAVES for size in range(1, len(path) + 1))

# Characters the subset takes as they are: printable, no tab (tabs are not indentation, and
# PyYAML writes them escaped), no carriage return, no line break but "\n" (YAML breaks lines
# at U+0085, U+2028 and U+2029 too), no byte-order mark (libyaml refuses it inside).
_ODD = re.compile(
    "[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]"
)
# A mapping entry: a plain key of name characters or a single-quoted one, then ":" and the
# value after one space, or nothing.
_ENTRY = re.compile(r"(?:([A-Za-z_][\w./-]*)|'((?:[^'\n]|'')*)'):(?: (\S.*))?")
# What may begin a plain scalar (PyYAML's check_plain, "-?:" only before a non-space).
_PLAIN_START = re.compile(r"[^\s\-?:,\[\]{}#&*!|>'\"%@`]|[-?:]\S")
_SINGLE = re.compile(r"'((?:[^']|'')*)'")
_DOUBLE = re.compile(r'"((?:[^"\\]|\\[\s\S])*)"')
_SINGLE_FOLD = re.compile(r"''|[ ]*\n((?:[ ]*\n)*)[ ]*")
_DOUBLE_FOLD = re.compile(
    r"\\(?:\n((?:[ ]*\n)*)[ ]*|x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))"
    r"|[ ]*\n((?:[ ]*\n)*)[ ]*"
)
_ESCAPES = {
    "0": "\0",
    "a": "\x07",
    "b": "\x08",
    "t": "\t",
    "n": "\n",
    "v": "\x0b",
    "f": "\x0c",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
_STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_RESOLVERS: dict[Any, list[tuple[str, re.Pattern[str]]]] = EntryLoader.yaml_implicit_resolvers
# Plain scalars' tags as the plain reader's loader resolves them, cached. (Under YAML 1.2 every
# plain scalar is built: a core-schema number always converts, unlike 1.1's "0b_" or "1:2_".)
_TAGS: dict[str, str] = {}
_MAX_TAGS = 1 << 14


class _Other(Exception):
    """The document is outside the subset: the plain reader reads it."""


def _tag(value: str) -> str:
    """The tag of the plain scalar ``value``: :data:`_STR` when it is a string."""
    tag = _TAGS.get(value)
    if tag is not None:
        return tag
    tag = _STR
    for found, pattern in _RESOLVERS.get(value[:1], ()):
        if pattern.match(value):
            tag = found
            break
    if len(_TAGS) < _MAX_TAGS:
        _TAGS[value] = tag
    return tag


def _as_read(value: str, path: tuple[str, ...]) -> None:
    """Check that the plain scalar ``value`` at ``path`` (one the record is read at) reads as
    the string it is: a string, or one of the API's string fields written plain (not a null)."""
    tag = _tag(value)
    if tag != _STR and (tag == _NULL or not is_text_field(path)):
        raise _Other("a plain scalar that is no string where the record reads it")


def _unescape(found: re.Match[str]) -> str:
    text = found.group(0)
    if text[0] != "\\":
        breaks = found.group(6)
        return "\n" * breaks.count("\n") if breaks else " "
    if text[1] == "\n":
        return "\n" * found.group(1).count("\n")
    code = found.group(2) or found.group(3) or found.group(4)
    if code is not None:
        number = int(code, 16)
        if 0xD800 <= number <= 0xDFFF or number > 0x10FFFF:
            raise _Other("an escape no character")
        return chr(number)
    escaped = _ESCAPES.get(found.group(5))
    if escaped is None:
        raise _Other("an escape outside the subset")
    return escaped


def _unquote_single(found: re.Match[str]) -> str:
    text = found.group(0)
    if text == "''":
        return "'"
    breaks = found.group(1)
    return "\n" * breaks.count("\n") if breaks else " "


def _continued(lines: list[str], start: int, count: int, indent: int) -> None:
    """Check that the ``count`` lines from ``start`` go on a scalar begun at ``indent``:
    indented past it, or blank."""
    for line in lines[start : start + count]:
        content = line.lstrip(" ")
        if content and len(line) - len(content) <= indent:
            raise _Other("a continuation line not indented")


def _quoted(value: str, lines: list[str], at: int, indent: int) -> tuple[str, int]:
    """The quoted scalar beginning ``value`` (line ``at``) and the lines it takes."""
    if value[0] == "'":
        pattern, fold, unquote = _SINGLE, _SINGLE_FOLD, _unquote_single
    else:
        pattern, fold, unquote = _DOUBLE, _DOUBLE_FOLD, _unescape
    found = pattern.fullmatch(value)
    if found is not None:
        inner = found.group(1)
        if value[0] == "'":
            return (inner.replace("''", "'") if "'" in inner else inner), 1
        return (fold.sub(unquote, inner) if "\\" in inner else inner), 1
    rest = "\n".join([value, *lines[at + 1 :]])
    found = pattern.match(rest)
    if found is None or rest[found.end() : found.end() + 1] not in ("", "\n"):
        raise _Other("a quoted scalar not closed at a line end")
    raw = found.group(1)
    taken = raw.count("\n")
    _continued(lines, at + 1, taken, indent)
    return fold.sub(unquote, raw), taken + 1


def _literal(
    header: str, lines: list[str], at: int, indent: int, *, last: bool | None = None
) -> tuple[str, int]:
    """The literal block scalar whose header (``|``, ``|-``, ``|+``) ends line ``at`` (``last``:
    whether its last line is the document's, when ``lines`` end before the document does)."""
    if header not in ("|", "|-", "|+"):
        raise _Other("a block scalar outside the subset")
    end = len(lines)
    start = at + 1
    if start == end:
        raise _Other("an empty block scalar")
    first = lines[start]
    content = first.lstrip(" ")
    inner = len(first) - len(content)
    if not content or inner <= indent:
        raise _Other("a block scalar without its first line")
    margin = " " * inner
    parts = []
    index = start
    blank = 0
    while index < end:
        line = lines[index]
        if line.startswith(margin):
            blank = 0
            parts.append(line[inner:])
        elif not line.strip(" "):
            blank += 1
            parts.append("")
        else:
            break
        index += 1
    if blank:
        raise _Other("a block scalar ending in blank lines")
    text = "\n".join(parts)
    if last is None:
        last = index == end  # (no line end after the document's last line)
    if header != "|-" and not last:
        text += "\n"
    return text, index - at


def _plain(value: str, lines: list[str], at: int, indent: int) -> tuple[str, int]:
    """The plain scalar beginning ``value`` (line ``at``), folded over the lines indented
    past ``indent`` that follow, and the lines it takes."""
    _check_plain(value)
    end = len(lines)
    index = at + 1
    parts = [value]
    blank = 0
    taken = 1
    while index < end:
        line = lines[index]
        content = line.lstrip(" ")
        if not content:
            blank += 1
            index += 1
            continue
        if len(line) - len(content) <= indent:
            break
        _check_plain(content)
        parts.append("\n" * blank if blank else " ")
        parts.append(content)
        blank = 0
        index += 1
        taken = index - at
    return ("".join(parts) if len(parts) > 1 else value), taken


def _check_plain(text: str) -> None:
    if (
        _PLAIN_START.match(text) is None
        or ": " in text
        or " #" in text
        or text.endswith((":", " "))
    ):
        raise _Other("not a plain scalar of the subset")


def light_entry(text: str) -> dict[str, Any]:
    """The entry of the document ``text`` (its lines joined by ``\\n``), as PyYAML reads it
    where the record is read (:data:`_READ`), the rest as strings; :class:`_Other` when the
    document is outside the subset."""
    if _ODD.search(text) is not None:
        raise _Other("a character outside the subset")
    lines = text.split("\n")
    root: dict[str, Any] = {}
    # The open mappings, innermost last: (indent, mapping, path).
    levels: list[tuple[int, dict[str, Any], tuple[str, ...]]] = [(0, root, ())]
    opened: tuple[int, dict[str, Any], str, tuple[str, ...]] | None = None
    index = 0
    count = len(lines)
    while index < count:
        line = lines[index]
        content = line.lstrip(" ")
        if not content:
            index += 1
            continue
        indent = len(line) - len(content)
        if opened is not None:
            above, mapping, key, path = opened
            opened = None
            if indent > above:
                child: dict[str, Any] = {}
                mapping[key] = child
                levels.append((indent, child, path))
            else:
                mapping[key] = None
        while levels[-1][0] > indent:
            levels.pop()
        level, mapping, where = levels[-1]
        if level != indent:
            raise _Other("an indentation outside the subset")
        found = _ENTRY.fullmatch(content)
        if found is None:
            raise _Other("not a mapping entry of the subset")
        key = _entry_key(found, where, mapping)
        path = (*where, key)
        value = found.group(3)
        if value is None:
            opened = (indent, mapping, key, path)
            mapping[key] = None
            index += 1
            continue
        mapping[key], taken = _entry_value(value, lines, index, indent, path)
        index += taken
    if not root:
        raise _Other("no mapping")
    _check_text_field(root)
    return root


def _entry_key(found: re.Match[str], where: tuple[str, ...], mapping: dict[str, Any]) -> str:
    """The key of the mapping entry ``found`` (in ``mapping``, at path ``where``);
    :class:`_Other` for a top-level key that is no LogEntry field or a duplicate."""
    key = found.group(1)
    if key is None:
        key = found.group(2).replace("''", "'")
    elif not where and key not in LOGENTRY_KEYS:
        raise _Other("a top-level key that is no LogEntry field")
    if key in mapping:
        raise _Other("a duplicate key")
    return key


def _entry_value(
    value: str, lines: list[str], index: int, indent: int, path: tuple[str, ...]
) -> tuple[Any, int]:
    """The value of the entry at line ``index`` (``value``: what follows its key), and how
    many lines it takes; one read where the record is read as PyYAML reads it."""
    first = value[0]
    if first in "'\"":
        return _quoted(value, lines, index, indent)
    if first == "|":
        return _literal(value, lines, index, indent)
    if value == "{}":
        return {}, 1
    if value == "[]":
        return [], 1
    scalar, taken = _plain(value, lines, index, indent)
    if path in _READ:
        _as_read(scalar, path)
    return scalar, taken


def _check_text_field(root: dict[str, Any]) -> None:
    """:class:`_Other` when the entry's payload has no text key and there is no text
    payload: its text is then its rendering, which the plain reader makes."""
    payload = root.get(PAYLOAD_PATH[0])
    if (
        isinstance(payload, dict)
        and payload
        and not any(isinstance(payload.get(key), str) for key in TEXT_KEYS)
        and not isinstance(root.get("textPayload"), str)
    ):
        raise _Other("a payload whose text is its rendering")


class GcloudYamlScanner:
    """Reads gcloud's YAML (or a byte range of it, :func:`document_ranges`) into a
    :class:`~analyzer.classify._fastscan.jsonl.ScanTally` and events, lines numbered from 1."""

    def __init__(
        self, stats: InputStats, select: TextSelector, matches: Matches, *, at_start: bool = True
    ) -> None:
        self.stats = stats
        self.tally = ScanTally()
        self.events: list[Event] = []
        self._select = select
        self._matches = matches
        self._at_start = at_start
        self._plain = DocumentReader(stats)
        self._line = 0  # lines before the block being read

    def scan(self, stream: BinaryIO, limit: int = -1) -> None:
        """Scan ``stream``, up to ``limit`` bytes when not -1 (a range's end)."""
        read = bounded_reads(stream, limit, CHUNK_BYTES)
        data = read()
        if self._at_start and data.startswith(BOM):
            data = data[len(BOM) :]
        while True:
            more = read()
            if not more:
                if not self._directed(data, stream, limit):
                    self._block(data)
                return
            data += more
            cut = data.rfind(_BETWEEN)
            if cut == -1:
                if len(data) > _LONGEST_DOCUMENT:
                    if limit >= 0:
                        raise Unusual("a document too long to read lightly")
                    self._read_plainly(data, stream)
                    return
                continue
            if self._directed(data[: cut + 1], stream, limit, data):
                return
            self._block(data[: cut + 1])
            data = data[cut + 1 :]

    def _directed(
        self, block: bytes, stream: BinaryIO, limit: int, data: bytes | None = None
    ) -> bool:
        """Whether ``block`` (at the start of ``data``, the bytes read and not taken) holds a
        directive line, the rest of the input then read by the plain reader (a range:
        :class:`Unusual`). It changes how the document after it is read (``%YAML 1.1``: by
        YAML 1.1's schema), and which document that is, the range's or the next's, is the
        plain reader's to tell."""
        if block[:1] != b"%" and b"\n%" not in block:
            return False
        if limit >= 0:
            raise Unusual("a YAML directive")
        self._read_plainly(block if data is None else data, stream)
        return True

    def _read_plainly(self, data: bytes, stream: BinaryIO) -> None:
        """The rest of the input, from ``data`` (at a line's start), by the plain reader."""
        tail = b""
        dropping = False  # the line in ``tail`` is longer than any log entry: not kept whole
        for chunk in itertools.chain((data,), iter(lambda: stream.read(CHUNK_BYTES), b"")):
            if dropping:
                end = chunk.find(b"\n")
                if end == -1:
                    continue
                chunk, dropping = chunk[end:], False
            pieces = (tail + chunk).split(b"\n")
            tail = pieces.pop()
            if len(tail) > LONGEST_LINE:
                # Kept one byte longer than the longest, which still reads as too long.
                tail, dropping = tail[: LONGEST_LINE + 1], True
            self._plainly_lines(pieces, None)
        if tail:
            self._plainly_lines([tail], None)
        for record in self._flush():  # (the last document's: counted and matched too)
            self._count(record)
            self._match_all(record)

    def _block(self, block: bytes) -> None:
        """Whole documents and the "---" lines between them."""
        documents: list[tuple[int, int, str | None, bytes]] = []
        line = self._line
        stats = self.stats
        # Decoded and checked at once when all of it is clean (as it nearly always is), each
        # document apart otherwise.
        try:
            whole: str | None = block.decode("utf-8")
        except UnicodeDecodeError:
            whole = None
        clean = whole is not None and _ODD.search(whole) is None
        position = 0
        for found in _MARKER.finditer(block):
            start = found.start()
            if start > position:
                segment = block[position:start]
                text = segment.decode("utf-8") if clean else None
                lines = segment.count(b"\n")
                documents.append((line + 1, lines, text, segment))
                line += lines
            line += 1
            stats.lines += 1
            stats.used += 1
            position = found.end()
        if position < len(block):
            segment = block[position:]
            lines = segment.count(b"\n") + (not segment.endswith(b"\n"))
            text = segment.decode("utf-8") if clean else None
            documents.append((line + 1, lines, text, segment))
            line += lines
        self._line = line
        self._documents(documents)

    def _documents(self, documents: list[tuple[int, int, str | None, bytes]]) -> None:
        """Read a block's documents: each counted lightly from its fields where it can be,
        by the plain reader otherwise; then the prefilter's candidates read in full."""
        stats = self.stats
        texts: list[str] = []
        light: list[tuple[int, int, tuple[str | None, str | None, str | None], str | None]] = []
        plain: list[tuple[int, list[LogRecord]]] = []
        for number, (first, lines, text, segment) in enumerate(documents):
            stats.lines += lines
            try:
                read = _document_fields(segment, text)
            except (_Other, UnicodeDecodeError):
                records = self._plainly(segment, first)
                plain.append((number, records))
                texts.extend(record.text for record in records)
                continue
            if isinstance(read, str):
                stats.skip(read, lines)
                continue
            fields, when = read
            key = (job_group(fields.job_id, fields.trial), fields.task, fields.vm)
            light.append((number, lines, key, when))
            texts.append(fields.text)
        chosen = set(self._select(texts)) if texts else set()
        self._hand_out(documents, light, plain, chosen)

    def _hand_out(
        self,
        documents: list[tuple[int, int, str | None, bytes]],
        light: list[tuple[int, int, tuple[str | None, str | None, str | None], str | None]],
        plain: list[tuple[int, list[LogRecord]]],
        chosen: set[int],
    ) -> None:
        """Count a block's documents in their order, the light ones by their keys and the
        plain reader's by their records; match the ``chosen`` ones (indexes of their texts),
        a light one read again in full for it."""
        stats = self.stats
        at = 0
        pending = iter(plain)
        handed = next(pending, None)
        lights = iter(light)
        told = next(lights, None)
        while told is not None or handed is not None:
            if handed is not None and (told is None or handed[0] < told[0]):
                for record in handed[1]:
                    self._count(record)
                    if at in chosen:
                        self._match(record)
                    at += 1
                handed = next(pending, None)
                continue
            assert told is not None
            number, lines, key, when = told
            if at in chosen:
                first, _, _, segment = documents[number]
                for record in self._plainly(segment, first):
                    self._count(record)
                    self._match(record)
            else:
                stats.used += lines
                stats.records += 1
                self._count_key(key, when)
            at += 1
            told = next(lights, None)

    def _plainly(self, segment: bytes, first: int) -> list[LogRecord]:
        """The plain reader's records of the document ``segment`` (its first line ``first``),
        counted by it (lines aside: counted here)."""
        pieces = segment.split(b"\n")
        if segment.endswith(b"\n"):
            pieces.pop()
        records = self._plainly_lines(pieces, first)
        records.extend(self._flush())
        return records

    def _plainly_lines(self, pieces: list[bytes], first: int | None) -> list[LogRecord]:
        """Feed raw lines to the plain reader (numbered from ``first``, or from the lines so
        far when None, and then counted too), as ``text_lines`` decodes them."""
        records: list[LogRecord] = []
        stats = self.stats
        reader = self._plain.line
        number = first
        for raw in pieces:
            if number is None:
                stats.lines += 1
                self._line += 1
                at = self._line
            else:
                at = number
                number += 1
            if len(raw) > LONGEST_LINE:
                skip_long_line(stats, at)  # as text_lines does: not given to the reader
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("utf-8", "replace")
                stats.invalid_utf8 += 1
            record = reader(at, text.rstrip("\r\n"))
            if record is not None:
                records.append(record)
        if first is None:
            for record in records:
                self._count(record)
                self._match_all(record)
        return records

    def _flush(self) -> list[LogRecord]:
        record = self._plain.end()
        return [] if record is None else [record]

    def _match_all(self, record: LogRecord) -> None:
        if list(self._select([record.text])):
            self._match(record)

    def _match(self, record: LogRecord) -> None:
        self.events.extend(Event.from_record(record, m) for m in self._matches(record.text))

    def _count(self, record: LogRecord) -> None:
        key = (job_group(record.job_id, record.trial), record.task, record.vm)
        when = None if record.timestamp is None else time_key(record.timestamp)
        self._count_key(key, when)

    def _count_key(self, key: tuple[str | None, str | None, str | None], when: str | None) -> None:
        if when is None:
            self.tally.untimed[key[0]] += 1
            return
        span = self.tally.spans.get(key)
        if span is None:
            self.tally.spans[key] = SpanTally.at(when, 1)
        else:
            span.count(when)


def scan_gcloud_yaml(
    stream: BinaryIO,
    stats: InputStats,
    select: TextSelector,
    matches: Matches,
    *,
    at_start: bool = True,
    limit: int = -1,
) -> tuple[ScanTally, list[Event]]:
    """Scan ``stream`` (``limit`` bytes of it, when not -1) into ``stats``: the tally and the
    events, lines numbered from 1."""
    scanner = GcloudYamlScanner(stats, select, matches, at_start=at_start)
    collecting = gc.isenabled()
    gc.disable()  # no reference cycles are made (see _fastscan.parallel.scan_stream)
    try:
        scanner.scan(stream, limit)
    finally:
        if collecting:
            gc.enable()
    return scanner.tally, scanner.events


def document_ranges(path: str, size: int, smallest: int, processes: int) -> list[tuple[int, int]]:
    """``[start, end)`` byte ranges covering the file at ``path``, each after the first
    starting at a ``---`` line, sized as :func:`~analyzer.classify._fastscan.parallel.line_ranges`
    sizes them."""
    cuts = [0]
    with open(path, "rb") as stream:
        while True:
            share = min(MAX_RANGE_BYTES, (size - cuts[-1]) // (2 * processes))
            target = cuts[-1] + max(smallest, share)
            if target >= size:
                break
            stream.seek(target)
            found = stream.read(_CUT_SEARCH_BYTES).find(_BETWEEN)
            if found == -1:
                break
            cut = target + found + 1
            if cut >= size:
                break
            cuts.append(cut)
    cuts.append(size)
    return list(itertools.pairwise(cuts))


# --- the common layout, in one regular expression --------------------------------------------
#
# Nearly every document gcloud prints has the same skeleton: its keys sorted, the record's
# fields at fixed places. One match of the document against that skeleton (compiled once,
# below) checks every line of it and captures the scalars the record is made of; a document
# it does not match is read by light_entry line by line (and, outside the subset, by PyYAML).


def _plain_rest() -> str:
    # After a plain scalar's first character: no ": ", no " #", no trailing space or ":".
    return r"(?:[^\n:# ]++|:(?=\S)|(?<! )#| ++(?=[^\s#]))*+"


_FIRST = r"[^\s\-?:,\[\]{}#&*!|>'\"%@`]"
_KEY = r"[A-Za-z_][\w./-]*"


def _scalar(indent: int, *, generic: bool) -> str:
    """A scalar value on the line of its key at ``indent`` and the lines it goes on over. A
    value no reader reads (``generic``) is plain only from a letter (as under YAML 1.1, where a
    number could fail to build: a document with other plain values is read by the line
    reader, which takes them)."""
    deeper = f"(?= {{{indent + 1}}}| *\\n)"
    first = "[A-Za-z]" if generic else f"(?:{_FIRST}|[-?:]\\S)"
    plain = f"{first}{_plain_rest()}(?:\\n {{{indent + 1},}}{_FIRST}{_plain_rest()})*"
    single = f"'(?:[^'\\n]++|''|\\n{deeper})*+'"
    escapes = (
        r'\\[0abtnvfre "\\N_LP]|\\x[0-9A-Fa-f]{2}|\\u(?![dD][89abAB])[0-9A-Fa-f]{4}'
        r"|\\U(?:000[0-9A-Fa-f]|0010)[0-9A-Fa-f]{4}"
    )
    double = f'"(?:[^"\\\\\\n]++|{escapes}|\\\\?\\n{deeper})*+"'
    inner = indent + 2
    literal = (
        f"\\|[-+]?\\n {{{inner}}}\\S[^\\n]*(?:\\n {{{inner}}}[^\\n]*|\\n {{0,{inner - 1}}}(?=\\n))*"
    )
    return f"(?:{plain}|{single}|{double}|{literal})"


def _generic(indent: int, depth: int, exclude: tuple[str, ...] = ()) -> str:
    """Any entry at ``indent`` of a name-like key (none of ``exclude``), its value a scalar,
    ``{}``, ``[]``, or a mapping of such entries ``depth`` levels deep."""
    key = _KEY
    if exclude:
        key = "(?!(?:" + "|".join(re.escape(name) for name in exclude) + "):)" + key
    nested = f"(?:{_generic(indent + 2, depth - 1)})*" if depth else ""
    value = f"(?:{_scalar(indent, generic=True)}|\\{{\\}}|\\[\\])"
    return f" {{{indent}}}{key}:(?: {value}\\n|\\n{nested})"


def _slot(name: str, key: str, indent: int) -> str:
    # The scalar's lines only (its first, then those indented past the key or blank): what it
    # holds is read and checked by the line reader's functions (_value).
    lines = f"[^\\n]+(?:\\n(?: {{{indent + 1}}}[^\\n]*| *(?=\\n)))*"
    return f" {{{indent}}}{re.escape(key)}: (?P<{name}>{lines})\\n"


def _mapping(key: str, indent: int, marker: str, parts: list[tuple[str, str]], depth: int) -> str:
    """The entry ``key:`` at ``indent`` opening a mapping (not empty) of the slots ``parts``
    (their pattern and key) and other entries, in any order. A slot met twice keeps its last
    value, as PyYAML's mapping does; a mapping met twice is refused (:data:`_ONCE`: the groups of
    the first would stay)."""
    inner = indent + 2
    names = tuple(key for _, key in parts)
    entries = "|".join([*(pattern for pattern, _ in parts), _generic(inner, depth, names)])
    mark = f"(?P<{marker}>)" if marker else ""
    _ONCE.append(f"\n{' ' * indent}{key}:")
    return f" {{{indent}}}{re.escape(key)}:\\n{mark}(?= {{{inner}}}\\S)(?:{entries})+"


# The mappings' "key:" lines: a document holding one of them twice is not read in one match
# (anywhere: another mapping's "  labels:" too, or a line of a quoted scalar).
_ONCE: list[str] = []


_SLOTS = {
    # group name: (the path, its key at its place)
    "insert_id": INSERT_ID_PATH,
    "message": ("jsonPayload", "message"),
    "event": ("jsonPayload", "event"),
    "log": ("jsonPayload", "log"),
    "msg": ("jsonPayload", "msg"),
    "text": ("jsonPayload", "text"),
    "tag": ("jsonPayload", "attrs", "tag"),
    "vm": ("labels", "compute.googleapis.com/resource_id"),
    "label_job": ("labels", "ml.googleapis.com/job_id"),
    "label_task2": ("labels", "ml.googleapis.com/task_name"),
    "label_trial2": ("labels", "ml.googleapis.com/trial_id"),
    "label_task": ("labels", "task_name"),
    "label_trial": ("labels", "trial_id"),
    "receive": ("receiveTimestamp",),
    "job": ("resource", "labels", "job_id"),
    "task": ("resource", "labels", "task_name"),
    "kind": RESOURCE_TYPE_PATH,
    "severity": SEVERITY_PATH,
    "text_payload": ("textPayload",),
    "time": ("timestamp",),
}
_INDENT = {name: 2 * (len(path) - 1) for name, path in _SLOTS.items()}
_GENERIC_DEPTH = 3


def _skeleton() -> re.Pattern[str]:
    def slots(*names: str) -> list[tuple[str, str]]:
        found = [(name, _SLOTS[name]) for name in names]
        return [(_slot(name, path[-1], _INDENT[name]), path[-1]) for name, path in found]

    attrs = _mapping("attrs", 2, "", slots("tag"), _GENERIC_DEPTH - 2)
    payload_parts = [(attrs, "attrs"), *slots("event", "log", "message", "msg", "text")]
    payload = _mapping("jsonPayload", 0, "payload", payload_parts, _GENERIC_DEPTH - 1)
    labels = _mapping(
        "labels",
        0,
        "",
        slots("vm", "label_job", "label_task2", "label_trial2", "label_task", "label_trial"),
        0,
    )
    resource_labels = _mapping("labels", 2, "", slots("job", "task"), 0)
    resource = _mapping("resource", 0, "", [(resource_labels, "labels"), *slots("kind")], 1)
    read_at_top = {path[0] for path in _READ if len(path) >= 1}
    others = sorted(LOGENTRY_KEYS - read_at_top)
    keys = "(?:" + "|".join(re.escape(key) for key in others) + ")"
    top = _generic(0, _GENERIC_DEPTH).replace(_KEY, keys, 1)
    parts = [
        *(pattern for pattern, _ in slots("insert_id", "receive", "severity", "text_payload")),
        *(pattern for pattern, _ in slots("time")),
        payload,
        labels,
        resource,
        top,
    ]
    return re.compile("(?:" + "|".join(parts) + ")+")


_SKELETON: re.Pattern[str] | None = None
_NAMES: tuple[str, ...] = ()


def _compiled() -> re.Pattern[str]:
    """The skeleton, compiled the first time a document is read (~50 ms: not at start-up)."""
    global _SKELETON, _NAMES
    if _SKELETON is None:
        _SKELETON = _skeleton()
        # The groups in the pattern's order.
        _NAMES = tuple(sorted(_SKELETON.groupindex, key=_SKELETON.groupindex.__getitem__))
        assert len(_NAMES) == _SKELETON.groups
    return _SKELETON


# What a one-line plain scalar that is a string does not begin with: an indicator, or the first
# character of a resolver's pattern (bools, nulls, numbers, "<<", "=").
_UNSAFE_FIRST = frozenset("-?:,[]{}#&*!|>'\"%@` ").union(key for key in _RESOLVERS if key)


def _value(raw: str, indent: int, last: bool, path: tuple[str, ...]) -> str:
    """The value of a scalar at ``path`` whose lines the skeleton captured (``last``: its last
    line is the document's), read as the line reader reads it; :class:`_Other` outside the
    subset."""
    lines = raw.split("\n")
    first = lines[0]
    start = first[0]
    if start in "'\"":
        value, taken = _quoted(first, lines, 0, indent)
    elif start == "|":
        value, taken = _literal(first, lines, 0, indent, last=last)
    else:
        value, taken = _plain(first, lines, 0, indent)
        _as_read(value, path)
    if taken != len(lines):
        raise _Other("a scalar with blank lines after it")
    return value


# Each field of a record, as the groups of its paths in the table's order of precedence
# (records.LABEL_PATHS, TEXT_PATHS and the payload's TEXT_KEYS, TIME_PATHS).
_GROUP_OF = {path: name for name, path in _SLOTS.items()}
_LABEL_GROUPS = {
    field: tuple(_GROUP_OF[path] for path in paths) for field, paths in LABEL_PATHS.items()
}
_TEXT_GROUPS = tuple(_GROUP_OF[path] for path in TEXT_PATHS)
_PAYLOAD_GROUPS = tuple(_GROUP_OF[(*PAYLOAD_PATH, key)] for key in TEXT_KEYS)
_TIME_GROUPS = tuple(_GROUP_OF[path] for path in TIME_PATHS)
_SEVERITY_GROUP = _GROUP_OF[SEVERITY_PATH]
_INSERT_GROUP = _GROUP_OF[INSERT_ID_PATH]
_KIND_GROUP = _GROUP_OF[RESOURCE_TYPE_PATH]
assert not (set(_SLOTS) - set(_GROUP_OF.values()))


def skeleton_fields(text: str) -> EntryFields | str | None:
    """What :func:`~analyzer.ingest.records.entry_fields` makes of the document ``text`` (its
    fields, or the reason it gives no record) when the document is of the common layout, in
    one match; None when it is not of it (:class:`_Other`: it is, but outside the subset).
    The caller has checked its characters (:data:`_ODD`), as the scanner does a block's."""
    source = text + "\n"
    found = (_SKELETON or _compiled()).fullmatch(source)
    if found is None:
        return None
    lined = "\n" + source
    for line in _ONCE:
        if lined.count(line) > 1:
            return None
    values = _skeleton_values(found, len(source) - 1)
    kind = values.get(_KIND_GROUP)
    if kind and kind not in JOB_RESOURCE_TYPES:
        return OTHER_RESOURCE + kind
    message = _message_of(values, found)
    if message is None:
        return NO_MESSAGE
    return _skeleton_record_fields(values, message)


def _skeleton_values(found: re.Match[str], end: int) -> dict[str, str]:
    """The values of the skeleton's groups that matched (``end``: where the document ends),
    by group: the common scalars read here, the others as :func:`_value` reads them."""
    values: dict[str, str] = {}
    for name, raw in [pair for pair in zip(_NAMES, found.groups(), strict=True) if pair[1]]:
        first = raw[0]
        if "\n" in raw:
            values[name] = _value(raw, _INDENT[name], found.end(name) == end, _SLOTS[name])
        elif first == "'" and raw[-1] == "'" and len(raw) > 1 and "'" not in raw[1:-1]:
            values[name] = raw[1:-1]
        elif (
            first not in _UNSAFE_FIRST
            and ": " not in raw
            and " #" not in raw
            and raw[-1] not in ": "
        ):
            # Plain (as _check_plain has it), and no resolver's pattern begins so: a string.
            values[name] = raw
        else:
            values[name] = _value(raw, _INDENT[name], found.end(name) == end, _SLOTS[name])
    return values


def _message_of(values: dict[str, str], found: re.Match[str]) -> str | None:
    """The entry's text: the first text field given, else the payload's first text key;
    None when there is no payload; :class:`_Other` when the payload has no text key (its
    text is its rendering)."""
    for name in _TEXT_GROUPS:
        message = values.get(name)
        if message is not None:
            return message
    if found.group("payload") is None:
        return None
    for name in _PAYLOAD_GROUPS:
        message = values.get(name)
        if message is not None:
            return message
    raise _Other("a payload whose text is its rendering")


def _skeleton_record_fields(values: dict[str, str], message: str) -> EntryFields:
    """The record's fields from the skeleton's ``values``: each the first of its paths given
    (a label: non-empty), as the mapping's precedence has it."""
    time = None
    for name in _TIME_GROUPS:
        time = values.get(name)
        if time:
            break
    labels = []
    for names in _LABEL_GROUPS.values():
        label = None
        for name in names:
            label = values.get(name)
            if label:
                break
        labels.append(label or None)
    job_id, task, trial, vm = labels
    return EntryFields(
        job_id=job_id,
        task=task,
        trial=trial,
        vm=vm,
        text=message,
        time=time,
        severity=values.get(_SEVERITY_GROUP, "DEFAULT"),
        insert_id=values.get(_INSERT_GROUP),
    )


# Minutes (a sink timestamp's first 16 characters) known to be real ones, for time keys
# made without parsing: 2024-03-16T09:25:01.130607708Z gives 2024-03-16T09:25:01.130607000Z.
_MINUTES: set[str] = set()
_MAX_MINUTES = 1 << 16
_SINK_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:[0-5]\d\.\d{9}Z", re.ASCII)


def _time_key(value: str) -> str:
    """``time_key(parse_timestamp(value))``: ValueError or OverflowError when it is none."""
    if value[:16] in _MINUTES and _SINK_TIME.fullmatch(value):
        return value[:26] + "000Z"
    key = time_key(parse_timestamp(value))
    if _SINK_TIME.fullmatch(value) and len(_MINUTES) < _MAX_MINUTES:
        _MINUTES.add(value[:16])
    return key


def _document_fields(segment: bytes, text: str | None) -> tuple[EntryFields, str | None] | str:
    """The fields of the document ``segment`` (``text``: decoded and checked already, or
    None) and its time key, or the reason it gives no record; :class:`_Other` (or
    UnicodeDecodeError) when only the plain reader reads it right."""
    if len(segment) > LONGEST_LINE and _has_long_line(segment):
        raise _Other("a line longer than any log entry: the plain reader skips it")
    if text is None:
        text = segment.decode("utf-8")
        if _ODD.search(text) is not None:
            raise _Other("a character outside the subset")
    if text.endswith("\n"):
        text = text[:-1]
    fields = skeleton_fields(text)
    if fields is None:
        fields = entry_fields(light_entry(text))
    if isinstance(fields, str):
        return fields
    if fields.time is None:
        return fields, None
    try:
        return fields, _time_key(fields.time)
    except (ValueError, OverflowError):
        return INVALID_TIMESTAMP


def _has_long_line(segment: bytes) -> bool:
    """Whether a line of ``segment`` is longer than any log entry's can be."""
    return any(len(line) > LONGEST_LINE for line in segment.split(b"\n"))
