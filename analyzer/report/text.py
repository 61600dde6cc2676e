"""The terminal report: a verdict a person reads in ten seconds, then the evidence.

Log text is shown with its control characters escaped (:mod:`analyzer.controls`).

Lines are never hard-wrapped (``soft_wrap``): the terminal folds long lines itself, and a
report piped to a file or ``grep`` keeps one fact per line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.style import Style
from rich.text import Text

from analyzer.controls import visible
from analyzer.diagnosis import Diagnosis, JobState
from analyzer.report.facts import (
    cause_phrase,
    clock,
    depth_facts,
    evidence_events,
    first_line,
    observed_word,
    period,
    plural,
    short_state,
    span,
)

if TYPE_CHECKING:
    from analyzer.api import Analysis

_STATE_STYLE = {
    JobState.SUCCEEDED: "bold green",
    JobState.FAILED: "bold red",
    JobState.CANCELLED: "bold yellow",
}
_LABEL = 10  # width of the left-hand labels


class _Text(Text):
    """Rich text whose pieces show their control characters instead of sending them to the
    terminal: log text is untrusted (escape sequences, ``\\r``, bidi overrides)."""

    def __init__(self, text: str = "", style: str = "") -> None:
        super().__init__(visible(text), style=style)

    def append(self, text: str | Text, style: str | Style | None = None) -> _Text:
        super().append(visible(text) if isinstance(text, str) else text, style)
        return self


def _labelled(label: str, body: Text | str, style: str | None = None) -> Text:
    line = _Text(f"  {label:<{_LABEL}}", style="bold")
    line.append(body if isinstance(body, Text) else _Text(body, style=style or ""))
    return line


def _verdict(diagnosis: Diagnosis) -> Text:
    line = _Text("job ", style="bold")
    line.append(diagnosis.job_id or "(job id not in the logs)", style="bold")
    if diagnosis.trial:
        line.append(f" trial {diagnosis.trial}", style="bold")
    line.append("  ")
    line.append(short_state(diagnosis), style=_STATE_STYLE.get(diagnosis.state, "bold cyan"))
    line.append(f" ({observed_word(diagnosis)})  ")
    retries = plural(diagnosis.retries, "retry").replace("retrys", "retries")
    line.append(f"{plural(diagnosis.attempts, 'attempt')}, {retries}  ")
    line.append(cause_phrase(diagnosis), style="bold" if diagnosis.cause else "dim")
    return line


def _job_lines(diagnosis: Diagnosis) -> list[Text]:
    lines = [_verdict(diagnosis)]
    if diagnosis.cause is not None:
        lines.append(_labelled("cause", diagnosis.cause.message))
        for index, (origin, event) in enumerate(evidence_events(diagnosis)):
            body = _Text(str(origin), style="cyan")
            if event is not None:
                body.append(f"  {clock(event.timestamp)}  {event.task or '-'}  ", style="dim")
                body.append(first_line(event.text, 140))
            lines.append(_labelled("evidence" if index == 0 else "", body))
    for label, fact in depth_facts(diagnosis):
        lines.append(_labelled(label, fact))
    for index, attempt in enumerate(diagnosis.attempt_log):
        took = attempt.end - attempt.start if attempt.start and attempt.end else None
        body = _Text(f"#{attempt.attempt}  {period(attempt.start, attempt.end)}  ")
        body.append(f"{span(took):>9}  ", style="dim")
        body.append(attempt.outcome, style="bold")
        if attempt.restarts:
            body.append(f"  {plural(attempt.restarts, 'restart')}")
        lines.append(_labelled("attempts" if index == 0 else "", body))
    first = True
    for run in diagnosis.timeline.attempts:
        for worker in run.workers:
            if not worker.restarts and not worker.exits:
                continue
            body = _Text(f"{worker.task}", style="bold")
            body.append(f"  attempt {run.number}: {plural(worker.restarts, 'restart')}")
            if worker.maintenance_restarts:
                body.append(f" ({worker.maintenance_restarts} on another VM)")
            codes = [str(e.exit_code) for e in worker.exits if e.exit_code is not None]
            if codes:
                body.append(f", exit codes {', '.join(codes)}")
            lines.append(_labelled("workers" if first else "", body))
            first = False
    for index, advice in enumerate(diagnosis.advice):
        lines.append(_labelled("advice" if index == 0 else "", f"→ {advice}", "green"))
    for note in diagnosis.notes:
        lines.append(_labelled("note", note, "italic"))
    return lines


def render_text(analysis: Analysis, console: Console) -> None:
    """Print the analysis to ``console``: per job a verdict line, then its details."""
    if not analysis.diagnoses:
        console.print("No job found in the inputs.", markup=False)
    for index, diagnosis in enumerate(analysis.diagnoses):
        if index:
            console.print()
        for line in _job_lines(diagnosis):
            console.print(line, soft_wrap=True)
    skipped = sum(s.skipped for s in analysis.inputs)
    records = sum(s.records for s in analysis.inputs)
    summary = _Text(
        f"\nread {records} records from {plural(len(analysis.inputs), 'input')}"
        + (f", skipped {skipped} lines" if skipped else ""),
        style="dim",
    )
    for stats in analysis.inputs:
        for reason, count in sorted(stats.skip_reasons.items()):
            summary.append(f"\n  {stats.path}: {count} skipped: {reason}")
    for rule in analysis.disabled_rules:
        summary.append(f"\n  rule {rule} kept timing out and was disabled for the rest of the run")
    for problem in analysis.unread:
        summary.append(f"\n  not read: {problem}")
    console.print(summary, soft_wrap=True)
