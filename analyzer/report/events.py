"""Rows of matched records, for ``jobdoctor classify`` (JSON lines or CSV)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from typing import Any, TextIO

from analyzer.report.controls import csv_cell
from analyzer.report.redact import shown_tree
from analyzer.rulebook.events import Event

COLUMNS = ("time", "job_id", "task", "category", "event", "rule", "lang", "fields", "path", "line")


def event_row(event: Event) -> dict[str, Any]:
    """One matched record as a flat row, its log text redacted (:func:`shown_tree`)."""
    match = event.match
    return shown_tree(
        {
            "time": event.timestamp.isoformat().replace("+00:00", "Z") if event.timestamp else None,
            "job_id": event.job_id,
            "task": event.task,
            "category": match.category.value if match.category else None,
            "event": match.kind.value,
            "rule": match.rule,
            "lang": match.lang,
            "fields": dict(match.fields),
            "path": event.origin.path,
            "line": event.origin.line,
        }
    )


def write_jsonl(events: Iterable[Event], out: TextIO) -> int:
    """Write one JSON object per event; returns how many."""
    count = 0
    for event in events:
        out.write(json.dumps(event_row(event), ensure_ascii=False) + "\n")
        count += 1
    return count


def write_csv(events: Iterable[Event], out: TextIO) -> int:
    """Write a CSV with a header row; ``fields`` as a JSON object; every cell safe to open in a
    spreadsheet (:func:`~analyzer.report.controls.csv_cell`). Returns how many rows."""
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    count = 0
    for event in events:
        row = event_row(event)
        row["fields"] = json.dumps(row["fields"], ensure_ascii=False)
        writer.writerow({key: csv_cell(value) for key, value in row.items()})
        count += 1
    return count
