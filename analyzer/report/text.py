"""The terminal report: a verdict a person reads in ten seconds, then the evidence.

Many jobs start with a summary line and a one-row-per-job table (failures first, the most
recent first within a state: :mod:`analyzer.report.overview`), then each job's details in the
same order.

On a terminal (``wrap``) lines are folded at word boundaries to the console's width with a
hanging indent: a label's continuation lines start under its content, never under the label,
and an evidence line is shortened in its middle (keeping the start and the end of the
message) to fit one row. Written to a file or a pipe, lines are never folded: one fact per
line, for ``grep``.

Log text is shown with its control characters escaped and its secrets cut out
(:func:`analyzer.report.controls.visible`, through :func:`_log_text`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console
from rich.style import Style
from rich.text import Text

from analyzer.ingest.records import Origin
from analyzer.report.controls import one_line, visible
from analyzer.report.facts import (
    cause_phrase,
    clock,
    counts_phrase,
    cut_line,
    depth_facts,
    evidence_events,
    first_line,
    job_label,
    jobs_list_line,
    more_pages_line,
    no_entry_line,
    observed_word,
    period,
    plural,
    short_state,
    skip_line,
    span,
    stall_phrase,
)
from analyzer.report.overview import (
    fleet_order,
    summary_line,
)
from analyzer.report.stalls import fleet_burn, stall_evidence, stall_facts
from analyzer.rulebook.events import Event
from analyzer.verdict.diagnosis import Diagnosis, JobState

if TYPE_CHECKING:
    from analyzer.pipeline.analysis import Analysis

_STATE_STYLE = {
    JobState.SUCCEEDED: "bold green",
    JobState.FAILED: "bold red",
    JobState.CANCELLED: "bold yellow",
}
# A stalled job is still billed (platform.md section 2): it stands out as a failure does.
_STALLED_STYLE = "bold magenta"
_LABEL = 10  # width of the left-hand labels
_INDENT = 2 + _LABEL  # where a label's content starts
_VERDICT_HANG = 4  # continuation lines of a verdict
# Evidence texts in an unwrapped report (a file, a pipe): long enough to grep, short enough to
# read; on a terminal they are cut to the row instead.
_EVIDENCE_CHARS = 140
# Below this many cells for its text, an evidence line is folded rather than cut to nothing.
_EVIDENCE_MIN = 32
_NARROWEST = 20  # a console narrower than this is laid out as if it were this wide


def _log_text(text: str) -> str:
    """Text that came from the logs (or from the user's paths), as the terminal shows it: its
    control characters escaped and its secrets cut out (log text is untrusted: escape
    sequences, ``\r``, bidi overrides)."""
    return visible(text)


class _Text(Text):
    """Rich text whose pieces show their control characters instead of sending them to the
    terminal (:func:`_log_text` on every string put in it)."""

    def __init__(self, text: str = "", style: str = "") -> None:
        super().__init__(visible(text), style=style)

    def append(self, text: str | Text, style: str | Style | None = None) -> _Text:
        super().append(visible(text) if isinstance(text, str) else text, style)
        return self


def shorten_middle(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` terminal cells, cut in its middle with ``…``.

    Keeps the start (what the message is) and the end (often the decisive part: an exit
    reason, a file, an error code); the start gets the larger share. Whitespace is folded.
    """
    flat = " ".join(text.split())
    if cell_len(flat) <= limit:
        return flat
    if limit <= 1:
        return "…"[:limit]
    budget = limit - 1
    head_budget = (budget * 3 + 4) // 5
    head, used = [], 0
    for char in flat:
        width = cell_len(char)
        if used + width > head_budget:
            break
        head.append(char)
        used += width
    tail: list[str] = []
    tail_budget, used = budget - used, 0
    for char in reversed(flat):
        width = cell_len(char)
        if used + width > tail_budget:
            break
        tail.append(char)
        used += width
    return "".join(head).rstrip() + "…" + "".join(reversed(tail)).lstrip()


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where lines go and whether they are folded to the console's width."""

    console: Console
    wrap: bool

    @property
    def width(self) -> int:
        return max(self.console.width, _NARROWEST)

    def line(self, text: Text) -> None:
        self.console.print(text, soft_wrap=True)

    def folded(self, first: Text, body: Text, indent: int, lead: str = "") -> None:
        """``first`` then ``body``; on a terminal, ``body`` folds at word boundaries and its
        continuation lines start ``indent`` (plus ``lead``'s width) cells in."""
        if not self.wrap:
            self.line(first + Text(lead, style=body.style) + body)
            return
        room = max(self.width - indent - cell_len(lead), _NARROWEST // 2)
        pieces = body.wrap(self.console, room, overflow="fold")
        for index, piece in enumerate(pieces):
            piece.rstrip()
            if index == 0:
                self.line(first + Text(lead, style=body.style) + piece)
            else:
                self.line(Text(" " * (indent + cell_len(lead))) + piece)

    def labelled(self, label: str, body: Text | str, style: str = "", lead: str = "") -> None:
        if len(label) >= _LABEL:
            # A label too long for its column gets a line of its own: the content column
            # stays where every other line has it.
            self.line(Text(f"  {label}", style="bold blue"))
            label = ""
        head = Text("  ")
        head.append(f"{label:<{_LABEL}}", style="bold blue" if label else "")
        text = body if isinstance(body, Text) else _Text(body, style=style)
        self.folded(head, text, _INDENT, lead)


def _verdict(diagnosis: Diagnosis) -> Text:
    line = Text("job ", style="bold")
    # The label and the counts every report prints (analyzer.report.facts).
    line.append(_log_text(job_label(diagnosis)), style="bold")
    line.append("  ")
    line.append(short_state(diagnosis), style=_STATE_STYLE.get(diagnosis.state, "bold cyan"))
    if diagnosis.stalled is not None:
        # Since when and who, in place of how the state was reached and the cause (as
        # analyzer.report.facts.verdict_line says it).
        line.append(", ")
        line.append(_log_text(stall_phrase(diagnosis.stalled)), style=_STALLED_STYLE)
        line.append(f"  {counts_phrase(diagnosis)}")
        return line
    line.append(f" ({observed_word(diagnosis)})  ")
    line.append(f"{counts_phrase(diagnosis)}  ")
    line.append(_log_text(cause_phrase(diagnosis)), style="bold" if diagnosis.cause else "dim")
    return line


def _print_verdict(layout: _Layout, diagnosis: Diagnosis) -> None:
    layout.folded(Text(), _verdict(diagnosis), _VERDICT_HANG)


def _evidence(
    layout: _Layout,
    evidence: Sequence[tuple[Origin, Event | None]],
    first_label: str = "evidence",
) -> None:
    """Evidence lines: each line's origin, time and task, and its message's first line."""
    content = layout.width - _INDENT

    def head(event: Event, short: bool) -> str:
        when = event.timestamp
        shown = when.strftime("%H:%M:%S") if short and when is not None else clock(when)
        return f"  {shown}  {event.task or '-'}"

    # A narrow terminal: the time of day is enough (the attempts give the dates), on every
    # line of the job alike.
    short = layout.wrap and any(
        cell_len(str(origin)) + cell_len(head(event, False)) > content
        for origin, event in evidence
        if event is not None
    )
    for index, (origin, event) in enumerate(evidence):
        label = first_label if index == 0 else ""
        body = _Text(one_line(str(origin)), style="cyan")
        if event is None:
            layout.labelled(label, body)
            continue
        body.append(head(event, short), style="dim")
        # The message's first line (a service error's traceback tail follows on the next).
        text = _log_text(first_line(event.text, limit=1 << 20))
        if not layout.wrap:
            layout.labelled(label, body + Text("  " + shorten_middle(text, _EVIDENCE_CHARS)))
            continue
        room = content - body.cell_len - 2
        if room >= _EVIDENCE_MIN:
            layout.labelled(label, body + Text("  " + shorten_middle(text, room)))
            continue
        # A long path leaves too little room: the text gets its own row, indented under it.
        layout.labelled(label, body)
        layout.labelled("", Text(shorten_middle(text, content - 2)), lead="  ")


def _details(layout: _Layout, diagnosis: Diagnosis) -> None:
    _print_verdict(layout, diagnosis)
    if diagnosis.cause is not None:
        layout.labelled("cause", _log_text(diagnosis.cause.message))
        _evidence(layout, evidence_events(diagnosis))
    elif diagnosis.recorded_error is not None:
        # The job's own error, where no category fits it: quoted with its line, as a cause is.
        layout.labelled("error", _log_text(diagnosis.recorded_error.message))
        _evidence(layout, evidence_events(diagnosis))
    _stall(layout, diagnosis)
    for label, fact in depth_facts(diagnosis):
        layout.labelled(label, _log_text(fact))
    _attempts(layout, diagnosis)
    _workers(layout, diagnosis)
    for index, advice in enumerate(diagnosis.advice):
        # Advice and notes quote the logs (an exception's message, a path): log text too.
        layout.labelled("advice" if index == 0 else "", _log_text(advice), "green", lead="→ ")
    for note in diagnosis.notes:
        layout.labelled("note", _log_text(note), "italic")


def _stall(layout: _Layout, diagnosis: Diagnosis) -> None:
    """A stalled job's facts (since when, the silent workers, those waiting, the timeout and
    the cost to it) and the lines that show the stall."""
    for label, fact in stall_facts(diagnosis):
        style = _STALLED_STYLE if label == "stalled" else ""
        layout.labelled(label, _log_text(fact), style)
    _evidence(layout, stall_evidence(diagnosis))


def _attempts(layout: _Layout, diagnosis: Diagnosis) -> None:
    """A line per attempt: its number, period, duration, outcome and restarts."""
    for index, attempt in enumerate(diagnosis.attempt_log):
        took = attempt.end - attempt.start if attempt.start and attempt.end else None
        body = _Text(f"#{attempt.attempt}  {period(attempt.start, attempt.end)}  ")
        body.append(f"{span(took):>9}  ", style="dim")
        body.append(attempt.outcome, style="bold")
        if attempt.restarts:
            body.append(f"  {plural(attempt.restarts, 'restart')}")
        layout.labelled("attempts" if index == 0 else "", body)


def _workers(layout: _Layout, diagnosis: Diagnosis) -> None:
    """A line per worker and attempt that restarted or exited: restarts, VM moves, codes."""
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
            layout.labelled("workers" if first else "", body)
            first = False


def _table(layout: _Layout, diagnoses: Sequence[Diagnosis]) -> None:
    # Laid out by analyzer.report.table: every column kept, cells folded on a terminal.
    from analyzer.report.table import table_lines

    for line in table_lines(diagnoses, layout.width if layout.wrap else None):
        layout.line(line)


def _footer(layout: _Layout, analysis: Analysis) -> None:
    skipped = sum(s.skipped for s in analysis.inputs)
    records = sum(s.records for s in analysis.inputs)
    layout.line(Text())
    if len(analysis.diagnoses) > 1:
        # The head scrolled away by now: the summary again, and where the table alone is.
        again = Text(summary_line(analysis.diagnoses), style="bold")
        again.append("  (the table alone: --format table)", style="dim")
        layout.folded(Text(), again, 2)
    summary = f"read {plural(records, 'record')} from {plural(len(analysis.inputs), 'input')}"
    layout.folded(
        Text(),
        Text(summary + (f", skipped {plural(skipped, 'line')}" if skipped else ""), "dim"),
        2,
    )
    for stats in analysis.inputs:
        for reason, count in sorted(stats.skip_reasons.items()):
            line = _Text(f"{stats.path}: {skip_line(stats, reason, count)}", style="dim")
            layout.folded(Text("  "), line, 4)
        if (cut := cut_line(stats)) is not None:
            layout.folded(Text("  "), _Text(f"{stats.path}: {cut}", style="dim"), 4)
        if (listed := jobs_list_line(stats)) is not None:
            layout.folded(Text("  "), _Text(f"{stats.path}: {listed}", style="dim"), 4)
        if (empty := no_entry_line(stats)) is not None:
            layout.folded(Text("  "), _Text(f"{stats.path}: {empty}", style="dim"), 4)
        if (more := more_pages_line(stats)) is not None:
            layout.folded(Text("  "), _Text(f"{stats.path}: {more}", style="dim"), 4)
    for rule in analysis.disabled_rules:
        line = _Text(f"rule {rule} kept timing out and was disabled for the rest of the run")
        layout.folded(Text("  "), line, 4)
    for problem in analysis.unread:
        layout.folded(Text("  "), _Text(f"not read: {problem}", style="dim"), 4)


def _wraps(console: Console, wrap: bool | None) -> bool:
    return console.is_terminal if wrap is None else wrap


def render_text(analysis: Analysis, console: Console, *, wrap: bool | None = None) -> None:
    """Print the analysis to ``console``.

    One job: its verdict line, then its details. Several: the summary line, the fleet table,
    then every job's details, failures first. ``wrap`` (default: whether ``console`` is a
    terminal) folds lines to the console's width.
    """
    layout = _Layout(console, _wraps(console, wrap))
    ordered = fleet_order(analysis.diagnoses)
    if not ordered:
        console.print("No job found in the inputs.", markup=False)
    if len(ordered) > 1:
        layout.folded(Text(), Text(summary_line(ordered), style="bold"), 2)
        if (burn := fleet_burn(ordered)) is not None:
            layout.folded(Text(), Text(burn, style=_STALLED_STYLE), 2)
        layout.line(Text())
        _table(layout, ordered)
        layout.line(Text())
    for index, diagnosis in enumerate(ordered):
        if index:
            layout.line(Text())
        _details(layout, diagnosis)
    _footer(layout, analysis)


def render_table(analysis: Analysis, console: Console, *, wrap: bool | None = None) -> None:
    """Print the fleet table alone: one row per job, failures first."""
    layout = _Layout(console, _wraps(console, wrap))
    _table(layout, fleet_order(analysis.diagnoses))


def render_verdicts(analysis: Analysis, console: Console, *, wrap: bool | None = None) -> None:
    """Print only the verdict lines (``diagnose -q``), failures first."""
    layout = _Layout(console, _wraps(console, wrap))
    for diagnosis in fleet_order(analysis.diagnoses):
        _print_verdict(layout, diagnosis)
