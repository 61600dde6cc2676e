"""``explain`` on a terminal folds at word boundaries, as ``diagnose`` does (issue 33, point 5);
off a terminal it writes each line whole (a pipe, a file)."""

from __future__ import annotations

import pytest

from analyzer.cli.app import _folded
from tests.clirun import run
from tests.terminal import run_in_terminal

MESSAGE = "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error."


@pytest.mark.parametrize("env", [{}, {"NO_COLOR": "1"}], ids=["colour", "no-colour"])
def test_explain_folds_at_word_boundaries_on_a_terminal(env: dict[str, str]) -> None:
    shown = run_in_terminal(["explain", MESSAGE], width=60, env=env)
    assert shown.code == 0
    lines = shown.text.rstrip("\n").split("\n")
    assert max(len(line.rstrip()) for line in lines) <= 60
    _, plain, _ = run("explain", MESSAGE)  # off a terminal: whole lines
    assert any(len(line) > 60 for line in plain.splitlines())
    # The same words in the same order: no word was cut in two.
    assert " ".join(shown.text.split()) == " ".join(plain.split())


def test_a_folded_line_hangs_under_its_text() -> None:
    line = "  → " + "word " * 30
    folded = _folded([line], 40)
    assert folded[0].startswith("  → ") and all(f.startswith("    w") for f in folded[1:])
    assert all(len(f) <= 40 for f in folded)


@pytest.mark.parametrize("command", ["diagnose", "report", "classify", "explain", "sql"])
@pytest.mark.parametrize("width", [50, 80])
def test_help_never_breaks_a_choice_in_a_word(command: str, width: int) -> None:
    """``--help`` folds an option's choices between two values (issue 33, point 5)."""
    import re

    shown = run_in_terminal([command, "--help"], width=width)
    assert shown.code == 0
    assert "<" in shown.text  # an option of choices is there
    # Every value follows a "| " or the "<": a fold can fall only at the space.
    assert re.search(r"\|\S", shown.text) is None, shown.text
