"""The console script (analyzer.cli.console) answers as the typer app does: for each command line
of a table, run as a user runs it (a fresh process, leaving with ``os._exit``), its output and
exit code are those of the app run in this process; and what it leaves unflushed is not lost."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clirun import run

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
OOM = str(SAMPLES / "cuda-oom.jsonl.gz")
SUCCESS = str(SAMPLES / "success.jsonl")

LINES = [
    ["diagnose", "-f", "json", OOM],
    ["diagnose", "-q", OOM, SUCCESS],
    ["diagnose", "--fail-on", "failed", "-f", "jsonl", OOM],  # exit 1
    ["diagnose", str(ROOT / "no-such-file.jsonl")],  # exit 2, one line
    ["diagnose", "--format", "xml", OOM],  # a usage error: exit 2, one line
    ["explain", "Job failed."],
    ["explain", "no rule knows this"],  # exit 1
    ["--version"],
]


def _console(args: list[str]) -> tuple[int, str, str]:
    """``jobdoctor ARGS`` as the console script runs it, in a fresh interpreter."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    env.update(COLUMNS="100", NO_COLOR="1", TERM="dumb")
    done = subprocess.run(
        [sys.executable, "-c", "from analyzer.cli.console import main; main()", *args],
        cwd=ROOT,
        capture_output=True,
        env=env,
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


@pytest.mark.parametrize("args", LINES, ids=lambda args: " ".join(args)[-50:])
def test_the_console_script_answers_as_the_app(args: list[str]) -> None:
    assert _console(args) == run(*args)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("output", ["json", "text"])
def test_what_does_not_fit_on_stdout_is_exit_2(output: str, tmp_path: Path) -> None:
    """The report is still in the buffer when the script leaves: the flush that fails is
    said, not hidden behind a success (os._exit skips the interpreter's own flush), and said
    once, with an empty cache too (a fresh HOME: issue 31, point 10)."""
    code = "from analyzer.cli.console import main; main()"
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    env["HOME"] = str(tmp_path)
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-c", code, "diagnose", "-f", output, SUCCESS],
            cwd=ROOT,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
    assert done.returncode == 2
    said = "jobdoctor: cannot write the output: no space left on device"
    assert done.stderr.splitlines()[-1] == said
    assert done.stderr.count(said) == 1, done.stderr
