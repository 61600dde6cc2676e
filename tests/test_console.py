"""The console script's quick parser (analyzer.cli.console) answers as the typer app does: for
each command line of a table, its output and exit code are those of the typer app; it parses
what a file diagnosis needs and leaves everything else to typer; and its table of options
is the typer command's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from analyzer.cli.app import app, command_app
from analyzer.cli.console import DIAGNOSE_OPTIONS, FLAG, PATH, PATHS, TEXT, quick_command

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
OOM = str(SAMPLES / "cuda-oom.jsonl.gz")
SUCCESS = str(SAMPLES / "success.jsonl")
SPEC = str(ROOT / "tests" / "fixtures" / "evidence" / "disable-retries-once-running.spec.json")
RULES = str(ROOT / "tests" / "fixtures" / "rules_bad")
POLICY = str(ROOT / "rules" / "policy.yaml")

# Parsed here: every option of a file diagnosis, in the forms click accepts.
QUICK = [
    ["diagnose", OOM],
    ["diagnose", "--format", "json", OOM],
    ["diagnose", "--format=json", OOM, SUCCESS],
    ["diagnose", OOM, "-f", "jsonl", SUCCESS],
    ["diagnose", "-f", "json", "-f", "yaml", OOM],  # the last one, as click takes it
    ["diagnose", "-f", "table", "--color", "always", OOM],
    ["diagnose", "-f", "markdown", "--lang", "ja", OOM],
    ["diagnose", "-q", OOM, SUCCESS],
    ["diagnose", "--quiet", "--fail-on", "failed", OOM],
    ["diagnose", "--fail-on=not-succeeded", "--color", "never", SUCCESS],
    ["diagnose", "--fail-on", "retried", "-f", "json", OOM],
    ["diagnose", "--job", "8486479822100748891", "-f", "json", OOM],
    ["diagnose", "--job", "projects/p/locations/l/customJobs/1", OOM],  # not in it: exit 2
    ["diagnose", "--since", "3x", OOM],  # (a valid one names the time of day)
    ["diagnose", "--start", "2024-04-29T00:00:00Z", "--end", "2024-04-30T00:00:00Z", OOM],
    ["diagnose", "--start", "yesterday", OOM],  # a bad window: the body says so
    ["diagnose", "--policy", POLICY, "--job-spec", SPEC, "-f", "json", OOM],
    ["diagnose", "--policy", str(ROOT / "no-such-policy.yaml"), OOM],
    ["diagnose", "--rules", RULES, "--rules", str(ROOT / "no-such-rules"), OOM],
    ["diagnose", str(ROOT / "no-such-file.jsonl")],
    ["diagnose", str(ROOT / "no-such-file.jsonl"), SUCCESS],
    ["diagnose", "-"],
    ["diagnose", ""],
]
# Left to typer: help, errors of usage, live and BigQuery reads, and what click reads its own
# way (an option glued to another or to its value, a value like an option, "--").
TYPER = [
    ["diagnose"],
    ["diagnose", "--help"],
    ["diagnose", OOM, "--help"],
    ["diagnose", "-f", "JSON", OOM],
    ["diagnose", "--format", "csv", OOM],
    ["diagnose", "-fjson", OOM],
    ["diagnose", "-f=json", OOM],
    ["diagnose", "-qf", "json", OOM],
    ["diagnose", OOM, "--format"],
    ["diagnose", OOM, "--format="],
    ["diagnose", "--quiet=yes", OOM],
    ["diagnose", "--job", "-x", OOM],
    ["diagnose", "--", OOM],
    ["diagnose", "--no-such-option", OOM],
    ["diagnose", "--formats", "json", OOM],
    ["diagnose", "--job-id", "123", OOM],
    ["diagnose", "--project", "p", OOM],
    ["diagnose", "--bigquery", "p.d.t", OOM],
    ["diagnose", "--follow", OOM],
    ["diagnose", "--no-job-record", OOM],
    ["--version"],
    ["explain", "Job failed."],
]

_RUN = (
    "import sys\n"
    "from analyzer.cli.console import leave, run\n"
    "route, sys.argv[:] = sys.argv[1], ['jobdoctor', *sys.argv[2:]]\n"
    "leave(run(quick=route == 'quick'))\n"
)


def _jobdoctor(args: list[str], route: str) -> tuple[int, str, str]:
    """``jobdoctor ARGS`` in a fresh interpreter, parsed by ``route``: "quick" (the console
    script's way) or "typer" (the typer app alone); stdin holds one sample."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env.update(COLUMNS="100", NO_COLOR="1", TERM="dumb")
    with open(SUCCESS, "rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-c", _RUN, route, *args],
            cwd=ROOT,
            stdin=stdin,
            capture_output=True,
            env=env,
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


@pytest.mark.parametrize("args", QUICK + TYPER, ids=lambda args: " ".join(args)[:60])
def test_the_console_script_answers_as_the_typer_app(args: list[str]) -> None:
    quick = _jobdoctor(args, "quick")
    assert quick == _jobdoctor(args, "typer")
    assert "Traceback" not in quick[2]


@pytest.mark.parametrize("args", QUICK)
def test_a_file_diagnosis_is_parsed_without_typer(args: list[str]) -> None:
    assert quick_command(args) is not None


@pytest.mark.parametrize("args", TYPER)
def test_anything_else_is_left_to_typer(args: list[str]) -> None:
    assert quick_command(args) is None


def test_shell_completion_is_left_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_JOBDOCTOR_COMPLETE", "complete_bash")
    assert quick_command(["diagnose", OOM]) is None


def test_the_quick_options_are_the_typer_commands() -> None:
    command = typer.main.get_command(command_app(["diagnose"]))
    assert isinstance(command, typer.main.TyperGroup)
    diagnose = command.commands["diagnose"]
    options = {
        name: param
        for param in diagnose.params
        for name in (*param.opts, *param.secondary_opts)
        if isinstance(param, typer.core.TyperOption)
    }
    for name, (parameter, kind) in DIAGNOSE_OPTIONS.items():
        option = options[name]
        assert option.name == parameter, name
        assert option.is_flag == (kind == FLAG), name
        assert option.multiple == (kind == PATHS), name
        if kind in (TEXT, FLAG, PATH, PATHS):
            assert not hasattr(option.type, "choices"), name
        else:
            assert isinstance(kind, type)
            assert list(option.type.choices) == [member.value for member in kind], name
    # Every option of a file diagnosis is here; the rest read live logs or BigQuery.
    left = {name for name in options if name not in DIAGNOSE_OPTIONS}
    assert left == {
        "--project",
        "--job-id",
        "--region",
        "--api-endpoint",
        "--vertex-endpoint",
        "--job-record",
        "--no-job-record",
        "--bigquery",
        "--billing-project",
        "--max-bytes",
        "--dry-run",
        "--follow",
    }
    assert app.registered_commands  # the whole app still has every command
