"""``jobdoctor diagnose`` starts fast (issue 19): typer builds only the command it runs, and a
diagnosis of a small sink file loads the scan and the stages it needs, not the other commands,
formats or readers' machinery (rich, YAML, the Markdown report, Cloud Storage's thread pool).

typer itself loads (issue 28: the hand-written parser that skipped it saved 25 ms of CPU on a
small diagnosis, none on ``explain``; the figures are in ``analyzer.cli.console``'s docstring)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analyzer.cli.app import app, command_app
from tests.clirun import modules_loaded

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = sorted(
    info.name or info.callback.__name__.replace("_", "-")
    for info in app.registered_commands
    if info.callback is not None
)
# What a diagnosis of a small sink file, written as JSON, must not load.
NOT_LOADED = [
    "rich",
    "yaml",
    "pandas",
    "concurrent.futures",
    "logging",
    "html",
    "analyzer.report.markdown",
    "analyzer.report.text",
    "analyzer.report.html",
    "analyzer.verdict.explain",
    "analyzer.engines.live",
    "analyzer.engines.bigquery",
    "analyzer.frames",
    "analyzer.rulebook.loader",
    "analyzer.ingest.stream_logs",
    "analyzer.classify._fastscan.streamlogs",
    "analyzer.classify._fastscan.gcloudjson",
]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("tail", [["--help"], ["--no-such-option"], []])
def test_one_command_app_answers_as_the_whole_app(command: str, tail: list[str]) -> None:
    args = [command, *tail]
    alone = command_app(args)
    assert alone is not app and len(alone.registered_commands) == 1
    runner = CliRunner()
    env = {"COLUMNS": "100", "NO_COLOR": "1"}
    whole = runner.invoke(app, args, env=env)
    one = runner.invoke(alone, args, env=env)
    assert (one.exit_code, one.output) == (whole.exit_code, whole.output)


@pytest.mark.parametrize(
    "args", [[], ["--version"], ["--help"], ["rules", "check"], ["no-such-command"]]
)
def test_anything_else_gets_the_whole_app(args: list[str]) -> None:
    assert command_app(args) is app


def test_shell_completion_gets_the_whole_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_JOBDOCTOR_COMPLETE", "complete_bash")
    assert command_app(["diagnose"]) is app


def _loaded(*args: str) -> set[str]:
    """The modules a run of ``jobdoctor ARGS`` (as the console script runs it) loaded."""
    modules, out, err = modules_loaded(args, console=True)
    assert out.startswith("{"), err[-2000:]
    return modules


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize("sample", ["cuda-oom.jsonl.gz", "missing-module.jsonl.gz"])
def test_diagnose_of_a_small_file_loads_only_what_it_needs(sample: str, tmp_path: Path) -> None:
    path = tmp_path / sample.removesuffix(".gz")
    path.write_bytes(gzip.decompress((ROOT / "sample_logs" / sample).read_bytes()))
    _loaded("diagnose", "--format", "json", str(path))  # the caches written
    loaded = _loaded("diagnose", "--format", "json", str(path))
    # Read by the fast scan (else the check below would pass vacuously)...
    assert {"analyzer.classify._fastscan.jsonl", "msgspec", "analyzer.report.json"} <= loaded
    # ...and nothing of the other commands, formats and sources.
    found = sorted(m for m in loaded for name in NOT_LOADED if _within(m, name))
    assert found == []
