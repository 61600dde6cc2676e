"""``gcloud logging read FILTER`` without ``--format``: YAML, one document per LogEntry.

gcloud prints each entry as a YAML document of the API's field names (``insertId``,
``jsonPayload`` and ``resource`` nested, ``timestamp: '2024-...Z'`` quoted), documents separated
by ``---`` lines, newest first. The input is read as a stream: lines are gathered up to the
next ``---`` (or ``...``) at the start of a line, which YAML forbids inside a document, and
that one document is parsed; memory stays bounded by the largest entry.

Every line is accounted for: a document's lines are used if it gave a record, else skipped
with the reason; separator lines are used; gcloud's own lines between documents (the pasted
command, ``Using endpoint [...]``) are skipped as its preamble.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

import yaml

from analyzer.ingest.entries import NOT_AN_ENTRY, record_or_reason
from analyzer.ingest.lines import text_lines
from analyzer.ingest.preamble import GCLOUD_PREAMBLE, is_preamble
from analyzer.ingest.sniff import LOGENTRY_KEYS
from analyzer.records import InputStats, LogRecord, Origin
from analyzer.yamlload import LOADER

INVALID_YAML = "invalid YAML"
BLANK_LINE = "blank line"

_MARKERS = ("---", "...")


class EntryLoader(LOADER):  # type: ignore[misc, valid-type]
    """The safe loader, with timestamps left as the strings the API gives: a LogEntry's
    ``timestamp`` is RFC 3339 text, and a reader of it parses that text itself."""


EntryLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in LOADER.yaml_implicit_resolvers.items()
}


def _label_text(value: Any) -> Any:
    # Label maps are map<string, string> in the API: a YAML scalar read as a number or a
    # boolean (written unquoted) is the string it was written as.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


def _as_entry(document: Any) -> Any:
    if not isinstance(document, dict):
        return document
    labels = document.get("labels")
    if isinstance(labels, dict):
        document["labels"] = {key: _label_text(value) for key, value in labels.items()}
    resource = document.get("resource")
    if isinstance(resource, dict) and isinstance(resource.get("labels"), dict):
        resource["labels"] = {key: _label_text(v) for key, v in resource["labels"].items()}
    return document


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
    document before it): the fast scan (``analyzer._fastscan.gcloudyaml``) hands the documents
    it does not read itself to a fresh reader, line by line, and gets this reader's answer."""

    def __init__(self, stats: InputStats) -> None:
        self.stats = stats
        self._lines: list[str] = []
        self._first = 0

    def line(self, number: int, text: str) -> LogRecord | None:
        """Take line ``number`` (its line end removed): the record of the document it ends,
        if any."""
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
        lines, self._lines = self._lines, []
        return _document(lines, self._first, self.stats)


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


def _document(lines: list[str], first: int, stats: InputStats) -> LogRecord | None:
    """The record of the document on ``lines`` (the first is line ``first``), counting them."""
    if not lines:
        return None
    if not any(line.strip() for line in lines):
        stats.skip(BLANK_LINE, len(lines))
        return None
    source = "\n".join(lines)
    try:
        if "*" in source and _has_alias(source):
            raise yaml.YAMLError("aliases")
        document = yaml.load(source, Loader=EntryLoader)
    except (yaml.YAMLError, RecursionError, ValueError):
        stats.skip(INVALID_YAML, len(lines))
        return None
    outcome = record_or_reason(_as_entry(document), Origin(stats.path, first))
    if document is None or isinstance(outcome, str):
        stats.skip(NOT_AN_ENTRY if document is None else str(outcome), len(lines))
        return None
    stats.used += len(lines)
    stats.records += 1
    return outcome
