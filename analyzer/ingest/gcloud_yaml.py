"""``gcloud logging read FILTER`` without ``--format``: YAML, one document per LogEntry.

gcloud prints each entry as a YAML document of the API's field names (``insertId``,
``jsonPayload`` and ``resource`` nested, ``timestamp: '2024-...Z'`` quoted), documents separated
by ``---`` lines, newest first. The input is read as a stream: lines are gathered up to the
next ``---`` (or ``...``) at the start of a line, which YAML forbids inside a document, and
that one document is parsed; memory stays bounded by the largest entry.

Every line is accounted for: a document's lines are used if it gave a record, else skipped
with the reason; separator lines are used; gcloud's own lines between documents (the pasted
command, ``Using endpoint [...]``) are skipped as its preamble.

Documents are parsed by PyYAML's ``CSafeLoader``. Files are read first by the hand-written
reader of gcloud's layout (:mod:`analyzer.classify._fastscan.gcloudyaml`), which hands this one only
the documents that may matter: a diagnosis of 22 MB of gcloud's YAML takes 1.68 s of CPU
that way, 4.81 s with every document parsed here, and ``yaml.load_all(CSafeLoader)`` of the
file alone 3.02 s (``bench/library_choices.py yaml``, medians of 3 interleaved runs).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any, BinaryIO

import yaml

from analyzer.core.yamlload import LOADER
from analyzer.ingest.entries import NOT_AN_ENTRY, record_or_reason
from analyzer.ingest.lines import text_lines
from analyzer.ingest.preamble import GCLOUD_PREAMBLE, is_preamble
from analyzer.ingest.records import InputStats, LogRecord, Origin
from analyzer.ingest.sniff import LOGENTRY_KEYS

INVALID_YAML = "invalid YAML"
BLANK_LINE = "blank line"

_MARKERS = ("---", "...")


_STR = "tag:yaml.org,2002:str"
_TYPED = frozenset(f"tag:yaml.org,2002:{name}" for name in ("bool", "int", "float"))

# YAML 1.2's core schema (spec 10.3.2): the plain scalars that are not strings. gcloud's printer
# (Cloud SDK core/resource/yaml_printer.py: ruamel.yaml, typ "safe", YAML 1.2 unless the user
# asks for yaml(version=1.1)) quotes a string only where its own 1.2 resolver would read the
# plain form as something else: "yes", "no", "on", "off", "y", "1:20" are written plain (a 1.1
# reader such as PyYAML's makes bools and base-60 numbers of them), while "123", "017", "1_000",
# "+1", "0x1F", "1e3", "true", "null", "~" and timestamps are quoted. One form differs from the
# core schema: ruamel's 1.2 float takes a leading-dot number only with a signed exponent
# (".5e-3", not ".5e3"), so it writes the string ".5e3" plain; this table follows the printer
# there, and only there. (ruamel.yaml 0.19.1's resolver.py, read: its other 1.2 forms beyond the
# core schema, "0b101", "1_000", "017", are quoted when they are strings, so the core schema's
# reading of them cannot differ from the printer's meaning.)
CORE_SCHEMA: tuple[tuple[str, str, str], ...] = (
    ("bool", r"(?:true|True|TRUE|false|False|FALSE)\Z", "tTfF"),
    ("int", r"(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)\Z", "-+0123456789"),
    (
        "float",
        r"(?:[-+]?(?:[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+"
        r"|\.[0-9]+(?:[eE][-+][0-9]+)?|\.(?:inf|Inf|INF))|\.(?:nan|NaN|NAN))\Z",
        "-+0123456789.",
    ),
    ("null", r"(?:~|null|Null|NULL|)\Z", "~nN"),
)
_INT = re.compile(CORE_SCHEMA[1][1])
_FLOAT = re.compile(CORE_SCHEMA[2][1])


def _core_resolvers() -> dict[Any, list[tuple[str, re.Pattern[str]]]]:
    resolvers: dict[Any, list[tuple[str, re.Pattern[str]]]] = {}
    for name, pattern, first in CORE_SCHEMA:
        compiled = re.compile(pattern)
        for character in (*first, *([""] if name == "null" else [])):
            resolvers.setdefault(character, []).append((f"tag:yaml.org,2002:{name}", compiled))
    return resolvers


class EntryLoader(LOADER):  # type: ignore[misc, valid-type]
    """The safe loader (libyaml's when PyYAML has it) resolving plain scalars by YAML 1.2's
    core schema (:data:`CORE_SCHEMA`), as gcloud's printer writes them: everything but nulls,
    bools and 1.2's numbers is a string. No timestamps: a LogEntry's ``timestamp`` is RFC 3339
    text, and a reader of it parses that text itself."""


EntryLoader.yaml_implicit_resolvers = _core_resolvers()


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    value = loader.construct_scalar(node)
    if _INT.match(value) is None:  # (an explicit !!int of 1.1's forms: PyYAML's reading)
        return int(yaml.constructor.SafeConstructor.construct_yaml_int(loader, node))
    if value[:2] == "0o":
        return int(value[2:], 8)
    if value[:2] == "0x":
        return int(value[2:], 16)
    return int(value)  # decimal, leading zeros too: 0777 is 777 in 1.2 (511 in 1.1)


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    value = loader.construct_scalar(node)
    if _FLOAT.match(value) is None:
        return float(yaml.constructor.SafeConstructor.construct_yaml_float(loader, node))
    last = value[-3:].lower()
    if last == "inf":
        return -math.inf if value[0] == "-" else math.inf
    if last == "nan":
        return math.nan
    return float(value)


EntryLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
EntryLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)


class Yaml11Loader(LOADER):  # type: ignore[misc, valid-type]
    """PyYAML's own YAML 1.1 resolution (timestamps aside), for a document after a ``%YAML
    1.1`` directive: ``gcloud ... --format='yaml(version=1.1)'`` writes one before each entry
    and quotes by 1.1's rules then (``'yes'``), so a plain ``yes`` there is a bool."""


Yaml11Loader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in LOADER.yaml_implicit_resolvers.items()
}

# LogEntry fields that are strings in the API (proto strings, an enum's name, map<string,
# string>; "*": any key of the map). gcloud prints a string that looks like a number or a bool
# quoted ('123', 'true'), so such a field written plain comes from another writer; its text is
# what was written (textPayload: 0x1F is the text "0x1F", not 31) where the schema would make a
# number or a bool of it. A plain null (~, null, nothing) stays null: no text was given.
# jsonPayload is a Struct: its values are JSON's, a number there is a number (as in a sink's
# JSON), and its rendering says so. The times are left out: a Timestamp is RFC 3339 text, and a
# number there is no time either way; read as the number, the record has no time, as the JSON
# readers read the same entry.
TEXT_FIELDS: frozenset[tuple[str, ...]] = frozenset(
    {
        ("insertId",),
        ("logName",),
        ("severity",),
        ("spanId",),
        ("textPayload",),
        ("trace",),
        ("labels", "*"),
        ("resource", "type"),
        ("resource", "labels", "*"),
    }
)


def _tree(paths: frozenset[tuple[str, ...]]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path in paths:
        at = tree
        for key in path[:-1]:
            at = at.setdefault(key, {})
        at[path[-1]] = None
    return tree


_TEXT_TREE = _tree(TEXT_FIELDS)


def is_text_field(path: tuple[str, ...]) -> bool:
    """Whether ``path`` (keys from the entry down) is one of :data:`TEXT_FIELDS`."""
    return path in TEXT_FIELDS or (*path[:-1], "*") in TEXT_FIELDS


def _written_as_text(node: yaml.Node, tree: dict[str, Any]) -> None:
    """Tag the plain scalars at :data:`TEXT_FIELDS` under ``node`` that resolved to a bool or
    a number as the strings they were written as (before the document is constructed)."""
    if not isinstance(node, yaml.MappingNode):
        return
    every = tree.get("*", False)
    for key, value in node.value:
        if every is not False:
            below = every
        elif isinstance(key, yaml.ScalarNode) and key.value in tree:
            below = tree[key.value]
        else:
            continue
        if below is not None:
            _written_as_text(value, below)
        elif isinstance(value, yaml.ScalarNode) and not value.style and value.tag in _TYPED:
            # (Plain: style None from PyYAML's composer, "" from libyaml's.)
            value.tag = _STR


def load_entry(source: str, loader: type[yaml.SafeLoader] = EntryLoader) -> Any:
    """The one document of ``source``, read by ``loader`` with :data:`TEXT_FIELDS` as
    written; raises what PyYAML raises."""
    reading = loader(source)
    try:
        node = reading.get_single_node()
        if node is None:
            return None
        _written_as_text(node, _TEXT_TREE)
        return reading.construct_document(node)
    finally:
        reading.dispose()


def _has_alias(source: str) -> bool:
    """Whether the document refers to an anchor: gcloud writes none, and a payload of nested
    aliases (a "billion laughs") would be rendered to text exponentially large."""
    return any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(source, EntryLoader))


def _top_key(text: str) -> str | None:
    key, colon, _ = text.partition(":")
    return key if colon and key.isidentifier() else None


class DocumentReader:
    """The reader's state between lines: the lines of the document being gathered.

    What follows a ``---`` line is read the same whatever came before it (the marker ends the
    document before it): the fast scan (``analyzer.classify._fastscan.gcloudyaml``) hands the
    documents
    it does not read itself to a fresh reader, line by line, and gets this reader's answer."""

    def __init__(self, stats: InputStats) -> None:
        self.stats = stats
        self._lines: list[str] = []
        self._first = 0
        # Lines beginning with "%" not yet known to be directives (they are when a "---" line
        # follows them), and the directives of the document being gathered.
        self._held: list[tuple[int, str]] = []
        self._directives: list[str] = []

    def line(self, number: int, text: str) -> LogRecord | None:
        """Take line ``number`` (its line end removed): the record of the document it ends,
        if any."""
        if text[:1] == "%":
            # A directive (%YAML 1.1, %TAG ...) if a "---" line follows: it then ends the
            # document before it (PyYAML reads it so without the "..." YAML asks for) and
            # belongs to the next. Else it is a line of the document (a quoted scalar's, which
            # PyYAML takes unindented).
            self._held.append((number, text))
            return None
        if self._held and text.rstrip() == "---":
            held, self._held = self._held, []
            record = self.end()
            self._directives = [line for _, line in held]
            self.stats.used += len(held) + 1
            return record
        if self._held:
            self._unhold()
        if text.rstrip() in _MARKERS:
            record = self.end()
            self.stats.used += 1
            return record
        at_top = text[:1] not in (" ", "\t", "")
        if at_top and _top_key(text) not in LOGENTRY_KEYS and is_preamble(text):
            record = self.end()
            self.stats.skip(GCLOUD_PREAMBLE)
            return record
        if not self._lines:
            self._first = number
        self._lines.append(text)
        return None

    def end(self) -> LogRecord | None:
        """The record of the document gathered so far (the input ends, or a marker does)."""
        if self._held:
            self._unhold()
        lines, self._lines = self._lines, []
        if not lines:
            return None
        directives, self._directives = self._directives, []
        return _document(lines, self._first, self.stats, directives)

    def _unhold(self) -> None:
        for number, text in self._held:
            if not self._lines:
                self._first = number
            self._lines.append(text)
        self._held = []


def read_gcloud_yaml(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per YAML document of ``stream`` that is a LogEntry."""
    reader = DocumentReader(stats)
    line = reader.line
    for number, text in text_lines(stream, stats):
        record = line(number, text)
        if record is not None:
            yield record
    record = reader.end()
    if record is not None:
        yield record


def _loader(directives: list[str]) -> type[yaml.SafeLoader]:
    """The loader of a document after ``directives``: YAML 1.1's after ``%YAML 1.1`` (or 1.0),
    else 1.2's core schema (gcloud's default, and what a document without a directive is)."""
    for directive in reversed(directives):
        name, _, rest = directive.partition(" ")
        if name == "%YAML":
            major, _, minor = rest.strip().partition(".")
            return Yaml11Loader if major == "1" and minor[:1] in ("0", "1") else EntryLoader
    return EntryLoader


def _document(
    lines: list[str], first: int, stats: InputStats, directives: list[str]
) -> LogRecord | None:
    """The record of the document on ``lines`` (the first is line ``first``; ``directives``
    before it), counting them."""
    if not any(line.strip() for line in lines):
        stats.skip(BLANK_LINE, len(lines))
        return None
    source = "\n".join(lines)
    loader: type[yaml.SafeLoader] = EntryLoader
    if directives:
        # PyYAML checks them (a second %YAML, a version 2 make the document invalid) and reads
        # %TAG's handles; which schema the document is read by is the loader's.
        source = "\n".join([*directives, "---", source])
        loader = _loader(directives)
    try:
        if "*" in source and _has_alias(source):
            raise yaml.YAMLError("aliases")
        document = load_entry(source, loader)
    except (yaml.YAMLError, RecursionError, ValueError):
        stats.skip(INVALID_YAML, len(lines))
        return None
    outcome = record_or_reason(document, Origin(stats.path, first))
    if document is None or isinstance(outcome, str):
        stats.skip(NOT_AN_ENTRY if document is None else str(outcome), len(lines))
        return None
    stats.used += len(lines)
    stats.records += 1
    return outcome
