"""The old Logs Viewer's copy of its lines (a one-letter severity, two spaces, the task, the
message, two spaces and the task again): read with its severity and task, so that a paste's
replica lines are the replica's (tests/real/gh-tensorflow-models-4578-S is one such copy)."""

from __future__ import annotations

import io

import pytest

from analyzer.ingest.plain import read_plain_text, split_viewer_line
from analyzer.ingest.records import InputStats

CASES = [
    (
        "I  worker-replica-3 global step 52335: loss = 6.2518 (0.464 sec/step)  worker-replica-3",
        ("INFO", "worker-replica-3", "global step 52335: loss = 6.2518 (0.464 sec/step)"),
    ),
    (
        "E  master-replica-0 Command '['python3', '-m', 'x']' returned non-zero exit status 1"
        "  master-replica-0",
        (
            "ERROR",
            "master-replica-0",
            "Command '['python3', '-m', 'x']' returned non-zero exit status 1",
        ),
    ),
    # The service's entry has no task: its severity and message alone (trailing space kept).
    (
        "E  The replica master 0 exited with a non-zero status of 1. Termination reason: Error. ",
        (
            "ERROR",
            None,
            "The replica master 0 exited with a non-zero status of 1. Termination reason: Error. ",
        ),
    ),
    ("W  workerpool0-0 low memory  workerpool0-0", ("WARNING", "workerpool0-0", "low memory")),
    # A task at one end only is part of the message.
    ("I  master-replica-0 started", ("INFO", None, "master-replica-0 started")),
    ("D  a  b", ("DEBUG", None, "a  b")),
]
NOT_VIEWER = [
    "I think it failed",  # one space: prose
    "I   indented",  # three spaces: not the copy's two before a word
    "X  master-replica-0 x  master-replica-0",  # no severity letter
    "  undefined",
    "Traceback (most recent call last):",
    "",
]


@pytest.mark.parametrize(("text", "want"), CASES)
def test_a_viewer_line_gives_severity_task_and_message(
    text: str, want: tuple[str, str | None, str]
) -> None:
    assert split_viewer_line(text) == want


@pytest.mark.parametrize("text", NOT_VIEWER)
def test_other_lines_are_no_viewer_lines(text: str) -> None:
    assert split_viewer_line(text) is None


def test_the_plain_reader_gives_the_tasks() -> None:
    text = "\n".join(t for t, _ in CASES) + "\n  undefined\n"
    stats = InputStats(path="copy.txt")
    records = list(read_plain_text(io.BytesIO(text.encode()), stats))
    assert [(r.severity, r.task, r.text) for r in records] == [
        *(want for _, want in CASES),
        ("DEFAULT", None, "  undefined"),
    ]
    assert stats.used == stats.lines == len(CASES) + 1


def test_a_terminals_colours_are_left_out() -> None:
    # A notebook's saved outputs keep IPython's colours around a traceback's parts.
    text = (
        "\x1b[0;31mRuntimeError\x1b[0m      Traceback (most recent call last)\n"
        "\x1b[0;31mRuntimeError\x1b[0m: Job failed with:\n"
        "\x1b[1;32m-> 1046\x1b[0m plain \x1b[K\n"
    )
    stats = InputStats(path="cell.txt")
    records = list(read_plain_text(io.BytesIO(text.encode()), stats))
    assert [r.text for r in records] == [
        "RuntimeError      Traceback (most recent call last)",
        "RuntimeError: Job failed with:",
        "-> 1046 plain ",
    ]
