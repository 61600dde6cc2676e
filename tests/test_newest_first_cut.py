"""A newest-first export that lost its oldest entries (platform.md section 6): gcloud logging
read's JSON and the Logs Explorer's downloads print newest first, so a copy cut short, or a
Download at its 10,000-entry cap, keeps the newest entries and loses the oldest: the job's
first attempts, restarts and start. The diagnosis says so in a note (text and
``jobs[].notes``), and not for a sink file or an export written oldest first."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from analyzer.api import analyze
from analyzer.simulate import simulate, write
from analyzer.simulate.writers import entry_ns
from tests.clirun import run

SAID = "are lower bounds and its first attempt's start is not known"
CAP = 10_000


def _entries(scenario: str) -> list[dict[str, Any]]:
    return sorted(simulate(scenario, seed=3), key=entry_ns)


def _padded(entries: list[dict[str, Any]], total: int) -> list[dict[str, Any]]:
    """``entries`` and progress lines of the job's first worker up to ``total`` entries, in
    time order (each a copy of a worker line, with its own insertId and a later time)."""
    model = next(e for e in entries if "jsonPayload" in e)
    out = list(entries)
    for index in range(total - len(entries)):
        filler = copy.deepcopy(model)
        filler["insertId"] = f"pad{index:06d}"
        filler["jsonPayload"]["message"] = f"step {index} loss 0.{index % 97:02d}"
        out.append(filler)
    return sorted(out, key=entry_ns)


def _json_array(entries: list[dict[str, Any]], *, newest_first: bool, cut: bool) -> str:
    ordered = entries[::-1] if newest_first else entries
    if cut:
        kept = ordered[: len(ordered) * 6 // 10]
        text = json.dumps(kept, indent=2)[:-2]  # no closing "\n]"
        return text[:-40]  # and its last entry cut inside
    return json.dumps(ordered, indent=2) + "\n"


def _cut_text(text: str) -> str:
    """``text`` cut at 60%, inside a line."""
    at = len(text) * 6 // 10
    while text[at - 1] == "\n":
        at += 1
    return text[:at]


def _written(entries: list[dict[str, Any]], fmt: str) -> str:
    out = io.StringIO()
    write(entries, fmt, out, seed=3)
    return out.getvalue()


# (name, file suffix, how the input is made, whether the note is due)
CASES = [
    ("gcloud-json cut", "json", lambda e: _json_array(e, newest_first=True, cut=True), True),
    ("gcloud-json whole", "json", lambda e: _json_array(e, newest_first=True, cut=False), False),
    # --order=asc (or a paste turned the other way): a cut loses the newest entries instead.
    (
        "gcloud-json oldest first, cut",
        "json",
        lambda e: _json_array(e, newest_first=False, cut=True),
        False,
    ),
    ("explorer-csv cut", "csv", lambda e: _cut_text(_written(e, "explorer-csv")), True),
    ("explorer-csv whole", "csv", lambda e: _written(e, "explorer-csv"), False),
    # A sink file is in no order: its cut last line is only that line.
    ("sink jsonl cut", "jsonl", lambda e: _cut_text(_written(e, "jsonl")), False),
    (
        "download at its cap",
        "json",
        lambda e: _json_array(_padded(e, CAP), newest_first=True, cut=False),
        True,
    ),
    (
        "one entry under the cap",
        "json",
        lambda e: _json_array(_padded(e, CAP - 1), newest_first=True, cut=False),
        False,
    ),
    (
        "at the cap, oldest first",
        "json",
        lambda e: _json_array(_padded(e, CAP), newest_first=False, cut=False),
        False,
    ),
]


@pytest.mark.parametrize(("name", "suffix", "make", "due"), CASES, ids=[c[0] for c in CASES])
def test_lost_oldest_entries_are_told(
    name: str, suffix: str, make: Any, due: bool, tmp_path: Path
) -> None:
    path = tmp_path / f"export.{suffix}"
    path.write_text(make(_entries("worker-restarts-exhausted")), encoding="utf-8")
    analysis = analyze([path])
    (diagnosis,) = analysis.diagnoses
    said = [n for n in diagnosis.notes if SAID in n]
    assert bool(said) is due, diagnosis.notes
    if due:
        (note,) = said
        assert note.startswith(f"{path} is written newest first and ")
        cut = analysis.inputs[0].cut_line
        assert (f"line {cut:,}, the last" in note) if cut else ("10,000 entries" in note)


def test_a_job_whose_creation_is_in_the_input_lost_nothing(tmp_path: Path) -> None:
    # Legacy logs name the job's creation ("Validating job requirements..."): with it in the
    # input, the job's beginning is there, whatever was cut before it.
    entries = [
        {
            "insertId": f"q{n}",
            "resource": {
                "type": "cloudml_job",
                "labels": {"job_id": "legacy_7", "task_name": "service"},
            },
            "timestamp": f"2018-04-30T15:0{n}:00Z",
            "severity": "INFO",
            "textPayload": text,
        }
        for n, text in enumerate(
            [
                "Validating job requirements...",
                "Job creation request has been successfully validated.",
                "Job legacy_7 is queued.",
                "Waiting for job to be provisioned.",
            ]
        )
    ]
    path = tmp_path / "export.json"
    path.write_text(_json_array(entries + entries[-1:], newest_first=True, cut=True))
    (diagnosis,) = analyze([path]).diagnoses
    assert not any(SAID in n for n in diagnosis.notes), diagnosis.notes


def test_the_note_is_in_the_text_report_and_the_json(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(_json_array(_entries("user-code-exit1"), newest_first=True, cut=True))
    _, text, _ = run("diagnose", str(path))
    assert SAID in " ".join(text.split())
    _, out, _ = run("diagnose", "--format", "json", str(path))
    document = json.loads(out)
    assert any(SAID in n for n in document["jobs"][0]["notes"])
