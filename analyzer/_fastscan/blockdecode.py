"""Decoding a whole block of sink JSONL lines in one call, with proof that it reads them as
the line-by-line reader would.

Parsing every line with ``orjson.loads`` builds a dict of every field of every entry, and most
of an export's lines need only a handful (who wrote them, when, and the message). msgspec
decodes a block of lines in one C call into small structs holding just those fields, and skips
the rest without building it: about half the cost. But a block decoded at once is not the same
question as each line decoded alone, and msgspec checks skipped fields less than it checks the
fields it builds. Two Hyperscan passes over the raw block settle the difference:

- every line must hold exactly one object: each line starts with ``{`` and ends with ``}``
  (before its ``\\n`` or ``\\r\\n``; so
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
from typing import Any, Literal, cast

import msgspec

from analyzer import cache
from analyzer.records import JOB_RESOURCE_TYPES, TRIAL_LABELS, VM_LABEL

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
# start with "{".
_NOT_ONE_OBJECT = (rb"[^}\r]\n", rb"[^}]\r\n", rb"\n[^{]")
# Where a line may hold two objects: "}", JSON's spaces but "\n" (msgspec takes no other
# character between values), then "{". Written as "}{", "}" one space "{", or "}" and two
# spaces (whatever follows): literals, which Hyperscan finds five times faster than "}", any
# number of spaces, "{". Every value decoded is an object (the decoder's type), so two values
# on a line always show so.
_TWO_OBJECTS = rb"\}[\t\r ]?\{|\}[\t\r ]{2}"
_TWO_OBJECTS_ID = len(_NOT_ONE_OBJECT)  # its id in the structure database


class Shape(enum.Enum):
    """What the structure check proves of a block's lines."""

    NOT_OBJECTS = "a line does not start with { and end with }"
    ONE_OBJECT_EACH = "each line is one object"
    MAYBE_TWO = "each line starts with { and ends with }, and one may hold two objects"


class ResourceLabels(msgspec.Struct, gc=False):
    """``resource.labels`` of an entry: the fields worker identity is read from."""

    job_id: str | None = None
    task_name: str | None = None


class Resource(msgspec.Struct, gc=False):
    """``resource`` of an entry: its labels, and its type, one of a job's
    (:data:`~analyzer.records.JOB_RESOURCE_TYPES`) or none: checked in C, any other type
    fails the block, which is decoded again as :class:`MixedEntry` (a project-wide sink)."""

    labels: ResourceLabels | None = None
    type: Literal["ml_job", "cloudml_job"] | None = None


class Labels(msgspec.Struct, gc=False):
    """The entry's ``labels`` that bookkeeping reads (every other label is skipped)."""

    vm: str | None = msgspec.field(default=None, name=VM_LABEL)
    ml_trial_id: str | None = msgspec.field(default=None, name=TRIAL_LABELS[1])
    trial_id: str | None = msgspec.field(default=None, name=TRIAL_LABELS[0])


class Payload(msgspec.Struct, gc=False):
    """``jsonPayload``: only its message."""

    message: Any = None


class Entry(msgspec.Struct, gc=False):
    """The fields of a ``LogEntry`` a record of the common shape is made of.

    A LogEntry's labels (job, task, VM, trial), timestamp and textPayload are strings: typed
    so, msgspec checks them in C, and a block holding another type for one of them (a
    hand-made file) fails as a whole and is read line by line, where the plain reader's checks
    decide. What varies in the wild (severity, insertId, a jsonPayload's message) is ``Any``
    and checked by the bookkeeping. ``gc=False``: decoded JSON holds no reference cycles.

    The fields (here and in the structs inside) are in the order the sink writes its keys,
    alphabetical: msgspec looks a key up from the field after the last one found, so in that
    order each lookup is one comparison.
    """

    insertId: Any = None  # the LogEntry fields keep their JSON names
    jsonPayload: Payload | None = None
    labels: Labels | None = None
    # An audit entry (whose lines the one mapping skips) fails the block, as another resource
    # type does.
    protoPayload: None = None
    resource: Resource | None = None
    severity: Any = None
    textPayload: str | None = None
    timestamp: str | None = None


class MixedResource(msgspec.Struct, gc=False):
    """:class:`Resource` of any type."""

    labels: ResourceLabels | None = None
    type: str | None = None


class MixedEntry(msgspec.Struct, gc=False):
    """:class:`Entry` of a block holding entries of other resources or audit entries (a
    project-wide sink): the same fields, read the same way, but for these two."""

    insertId: Any = None
    jsonPayload: Payload | None = None
    labels: Labels | None = None
    # Only whether there is one (not null, as the mapping asks): its bytes, not its value.
    protoPayload: msgspec.Raw = msgspec.Raw()
    resource: MixedResource | None = None
    severity: Any = None
    textPayload: str | None = None
    timestamp: str | None = None


# What the scan makes of a line that belongs to no job: an entry without resource, which it
# reads line by line, so that the one mapping gives the skip reason.
_LINE_BY_LINE = Entry()
_JOB_RESOURCE_TYPES = frozenset({*JOB_RESOURCE_TYPES, None})
_NO_PAYLOAD = (b"", b"null")

_DECODER = msgspec.json.Decoder(Entry)
_MIXED_DECODER = msgspec.json.Decoder(MixedEntry)
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


class _Guard:
    """The Hyperscan databases of the raw-block checks.

    Kept apart: one database per question scans faster here than one holding them all.
    """

    def __init__(self, hyperscan: Any, databases: tuple[Any, Any] | None = None) -> None:
        self._hyperscan = hyperscan
        if databases is None:
            single = hyperscan.HS_FLAG_SINGLEMATCH
            databases = (
                self._compile((*_NOT_ONE_OBJECT, _TWO_OBJECTS), single),
                self._compile((INVALID_UTF8,), single),
            )
        self._structure, self._utf8 = databases

    def _compile(self, patterns: tuple[bytes, ...], flags: int) -> Any:
        database = self._hyperscan.Database(mode=self._hyperscan.HS_MODE_BLOCK)
        database.compile(
            expressions=list(patterns),
            ids=list(range(len(patterns))),
            flags=[flags] * len(patterns),
        )
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
        self, data: bytes, end: int | None = None, view: bytes | memoryview | None = None
    ) -> Shape:
        """What the lines of ``data[:end]`` are (``view``, if given, is the same bytes without
        a copy): whether each starts with ``{`` and ends with ``}`` (and then ``\\n`` or
        ``\\r\\n``), and whether one of them may hold a second object."""
        if not (data[:1] == b"{" and data.endswith((b"}\n", b"}\r\n", b"}", b"}\r"), 0, end)):
            return Shape.NOT_OBJECTS
        found: list[int] = []

        def note(pattern: int, _start: int, _end: int, _flags: int, _context: object) -> bool:
            found.append(pattern)
            # A line that is not an object ends the scan; a possible second object does not:
            # it is mostly a message's "} {", and the scan must still look for the former.
            return pattern != _TWO_OBJECTS_ID

        with contextlib.suppress(self._hyperscan.ScanTerminated):
            self._structure.scan(data[:end] if view is None else view, match_event_handler=note)
        if not found:
            return Shape.ONE_OBJECT_EACH
        return Shape.MAYBE_TWO if found[-1] == _TWO_OBJECTS_ID else Shape.NOT_OBJECTS

    def valid_utf8(self, data: bytes, view: bytes | memoryview | None = None) -> bool:
        """Whether ``data`` is valid UTF-8, or, given ``view`` (a start of ``data``), that."""
        return data.isascii() or not self._any(self._utf8, data if view is None else view)


def _load_guard() -> _Guard | None:
    try:
        import hyperscan
    except ImportError:
        return None
    # Compiled once and kept (analyzer.cache): 5 ms of every run otherwise.
    name = cache.key(*_NOT_ONE_OBJECT, _TWO_OBJECTS, INVALID_UTF8)
    found = cache.load("guard", name)
    if isinstance(found, tuple) and len(found) == 2:
        try:
            structure, utf8 = map(cache.load_hyperscan, found)
            return _Guard(hyperscan, (structure, utf8))
        except Exception:  # built by another Hyperscan: compile again
            pass
    guard = _Guard(hyperscan)
    if cache.cache_dir() is not None:
        cache.store(
            "guard", name, tuple(map(cache.dump_hyperscan, (guard._structure, guard._utf8)))
        )
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


def _mixed(view: bytes | memoryview) -> list[Entry] | None:
    """The entries of a block that :class:`Entry` refused, as :class:`MixedEntry`; the lines
    of other resources and the audit entries become :data:`_LINE_BY_LINE`. None when the block
    fails again (a label that is not a string, say)."""
    try:
        mixed = _MIXED_DECODER.decode_lines(view)
    except _DECODE_ERRORS:
        return None
    job_types = _JOB_RESOURCE_TYPES
    # A MixedEntry is read by the scan exactly as an Entry (the same attributes).
    return cast(
        "list[Entry]",
        [
            entry
            if bytes(entry.protoPayload) in _NO_PAYLOAD
            and (entry.resource is None or entry.resource.type in job_types)
            else _LINE_BY_LINE
            for entry in mixed
        ],
    )


def decode_block(data: bytes, end: int | None = None) -> list[Entry] | None:
    """The entries of the block ``data[:end]`` (whole lines, the last ``\\n`` optional), one
    per line; None when only reading line by line gives the right answer (or Hyperscan is
    missing). ``data`` may go on after ``end`` (a read cut at its last line end): it is not
    copied."""
    if not available():
        return None
    guard = _GUARD
    assert isinstance(guard, _Guard)
    if end is None:
        end = len(data)
    if not end:
        return None
    view = data if end == len(data) else memoryview(data)[:end]
    shape = guard.shape(data, end, view)
    if shape is Shape.NOT_OBJECTS or not guard.valid_utf8(data, view):
        return None
    entries: list[Entry] | None
    try:
        entries = _DECODER.decode_lines(view)
    except msgspec.ValidationError:
        entries = _mixed(view)
    except _DECODE_ERRORS:
        return None
    if entries is None:
        return None
    if shape is Shape.MAYBE_TWO and len(entries) != count_lines(data, end):
        return None
    return entries
