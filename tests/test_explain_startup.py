"""``jobdoctor explain`` starts fast (issue 19: at most 0.15 s): it loads what explaining
needs and nothing of the scan (no msgspec, no worker pool, no readers, no pandas), and off a
terminal not even rich, whose output it writes the same, character for character.
``--version`` loads no stage at all."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from rich.console import Console

from analyzer.cli.app import ColorMode, _explanation_lines, _print_lines, _styled
from analyzer.cli.commands import console
from analyzer.rulebook import RuleBook
from analyzer.verdict.explain import explain
from analyzer.verdict.policy import load_policy
from tests.clirun import modules_loaded

ROOT = Path(__file__).resolve().parents[1]
BOOK = RuleBook.load()
POLICY = load_policy()
# Every text the rules must match, in every language, and a few a reader might paste.
MESSAGES = sorted(
    {example.text for rule in BOOK.rules for example in rule.match_examples}
    | {
        "no rule knows this",
        "Job failed.\tcontrol \x1b[31mcharacters\x1b[0m and a bidi \u202eoverride",
        "The replica workerpool0-0 exited with a non-zero status of 137. " + "x" * 300,
    }
)
# What explain must not load: the scan, the pool, the readers, the frames, YAML (the rule book
# and the policy come from the cache), and off a terminal rich.
NOT_LOADED = [
    "msgspec",
    "analyzer.classify._fastscan",
    "analyzer.classify.collector",
    "analyzer.classify.eventstore",
    "analyzer.core.processes",
    "analyzer.ingest.inputs",
    "analyzer.ingest.sources",
    "analyzer.ingest.sniff",
    "analyzer.ingest.jsonl",
    "pandas",
    "yaml",
]


def _plain(lines: list[list[tuple[str, str]]]) -> str:
    # What the command writes off a terminal (analyzer.cli.explain).
    return "".join("".join(piece for piece, _ in line) + "\n" for line in lines)


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_plain_output_is_what_rich_writes_off_a_terminal(lang: str) -> None:
    for message in MESSAGES:
        lines = _explanation_lines(explain(message, BOOK, POLICY, lang))
        out = io.StringIO()
        # The console explain used before, writing to a file: no terminal, 80 columns.
        _print_lines(lines, Console(file=out, highlight=False))
        assert _plain(lines) == out.getvalue(), message


def test_styles_follow_rich_and_the_color_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert not _styled(ColorMode.auto) and not _styled(ColorMode.never)
    assert _styled(ColorMode.always)
    for name, value, styled in [
        ("FORCE_COLOR", "1", True),
        ("FORCE_COLOR", "", False),
        ("TTY_COMPATIBLE", "1", True),
    ]:
        monkeypatch.setenv(name, value)
        # Whatever rich would decide for the same console.
        assert _styled(ColorMode.auto) is styled is console(ColorMode.auto).is_terminal
        monkeypatch.delenv(name)


def _loaded(*args: str) -> set[str]:
    """The modules a run of ``jobdoctor ARGS`` loaded, in a fresh interpreter, stdout a pipe."""
    return modules_loaded(args)[0]


@pytest.mark.parametrize(
    "message",
    ["Job failed.", "The replica workerpool0-0 exited with a non-zero status of 1."],
    ids=["lifecycle", "error"],
)
def test_explain_loads_only_what_it_needs(message: str) -> None:
    _loaded("explain", message)  # the rule book and policy cached (analyzer.core.cache)
    loaded = _loaded("explain", message)
    assert "analyzer.verdict.explain" in loaded
    found = sorted(m for m in loaded for name in [*NOT_LOADED, "rich"] if _within(m, name))
    assert found == []


def test_version_loads_no_stage() -> None:
    loaded = _loaded("--version")
    assert sorted(m for m in loaded if m.startswith("analyzer.")) == [
        "analyzer.cli",
        "analyzer.cli.app",
        "analyzer.cli.commands",
        "analyzer.cli.usage_errors",
        "analyzer.core",
        "analyzer.core.errors",
    ]
    assert not any(_within(m, "rich") for m in loaded)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")
