"""Writing entries in the shapes users export them (``platform.md`` section 6).

- ``jsonl``: a Log Router sink file; one compact LogEntry per line, order a
  little shuffled within the hour, one or two duplicated entries.
- ``gcloud-json``: ``gcloud logging read --format=json``; a JSON array,
  newest first, sorted keys, indent 2.
- ``stream-logs``: ``gcloud ai custom-jobs stream-logs``; tab-separated
  ``SEVERITY, time, task, message``, one line per message line.
- ``logs-explorer``: a copy from the Logs Explorer; time with milliseconds and
  zone, a blank line, the task, the message, repeated.
- ``yaml``: ``gcloud logging read`` without ``--format``; one YAML document per
  entry, newest first, ``---`` before each, multi-line texts as literal blocks, long
  scalars folded at 80 columns.
- ``explorer-json``: the Logs Explorer's JSON download; an array, newest first,
  the API's key order.
- ``explorer-csv``: the Logs Explorer's CSV download (layout in
  ``analyzer/ingest/explorer_csv.py``); a header of field paths, newest first.
- ``summary-lines``: Logs Explorer summary lines, ``SEVERITY TIMESTAMP
  [resource.labels.taskName: TASK] message``, a message's further lines after it.
- ``utf16``: ``stream-logs`` redirected by Windows PowerShell: UTF-16 LE with a
  byte-order mark, CRLF line ends (see :func:`encoding`: written as text here,
  encoded by whoever writes the bytes).
- ``api-response``: what ``curl -X POST .../v2/entries:list`` saves, a page after another (a
  script's loop appending each response body): ``{"entries": [...], "nextPageToken": "..."}``
  pretty-printed as the API sends it (indent 2, the API's key order), oldest first (the default
  ``orderBy``, ``timestamp asc``), :data:`API_PAGE_SIZE` entries a page, no token on the last.
- ``web-page``: ``stream-logs`` as a blog post's source keeps it: one physical line, each
  line end a ``<br />`` tag, ``&``, ``<``, ``>`` and quotes as entities
  (``analyzer/ingest/webtext.py``).
"""

from __future__ import annotations

import csv
import difflib
import html
import io
import json
import random
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, TextIO

import yaml

from analyzer.core.errors import InputError
from analyzer.simulate.entries import HOUR, SECOND, entry_ns, entry_task, entry_text

FORMATS = (
    "jsonl",
    "gcloud-json",
    "stream-logs",
    "logs-explorer",
    "yaml",
    "explorer-json",
    "explorer-csv",
    "summary-lines",
    "utf16",
    "web-page",
    "api-response",
)
# entries:list's default pageSize.
API_PAGE_SIZE = 50
_ENCODINGS = {"utf16": "utf-16-le"}
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MARKED = re.compile(r"[-/@(\"]")
# How far a sink reorders entries: a handful of neighbours, never across the hour.
_SHUFFLE_WINDOW = 6


def check_format(fmt: str) -> str:
    """``fmt`` if known, else an :class:`InputError` that suggests the nearest name."""
    if fmt in FORMATS:
        return fmt
    close = difflib.get_close_matches(fmt, FORMATS, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise InputError(f"unknown output format {fmt!r}.{hint} Choose one of: {', '.join(FORMATS)}.")


def write(entries: Iterable[dict[str, Any]], fmt: str, out: TextIO, *, seed: int = 0) -> None:
    """Write ``entries`` (in time order) to ``out`` in format ``fmt``.

    ``seed`` drives the sink's reordering and duplicates (``jsonl`` only).
    Only ``gcloud-json`` holds all entries in memory (it prints newest first).
    Raises :class:`InputError` for an unknown format.
    """
    check_format(fmt)
    if fmt == "jsonl":
        for line in sink_lines(entries, seed=seed):
            out.write(line)
    elif fmt == "gcloud-json":
        newest_first = sorted(entries, key=entry_ns, reverse=True)
        # gcloud's JSON printer: sorted keys, indent 2, non-ASCII kept.
        out.write(json.dumps(newest_first, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    elif fmt == "stream-logs":
        _write_stream_logs(entries, out)
    elif fmt == "logs-explorer":
        _write_logs_explorer(entries, out)
    elif fmt == "yaml":
        _write_yaml(entries, out)
    elif fmt == "explorer-json":
        newest_first = sorted(entries, key=entry_ns, reverse=True)
        out.write(json.dumps(newest_first, indent=2, ensure_ascii=False) + "\n")
    elif fmt == "explorer-csv":
        _write_explorer_csv(entries, out)
    elif fmt == "summary-lines":
        _write_summary_lines(entries, out)
    elif fmt == "api-response":
        _write_api_pages(entries, out, seed=seed)
    elif fmt == "utf16":
        text = io.StringIO()
        _write_stream_logs(entries, text)
        out.write("\ufeff" + text.getvalue().replace("\n", "\r\n"))
    else:
        text = io.StringIO()
        _write_stream_logs(entries, text)
        out.write(html.escape(text.getvalue()).replace("\n", "<br />") + "\n")


def encoding(fmt: str) -> str:
    """The encoding a file of format ``fmt`` is written in (UTF-8 but for ``utf16``)."""
    return _ENCODINGS.get(check_format(fmt), "utf-8")


def dumps(entry: dict[str, Any]) -> str:
    """One compact JSON line, as sink files hold them."""
    return json.dumps(entry, separators=(",", ":"), ensure_ascii=False)


def sink_lines(entries: Iterable[dict[str, Any]], *, seed: int = 0) -> Iterator[str]:
    """Sink-file lines (with ``\\n``): a little reordered within the hour, 1-2 duplicates."""
    rng = random.Random(f"sink:{seed}")
    first_dup = rng.randint(3, 30)
    duplicates = {first_dup}
    if rng.random() < 0.6:
        duplicates.add(first_dup + rng.randint(20, 150))
    window: list[str] = []
    hour: int | None = None
    for index, entry in enumerate(entries):
        entry_hour = entry_ns(entry) // HOUR
        if hour is not None and entry_hour != hour:
            # Hourly files: entries never move across the hour boundary.
            yield from window
            window.clear()
        hour = entry_hour
        line = dumps(entry) + "\n"
        window.append(line)
        if index in duplicates:
            window.append(line)
        if len(window) >= _SHUFFLE_WINDOW:
            # Mostly in order; now and then a later entry overtakes a few earlier ones.
            yield window.pop(rng.randrange(len(window)) if rng.random() < 0.25 else 0)
    while window:
        yield window.pop(rng.randrange(len(window)) if rng.random() < 0.25 else 0)


def _clock(ns: int) -> str:
    return datetime.fromtimestamp(ns // SECOND, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _write_stream_logs(entries: Iterable[dict[str, Any]], out: TextIO) -> None:
    out.write("Using endpoint [https://us-central1-aiplatform.googleapis.com/]\n")
    for entry in entries:
        severity = entry.get("severity") or "DEFAULT"
        prefix = f"{severity}\t{_clock(entry_ns(entry))} +0000\t{entry_task(entry)}\t"
        # gcloud splits a multi-line message into one printed line per message line.
        for line in entry_text(entry).splitlines() or [""]:
            out.write(prefix + line + "\n")


def _write_logs_explorer(entries: Iterable[dict[str, Any]], out: TextIO) -> None:
    for entry in entries:
        ns = entry_ns(entry)
        millis = ns % SECOND // 1_000_000
        out.write(f"{_clock(ns)}.{millis:03d} UTC\n\n{entry_task(entry)}\n{entry_text(entry)}\n")


class _Yaml12Resolver(yaml.resolver.BaseResolver):
    """ruamel.yaml's YAML 1.2 implicit types (its resolver.py, 0.19.1), which gcloud's printer
    (YAML 1.2 by default) consults to decide whether a string needs quotes: wider than the 1.2
    core schema (``017``, ``1_000``, ``0b1`` and timestamps are quoted too), narrower in one
    form (``.5e3``, a float to the core schema, is written plain). ``yes``, ``on``, ``1:20`` are
    strings in 1.2, so gcloud writes them plain (PyYAML, a 1.1 reader, reads a bool or a
    number)."""


for _tag, _pattern, _first in (
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    (
        "float",
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        "-+0123456789.",
    ),
    (
        "int",
        r"""^(?:[-+]?0b[0-1_]+
        |[-+]?0o?[0-7_]+
        |[-+]?[0-9_]+
        |[-+]?0x[0-9a-fA-F_]+)$""",
        "-+0123456789",
    ),
    ("merge", r"^(?:<<)$", "<"),
    ("null", r"^(?:~|null|Null|NULL|)$", "~nN"),
    (
        "timestamp",
        r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
        |[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?
        (?:[Tt]|[ \t]+)[0-9][0-9]?
        :[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
        (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""",
        "0123456789",
    ),
    ("value", r"^(?:=)$", "="),
):
    _Yaml12Resolver.add_implicit_resolver(
        f"tag:yaml.org,2002:{_tag}", re.compile(_pattern, re.X), list(_first)
    )
_Yaml12Resolver.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^$"), [""])


class _GcloudDumper(
    yaml.emitter.Emitter,
    yaml.serializer.Serializer,
    yaml.representer.SafeRepresenter,
    _Yaml12Resolver,
):
    """gcloud's YAML (``core/resource/yaml_printer.py``: ruamel.yaml, ``typ='safe'``): block
    style, indent 2, ruamel's default width of 80 (a long scalar folded onto continuation
    lines), every string holding a line end a literal block, the 1.2 resolver's quoting."""

    def __init__(self, stream: TextIO, **options: Any) -> None:
        yaml.emitter.Emitter.__init__(
            self,
            stream,
            indent=2,
            allow_unicode=True,
            width=options.get("width"),
            line_break=options.get("line_break"),
        )
        yaml.serializer.Serializer.__init__(self, explicit_start=True)
        yaml.representer.SafeRepresenter.__init__(self, default_flow_style=False, sort_keys=True)
        _Yaml12Resolver.__init__(self)


# Line breaks of YAML 1.1 other than "\n": ruamel (gcloud's printer) never puts one raw inside
# a literal block, as PyYAML would: a multi-line text holding one is double-quoted and escaped
# ("yes\n\L"); a one-line text, single-quoted, as PyYAML writes it too.
_OTHER_BREAKS = re.compile("[\x85\u2028\u2029]")


def _text(dumper: yaml.representer.SafeRepresenter, value: str) -> yaml.ScalarNode:
    if "\n" in value and _OTHER_BREAKS.search(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_GcloudDumper.add_representer(str, _text)


def gcloud_yaml(entry: dict[str, Any]) -> str:
    """One entry as ``gcloud logging read`` prints it: a document that starts with ``---``
    (gcloud's printer writes the marker before every record, the first too)."""
    text: str = yaml.dump(entry, Dumper=_GcloudDumper)
    return text


def _write_yaml(entries: Iterable[dict[str, Any]], out: TextIO) -> None:
    for entry in sorted(entries, key=entry_ns, reverse=True):
        out.write(gcloud_yaml(entry))


def _csv_name(key: str) -> str:
    # A key that is not a plain name is quoted inside the path, as the download does.
    return key if _PLAIN_KEY.fullmatch(key) else f'"{key}"'


def _flatten(value: Any, path: str, cells: dict[str, str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(item, f"{path}.{_csv_name(key)}" if path else _csv_name(key), cells)
    elif isinstance(value, bool):
        cells[path] = "true" if value else "false"
    elif value is not None:
        cells[path] = value if isinstance(value, str) else json.dumps(value)


def _csv_cell(value: str) -> str:
    # The download's text mark, where a spreadsheet could read the cell as a formula or a date.
    return "'" + value if value[:1] == "'" or _MARKED.search(value) else value


def _write_explorer_csv(entries: Iterable[dict[str, Any]], out: TextIO) -> None:
    rows: list[dict[str, str]] = []
    for entry in sorted(entries, key=entry_ns, reverse=True):
        cells: dict[str, str] = {}
        _flatten(entry, "", cells)
        rows.append(cells)
    header = sorted({name for cells in rows for name in cells})
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([_csv_cell(name) for name in header])
    for cells in rows:
        writer.writerow([_csv_cell(cells[name]) if name in cells else "" for name in header])


def api_pages(
    entries: Iterable[dict[str, Any]], *, page_size: int = API_PAGE_SIZE, seed: int = 0
) -> Iterator[dict[str, Any]]:
    """``entries`` (in time order) as entries:list's responses of ``page_size`` entries, each
    but the last with an opaque ``nextPageToken``; none at all (``{}``) for no entries."""
    rng = random.Random(f"pages:{seed}")
    page: list[dict[str, Any]] = []
    for entry in entries:
        if len(page) == page_size:
            yield {"entries": page, "nextPageToken": _page_token(rng)}
            page = []
        page.append(entry)
    yield {"entries": page} if page else {}


def _page_token(rng: random.Random) -> str:
    # Tokens are opaque base64 of the API's cursor: only their alphabet matters here.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    return "EAA4" + "".join(rng.choice(alphabet) for _ in range(120))


def _write_api_pages(entries: Iterable[dict[str, Any]], out: TextIO, *, seed: int) -> None:
    for page in api_pages(sorted(entries, key=entry_ns), seed=seed):
        out.write(json.dumps(page, indent=2, ensure_ascii=False) + "\n")


def _write_summary_lines(entries: Iterable[dict[str, Any]], out: TextIO) -> None:
    for entry in entries:
        severity = entry.get("severity") or "DEFAULT"
        first, *rest = entry_text(entry).split("\n")
        out.write(
            f"{severity} {entry['timestamp']} [resource.labels.taskName: {entry_task(entry)}]"
            f" {first}\n"
        )
        for line in rest:
            out.write(line + "\n")
