"""The terminal report: a verdict a person reads in ten seconds, then the evidence."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from analyzer.diagnosis import Diagnosis, JobState
from analyzer.report.facts import (
    clock,
    evidence_events,
    first_line,
    short_state,
    span,
    verdict_line,
)

if TYPE_CHECKING:
    from analyzer.api import Analysis

_STATE_STYLE = {
    JobState.SUCCEEDED: "bold green",
    JobState.FAILED: "bold red",
    JobState.CANCELLED: "bold yellow",
}


def _job(diagnosis: Diagnosis) -> Group:
    style = _STATE_STYLE.get(diagnosis.state, "bold cyan")
    verdict = Text(verdict_line(diagnosis))
    state = short_state(diagnosis)
    at = verdict.plain.find(state)
    verdict.stylize(style, at, at + len(state))
    parts: list[Text | Table] = [verdict]
    if diagnosis.cause is not None:
        parts.append(Text("  cause: ", style="bold") + Text(diagnosis.cause.message))
        for origin, event in evidence_events(diagnosis):
            line = Text(f"    {origin}", style="dim")
            if event is not None:
                line += Text(f"  {clock(event.timestamp)}  {event.task or '-'}  ")
                line += Text(first_line(event.text, 120))
            parts.append(line)
    attempts = Table(box=None, padding=(0, 2), show_edge=False, pad_edge=False)
    for column in ("attempt", "start", "end", "took", "outcome", "restarts"):
        attempts.add_column(column, style="bold" if column == "outcome" else None)
    for attempt in diagnosis.attempt_log:
        took = attempt.end - attempt.start if attempt.start and attempt.end else None
        attempts.add_row(
            f"  #{attempt.attempt}",
            clock(attempt.start),
            clock(attempt.end),
            span(took),
            attempt.outcome,
            str(attempt.restarts),
        )
    if diagnosis.attempt_log:
        parts.append(attempts)
    workers = _workers(diagnosis)
    if workers is not None:
        parts.append(workers)
    for advice in diagnosis.advice:
        parts.append(Text(f"  → {advice}", style="green"))
    for note in diagnosis.notes:
        parts.append(Text(f"  note: {note}", style="italic dim"))
    return Group(*parts)


def _workers(diagnosis: Diagnosis) -> Table | None:
    rows = []
    for attempt in diagnosis.timeline.attempts:
        for worker in attempt.workers:
            rows.append((attempt.number, worker))
    if not rows:
        return None
    table = Table(box=None, padding=(0, 2), show_edge=False, pad_edge=False)
    for column in ("  worker", "attempt", "starts", "restarts", "on new VM", "exit codes"):
        table.add_column(column)
    for number, worker in rows:
        codes = ", ".join(str(e.exit_code) for e in worker.exits if e.exit_code is not None)
        table.add_row(
            f"  {escape(worker.task)}",
            str(number),
            str(len(worker.starts)),
            str(worker.restarts),
            str(worker.maintenance_restarts),
            codes or "-",
        )
    return table


def render_text(analysis: Analysis, console: Console) -> None:
    """Print the analysis to ``console``: per job a verdict line, then its details."""
    if not analysis.diagnoses:
        console.print("No job found in the inputs.", markup=False)
    for index, diagnosis in enumerate(analysis.diagnoses):
        if index:
            console.print()
        console.print(_job(diagnosis))
    skipped = sum(s.skipped for s in analysis.inputs)
    records = sum(s.records for s in analysis.inputs)
    summary = Text(
        f"\nread {records} records from {len(analysis.inputs)} input(s)"
        + (f", skipped {skipped} lines" if skipped else ""),
        style="dim",
    )
    for stats in analysis.inputs:
        for reason, count in sorted(stats.skip_reasons.items()):
            summary += Text(f"\n  {stats.path}: {count} skipped: {reason}", style="dim")
    console.print(summary)
