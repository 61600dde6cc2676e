"""The bodies of ``jobdoctor report --bigquery``: no option parsing, so Python can call it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from analyzer.core.errors import InputError
from analyzer.engines.bigquery import analyze_bigquery
from analyzer.engines.bigquery.run import BigQuerySource, describe_window
from analyzer.rulebook import RuleBook


def bigquery_report(
    source: BigQuerySource,
    output_format: str,
    out: Path | None,
    rules_dirs: Sequence[Path],
    policy_path: Path | None,
    *,
    say: Callable[[str], None],
    dry_run: bool = False,
) -> None:
    """Diagnose every job of ``source`` and write the fleet report (stdout when ``out`` is
    None); ``say`` gets the window, the estimate and the notices."""
    from analyzer.cli.report_command import FLEET_FORMATS, render_fleet, write_report
    from analyzer.verdict.policy import load_policy

    if output_format not in FLEET_FORMATS:
        raise InputError(f"unknown report format {output_format!r}")
    book = RuleBook.load(tuple(rules_dirs))
    policy = load_policy(policy_path)
    say(describe_window(source))
    analysis = analyze_bigquery(source, rules=book, policy=policy, say=say, dry_run=dry_run)
    if analysis is None:
        return
    for notice in analysis.notices[1:]:
        say(notice)
    write_report(render_fleet(analysis, output_format), out)
