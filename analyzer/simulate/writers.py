"""Writing entries in the shapes users export them (``platform.md`` section 6).

- ``jsonl``: a Log Router sink file; one compact LogEntry per line, order a
  little shuffled within the hour, one or two duplicated entries.
- ``gcloud-json``: ``gcloud logging read --format=json``; a JSON array,
  newest first, sorted keys, indent 2.
- ``stream-logs``: ``gcloud ai custom-jobs stream-logs``; tab-separated
  ``SEVERITY, time, task, message``, one line per message line.
- ``logs-explorer``: a copy from the Logs Explorer; time with milliseconds and
  zone, a blank line, the task, the message, repeated.
"""

from __future__ import annotations

import difflib
import json
import random
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, TextIO

from analyzer.errors import InputError
from analyzer.simulate.entries import HOUR, SECOND, entry_ns, entry_task, entry_text

FORMATS = ("jsonl", "gcloud-json", "stream-logs", "logs-explorer")
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
    else:
        _write_logs_explorer(entries, out)


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
