"""Running the CLI in-process for tests: exit code, stdout and stderr, a crash re-raised."""

from __future__ import annotations

from typer.testing import CliRunner

from analyzer.cli import app

runner = CliRunner()


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """``jobdoctor ARGS`` in this process; an exception other than an exit fails the test."""
    result = runner.invoke(app, list(args), input=stdin)
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, result.stdout, result.stderr
