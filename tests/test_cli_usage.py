"""A usage error is one line on stderr, in jobdoctor's words, and exit 2 (issue 28, point 4):
a bad choice, a bad value, a missing argument, an unknown option or command, for every
command and the program's own options; never typer's usage line and rich box."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clirun import run

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = str(ROOT / "sample_logs" / "success.jsonl")

CASES = [
    # A value that is not one of an option's choices: the option, the value, the choices.
    (
        ["diagnose", "--format", "xml", SAMPLE],
        "--format: 'xml' is not one of text, json, jsonl, yaml, markdown, table, wide",
    ),
    (
        ["diagnose", "-f", "JSON", SAMPLE],
        "--format: 'JSON' is not one of text, json, jsonl, yaml, markdown, table, wide",
    ),
    (
        ["diagnose", "--fail-on=sometimes", SAMPLE],
        "--fail-on: 'sometimes' is not one of failed, not-succeeded, retried, stalled, never",
    ),
    (["explain", "--lang", "fr", "Job failed."], "--lang: 'fr' is not one of en, ja, he"),
    (["report", "-f", "pdf", SAMPLE], "--format: 'pdf' is not one of html, markdown, csv, json"),
    (["classify", "-f", "xml", SAMPLE], "--format: 'xml' is not one of jsonl, csv"),
    (["sql", "--dialect", "sqlite"], "--dialect: 'sqlite' is not one of bigquery, duckdb"),
    # A value of the wrong kind.
    (["simulate", "--seed", "abc"], "--seed: 'abc' is not a valid int"),
    (["report", "--out", str(ROOT), SAMPLE], f"--out: file '{ROOT}' is a directory"),
    # A missing argument or option value.
    (["classify"], "classify: missing argument PATHS"),
    (["diagnose", SAMPLE, "--format"], "diagnose: option '--format' requires an argument"),
    (["explain", "--lang"], "explain: option '--lang' requires an argument"),
    # Unknown options and commands, at every level.
    (["diagnose", "--no-such-option", SAMPLE], "diagnose: no such option: --no-such-option"),
    (["rules", "check", "--strict"], "rules check: no such option: --strict"),
    (["--bogus"], "no such option: --bogus"),
    (["no-such-command"], "no such command 'no-such-command'"),
    (["diagnos", SAMPLE], "no such command 'diagnos'. Did you mean 'diagnose'?"),
    (["rules", "lint"], "rules: no such command 'lint'"),
    (["explain", "one", "two"], "explain: got unexpected extra argument(s) (two)"),
    (["diagnose", "--quiet=yes", SAMPLE], "diagnose: option '--quiet' does not take a value"),
]


@pytest.mark.parametrize(("args", "line"), CASES, ids=[" ".join(a)[-50:] for a, _ in CASES])
def test_a_usage_error_is_one_line(args: list[str], line: str) -> None:
    code, out, err = run(*args)
    assert (code, out, err) == (2, "", f"jobdoctor: {line}\n")


def test_the_console_script_says_it_in_one_line_too() -> None:
    """As a user runs it: a fresh process, stderr a pipe, no terminal width to fill."""
    env = {**os.environ, "COLUMNS": "60", "NO_COLOR": "1"}
    script = "from analyzer.cli.console import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", script, "diagnose", "--format", "xml", SAMPLE],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "jobdoctor: --format: 'xml' is not one of text, json, jsonl, yaml, markdown, table, wide\n"
    )


@pytest.mark.parametrize("args", [[], ["rules"]])
def test_no_arguments_still_show_the_help(args: list[str]) -> None:
    code, out, err = run(*args)
    assert code == 2 and "Usage:" in out + err and "jobdoctor:" not in err


@pytest.mark.parametrize("args", [["--help"], ["diagnose", "--help"], ["rules", "check", "--help"]])
def test_help_is_untouched(args: list[str]) -> None:
    code, out, err = run(*args)
    assert code == 0 and "Usage:" in out and err == ""
