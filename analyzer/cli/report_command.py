"""The body of ``jobdoctor report``: a fleet report over many jobs, in one file.

The CLI registers :func:`report_command` and turns the errors it raises into exit codes; this
module holds no option parsing so that the command can be called from Python too.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from analyzer.api import analyze
from analyzer.core.errors import InputError
from analyzer.pipeline.analysis import Analysis
from analyzer.report.fleet import (
    fleet_document,
    render_csv,
    render_markdown_fleet,
    render_signatures_csv,
    summarize_analysis,
)
from analyzer.report.html import render_html

if TYPE_CHECKING:
    from analyzer.verdict.jobspec import JobSpec

FLEET_FORMATS = ("html", "markdown", "csv", "json")
HTML_ON_TERMINAL = (
    "the HTML report is a web page, not terminal output: write it with --out report.html "
    "(or redirect stdout), or use --format markdown"
)


def render_fleet(
    analysis: Analysis,
    output_format: str,
    job_spec: JobSpec | None = None,
    group_by: str | None = None,
) -> str:
    """The fleet report of ``analysis`` in ``output_format`` (``html``, ``markdown``, ``csv``,
    or ``json``: the ``jobdoctor.diagnosis/1`` document of every job, with the fleet summary
    added as ``fleet`` for dashboards); ``job_spec`` gives the accelerator-hours of the job it
    describes. ``group_by="signature"`` makes the CSV one row per recurring failure (the
    other formats show them in a section of their own).

    Raises :class:`~analyzer.core.errors.InputError` for an unknown format, or a grouping of
    another format than CSV.
    """
    if group_by is not None and output_format != "csv":
        raise InputError(
            f"--group-by {group_by} gives the CSV of recurring failures: add --format csv"
            " (the other formats show them in their own section)"
        )
    summary = summarize_analysis(analysis, job_spec=job_spec)
    if output_format == "csv" and group_by == "signature":
        return render_signatures_csv(summary)
    if output_format == "json":
        from analyzer.report.json import render_json

        # The contract's document (what scripts read) plus the fields it allows to be added.
        return render_json(analysis, {"fleet": fleet_document(summary)})
    if output_format == "html":
        return render_html(summary)
    if output_format == "markdown":
        return render_markdown_fleet(summary)
    if output_format == "csv":
        return render_csv(summary)
    close = difflib.get_close_matches(output_format, FLEET_FORMATS, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise InputError(
        f"unknown report format {output_format!r}.{hint} Choose one of: {', '.join(FLEET_FORMATS)}."
    )


def report_command(
    paths: Sequence[str],
    output_format: str,
    out: Path | None,
    *,
    rules_dirs: Sequence[Path] = (),
    policy_path: Path | None = None,
    job_spec_path: Path | None = None,
    terminal: bool = False,
    since: str | None = None,
    start: str | None = None,
    end: str | None = None,
    dask: object = None,
    group_by: str | None = None,
) -> Analysis:
    """Diagnose every job in ``paths`` and write the fleet report to ``out`` (stdout if None).

    ``since``/``start``/``end`` and ``dask`` are those of :func:`analyzer.api.analyze`;
    ``group_by``: see :func:`render_fleet`.
    Returns the analysis, so that the caller can print its notices. Raises
    :class:`~analyzer.core.errors.InputError` for an unreadable input, an unknown format, HTML
    asked for on a ``terminal`` stdout (a page of markup is no use there), or an output file
    that cannot be written; rule and policy errors as ``analyze`` does.
    """
    if output_format not in FLEET_FORMATS or group_by is not None:
        # Raises the "did you mean" error, or the grouping's, before anything is read.
        render_fleet(Analysis((), ()), output_format, group_by=group_by)
    if out is None and terminal and output_format == "html":
        raise InputError(HTML_ON_TERMINAL)
    analysis = analyze(
        paths,
        rules_dirs=rules_dirs,
        policy_path=policy_path,
        job_spec_path=job_spec_path,
        since=since,
        start=start,
        end=end,
        dask=dask,
    )
    from analyzer.verdict.jobspec import load_job_spec

    spec = load_job_spec(job_spec_path) if job_spec_path is not None else None
    write_report(render_fleet(analysis, output_format, spec, group_by), out)
    return analysis


def write_report(text: str, out: Path | None) -> None:
    """Write ``text`` to ``out`` (stdout when None); InputError when it cannot be written."""
    if out is None:
        sys.stdout.write(text)
        return
    try:
        # newline="" keeps the csv module's line ends as they are.
        with open(out, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
    except OSError as error:
        raise InputError(f"{out}: cannot be written ({error.strerror}), check the path") from None
