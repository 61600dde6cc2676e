"""Running the CLI in-process for tests: exit code, stdout and stderr, a crash re-raised."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from typer.testing import CliRunner

from analyzer.cli.app import app

runner = CliRunner()


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """``jobdoctor ARGS`` in this process; an exception other than an exit fails the test."""
    result = runner.invoke(app, list(args), input=stdin)
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, result.stdout, result.stderr


def modules_loaded(
    args: Sequence[str], *, one_command: bool = False, console: bool = False
) -> tuple[set[str], str, str]:
    """The modules a run of ``jobdoctor ARGS`` loaded in a fresh interpreter, stdout a pipe;
    its stdout and stderr (which ends with the modules' names). Through the whole app, the
    app of just the command run (``one_command``, ``command_app``), or as the console script
    runs it (``console``: parsed without typer when it can be, ``analyzer.cli.console.run``)."""
    if console:
        entry = "from analyzer.cli.console import run\nsys.argv[:] = ['jobdoctor', *args]\nrun()"
    else:
        app = "command_app(args)" if one_command else "app"
        entry = f"from analyzer.cli.app import app, command_app\n{app}(args)"
    code = (
        "import sys\n"
        f"args = {list(args)!r}\n"
        "try:\n" + "".join(f"    {line}\n" for line in entry.splitlines()) + "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write('\\n'.join(sorted(sys.modules)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        env=env,
    )
    return set(done.stderr.split()), done.stdout, done.stderr
