"""The ``jobdoctor`` command line: a thin layer over the Python API.

Only this module prints or exits. Exit codes: 0 the analysis ran (whatever the jobs' fate),
1 ``--fail-on failed`` and a job failed, 2 bad usage or unreadable input, 3 invalid rules or
policy.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from analyzer.errors import InputError, JobDoctorError, PolicyError, RuleError, SourceError

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals may hold log content
    add_completion=False,
    help="Diagnose Vertex AI custom training jobs from their Cloud Logging logs.",
)
rules_app = typer.Typer(no_args_is_help=True, help="Work with rule files.")
app.add_typer(rules_app, name="rules")

EXIT_FAILED_JOB = 1
EXIT_USAGE = 2
EXIT_RULES = 3


class ReportFormat(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


class FailOn(StrEnum):
    failed = "failed"
    never = "never"


def _stderr() -> Console:
    return Console(stderr=True, highlight=False)


@contextmanager
def _reported_errors() -> Iterator[None]:
    """Turn library errors into one line on stderr and the documented exit code."""
    try:
        yield
    except RuleError as exc:
        for problem in exc.problems:
            _stderr().print(f"jobdoctor: {problem}", markup=False)
        raise typer.Exit(EXIT_RULES) from None
    except PolicyError as exc:
        _stderr().print(f"jobdoctor: {exc}", markup=False)
        raise typer.Exit(EXIT_RULES) from None
    except (InputError, SourceError, JobDoctorError) as exc:
        _stderr().print(f"jobdoctor: {exc}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    except KeyboardInterrupt:
        _stderr().print("jobdoctor: interrupted", markup=False)
        raise typer.Exit(130) from None
    except BrokenPipeError:
        # The reader (head, less) went away: nothing left to say.
        sys.stderr.close()
        raise typer.Exit(0) from None


def _rules_dirs(rules: list[Path] | None) -> tuple[Path, ...]:
    import os

    dirs = list(rules or [])
    env = os.environ.get("JOBDOCTOR_RULES")
    if env:
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
    return tuple(dirs)


PathsArg = Annotated[
    list[str],
    typer.Argument(help="Log files, directories, globs, or - for stdin.", show_default=False),
]
RulesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--rules", help="Extra rule directory (also JOBDOCTOR_RULES).", show_default=False
    ),
]
PolicyOpt = Annotated[
    Path | None,
    typer.Option("--policy", help="Policy profile to use instead of the built-in one."),
]


@app.command()
def diagnose(
    paths: PathsArg,
    job: Annotated[str | None, typer.Option("--job", help="Only this job id.")] = None,
    output: Annotated[
        ReportFormat, typer.Option("--format", "-f", help="Report format.")
    ] = ReportFormat.text,
    fail_on: Annotated[
        FailOn, typer.Option("--fail-on", help="Exit 1 when a job's state is FAILED.")
    ] = FailOn.never,
    rules: RulesOpt = None,
    policy: PolicyOpt = None,
) -> None:
    """Diagnose every job in the logs: state, retries, root cause, evidence, advice."""
    from analyzer.api import analyze
    from analyzer.diagnosis import JobState
    from analyzer.report import render_json, render_markdown, render_text

    with _reported_errors():
        analysis = analyze(paths, rules_dirs=_rules_dirs(rules), policy_path=policy, job=job)
        for notice in analysis.notices:
            _stderr().print(f"jobdoctor: {notice}", markup=False)
        if job is not None and not analysis.diagnoses:
            raise InputError(f"job {job} is not in the inputs; run without --job to list them")
        if output is ReportFormat.json:
            sys.stdout.write(render_json(analysis))
        elif output is ReportFormat.markdown:
            sys.stdout.write(render_markdown(analysis))
        else:
            render_text(analysis, Console(highlight=False))
    if fail_on is FailOn.failed and any(d.state is JobState.FAILED for d in analysis.diagnoses):
        raise typer.Exit(EXIT_FAILED_JOB)


def main() -> None:
    """Entry point of the ``jobdoctor`` console script."""
    app()


if __name__ == "__main__":
    main()
