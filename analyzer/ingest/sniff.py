"""Recognising an input's format from a window of its first lines."""

from __future__ import annotations

import codecs
import contextlib
import re
from enum import StrEnum
from typing import Any

import orjson

from analyzer.core.errors import InputError
from analyzer.ingest import tables
from analyzer.ingest.jobs_list import is_jobs_list
from analyzer.ingest.lines import BOM
from analyzer.ingest.parquet import NOT_PARQUET, PARQUET, is_parquet, is_whole_parquet
from analyzer.ingest.preamble import is_preamble_bytes

# How many bytes after the leading blank space are looked at: enough for the window of lines
# below and to judge whether the bytes are text.
SNIFF_LIMIT = 1 << 16

SEVERITIES = frozenset(
    {"DEFAULT", "DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY"}
)


class Format(StrEnum):
    """The input formats ingest reads (``InputStats.format``)."""

    CLOUD_LOGGING_JSONL = "cloud-logging-jsonl"
    GCLOUD_JSON = "gcloud-json"  # also the Logs Explorer's JSON download: an array too
    # The Logging API's own answer: entries:list response bodies, {"entries": [...], ...}.
    LOGGING_API = "logging-api-response"
    GCLOUD_YAML = "gcloud-yaml"
    STREAM_LOGS = "stream-logs"
    LOGS_EXPLORER = "logs-explorer"
    EXPLORER_CSV = "logs-explorer-csv"
    EXPLORER_SUMMARY = "logs-explorer-summary"
    # gcloud ai custom-jobs list (or ai-platform jobs list) as a table: states, not logs.
    JOBS_LIST = "gcloud-jobs-list"
    # A Jupyter notebook (.ipynb, nbformat 4): its cells' saved outputs.
    NOTEBOOK = "jupyter-notebook"
    # Tables of entries (analyzer.ingest.tables): a CSV by its header (gcloud's csv print,
    # pandas), gcloud's table and value prints, pandas' JSON orients; Parquet (ingest.parquet).
    CSV_TABLE = tables.CSV_TABLE
    GCLOUD_TABLE = tables.GCLOUD_TABLE
    GCLOUD_VALUE = tables.GCLOUD_VALUE
    GCLOUD_FLATTENED = tables.GCLOUD_FLATTENED
    JSON_TABLE = tables.JSON_TABLE
    PARQUET = PARQUET
    PLAIN_TEXT = "plain-text"
    EMPTY = "empty"


_SEVERITY = rb"(?:" + b"|".join(word.encode() for word in sorted(SEVERITIES)) + rb")"
_STREAM_LOGS_LINE = re.compile(
    rb"^" + _SEVERITY + rb"[ \t]+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}(?:[ \t]|$)"
)
_EXPLORER_LINE = re.compile(
    rb"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{1,9} [A-Za-z+\-][\w+\-:]*[ \t]*$"
)
# A Logs Explorer summary line: severity, an RFC 3339 time, the summary fields in brackets.
SUMMARY_LINE = re.compile(
    r"^(?P<severity>" + "|".join(sorted(SEVERITIES)) + r")[ \t]+"
    r"(?P<time>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?)"
    # Not stream-logs' "HH:MM:SS +0000" (that format's line).
    r"(?![ \t]+[+-]\d{4}(?:[ \t]|$))"
    # The page's local time may carry its zone's name (2024-03-01 11:00:00.000 CET).
    r"(?:[ \t]+(?P<zone>[A-Z]{1,5}))?"
    r"(?:[ \t]+\[(?P<fields>[^\]]*)\])?(?:[ \t]|$)"
)
_SUMMARY_BYTES = re.compile(SUMMARY_LINE.pattern.encode())
# A console copy with the time of day only: "18:51:16.318 Job completed successfully."
CLOCK_LINE = re.compile(r"^(?P<clock>\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)[ \t]+(?=\S)")
_CLOCK_BYTES = re.compile(CLOCK_LINE.pattern.encode())

# The top-level keys of a LogEntry (API field names): what gcloud's YAML documents and the
# Logs Explorer CSV header are made of.
LOGENTRY_KEYS = frozenset(
    {
        "errorGroups", "httpRequest", "insertId", "jsonPayload", "labels", "logName",
        "operation", "protoPayload", "receiveLocation", "receiveTimestamp", "resource",
        "severity", "sourceLocation", "spanId", "split", "textPayload", "timestamp", "trace",
        "traceSampled", "apphub", "apphubDestination",
    }
)  # fmt: skip
_YAML_KEY = re.compile(rb"^([A-Za-z]\w*):(?:[ \t]|$)")
_YAML_MARKERS = (b"---", b"...")

# Words only the logs of a training job (or gcloud, the SDK, the console around one) hold: a
# plain text with none of them in its window is no log export (a README, notes, another tool's
# log), and a run that finds no job in it says so rather than "no job found".
_PLATFORM_WORDS = re.compile(
    rb"(?i)aiplatform|ai[- ]platform|ml[- ]?engine|cloud[- ]?ml|custom[- ]?jobs?\b|training"
    rb"[- ]?pipelines?\b|hyperparameter|ml_job|ml\.googleapis\.com|vertex|jobstate|pipelinestate"
    rb"|workerpool\d|\b(?:master|worker|ps|evaluator)[- ]replica|\breplica\b|\bjob \[|\bjob "
    rb"(?:failed|completed|is |will |submitted|creation)|waiting for (?:job|training)|training "
    rb"program|\bgcloud\b|console\.cloud\.google\.com|\bjob_?id\b|task completed|exit code"
    rb"|termination reason|quota|resource_exhausted"
)


def mentions_platform(head: bytes) -> bool:
    """Whether ``head`` holds a word of a training job's logs (:data:`_PLATFORM_WORDS`)."""
    return _PLATFORM_WORDS.search(head) is not None


# How many lines of other text may come before a text format's first entry (a title, a note).
_STRAY_LINES = 5
# How many lines of the head decide: enough to see past a preamble and a few long entries.
WINDOW_LINES = 400

# What text is not: an undecodable byte (replaced by U+FFFD) or a control character other
# than those real text logs carry (backspace, tab, line ends, form feed, ANSI escape).
_BINARY_CHAR = re.compile("[\ufffd\x00-\x07\x0e-\x1a\x1c-\x1f]")
# The same characters as bytes, to rule them all out at C speed (most heads hold none).
_BINARY_BYTES = bytes([*range(0x00, 0x08), *range(0x0E, 0x1B), *range(0x1C, 0x20)])
_REPLACEMENT_CHAR = "\ufffd".encode()
_WHITESPACE = re.compile(r"\s")
# How the binary data an error names is told (any other character of _BINARY_CHAR: control
# bytes).
_BINARY_NAMES = {"\x00": "NUL byte", "\ufffd": "undecodable bytes"}


def _check_text(head: bytes, name: str, first_line: int = 1) -> None:
    """Raise InputError when ``head`` looks binary: mostly NUL bytes, other control bytes or
    undecodable bytes.

    A few of them are a damaged text log, kept: a log writer that crashed leaves NUL bytes
    where its last block was, a bad disk flips a byte. The lines that hold them are counted
    skipped by the readers (invalid JSON) or read with the characters shown escaped; refusing
    the whole input for one such line would lose every other line of it."""
    if _plain_text(head):
        return
    # A sample may cut a multi-byte character: decode incrementally, not final.
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(head, final=False)
    bad = len(_BINARY_CHAR.findall(text))
    # Of the text that is not whitespace: blank lines before it (padding) do not dilute it.
    if bad and bad * 10 >= len(text) - len(_WHITESPACE.findall(text)):
        first = _BINARY_CHAR.search(text)
        assert first is not None
        line = text.count("\n", 0, first.start()) + first_line
        what = _BINARY_NAMES.get(first.group(), "control bytes")
        raise InputError(
            f"{name}: binary data ({what}) at line {line}, "
            "pass a log export (JSON, JSON lines or text), decompressed or .gz"
        )


def _plain_text(head: bytes) -> bool:
    """Whether ``head`` holds none of what :func:`_check_text` counts: valid UTF-8 (but maybe
    for a character cut at the end), with no U+FFFD and no control byte of ``_BINARY_CHAR``.

    The common case, decided in C: a regex count over the decoded text costs 0.2 ms a file,
    and a folder of small sink files has thousands.
    """
    if _REPLACEMENT_CHAR in head or len(head.translate(None, _BINARY_BYTES)) != len(head):
        return False
    if head.isascii():
        return True
    try:
        codecs.getincrementaldecoder("utf-8")("strict").decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True


def sniff(head: bytes, name: str, *, complete: bool = True, first_line: int = 1) -> Format:
    """The format of an input whose first bytes are ``head`` (see ``streams.read_head``).

    Decided from a window of its first lines, not the first one: gcloud's preambles and
    trailers (:mod:`analyzer.ingest.preamble`) are looked past, and a text format is the one
    most of the other lines have. ``complete`` False: ``head`` stops inside the input, so its
    last line may be cut; ``first_line`` is the line number ``head`` starts at. Raises
    InputError naming ``name`` and the line when the bytes are binary.
    """
    if is_parquet(head):
        # A whole input seen (a small file, a paste) that is not Parquet end to end is refused
        # up front, as binary data is: it cannot be read row by row.
        if complete and not is_whole_parquet(head):
            raise InputError(f"{name}: {NOT_PARQUET}")
        return Format.PARQUET
    if head.startswith(BOM):
        head = head[len(BOM) :]
    _check_text(head, name, first_line)
    body = head.lstrip()
    if not body:
        return Format.EMPTY
    if _NOTEBOOK_NAME.search(name) or _NOTEBOOK_START.match(body):
        # Read (and checked) whole by its reader: a damaged one is said there, in one line.
        return Format.NOTEBOOK
    structured = _json_format(body, name)
    if structured is not None:
        return structured
    lines = body.split(b"\n", WINDOW_LINES)
    cut = b""
    if len(lines) > WINDOW_LINES or not complete:
        cut = lines.pop()  # beyond the window, or cut by the head's end
    window = [line.rstrip(b"\r") for line in lines]
    filled = [line for line in window if line.strip() and not is_preamble_bytes(line)]
    if not filled and cut.strip() and not is_preamble_bytes(cut):
        # A first line longer than the head (a minified blob, a traceback flattened into one
        # line): its start is all there is to go by. Read as stream-logs for want of whole
        # lines, the job's messages after it were skipped as "not a stream-logs line".
        filled = [cut]
    if not filled:
        # Only gcloud's own lines (a stream-logs run cut before its first row): its reader
        # skips them.
        return Format.STREAM_LOGS
    return _text_format(filled, name)


# A notebook by its name, or by its content: nbformat writes its keys sorted, "cells" first
# (nbformat.v4.nbjson.BytesEncoder: sort_keys), and other writers name the version near it.
_NOTEBOOK_NAME = re.compile(r"(?i)\.ipynb(?:\.gz)?$")
_NOTEBOOK_START = re.compile(
    rb'\{\s*"cells"\s*:\s*\[|\{\s*(?:"[^"]*"\s*:\s*(?:"[^"]*"|\d+|\{\s*\})\s*,\s*){0,3}"nbformat"\s*:\s*4\b'
)


def _json_format(body: bytes, name: str) -> Format | None:
    """The format of a head that starts as JSON does (an API response, a gcloud array, a
    pretty-printed object, JSON lines), or None when ``body`` is text."""
    if body[:1] in (b"{", b"[") and tables.sniff_json_table(body):
        return Format.JSON_TABLE
    if body[:1] in (b"{", b"[") and (_API_ERROR.match(body) or _api_fields(body)):
        return _api_response(body, name)
    if _EMPTY_RESPONSES.fullmatch(body):
        # What entries:list answers when nothing matched (and no other export writes): read
        # as responses, as an empty gcloud array is read (an input that holds no entry).
        return Format.LOGGING_API
    # "[" alone could start a bracketed text log line ("[2022-09-21 ...] INFO").
    if body[:1] == b"[" and body[1:].lstrip()[:1] in (b"{", b"]", b""):
        return Format.GCLOUD_JSON
    if _STATUS_START.match(body) or _LOOSE_START.match(body):
        # A Google API's error body without its "error" wrapper (google.rpc.Status), or an
        # entry copied as a JavaScript object (a key without quotes): read as JSON values of
        # their own, which the entry reader reads (ingest.entries, ingest.loose).
        return Format.GCLOUD_JSON
    if body[:1] == b"{":
        # A "{" alone on its line opens a pretty-printed object (entries copied from the Logs
        # Explorer, one after another): JSON values over many lines, read like an array's.
        if body.split(b"\n", 1)[0].strip() == b"{":
            return Format.GCLOUD_JSON
        return Format.CLOUD_LOGGING_JSONL
    return None


def _text_format(filled: list[bytes], name: str) -> Format:
    """The format of a text whose window's non-blank lines (gcloud's own lines left out) are
    ``filled``: a CSV download, YAML documents, a jobs list, or the text format most of the
    lines are in."""
    table = tables.sniff_table(filled)
    if table is not None:
        return Format(table)
    if _csv_header(filled[0]):
        return Format.EXPLORER_CSV
    if sum(1 for line in filled if _headless_csv_row(line)) * 2 > len(filled):
        raise InputError(f"{name}: {HEADLESS_CSV}")
    if _yaml_documents(filled):
        return Format.GCLOUD_YAML
    if is_jobs_list(filled):
        return Format.JOBS_LIST
    # How many of the lines each text format explains: stream-logs prefixes every line; an
    # entry of the Logs Explorer's copy or summary goes on over the lines after its first (the
    # task, a traceback), once its first entry starts near the top.
    votes = {
        Format.STREAM_LOGS: sum(1 for line in filled if _STREAM_LOGS_LINE.match(line)),
        Format.LOGS_EXPLORER: _entries_explain(filled, _EXPLORER_LINE),
        Format.EXPLORER_SUMMARY: _entries_explain(filled, _SUMMARY_BYTES),
    }
    best = max(votes, key=lambda form: votes[form])
    # Most of the lines: a text that only quotes a line or two of a format is not in it.
    if votes[best] and votes[best] * 2 >= len(filled):
        return best
    return Format.PLAIN_TEXT


# The Logging API's answer to entries:list (ListLogEntriesResponse): an object with an
# ``entries`` array or a ``nextPageToken``, in any order and beside other fields (a saved body
# may have been rewritten, jq -S sorting its keys, or wrapped by a tool), and none of a
# LogEntry's: one response, the first of several, or the first of a JSON array of them.
_RESPONSE_KEYS = frozenset({b"entries", b"nextPageToken"})
# A JSON input's tokens, as far as the fields of its first objects go: strings (escapes and
# all) and the syntax around them.
_JSON_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[{}\[\]:]')
# Nothing but empty responses ({} is what entries:list answers when nothing matched).
_EMPTY_RESPONSES = re.compile(rb"[\[\]{},\s]*\{\s*\}[\[\]{},\s]*")
# Google's error body (google.rpc.Status): {"error": {"code": 403, "message": ..., "status": ...}}.
# Without its wrapper: {"code": 429, "message": ...}.
_LOOSE_START = re.compile(rb"\{\s*[A-Za-z_$][\w$]*\s*:")
_STATUS_START = re.compile(rb'\{\s*"code"\s*:\s*\d+\s*,\s*"(?:message|status)"\s*:')
_API_ERROR = re.compile(rb'\{\s*"error"\s*:\s*\{')
_ERROR_MESSAGE = re.compile(rb'"message"\s*:\s*"((?:[^"\\]|\\.)*)"')


def _api_fields(body: bytes) -> bool:
    """Whether the top-level objects of ``body`` (those of a top-level array, if it is one)
    are entries:list responses, by the fields the head shows of them: one of a response's,
    none of a LogEntry's. Only a head naming one of a response's fields is walked."""
    if b'"entries"' not in body and b'"nextPageToken"' not in body:
        return False
    level = 1 if body[:1] == b"{" else 2  # a response's fields: the depth of its keys
    depth = 0
    names: set[bytes] = set()
    key: bytes | None = None
    for token in _JSON_TOKENS.finditer(body):
        text = token.group()
        if text in (b"{", b"["):
            if depth == level - 1 and text == b"[":
                return False  # an array where a response's object is
            depth += 1
        elif text in (b"}", b"]"):
            depth -= 1
        elif text == b":" and key is not None:
            names.add(key)
        key = text[1:-1] if text[:1] == b'"' and depth == level else None
    return bool(names & _RESPONSE_KEYS) and not any(
        name.decode("utf-8", "replace") in LOGENTRY_KEYS for name in names
    )


def _api_response(body: bytes, name: str) -> Format:
    """:data:`Format.LOGGING_API` for the head of entries:list's response(s); an InputError
    when it is the API's error body. Responses that hold no entry at all (what the API answers
    when nothing matched, or when it stopped searching: an empty page with a nextPageToken) are
    read as any input without entries is: no job, the run says so."""
    if _API_ERROR.match(body):
        raise InputError(f"{name}: {api_error(body)}")
    return Format.LOGGING_API


def api_error(body: bytes) -> str:
    """What an error body of a Google API says: its code, status and message, in one line."""
    error: Any = None
    with contextlib.suppress(orjson.JSONDecodeError, AttributeError):
        error = orjson.loads(body).get("error")
    parts: list[str] = []
    if isinstance(error, dict):
        parts = [str(error[key]) for key in ("code", "status") if key in error]
        message = error.get("message")
    else:  # cut, or more than the head: the message is near its start
        found = _ERROR_MESSAGE.search(body)
        message = found and orjson.loads(b'"' + found.group(1) + b'"')
    said = " ".join(parts)
    if isinstance(message, str) and message:
        said = f"{said}: {' '.join(message.split())}" if said else " ".join(message.split())
    return (
        "a Logging API error response, not log entries"
        + (f" ({said})" if said else "")
        + ": fix the request (its credentials, project or filter) and save the response again"
    )


def _entries_explain(lines: list[bytes], start: re.Pattern[bytes]) -> int:
    """The lines from the first that ``start`` matches on, if it is among the first few."""
    for index, line in enumerate(lines[:_STRAY_LINES]):
        if start.match(line):
            return len(lines) - index
    return 0


def _csv_header(line: bytes) -> bool:
    """Whether ``line`` is the header of a Logs Explorer CSV download: LogEntry field paths."""
    if line.count(b",") < 2:
        return False
    names = [cell.strip(b'"').lstrip(b"'") for cell in line.split(b",")]
    roots = [name.split(b".", 1)[0].decode("ascii", "replace") for name in names if name]
    known = {root for root in roots if root in LOGENTRY_KEYS}
    # Most columns are LogEntry fields (one this list lacks is not fatal), the time or the
    # text among them.
    in_entries = sum(root in known for root in roots)
    return in_entries * 4 >= len(roots) * 3 and bool(
        known & {"timestamp", "textPayload", "jsonPayload"}
    )


# Rows of a Logs Explorer CSV download copied without the header row, which alone says which
# column is the job id, the task, the message (tests/real/gh-tensorflow-models-9832-L): no
# column can be told by its value alone, so such a text is refused, saying what is missing,
# rather than read as plain text that holds "no job".
HEADLESS_CSV = (
    "Logs Explorer CSV rows without their header row (the first row of the download names the"
    " columns: job id, task, message): pass the whole download, or gcloud logging read"
    " --format=json"
)
_CSV_CELLS = (
    re.compile(rb"(?:^|,)(?:ml_job|cloudml_job|aiplatform\.googleapis\.com/CustomJob)(?:,|$)"),
    re.compile(rb",'?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z,"),
    re.compile(rb",'?projects/[^,/]+/logs/"),
)


def _headless_csv_row(line: bytes) -> bool:
    """Whether ``line`` is a data row of a Logs Explorer CSV download: a job's resource type,
    an RFC 3339 time and a log name among its cells."""
    return line.count(b",") >= 6 and all(cell.search(line) for cell in _CSV_CELLS)


def _yaml_documents(lines: list[bytes]) -> bool:
    """Whether ``lines`` are YAML documents of LogEntry keys (``gcloud logging read``)."""
    first = lines[0].rstrip()
    found = _YAML_KEY.match(first)
    if first != b"---" and (found is None or found.group(1).decode() not in LOGENTRY_KEYS):
        return False
    top = [line.rstrip() for line in lines if line[:1] not in (b" ", b"\t")]
    keys = 0
    other = 0
    for line in top:
        if line in _YAML_MARKERS:
            continue
        key = _YAML_KEY.match(line)
        if key is not None and key.group(1).decode() in LOGENTRY_KEYS:
            keys += 1
        else:
            other += 1
    return keys >= 2 and other * 10 <= keys
