"""gcloud's value() and table() output (newest-first texts were read upside down).

``gcloud logging read ... --format="value(textPayload)"`` (or ``value(timestamp, ...)``,
``table(timestamp, severity, textPayload)``) prints
each entry's text, newest first, one line per line of text: no task, no job id, and in the
first form no time. Read top down, "Job failed." came before "Job is running.", so a job with
one attempt read as three, the last one pending, and the traceback search paired a header
with an older, unrelated exception line. Each scenario written so must diagnose like its sink
export in what such a text can carry: the state, the attempts, the cause's family, the
exception.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from analyzer.api import analyze_sources
from analyzer.ingest import MemorySource
from analyzer.ingest.plain import read_plain_text
from analyzer.ingest.records import InputStats
from analyzer.pipeline.analysis import Analysis
from analyzer.simulate import SCENARIOS, expected, simulate, write
from analyzer.verdict.diagnosis import Diagnosis

NOTE = "its lines were read bottom up"
# What a text without a task column cannot carry: restarts are per worker, so a worker's
# restarts running out reads as its exit (the sink's worker_restarts_exhausted).
NO_TASKS = {"worker-restarts-exhausted": "user_code_exception"}


def _text(entry: dict[str, Any]) -> str:
    if isinstance(entry.get("textPayload"), str):
        return str(entry["textPayload"])
    payload = entry.get("jsonPayload") or {}
    return str(payload.get("message", ""))


def _value_output(scenario: str, *, newest_first: bool, timed: bool, table: bool = False) -> str:
    """What gcloud's value(textPayload) (or value(timestamp, textPayload)) prints; with
    ``table``, table(timestamp, severity, textPayload): a header, columns padded."""
    entries = sorted(simulate(scenario, seed=1), key=lambda e: str(e.get("timestamp", "")))
    if newest_first:
        entries.reverse()
    if table:
        rows = [f"{'TIMESTAMP':<32}{'SEVERITY':<10}TEXT_PAYLOAD\n"]
        for entry in entries:
            severity = str(entry.get("severity", "DEFAULT"))
            rows.append(f"{entry['timestamp']:<32}{severity:<10}{_text(entry)}\n")
        return "".join(rows)
    return "".join(
        (f"{entry['timestamp']}\t" if timed else "") + _text(entry) + "\n" for entry in entries
    )


def _sink(scenario: str) -> str:
    out = io.StringIO()
    write(simulate(scenario, seed=1), "jsonl", out, seed=1)
    return out.getvalue()


def _summary(d: Diagnosis) -> tuple[Any, ...]:
    cause = d.cause
    exception = cause.exception.type if cause and cause.exception else None
    return (d.state.value, d.attempts, cause.category.value if cause else None, exception)


def _one(analysis: Analysis) -> Diagnosis:
    (diagnosis,) = analysis.diagnoses
    return diagnosis


SINGLE = [name for name in SCENARIOS if len(expected(name)) == 1]
VARIANTS = {
    "untimed-newest-first": {"newest_first": True, "timed": False},
    "timed-newest-first": {"newest_first": True, "timed": True},
    "untimed-oldest-first": {"newest_first": False, "timed": False},
    "table-newest-first": {"newest_first": True, "timed": True, "table": True},
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("scenario", SINGLE)
def test_value_output_diagnoses_like_the_sink(scenario: str, variant: str) -> None:
    sink = _one(analyze_sources([MemorySource(_sink(scenario), f"{scenario}.jsonl")]))
    text = _value_output(scenario, **VARIANTS[variant])
    found = _one(analyze_sources([MemorySource(text, f"{scenario}.txt")]))
    want = _summary(sink)
    if scenario in NO_TASKS:
        want = (*want[:2], NO_TASKS[scenario], *want[3:])
    got = _summary(found)
    # The exception may be read from the tail the service copied into its message, where the
    # sink's is the worker's own last line: the same failure, possibly a subclass's name
    # (torch.distributed.DistBackendError for RuntimeError).
    assert got[:3] == want[:3]
    assert (got[3] is None) == (want[3] is None), (got, want)
    flipped = variant == "untimed-newest-first" and any(
        line in text for line in ("Job is running.", "Job failed.", "Job completed successfully.")
    )
    assert any(NOTE in note for note in found.notes) == flipped, found.notes


def test_a_turned_text_says_so_in_the_json() -> None:
    text = _value_output("user-code-exit1", newest_first=True, timed=False)
    found = _one(analyze_sources([MemorySource(text, "value.txt")]))
    assert found.state.value == "JOB_STATE_FAILED" and found.attempts == 1
    assert found.cause is not None and found.cause.exception is not None
    assert found.cause.exception.type == "KeyError"
    (note,) = [n for n in found.notes if NOTE in n]
    assert note.startswith("value.txt holds no times")
    json.dumps(note)


@pytest.mark.parametrize(
    ("line", "severity", "text"),
    [
        ("2024-04-04T00:33:46.378623Z  ERROR   Job failed.", "ERROR", "Job failed."),
        ("2024-04-04 00:33:47 WARNING: low disk", "WARNING", "low disk"),
        ("2024-04-04 00:33:47 INFO | step 3", "INFO", "step 3"),
        ("2024-04-04 00:33:47 ERRORS were 3", "DEFAULT", "ERRORS were 3"),
        ("ERROR Job failed.", "DEFAULT", "ERROR Job failed."),  # no time: the text as it is
    ],
)
def test_a_severity_after_the_time_is_the_records(line: str, severity: str, text: str) -> None:
    stats = InputStats(path="t.txt")
    (record,) = read_plain_text(io.BytesIO(line.encode() + b"\n"), stats)
    assert (record.severity, record.text) == (severity, text)


def test_a_short_text_is_not_turned_on_one_step() -> None:
    # Two lifecycle lines are one step: too little to call the text newest first. Read as
    # written, "Job failed." then "Job is running." is a retry under way.
    text = "Job failed.\nJob is running.\n"
    found = _one(analyze_sources([MemorySource(text, "two.txt")]))
    assert not any(NOTE in n for n in found.notes)
