"""Decoding a whole block of sink JSONL lines in one call, with proof that it reads them as
the line-by-line reader would.

Parsing every line with ``orjson.loads`` builds a dict of every field of every entry, and most
of an export's lines need only a handful (who wrote them, when, and the message). msgspec
decodes a block of lines in one C call into small structs holding just those fields, and skips
the rest without building it: about half the cost. But a block decoded at once is not the same
question as each line decoded alone, and msgspec checks skipped fields less than it checks the
fields it builds. Two Hyperscan passes over the raw block settle the difference:

- every line must hold exactly one object, or be blank: each line starts with ``{`` and ends
  with ``}`` (but for JSON's spaces around it, and its ``\\n`` or ``\\r\\n``: the sink's
  own shape is checked first, empty lines between objects noted where they are; then the
  same with one space after each object; the looser one only where both fail, with each
  blank line's place; msgspec skips blank lines, and they come out as :data:`BLANK`; so
  no value can continue onto the next line: strings hold no raw newline, and after a ``}`` a
  value can only go on with ``,``, ``]`` or ``}``), and there are as many values as lines.
  The decoder takes nothing but objects (a line holding another value fails the block), so a
  line holding two values holds ``}``, spaces, then ``{``. Where nothing looks so, the count
  holds without counting; elsewhere (``"} {"`` inside a message, say) the lines are counted;
- the block must be valid UTF-8 (msgspec does not check the strings it skips).

A block that fails goes back to the line-by-line reader, which gives every line its own answer;
so does a block where msgspec finds a LogEntry string field (a label, the timestamp, the text)
holding another type. (Numbers beyond a float's range, which msgspec skips and orjson refuses,
are read by :func:`~analyzer.ingest.entries.load_json` too.) Without Hyperscan there is no cheap
proof, and every block is read line by line.
"""

from __future__ import annotations

import contextlib
import enum
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from analyzer.core import cache
from analyzer.ingest.jsonl import BLANK_LINE
from analyzer.ingest.records import (
    AUDIT_ENTRY,
    AUDIT_PATH,
    INSERT_ID_PATH,
    JOB_RESOURCE_TYPES,
    LABEL_PATHS,
    OTHER_RESOURCE,
    RESOURCE_TYPE_PATH,
    SEVERITY_PATH,
    TEXT_PATHS,
    TIME_PATHS,
    EntryPath,
)

# The first byte, after a valid prefix, at which no UTF-8 character can start or be completed.
# Anchored at the start of the block: a DFA with a few states, as fast as a literal scan.
_CONT = rb"[\x80-\xBF]"
_VALID_CHAR = (
    rb"[\x00-\x7F]|[\xC2-\xDF]" + _CONT + rb"|\xE0[\xA0-\xBF]" + _CONT
    + rb"|[\xE1-\xEC\xEE\xEF]" + _CONT + rb"{2}|\xED[\x80-\x9F]" + _CONT
    + rb"|\xF0[\x90-\xBF]" + _CONT + rb"{2}|[\xF1-\xF3]" + _CONT + rb"{3}"
    + rb"|\xF4[\x80-\x8F]" + _CONT + rb"{2}"
)  # fmt: skip
_BAD_CHAR = (
    rb"[\x80-\xC1\xF5-\xFF]"
    rb"|[\xC2-\xDF](?:[^\x80-\xBF]|$)"
    rb"|\xE0(?:[^\xA0-\xBF]|[\xA0-\xBF](?:[^\x80-\xBF]|$)|$)"
    rb"|[\xE1-\xEC\xEE\xEF](?:[^\x80-\xBF]|[\x80-\xBF](?:[^\x80-\xBF]|$)|$)"
    rb"|\xED(?:[^\x80-\x9F]|[\x80-\x9F](?:[^\x80-\xBF]|$)|$)"
    rb"|\xF0(?:[^\x90-\xBF]|[\x90-\xBF](?:[^\x80-\xBF]|[\x80-\xBF](?:[^\x80-\xBF]|$)|$)|$)"
    rb"|[\xF1-\xF3](?:[^\x80-\xBF]|[\x80-\xBF](?:[^\x80-\xBF]|[\x80-\xBF](?:[^\x80-\xBF]|$)|$)|$)"
    rb"|\xF4(?:[^\x80-\x8F]|[\x80-\x8F](?:[^\x80-\xBF]|[\x80-\xBF](?:[^\x80-\xBF]|$)|$)|$)"
)
INVALID_UTF8 = rb"^(?:" + _VALID_CHAR + rb")*(?:" + _BAD_CHAR + rb")"
# A line that does not end with "}" (before "\n" or "\r\n") or, after a line end, does not
# start with "{": the sink's own shape, checked first.
_NOT_ONE_OBJECT = (rb"[^}\r]\n", rb"[^}]\r\n", rb"\n[^{]")
# Where a line may hold two objects: "}", JSON's spaces but "\n" (msgspec takes no other
# character between values), then "{". Written as "}{", "}" one space "{", or "}" and two
# spaces (whatever follows): literals, which Hyperscan finds five times faster than "}", any
# number of spaces, "{". Every value decoded is an object (the decoder's type), so two values
# on a line always show so.
_TWO_OBJECTS = rb"\}[\t\r ]?\{|\}[\t\r ]{2}"
_TWO_OBJECTS_ID = len(_NOT_ONE_OBJECT)  # its id in the structure database
# An empty line between two objects ("}\n\n{", the commonest blank line: one in 500 in the
# bench's blank row) sets off the first and the third pattern above, both ending after its
# "\n": the sink's check explains them so and goes on, rather than leaving the whole block to
# the looser check (twice its cost, and a count of the lines before each blank one). Those two
# report every match, the others their first.
_EMPTY_LINE_IDS = (0, 2)


# The sink's shape but for one space after each object ("} \\n", the bench's space row):
# a line end after anything but "}", "\\r" or a space, and a space there after anything but
# "}". Asked after the sink's own check fails, and first for the next blocks when it held.
_SPACED_NOT_ONE_OBJECT = (rb"[^}\r ]\n", rb"[^}]\r\n", rb"\n[^{]", rb"[^}] \n")
_LINE_ENDS = (b"}\n", b"}\r\n", b"}", b"}\r")
_SPACED_LINE_ENDS = (*_LINE_ENDS, b"} \n", b"} ")


def _structure_flags(single: int, patterns: int = _TWO_OBJECTS_ID + 1) -> list[int]:
    return [0 if index in _EMPTY_LINE_IDS else single for index in range(patterns)]


# The same questions where JSON's spaces surround the objects and blank lines (only spaces,
# tabs, carriage returns: what msgspec skips between values and the plain reader counts as
# blank) come between them: asked when the sink's shape does not hold. A line whose last
# character but spaces is not "}", one whose first is not "{"; two objects; and the end of
# each blank line (every one, not the first only).
_LOOSE_NOT_ONE_OBJECT = (rb"[^}\t\r \n][\t\r ]*\n", rb"\n[\t\r ]*[^{\t\r \n]")
_LOOSE_TWO_ID = len(_LOOSE_NOT_ONE_OBJECT)
_BLANK_END = rb"\n[\t\r ]*\n"
_BLANK_ID = _LOOSE_TWO_ID + 1
_SPACES = b" \t\r"


class Shape(enum.Enum):
    """What the structure check proves of a block's lines."""

    NOT_OBJECTS = "a line does not start with { and end with }"
    ONE_OBJECT_EACH = "each line is one object"
    MAYBE_TWO = "each line starts with { and ends with }, and one may hold two objects"


class _NoLabels:
    job_id = task = vm = trial = trial_1 = None


class _NoResource:
    labels = _NoLabels


class Skipped:
    """What a block's line that gives no record decodes to: a blank line, an entry of another
    resource, an audit entry; ``reason`` is its skip reason, as the plain reader gives it.
    The scan reads it as an entry without the common fields: its labels, job and task are
    None (read without an exception, which costs ten times more: a fifth of a project-wide
    sink's lines are Skipped)."""

    __slots__ = ("reason",)
    resource = _NoResource
    labels = _NoLabels
    jsonPayload = text_1 = time = None

    def __init__(self, reason: str) -> None:
        self.reason = reason


BLANK = Skipped(BLANK_LINE)
AUDIT = Skipped(AUDIT_ENTRY)
_FOREIGN: dict[str, Skipped] = {}  # one per resource type


def _foreign(kind: str) -> Skipped:
    found = _FOREIGN.get(kind)
    if found is None:
        found = Skipped(OTHER_RESOURCE + kind)
        if len(_FOREIGN) < 1024:
            _FOREIGN[kind] = found
    return found


# The decoders' structs are built from the one LogEntry mapping (analyzer.ingest.records): each
# field
# of a record the scan reads is declared at its path there, as an attribute named after the
# record's field. The scan reads the fields of the common shape by the first of their paths
# (a line whose first path gives nothing is left to the mapping, which reads the others), and
# the optional fields (trial, VM) by all of them, in the mapping's order: field "trial" at its
# second path is attribute "trial_1".
READ_WHOLE = ("trial", "vm")


def _leaf_name(field: str, rank: int) -> str:
    return field if rank == 0 else f"{field}_{rank}"


def _declared() -> dict[EntryPath, tuple[str, Any]]:
    """Every path the decoders read: (attribute, type), from the mapping's table.

    LogEntry labels, timestamps and textPayload are strings: typed so, msgspec checks them in
    C, and a block holding another type for one of them (a hand-made file) fails as a whole
    and is read line by line, where the plain reader's checks decide. What varies in the wild
    (severity, insertId, a jsonPayload's message) is ``Any`` and checked by the scan."""
    declared: dict[EntryPath, tuple[str, Any]] = {}
    for field, paths in LABEL_PATHS.items():
        for rank, path in enumerate(paths if field in READ_WHOLE else paths[:1]):
            declared[path] = (_leaf_name(field, rank), str | None)
    declared[TEXT_PATHS[0]] = ("text", Any)  # jsonPayload's: any type, the scan checks
    for rank, path in enumerate(TEXT_PATHS[1:], 1):
        declared[path] = (_leaf_name("text", rank), str | None)
    declared[TIME_PATHS[0]] = ("time", str | None)
    declared[SEVERITY_PATH] = ("severity", Any)
    declared[INSERT_ID_PATH] = ("insert_id", Any)
    return declared


def _struct(name: str, fields: dict[EntryPath, tuple[str, Any]]) -> Any:
    """A msgspec struct decoding ``fields`` (relative paths: attribute and type), nested
    objects as structs of their own (attribute: the JSON key), every field None when absent.

    The fields are in the order the sink writes its keys, alphabetical: msgspec looks a key up
    from the field after the last one found, so in that order each lookup is one comparison.
    ``gc=False``: decoded JSON holds no reference cycles."""
    leaves: dict[str, tuple[str, Any]] = {}
    inner: dict[str, dict[EntryPath, tuple[str, Any]]] = {}
    for path, declared in fields.items():
        if len(path) == 1:
            leaves[path[0]] = declared
        else:
            inner.setdefault(path[0], {})[path[1:]] = declared
    members: list[tuple[str, str, Any]] = [(key, *leaves[key]) for key in leaves]
    for key, below in inner.items():
        assert key.isidentifier(), key  # an object's attribute is its key
        members.append((key, key, _struct(f"{name}_{key}", below) | None))
    members.sort()
    return msgspec.defstruct(
        name,
        [
            (attribute, kind, msgspec.field(default=None, name=key))
            for key, attribute, kind in members
        ],
        gc=False,
    )


def _entry_struct(name: str, *, mixed: bool) -> Any:
    """The struct of a block's entries. Strict (``mixed`` False): ``resource.type`` is one of
    a job's (:data:`~analyzer.ingest.records.JOB_RESOURCE_TYPES`) or none, and there is no audit
    payload, checked in C; any other entry fails the block, which is decoded again with the
    ``mixed`` struct (a project-wide sink), where the scan tells them apart."""
    fields = _declared()
    if mixed:
        # Only whether there is one (not null, as the mapping asks): its bytes, not its value.
        fields[AUDIT_PATH] = ("audit", msgspec.Raw)
        fields[RESOURCE_TYPE_PATH] = ("type", str | None)
    else:
        fields[AUDIT_PATH] = ("audit", None)
        fields[RESOURCE_TYPE_PATH] = ("type", Literal[tuple(sorted(JOB_RESOURCE_TYPES))] | None)
    return _struct(name, fields)


Entry: Any = _entry_struct("Entry", mixed=False)
MixedEntry: Any = _entry_struct("MixedEntry", mixed=True)
_JOB_RESOURCE_TYPES = frozenset({*JOB_RESOURCE_TYPES, "", None})  # "": no type either
_NO_PAYLOAD = (b"", b"null")

_DECODER = msgspec.json.Decoder(Entry)
_MIXED_DECODER = msgspec.json.Decoder(MixedEntry)
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


class _Guard:
    """The Hyperscan databases of the raw-block checks.

    Kept apart: one database per question scans faster here than one holding them all.
    """

    def __init__(self, hyperscan: Any, databases: tuple[Any, ...] | None = None) -> None:
        self._hyperscan = hyperscan
        if databases is None:
            single = hyperscan.HS_FLAG_SINGLEMATCH
            loose = (*_LOOSE_NOT_ONE_OBJECT, _TWO_OBJECTS, _BLANK_END)
            spaced = (*_SPACED_NOT_ONE_OBJECT, _TWO_OBJECTS)
            databases = (
                self._compile((*_NOT_ONE_OBJECT, _TWO_OBJECTS), _structure_flags(single)),
                self._compile((INVALID_UTF8,), [single]),
                # Every blank line's end is reported: the others once.
                self._compile(loose, [single] * 3 + [0]),
                self._compile(spaced, _structure_flags(single, len(spaced))),
            )
        self._structure, self._utf8, self._loose, self._spaced = databases

    def _compile(self, patterns: tuple[bytes, ...], flags: list[int]) -> Any:
        database = self._hyperscan.Database(mode=self._hyperscan.HS_MODE_BLOCK)
        database.compile(expressions=list(patterns), ids=list(range(len(patterns))), flags=flags)
        return database

    def _any(self, database: Any, block: bytes | memoryview) -> bool:
        found: list[int] = []

        def stop(_id: int, _start: int, end: int, _flags: int, _context: object) -> bool:
            found.append(end)
            return True  # one is enough: stop scanning

        with contextlib.suppress(self._hyperscan.ScanTerminated):
            database.scan(block, match_event_handler=stop)
        return bool(found)

    def shape(
        self,
        data: bytes,
        end: int | None = None,
        view: bytes | memoryview | None = None,
        empty: list[int] | None = None,
        *,
        spaced: bool = False,
    ) -> Shape:
        """What the lines of ``data[:end]`` are (``view``, if given, is the same bytes without
        a copy): whether each starts with ``{`` and ends with ``}`` (and then ``\\n`` or
        ``\\r\\n``; or, ``spaced``, a space and ``\\n``), and whether one of them may hold
        a second object. Given ``empty``, lines may also be empty (``\\n`` alone, between two
        lines of objects): the offset just after each is added to it, in order."""
        ends = _SPACED_LINE_ENDS if spaced else _LINE_ENDS
        if not (data[:1] == b"{" and data.endswith(ends, 0, end)):
            return Shape.NOT_OBJECTS
        database = self._spaced if spaced else self._structure
        two_objects = len(_SPACED_NOT_ONE_OBJECT) if spaced else _TWO_OBJECTS_ID
        found: list[int] = []

        def note(pattern: int, _start: int, at: int, _flags: int, _context: object) -> bool:
            if pattern in _EMPTY_LINE_IDS and empty is not None and data[at - 2 : at] == b"\n\n":
                if pattern:  # the same line sets off both: noted once
                    empty.append(at)
                return False
            found.append(pattern)
            # A line that is not an object ends the scan; a possible second object does not:
            # it is mostly a message's "} {", and the scan must still look for the former.
            return pattern != two_objects

        with contextlib.suppress(self._hyperscan.ScanTerminated):
            database.scan(data[:end] if view is None else view, match_event_handler=note)
        if not found:
            return Shape.ONE_OBJECT_EACH
        if found[-1] == two_objects:
            return Shape.MAYBE_TWO
        if empty is not None:
            empty.clear()
        return Shape.NOT_OBJECTS

    def loose_shape(
        self, data: bytes, end: int, view: bytes | memoryview
    ) -> tuple[Shape, list[int]]:
        """:meth:`shape` where spaces may surround the objects and lines may be blank; also
        the indexes of the blank lines, in order."""
        blanks: list[int] = []
        if data[:1] != b"{":
            # The first line: blank, or "{" after spaces.
            first = data[:256].lstrip(_SPACES)[:1]
            if first == b"\n":
                blanks.append(0)
            elif first != b"{":
                return Shape.NOT_OBJECTS, blanks
        if not data[max(0, end - 256) : end].rstrip(b" \t\r\n").endswith(b"}"):
            return Shape.NOT_OBJECTS, blanks
        ends: list[int] = []
        two = False

        def note(pattern: int, _start: int, at: int, _flags: int, _context: object) -> bool:
            nonlocal two
            if pattern == _BLANK_ID:
                ends.append(at)
                return False
            if pattern == _LOOSE_TWO_ID:
                two = True
                return False
            ends.clear()
            ends.append(-1)
            return True  # not one object a line: stop

        with contextlib.suppress(self._hyperscan.ScanTerminated):
            self._loose.scan(view, match_event_handler=note)
        if ends[-1:] == [-1]:
            return Shape.NOT_OBJECTS, blanks
        # A blank line's index: the line ends before its own.
        lines = 0
        counted = 0
        count = data.count
        for at in ends:
            lines += count(b"\n", counted, at - 1)
            counted = at - 1
            blanks.append(lines)
        if data[end - 1] != 0x0A and not data[data.rfind(b"\n", 0, end) + 1 : end].strip(_SPACES):
            blanks.append(lines + count(b"\n", counted, end))  # a blank last line, no "\n"
        return (Shape.MAYBE_TWO if two else Shape.ONE_OBJECT_EACH), blanks

    def valid_utf8(self, data: bytes, view: bytes | memoryview | None = None) -> bool:
        """Whether ``data`` is valid UTF-8, or, given ``view`` (a start of ``data``), that."""
        return data.isascii() or not self._any(self._utf8, data if view is None else view)


def _load_guard() -> _Guard | None:
    try:
        import hyperscan
    except ImportError:
        return None
    # Compiled once and kept (analyzer.core.cache): 5 ms of every run otherwise.
    name = cache.key(
        *_NOT_ONE_OBJECT,
        _TWO_OBJECTS,
        INVALID_UTF8,
        *_LOOSE_NOT_ONE_OBJECT,
        _BLANK_END,
        *_SPACED_NOT_ONE_OBJECT,
        repr(_structure_flags(hyperscan.HS_FLAG_SINGLEMATCH)),
    )
    found = cache.load("guard", name)
    if isinstance(found, tuple) and len(found) == 4:
        try:
            return _Guard(hyperscan, tuple(map(cache.load_hyperscan, found)))
        except Exception:  # built by another Hyperscan: compile again
            pass
    guard = _Guard(hyperscan)
    if cache.cache_dir() is not None:
        databases = (guard._structure, guard._utf8, guard._loose, guard._spaced)
        cache.store("guard", name, tuple(map(cache.dump_hyperscan, databases)))
    return guard


_GUARD: _Guard | bool | None = False  # False: not built yet


def available() -> bool:
    """Whether blocks can be decoded at once here (Hyperscan is installed)."""
    global _GUARD
    if _GUARD is False:
        _GUARD = _load_guard()
    return _GUARD is not None


def count_lines(data: bytes, end: int | None = None) -> int:
    """How many lines ``data[:end]`` holds (the last one may lack its ``\\n``).

    Line ends are found with ``bytes.find`` (memchr), twice as fast here as ``bytes.count``,
    which looks at one byte at a time.
    """
    if end is None:
        end = len(data)
    lines = 0
    find = data.find
    at = find(b"\n", 0, end)
    while at >= 0:
        lines += 1
        at = find(b"\n", at + 1, end)
    return lines + (end > 0 and data[end - 1] != 0x0A)


def _mixed(view: bytes | memoryview) -> list[Any] | None:
    """The entries of a block that :class:`Entry` refused, as :class:`MixedEntry`; the lines
    of other resources and the audit entries become their :class:`Skipped`, decided from the
    decoded struct as :func:`~analyzer.ingest.records.entry_fields` decides (the audit payload
    first, then the resource type). None when the block fails again (a label that is not a
    string, say)."""
    try:
        mixed = _MIXED_DECODER.decode_lines(view)
    except _DECODE_ERRORS:
        return None
    job_types = _JOB_RESOURCE_TYPES
    no_payload = _NO_PAYLOAD
    # A MixedEntry is read by the scan exactly as an Entry (the same attributes).
    return [
        (
            entry
            if (resource := entry.resource) is None or resource.type in job_types
            else _foreign(resource.type)
        )
        if not entry.audit or bytes(entry.audit) in no_payload
        else AUDIT
        for entry in mixed
    ]


def _with_blanks(entries: list[Any], blanks: list[int]) -> list[Any]:
    """``entries``, the objects of a block's lines, with :data:`BLANK` at the indexes of its
    blank lines: one item per line."""
    merged: list[Any] = []
    taken = 0
    for index in blanks:
        need = index - len(merged)
        merged += entries[taken : taken + need]
        taken += need
        merged.append(BLANK)
    merged += entries[taken:]
    return merged


@dataclass(slots=True)
class Hints:
    """What the blocks before showed, for the next one: whether one needed the decoder of
    mixed blocks (entries of other resources), the looser check of lines (spaces around the
    objects, blank lines) or the sink's with a space after each object. Set by
    :func:`decode_block`."""

    mixed: bool = False
    loose: bool = False
    spaced: bool = False


def decode_block(
    data: bytes, end: int | None = None, *, mixed: bool = False, hints: Hints | None = None
) -> list[Any] | None:
    """The entries of the block ``data[:end]`` (whole lines, the last ``\\n`` optional), one
    per line: an :class:`Entry` (or :class:`MixedEntry`), or a :class:`Skipped` for a blank
    line, an entry of another resource or an audit entry. None when only reading line by line
    gives the right answer (or Hyperscan is missing). ``data`` may go on after ``end`` (a read
    cut at its last line end): it is not copied. ``mixed``: start with the decoder of mixed
    blocks; ``hints``: start with what they say (and keep what this block shows there)."""
    if not available():
        return None
    guard = _GUARD
    assert isinstance(guard, _Guard)
    if end is None:
        end = len(data)
    if not end:
        return None
    view = data if end == len(data) else memoryview(data)[:end]
    if hints is not None:
        mixed = hints.mixed
    empty: list[int] = []  # where the sink's check found empty lines (the offset after each)
    shape, blanks = _block_shape(guard, data, end, view, empty, hints)
    if shape is Shape.NOT_OBJECTS or not guard.valid_utf8(data, view):
        return None
    part = _decoded_between(data, end, view, empty, mixed)
    if part is None:
        return None
    entries, mixed = part
    if hints is not None:
        hints.mixed = mixed and any(type(entry) is Skipped for entry in entries)
    if blanks:
        entries = _with_blanks(entries, blanks)
    if shape is Shape.MAYBE_TWO and len(entries) != count_lines(data, end):
        return None
    return entries


def _block_shape(
    guard: _Guard,
    data: bytes,
    end: int,
    view: bytes | memoryview,
    empty: list[int],
    hints: Hints | None,
) -> tuple[Shape, list[int]]:
    """The shape of the block's lines by the sink's check, the sink's with a space after
    each object, or the looser one (spaces around the objects, blank lines), and the blank
    lines the looser one found; the offsets after the empty lines the sink's found put in
    ``empty``; which check it took kept in ``hints``."""
    blanks: list[int] = []
    # After a block with blank lines the looser check found, the looser check straight away
    # (the sink's shape would fail at the next one, half a block in); spaces around the
    # objects fail it at once.
    shape = Shape.NOT_OBJECTS
    loose = hints is not None and hints.loose
    spaced = hints is not None and hints.spaced
    if not loose and not spaced:
        shape = guard.shape(data, end, view, empty)
    if shape is Shape.NOT_OBJECTS and not loose:
        shape = guard.shape(data, end, view, empty, spaced=True)
        spaced = shape is not Shape.NOT_OBJECTS
    if shape is Shape.NOT_OBJECTS:
        spaced = False
        shape, blanks = guard.loose_shape(data, end, view)
    if hints is not None:
        hints.loose = bool(blanks)
        hints.spaced = spaced
    return shape, blanks


def _decoded_between(
    data: bytes, end: int, view: bytes | memoryview, empty: list[int], mixed: bool
) -> tuple[list[Any], bool] | None:
    """The entries of the block's lines, :data:`BLANK` for each empty line the sink's check
    found (``empty``, see :func:`_block_shape`), and whether they needed the decoder of mixed
    blocks; None when only reading line by line gives the right answer."""
    if not empty:
        return _decoded(view, mixed)
    # Each stretch of lines between empty ones decoded on its own: every line of one holds
    # one object (but for MAYBE_TWO, counted by the caller), so the empty lines' indexes come
    # without counting lines.
    lines = memoryview(data)[:end]
    entries: list[Any] = []
    start = 0
    for after in empty:
        part = _decoded(lines[start : after - 1], mixed)
        if part is None:
            return None
        mixed = part[1]
        entries += part[0]
        entries.append(BLANK)
        start = after
    part = _decoded(lines[start:], mixed)
    if part is None:
        return None
    return entries + part[0], part[1]


def _decoded(view: bytes | memoryview, mixed: bool) -> tuple[list[Any], bool] | None:
    """The entries of the lines ``view`` (see :func:`decode_block`), and whether they needed
    the decoder of mixed blocks; None when only reading line by line gives the right answer.
    ``mixed``: start with that decoder."""
    if not mixed:
        try:
            return _DECODER.decode_lines(view), False
        except msgspec.ValidationError:
            pass  # an entry of another resource, or a field of another type: mixed, or none
        except _DECODE_ERRORS:
            return None
    entries = _mixed(view)
    return None if entries is None else (entries, True)
