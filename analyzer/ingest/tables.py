"""Tables users export log entries as (issue 29): gcloud's ``csv``, ``table`` and ``value``
prints, pandas' CSV and JSON, read by their header through the one LogEntry mapping.

What the writers print (platform.md section 10, and the fixtures in ``tests/fixtures/tables``
made by gcloud's own resource printers):

- ``gcloud logging read --format='csv(timestamp,severity,resource.labels.job_id,...)'``: a header
  of the projection's last keys in snake_case (``timestamp,severity,job_id,task_name,
  text_payload,message``), RFC 4180 quoting, an empty cell for a field the entry lacks; an
  object projected whole is written ``key=value;key=value`` with nested values as Python reprs.
  Read by the CSV reader (:mod:`analyzer.ingest.explorer_csv`), its header mapped by
  :func:`~analyzer.ingest.records.column_path`.
- ``--format='table(...)'``: the same names upper-cased (``TIMESTAMP  SEVERITY  TASK_NAME``),
  columns aligned with two spaces between them, trailing spaces stripped; a multi-line cell (or a
  ``:wrap`` column) goes on over lines whose other columns are blank. Read by
  :func:`read_aligned_table`: columns start where their heading does.
- ``--format='value(...)'``: tab-separated cells, no header; a multi-line text goes on over the
  lines after its row as it is. Read by :func:`read_value_print`: each leading cell is told by
  its form (an RFC 3339 time, a severity, a task name, a job id), the rest is the text.
- pandas: ``DataFrame(entries).to_csv()`` writes nested objects as Python reprs
  (``{'type': 'ml_job', 'labels': {...}}``), read with :func:`ast.literal_eval` (never ``eval``)
  where the mapping reads an object (:func:`object_cell`); ``pd.json_normalize`` gives dotted
  keys; the index is a first column with an empty name (``Unnamed: 0`` once read back); NaN is an
  empty cell in CSV and ``null`` in JSON. Its JSON orients (``records``, ``split``, ``table``,
  ``columns``, ``lines=True``) are read by :func:`read_json_table`.
"""

from __future__ import annotations

import ast
import bisect
import csv
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, BinaryIO

import orjson

from analyzer.core.errors import InputError
from analyzer.ingest.entries import INVALID_JSON, record_or_reason
from analyzer.ingest.lines import text_lines
from analyzer.ingest.records import (
    COLUMN_PATHS,
    ID_PATHS,
    PAYLOAD_PATH,
    SEVERITY_PATH,
    TEXT_KEY_PATHS,
    TIME_PATHS,
    EntryPath,
    InputStats,
    LogRecord,
    LostDigits,
    Origin,
    column_key,
    column_path,
    field_path,
    id_text,
    object_paths,
)

# The formats of this module (members of analyzer.ingest.sniff.Format, which sniff names).
CSV_TABLE = "csv-table"
GCLOUD_TABLE = "gcloud-table"
GCLOUD_VALUE = "gcloud-value"
GCLOUD_FLATTENED = "gcloud-flattened"
JSON_TABLE = "json-table"

BLANK_LINE = "blank line"
NO_ROW = "line before the table's first row"
NOT_A_TABLE = "not a table of log entries"

OBJECT_PATHS = object_paths()
# The paths a table's text can be at: a table with none of them holds no message.
_TEXT_PATHS = frozenset({*TEXT_KEY_PATHS, PAYLOAD_PATH})
_SEVERITIES = frozenset(
    {"DEFAULT", "DEBUG", "INFO", "NOTICE", "WARNING", "ERROR", "CRITICAL", "ALERT", "EMERGENCY"}
)


# --- cells -------------------------------------------------------------------------------

# gcloud's rendering of an object in a csv or value cell: key=value pairs joined by ";".
_GCLOUD_PAIR = re.compile(r"(?:^|;)([A-Za-z_][\w.@/-]*)=")


def object_cell(text: str) -> Any:
    """The object a cell at an object path of the mapping (``resource``, ``jsonPayload``) holds:
    pandas' Python repr (read with :func:`ast.literal_eval`, which evaluates literals only),
    JSON, or gcloud's ``key=value;key=value``; the text itself when it is none of them."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return orjson.loads(stripped)
        except orjson.JSONDecodeError:
            pass
        try:
            return ast.literal_eval(stripped)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            return text
    pairs = list(_GCLOUD_PAIR.finditer(stripped))
    if not pairs or pairs[0].start() != 0:
        return text
    found: dict[str, Any] = {}
    for pair, after in zip(pairs, [*pairs[1:], None], strict=True):
        value = stripped[pair.end() : after.start() if after is not None else len(stripped)]
        found[pair.group(1)] = object_cell(value) if value[:1] in ("{", "[") else value
    return found


def put(entry: dict[str, Any], path: EntryPath, value: Any) -> None:
    """Set ``value`` at ``path`` in the nested ``entry`` (a first value at a path stays)."""
    node = entry
    for key in path[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            return  # a value and a nested field at one path: the first one stays
        node = child
    node.setdefault(path[-1], value)


def _scalar(value: Any) -> Any:
    """A cell's value as the mapping reads it: times as RFC 3339 text, numbers as text (a job
    id read back by pandas is an int), NaN as absent."""
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, float) and value != value:  # NaN: pandas' empty cell
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


def lost_digits(error: LostDigits, path: str, line: int) -> InputError:
    """The one-line error of an id whose digits a float lost, on ``line`` of ``path``: the
    whole input is refused, as no verdict could name its jobs right."""
    return InputError(f"{path}: line {line}: {error}")


def flat_entry(cells: Iterable[tuple[EntryPath, Any]]) -> dict[str, Any]:
    """The nested LogEntry of a table row's ``(path, value)`` cells; empty cells are fields the
    entry lacks, an object path's text is read by :func:`object_cell`."""
    entry: dict[str, Any] = {}
    for path, value in cells:
        if value != "":  # an empty cell; inside an object, "" is a value (an empty message)
            _place(entry, path, value)
    return entry


def _place(entry: dict[str, Any], path: EntryPath, raw: Any) -> None:
    """Put ``raw`` at ``path``; an object's keys each at the path of the mapping their names
    give (a sink's ``labels.ml_googleapis_com_trial_id`` is the trial label), at any depth."""
    value = _scalar(id_text(raw, ".".join(path)) if path in ID_PATHS else raw)
    if value is None:
        return
    if path in OBJECT_PATHS and isinstance(value, str):
        value = object_cell(value)
    if not isinstance(value, dict) or not value:
        put(entry, path, value)
        return
    for key, inner in value.items():
        below = (*path, str(key))
        _place(entry, COLUMN_PATHS.get(column_key(".".join(below)), below), inner)


def header_paths(names: list[str]) -> list[EntryPath]:
    """The LogEntry paths of a table's columns, by their names (:func:`column_path`)."""
    return [column_path(name) for name in names]


def _is_index(name: str) -> bool:
    return not name.strip() or name.startswith("Unnamed: ") or name == "index"


def is_table_header(names: list[str]) -> bool:
    """Whether ``names`` head a table of log entries: most columns are fields of the mapping
    (or paths inside its objects), a message among them."""
    named = [name for name in names if not _is_index(name)]
    if not named:
        return False
    paths = header_paths(named)
    known = [
        path
        for name, path in zip(named, paths, strict=True)
        if column_key(name) in COLUMN_PATHS or path[:1] in {p[:1] for p in OBJECT_PATHS}
    ]
    texts = [
        path for path in known if path in _TEXT_PATHS or path[: len(PAYLOAD_PATH)] == PAYLOAD_PATH
    ]
    return len(known) * 2 > len(named) and bool(texts)


def _api_written(names: list[str]) -> bool:
    """Whether every column is written as the LogEntry path it holds (``resource.labels.job_id``,
    ``insertId``), no object whole and no index: the Logs Explorer's own download."""
    for name in names:
        if _is_index(name):
            return False
        path = column_path(name)
        if path in OBJECT_PATHS or field_path(name) != path:
            return False
    return True


# --- sniffing ----------------------------------------------------------------------------

# An aligned heading: upper-case names, two spaces or more between them.
_HEADING = re.compile(r'^[A-Z][A-Z0-9_./"@-]*(?: {2,}[A-Z][A-Z0-9_./"@-]*)*$')
_HEADING_NAME = re.compile(r'[A-Z][A-Z0-9_./"@-]*')


def _csv_names(line: str) -> list[str]:
    try:
        return [cell.strip() for cell in next(csv.reader([line]), [])]
    except csv.Error:
        return []


def sniff_table(lines: list[bytes]) -> str | None:
    """The table format of a text whose window's non-blank lines are ``lines`` (gcloud's own
    lines left out), or None: a CSV whose header names log entry fields in a form other than
    the Logs Explorer's (``Format.EXPLORER_CSV``), gcloud's aligned table, gcloud's value print."""
    first = lines[0].decode("utf-8", "replace").rstrip()
    if "," in first:
        names = _csv_names(first)
        if len(names) >= 2 and is_table_header(names) and not _api_written(names):
            return CSV_TABLE
    if _HEADING.match(first) and is_table_header(_HEADING_NAME.findall(first)):
        return GCLOUD_TABLE
    texts = [line.decode("utf-8", "replace").rstrip("\r") for line in lines]
    if _flattened(texts):
        return GCLOUD_FLATTENED
    if value_cells(texts[0]) is not None:
        # A row's text may go on over many lines (a traceback): a quarter of the lines rows.
        rows = sum(1 for text in texts if value_cells(text) is not None)
        if rows * 4 >= len(texts):
            return GCLOUD_VALUE
    return None


# --- gcloud's table print ----------------------------------------------------------------


def read_aligned_table(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per row of gcloud's ``table(...)`` print: a row's cells are cut at the
    columns its heading starts; a line whose first column is blank goes on the row above."""
    starts: list[int] = []
    paths: list[EntryPath] = []
    row: list[list[str]] | None = None
    first = count = 0
    for number, text in text_lines(stream, stats):
        if not starts:
            if not text.strip():
                stats.skip(BLANK_LINE)
                continue
            if _HEADING.match(text.rstrip()):
                starts = [found.start() for found in _HEADING_NAME.finditer(text)]
                paths = header_paths(_HEADING_NAME.findall(text))
                stats.used += 1
            else:
                stats.skip(NO_ROW)
            continue
        cells = _cut(text, starts)
        if row is not None and not cells[0].strip() and text.strip():
            for column, cell in zip(row, cells, strict=True):
                if cell.strip():
                    column.append(cell)
            count += 1
            continue
        if row is not None:
            yield from _table_row(paths, row, first, count, stats)
            row = None
        if not text.strip():
            stats.skip(BLANK_LINE)
            continue
        row, first, count = [[cell] if cell else [] for cell in cells], number, 1
    if row is not None:
        yield from _table_row(paths, row, first, count, stats)


def _cut(text: str, starts: list[int]) -> list[str]:
    """The cells of a table line whose columns start at ``starts`` (display columns: gcloud
    pads a cell to its width on screen, two columns for a wide character, none for a
    combining one)."""
    if not text.isascii():
        offsets = [0]
        for char in text:
            wide = unicodedata.east_asian_width(char) in ("W", "F")
            offsets.append(offsets[-1] + (0 if unicodedata.combining(char) else 1 + wide))
        # Each column's start as an index into text: the last character starting at or
        # before it (a combining character goes with the one before it).
        starts = [bisect.bisect_right(offsets, start) - 1 for start in starts]
    ends = [*starts[1:], None]
    return [text[start:end].rstrip() for start, end in zip(starts, ends, strict=True)]


def _table_row(
    paths: list[EntryPath], row: list[list[str]], first: int, count: int, stats: InputStats
) -> Iterator[LogRecord]:
    cells = [(path, "\n".join(parts)) for path, parts in zip(paths, row, strict=True)]
    yield from counted(flat_entry(cells), Origin(stats.path, first), count, stats)


def counted(
    entry: dict[str, Any], origin: Origin, count: int, stats: InputStats
) -> Iterator[LogRecord]:
    """The record of ``entry`` made of ``count`` lines, counted as used or skipped."""
    outcome = record_or_reason(entry, origin)
    if isinstance(outcome, str):
        stats.skip(outcome, count)
        return
    stats.used += count
    stats.records += 1
    yield outcome


# --- gcloud's value print ----------------------------------------------------------------

_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)")
_TASK = re.compile(r"workerpool\d+-\d+|service|(?:master|worker|ps|evaluator|chief)-replica-\d+")
_JOB_ID = re.compile(r"\d{6,20}")
# The kinds a value print's leading cells are told by, each with the path it fills.
_KINDS: tuple[tuple[re.Pattern[str], EntryPath], ...] = (
    (_RFC3339, TIME_PATHS[0]),
    (_TASK, COLUMN_PATHS["taskname"]),
    (_JOB_ID, COLUMN_PATHS["jobid"]),
)


# What makes a line a row: a time or a task among its leading cells (a severity or a number
# alone could start any text).
_ROW_KINDS = (TIME_PATHS[0], COLUMN_PATHS["taskname"])


def _kind(cell: str) -> EntryPath | None:
    if cell in _SEVERITIES:
        return SEVERITY_PATH
    for pattern, path in _KINDS:
        if pattern.fullmatch(cell):
            return path
    return None


def value_cells(text: str) -> tuple[list[tuple[EntryPath, str]], str] | None:
    """The leading cells of a value print's row, each with the path its kind fills, and the
    text; None when ``text`` is no row.

    A row has a tab and a time or a task among its leading cells, each of one kind or empty
    (a field the entry lacks); the first cell that is neither starts the text (the last cell
    always does), which may hold tabs of its own. Tabs around the text are a text column left
    empty (``textPayload`` beside ``jsonPayload.message``)."""
    cells = text.split("\t")
    found: list[tuple[EntryPath, str]] = []
    taken = 0
    for cell in cells[:-1]:
        kind = _kind(cell) if cell else None
        if cell and (kind is None or any(kind == seen for seen, _ in found)):
            break
        taken += 1
        if kind is not None:
            found.append((kind, cell))
    if not any(kind in _ROW_KINDS for kind, _ in found):
        return None
    return found, "\t".join(cells[taken:]).strip("\t")


def read_value_print(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per row of gcloud's ``value(...)`` print: the leading cells by their
    kind (:func:`value_cells`), the rest the text, the lines up to the next row its own."""
    entry: dict[str, Any] | None = None
    lines: list[str] = []
    first = 0
    for number, text in text_lines(stream, stats):
        row = value_cells(text)
        if row is not None:
            if entry is not None:
                yield from _value_row(entry, lines, first, stats)
            cells, message = row
            entry = flat_entry(cells)
            lines, first = [message], number
        elif entry is not None:
            lines.append(text)
        elif not text.strip():
            stats.skip(BLANK_LINE)
        else:
            stats.skip(NO_ROW)
    if entry is not None:
        yield from _value_row(entry, lines, first, stats)


def _value_row(
    entry: dict[str, Any], lines: list[str], first: int, stats: InputStats
) -> Iterator[LogRecord]:
    count = len(lines)
    while len(lines) > 1 and not lines[-1].strip():  # blank lines between rows, not the text's
        lines.pop()
        stats.skip(BLANK_LINE)
        count -= 1
    # The projection does not say whether the text was a textPayload or a jsonPayload.message:
    # read as the service's text, which is what the mapping takes when there is no payload.
    entry["textPayload"] = "\n".join(lines)
    yield from counted(entry, Origin(stats.path, first), count, stats)


# --- gcloud's flattened print ------------------------------------------------------------

# A flattened line: the key path (list items as key[0]), ": ", the value padded to a column.
_FLAT_LINE = re.compile(r"([A-Za-z_][^:\s]*): *(.*)")
_DOCUMENT = "---"
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "f": "\f"}


def _flattened(texts: list[str]) -> bool:
    """Whether ``texts`` are gcloud's ``flattened`` documents of log entries: ``---`` and
    ``key: value`` lines only (no indented line, as YAML's nested keys are), a key of the
    mapping's dotted paths among them."""
    keys = [found.group(1) for text in texts if (found := _FLAT_LINE.fullmatch(text))]
    markers = sum(1 for text in texts if text == _DOCUMENT)
    return len(keys) + markers == len(texts) and any(
        "." in key and column_key(key) in COLUMN_PATHS for key in keys
    )


def flat_value(text: str) -> str:
    """A flattened value as it was: gcloud quotes one with a line end or a leading or trailing
    space, escaping backslashes, quotes and control characters (flattened_printer._StringQuote)."""
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        return text
    chars: list[str] = []
    escaped = False
    for char in text[1:-1]:
        if escaped:
            chars.append(_ESCAPES.get(char, char))
            escaped = False
        elif char == "\\":
            escaped = True
        else:
            chars.append(char)
    value = "".join(chars)
    # Quoted by gcloud only for a line end or a space at either end: else the quotes are the
    # value's own.
    return value if "\n" in value or value[:1].isspace() or value[-1:].isspace() else text


def read_flattened(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per document of gcloud's ``flattened`` print."""
    cells: list[tuple[EntryPath, Any]] = []
    first = count = 0
    for number, text in text_lines(stream, stats):
        found = _FLAT_LINE.fullmatch(text)
        if text == _DOCUMENT or found is None:
            if count:
                yield from counted(flat_entry(cells), Origin(stats.path, first), count, stats)
            cells, first, count = [], number, 0
            if text != _DOCUMENT:
                stats.skip(BLANK_LINE if not text.strip() else NO_ROW)
                continue
        elif not count:
            first = number
        count += 1
        if found is not None and found.group(2) not in ("{}", "[]"):
            cells.append((column_path(found.group(1)), flat_value(found.group(2))))
    if count:
        yield from counted(flat_entry(cells), Origin(stats.path, first), count, stats)


# --- pandas' JSON ------------------------------------------------------------------------


# pandas' split and table orients open with their own key; columns with a column of row
# numbers; index with a row number.
_FRAME_START = re.compile(
    rb'\{\s*"(?:columns|schema)"\s*:\s*[\[{]|\{\s*"[^"]+"\s*:\s*\{\s*"\d+"\s*:'
    rb'|\{\s*"\d+"\s*:\s*\{'
)
# The keys and scalar values of a first object (of an array, or of JSON lines), up to its
# first nested value.
_JSON_STRING = rb'"(?:[^"\\]|\\.)*"'
_FIRST_FLAT_OBJECT = re.compile(
    rb"[\[\s]*\{\s*(?:"
    + _JSON_STRING
    + rb"\s*:\s*(?:"
    + _JSON_STRING
    + rb'|[^,{}\[\]"]*)\s*,?\s*)*'
)
_JSON_KEY = re.compile(rb"(" + _JSON_STRING + rb")\s*:")


def sniff_json_table(body: bytes) -> str | None:
    """:data:`JSON_TABLE` for the head of pandas' JSON of a frame of entries: ``split`` and
    ``table`` orients by their keys, ``columns`` (to_json's default) by a column of row
    numbers, ``index`` by a row number, ``records`` and ``lines=True`` of a json_normalize'd
    frame by a dotted key the mapping knows; None for anything else."""
    if _FRAME_START.match(body):
        return JSON_TABLE
    first = _FIRST_FLAT_OBJECT.match(body)
    keys = _JSON_KEY.findall(first.group() if first else b"")
    dotted = [key[1:-1].decode("utf-8", "replace") for key in keys if b"." in key]
    if any(column_key(key) in COLUMN_PATHS for key in dotted):
        return JSON_TABLE
    return None


def read_json_table(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield the records of pandas' JSON of a frame of entries, whatever its orient; JSON lines
    (``lines=True``) are read line by line, a whole document at once (pandas writes it as one
    line: its rows are told apart by their place in it)."""
    pending: list[tuple[int, bytes]] = []
    for number, text in text_lines(stream, stats):
        if not text.strip():
            stats.skip(BLANK_LINE)
            continue
        pending.append((number, text.encode("utf-8")))
        if len(pending) == 1 and text.lstrip().startswith("{"):
            try:
                value = orjson.loads(pending[0][1])
            except orjson.JSONDecodeError:
                continue  # a document over several lines: read whole at the end
            if isinstance(value, dict) and not _is_frame(value):
                pending.clear()
                try:
                    entry = _flat_object(value)
                except LostDigits as error:
                    raise lost_digits(error, stats.path, number) from None
                yield from counted(entry, Origin(stats.path, number), 1, stats)
    if not pending:
        return
    first = pending[0][0]
    try:
        value = orjson.loads(b"\n".join(raw for _, raw in pending))
    except orjson.JSONDecodeError:
        stats.skip(INVALID_JSON, len(pending))
        return
    rows = _frame_rows(value)
    if rows is None:
        stats.skip(NOT_A_TABLE, len(pending))
        return
    # The rows share the document's lines: its lines are used when a row gave a record, else
    # skipped for the reason the rows gave most.
    reasons: Counter[str] = Counter()
    for index, row in enumerate(rows):
        try:
            entry = _flat_object(row)
        except LostDigits as error:
            raise lost_digits(error, stats.path, first) from None
        outcome = record_or_reason(entry, Origin(stats.path, first, index))
        if isinstance(outcome, str):
            reasons[outcome] += 1
            continue
        stats.records += 1
        yield outcome
    if stats.records:
        stats.used += len(pending)
    else:
        stats.skip(reasons.most_common(1)[0][0] if reasons else NOT_A_TABLE, len(pending))


def _is_frame(value: dict[str, Any]) -> bool:
    """Whether a JSON object is a whole frame (split, table, columns), not one row."""
    return _frame_rows(value) is not None


def _flat_object(row: Any) -> dict[str, Any]:
    if not isinstance(row, dict):
        return {}
    return flat_entry((column_path(str(key)), value) for key, value in row.items())


def _frame_rows(value: Any) -> list[Any] | None:
    """The rows of pandas' JSON in any orient, or None when ``value`` is not one."""
    if isinstance(value, list):  # orient="records" (and "values" has no names: not read)
        return value if all(isinstance(row, dict) for row in value) else None
    if not isinstance(value, dict) or not value:
        return None
    data = value.get("data")
    if isinstance(value.get("columns"), list) and isinstance(data, list):  # orient="split"
        names = [str(name) for name in value["columns"]]
        return [dict(zip(names, row, strict=False)) for row in data if isinstance(row, list)]
    if isinstance(value.get("schema"), dict) and isinstance(data, list):  # orient="table"
        return data
    if all(isinstance(inner, dict) for inner in value.values()):
        return _keyed_rows(value)
    return None


def _keyed_rows(value: dict[str, dict[str, Any]]) -> list[Any]:
    """The rows of orient="index" ({row: {column: value}}, row labels numbers) or "columns"
    (to_json's default: {column: {row: value}}), in index order."""
    if all(key.isdigit() for key in value):
        return list(value.values())
    order: dict[str, None] = {}
    for column in value.values():
        order.update(dict.fromkeys(column))
    return [{name: column.get(row) for name, column in value.items()} for row in order]
