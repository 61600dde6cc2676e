"""Jupyter notebooks as input (issue 27, point 3): a ``.ipynb`` of nbformat 4, any minor
version, read cell by cell: stream outputs, error outputs (their traceback, ANSI colours
removed) and ``text/plain`` results; a folder of notebooks like a folder of logs; every record
keeps its cell and line; a damaged notebook is said in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from analyzer.api import analyze_sources
from analyzer.ingest import FileSource, Format, MemorySource, open_sources
from analyzer.ingest.notebook import NO_TEXT
from analyzer.ingest.records import CellOrigin

JOB = "4695452998984269824"
RESOURCE = f"projects/569083142710/locations/us-central1/customJobs/{JOB}"
# IPython's colours around the traceback's parts, as a notebook saves them.
TRACEBACK = [
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mRuntimeError\x1b[0m                              Traceback (most recent call last)",
    "Cell \x1b[0;32mIn[4], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m \x1b[43mjob\x1b[49m"
    "\x1b[38;5;241;43m.\x1b[39;49m\x1b[43mrun\x1b[49m\x1b[43m(\x1b[49m\x1b[43m)\x1b[49m",
    '\x1b[0;31mRuntimeError\x1b[0m: Job failed with:\ncode: 3\nmessage: "The replica workerpool0-0'
    ' exited with a non-zero status of 1. Termination reason: Error. "',
]


def _notebook(minor: int, outputs: list[dict[str, Any]], *, ids: bool = True) -> dict[str, Any]:
    cells: list[dict[str, Any]] = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Train on Vertex AI"]},
        {
            "cell_type": "code",
            "execution_count": 4,
            "metadata": {},
            "outputs": outputs,
            "source": ["job.run()"],
        },
    ]
    if ids and minor >= 5:  # cell ids came with nbformat 4.5
        for number, cell in enumerate(cells):
            cell["id"] = f"cell-{number}"
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": minor}


def _failed_run() -> list[dict[str, Any]]:
    return [
        {
            "name": "stdout",
            "output_type": "stream",
            # A list of lines with their ends: nbformat's multiline string.
            "text": [
                "Creating CustomJob\n",
                f"CustomJob created. Resource name: {RESOURCE}\n",
                f"CustomJob {RESOURCE} current state:\n",
                "JobState.JOB_STATE_RUNNING\n",
                f"CustomJob {RESOURCE} current state:\n",
                "JobState.JOB_STATE_FAILED\n",
            ],
        },
        {
            "ename": "RuntimeError",
            "evalue": "Job failed with: ...",
            "output_type": "error",
            "traceback": TRACEBACK,
        },
        {"data": {"image/png": "iVBORw0KGgo="}, "metadata": {}, "output_type": "display_data"},
    ]


def _write(path: Path, notebook: dict[str, Any]) -> Path:
    path.write_text(json.dumps(notebook, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("minor", [0, 2, 4, 5, 10])
def test_a_notebook_is_read_cell_by_cell(tmp_path: Path, minor: int) -> None:
    path = _write(tmp_path / "train.ipynb", _notebook(minor, _failed_run(), ids=minor != 4))
    source = FileSource(str(path))
    assert source.stats.format == Format.NOTEBOOK
    records = list(source.records())
    texts = [record.text for record in records]
    assert texts[0] == "Creating CustomJob"
    # The SDK's state message is one record of its two lines.
    assert texts[2] == f"CustomJob {RESOURCE} current state:\nJobState.JOB_STATE_RUNNING"
    # The traceback without its colours, one record a line.
    assert "RuntimeError                              Traceback (most recent call last)" in texts
    assert "----> 1 job.run()" in texts
    assert "RuntimeError: Job failed with:\ncode: 3" in texts
    origins = [record.origin for record in records]
    assert all(isinstance(origin, CellOrigin) and origin.cell == 2 for origin in origins)
    assert str(origins[0]) == f"{path}:cell 2:1"
    assert origins[-1].to_dict()["cell_line"] == 13
    stats = source.stats
    assert stats.lines == stats.used + stats.skipped
    assert stats.skip_reasons == {NO_TEXT: 1}


def test_the_notebooks_job_is_diagnosed_with_cell_evidence(tmp_path: Path) -> None:
    path = _write(tmp_path / "train.ipynb", _notebook(5, _failed_run()))
    (diagnosis,) = analyze_sources([FileSource(str(path))]).diagnoses
    assert diagnosis.job_id == JOB
    assert diagnosis.state.value == "JOB_STATE_FAILED"
    assert diagnosis.cause is not None
    assert diagnosis.cause.category.value == "user_code_exception"
    assert diagnosis.cause.exit_code == 1
    evidence = diagnosis.cause.to_dict()["evidence"][0]
    assert evidence["cell"] == 2 and evidence["path"] == str(path)


def test_results_and_strings(tmp_path: Path) -> None:
    # A stream's text as one string, a result's text/plain, an error without a traceback.
    outputs = [
        {"name": "stderr", "output_type": "stream",
         "text": f"INFO:google.cloud.aiplatform.jobs:CustomJob {RESOURCE} current state:\n3\n"},
        {"data": {"text/plain": ["<CustomJob object>\n", "state: JOB_STATE_RUNNING"]},
         "execution_count": 4, "metadata": {}, "output_type": "execute_result"},
        {"ename": "KeyboardInterrupt", "evalue": "", "output_type": "error", "traceback": []},
    ]  # fmt: skip
    path = _write(tmp_path / "nb.ipynb", _notebook(4, outputs))
    texts = [record.text for record in FileSource(str(path)).records()]
    assert texts == [
        f"INFO:google.cloud.aiplatform.jobs:CustomJob {RESOURCE} current state:\n3",
        "<CustomJob object>",
        "state: JOB_STATE_RUNNING",
        "KeyboardInterrupt",
    ]


def test_a_progress_bar_keeps_what_the_terminal_shows(tmp_path: Path) -> None:
    outputs = [{"name": "stdout", "output_type": "stream", "text": "10%\r50%\r100%\ndone\n"}]
    path = _write(tmp_path / "nb.ipynb", _notebook(5, outputs))
    assert [r.text for r in FileSource(str(path)).records()] == ["100%", "done"]


def test_sniffed_by_content_without_the_suffix() -> None:
    text = json.dumps(_notebook(5, _failed_run()), indent=1, sort_keys=True)
    assert MemorySource(text, "<stdin>").stats.format == Format.NOTEBOOK
    # Written by another tool, keys unsorted: the version near the start says it.
    unsorted = json.dumps({"nbformat": 4, "nbformat_minor": 2, "metadata": {}, "cells": []})
    assert MemorySource(unsorted, "<stdin>").stats.format == Format.NOTEBOOK


def test_a_folder_of_notebooks(tmp_path: Path) -> None:
    other = "1290022358253305856"
    _write(tmp_path / "a.ipynb", _notebook(5, _failed_run()))
    state = f"CustomJob {RESOURCE.replace(JOB, other)} current state:\nJOB_STATE_RUNNING\n"
    running = [{"name": "stdout", "output_type": "stream", "text": state}]
    _write(tmp_path / "b.ipynb", _notebook(4, running))
    sources = open_sources([str(tmp_path)])
    assert [s.stats.format for s in sources] == [Format.NOTEBOOK] * 2
    states = {d.job_id: d.state.value for d in analyze_sources(sources).diagnoses}
    assert states == {JOB: "JOB_STATE_FAILED", other: "JOB_STATE_RUNNING"}


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (
            '{\n "cells": [\n  {"cell_type": "code",, }\n ]\n}\n',
            "bad.ipynb:3: not a valid notebook",
        ),
        (
            '{"nbformat": 3, "worksheets": []}',
            "bad.ipynb: not a notebook of nbformat 4 (nbformat 3)",
        ),
        (
            '{"cells": {}, "nbformat": 4}',
            "bad.ipynb: not a valid notebook: its 'cells' is not a list",
        ),
        (
            '{"cells": [{"cell_type": "code"}], "nbformat": 4}',
            "cell 1: its 'outputs' is not a list",
        ),
        ("not json at all\n", "bad.ipynb:1: not a valid notebook"),
    ],
)
def test_a_damaged_notebook_is_said_in_one_line(tmp_path: Path, content: str, said: str) -> None:
    path = tmp_path / "bad.ipynb"
    path.write_text(content, encoding="utf-8")
    analysis = analyze_sources(open_sources([str(path)]))
    assert not analysis.diagnoses
    (line,) = analysis.unread
    assert said in line and "\n" not in line


def test_what_nbformat_writes(tmp_path: Path) -> None:
    # The notebook as the nbformat package itself writes it (current minor, cell ids).
    nbformat = pytest.importorskip("nbformat")
    v4 = nbformat.v4
    notebook = v4.new_notebook()
    notebook.cells = [
        v4.new_code_cell(
            "job.run()",
            outputs=[
                v4.new_output(
                    "stream", name="stdout", text=f"CustomJob {RESOURCE} current state:\n5\n"
                ),
                v4.new_output("error", ename="RuntimeError", evalue="x", traceback=TRACEBACK),
            ],
        )
    ]
    path = tmp_path / "written.ipynb"
    nbformat.write(notebook, str(path))
    (diagnosis,) = analyze_sources([FileSource(str(path))]).diagnoses
    assert (diagnosis.job_id, diagnosis.state.value) == (JOB, "JOB_STATE_FAILED")


CAPTURES = Path(__file__).parent / "sdk" / "captures"


@pytest.mark.parametrize(
    "path", sorted(CAPTURES.glob("**/*.ipynb")) or [pytest.param(None, marks=pytest.mark.skip)]
)
def test_every_sdk_capture_notebook_reads_whole(path: Path | None) -> None:
    # The notebooks the real SDK wrote (tests/sdk, issue 27 point 1): every output line
    # accounted for, and a job found in each.
    assert path is not None
    source = FileSource(str(path))
    assert source.stats.format == Format.NOTEBOOK
    analysis = analyze_sources([source])
    assert source.stats.lines == source.stats.used + source.stats.skipped
    assert analysis.diagnoses or source.stats.records == 0
