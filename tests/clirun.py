"""Running the CLI in-process for tests: exit code, stdout and stderr, a crash re-raised."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
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


# A small interpreter runs the CLI and reports its children's peak: measured from the test
# process itself, the child's peak would include the test process's memory, copied at the fork.
_PEAK = """
import pathlib, resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "analyzer", *sys.argv[2:]])
pathlib.Path(sys.argv[1]).write_text(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(done.returncode)
"""


def peak_rss(
    args: Sequence[str], env: dict[str, str] | None = None, timeout: float = 600
) -> tuple[int, bytes]:
    """``jobdoctor ARGS`` in a fresh process: its peak RSS in bytes (with the workers it
    waited for) and its stdout. A nonzero exit fails the test with its stderr."""
    with tempfile.TemporaryDirectory() as folder:
        peak = Path(folder) / "peak"
        done = subprocess.run(
            [sys.executable, "-c", _PEAK, str(peak), *args],
            capture_output=True,
            env=env,
            cwd=Path(__file__).resolve().parents[1],
            timeout=timeout,
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        return int(peak.read_text()) * 1024, done.stdout
