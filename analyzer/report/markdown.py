"""The Markdown report: for pasting into an issue or a pull request."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from analyzer.report.controls import one_line, visible
from analyzer.report.facts import (
    clock,
    depth_facts,
    evidence_events,
    first_line,
    span,
    verdict_line,
)
from analyzer.report.overview import TABLE_HEADER, fleet_order, row_cells, summary_line, table_rows
from analyzer.report.stalls import stall_evidence, stall_facts
from analyzer.verdict.diagnosis import Diagnosis

if TYPE_CHECKING:
    from analyzer.pipeline.analysis import Analysis


# Log text, job ids and file names are untrusted: in Markdown they must not open an image or a
# link (``![``, ``](``), raw HTML (``<``), a new table row (``|``, a line break) or a code span.
_MARKDOWN = str.maketrans({"\\": "\\\\", "[": "\\[", "]": "\\]", "<": "&lt;", "|": "\\|", "`": "'"})
_LINE_BREAK = re.compile(r"\r\n|\n")


def _cell(text: str) -> str:
    """``text`` as Markdown text: control characters shown (not sent to a terminal), secrets
    cut out, nothing in it read as Markdown, its line breaks kept inside the paragraph or cell."""
    return _LINE_BREAK.sub("<br>", visible(text).translate(_MARKDOWN))


def _code(text: str) -> str:
    """``text`` inside a code span: only a backtick, a pipe or a line break could leave it."""
    return one_line(text).replace("`", "'").replace("|", "\\|")


def _overview(diagnoses: Sequence[Diagnosis]) -> list[str]:
    """Many jobs: the summary line and one table row per job, before the details."""
    out = [f"**{_cell(summary_line(diagnoses))}**", ""]
    out += ["| " + " | ".join(TABLE_HEADER) + " |", "|" + "---|" * len(TABLE_HEADER)]
    out += ["| " + " | ".join(_cell(c) for c in row_cells(r)) + " |" for r in table_rows(diagnoses)]
    return [*out, ""]


def render_markdown(analysis: Analysis) -> str:
    """The analysis as Markdown: per job its verdict, evidence, attempts and workers; many
    jobs start with the summary line and the fleet table, failures first, and follow its
    order."""
    out = ["# jobdoctor diagnosis", ""]
    if not analysis.diagnoses:
        out += ["No job found in the inputs.", ""]
    ordered = fleet_order(analysis.diagnoses)
    if len(ordered) > 1:
        out += _overview(ordered)
    for diagnosis in ordered:
        out += _job(diagnosis)
    # What the diagnoses may lack: inputs not read, rules stopped after their time budget.
    lacking = [f"- not read: {_cell(problem)}" for problem in analysis.unread] + [
        f"- rule `{_code(rule)}` kept timing out and was disabled for the rest of the run"
        for rule in analysis.disabled_rules
    ]
    if lacking:
        out += ["Not in this diagnosis:", "", *lacking, ""]
    return "\n".join(out)


def _job(diagnosis: Diagnosis) -> list[str]:
    """One job's section: its verdict, the message quoted with its evidence, the facts, the
    attempts and workers, the advice and the notes."""
    out = [f"## {_cell(verdict_line(diagnosis))}", "", *_stall(diagnosis), *_quoted(diagnosis)]
    facts = depth_facts(diagnosis)
    out += [f"- **{label}**: {_cell(fact)}" for label, fact in facts] + ([""] if facts else [])
    out += [
        "| attempt | start | end | duration | outcome | restarts |",
        "|---|---|---|---|---|---|",
    ]
    for attempt in diagnosis.attempt_log:
        duration = attempt.end - attempt.start if attempt.start and attempt.end else None
        out.append(
            f"| {attempt.attempt} | {clock(attempt.start)} | {clock(attempt.end)} "
            f"| {span(duration)} | {_cell(attempt.outcome)} | {attempt.restarts} |"
        )
    out.append("")
    if diagnosis.worker_restarts:
        out += ["| worker | restarts |", "|---|---|"]
        out += [f"| {_cell(w)} | {n} |" for w, n in diagnosis.worker_restarts.items()]
        out.append("")
    if diagnosis.advice:
        out += ["What to do:", ""] + [f"- {_cell(a)}" for a in diagnosis.advice] + [""]
    out += [f"_{_cell(n)}_" for n in diagnosis.notes] + ([""] if diagnosis.notes else [])
    return out


def _stall(diagnosis: Diagnosis) -> list[str]:
    """A stalled job's facts and the lines that show the stall; nothing when not stalled."""
    facts = stall_facts(diagnosis)
    if not facts:
        return []
    out = [f"- **{label}**: {_cell(fact)}" for label, fact in facts]
    for origin, event in stall_evidence(diagnosis):
        text = first_line(event.text) if event else ""
        out.append(f"- **evidence**: `{_code(str(origin))}` {_cell(text)}")
    return [*out, ""]


def _quoted(diagnosis: Diagnosis) -> list[str]:
    """The cause's message (else the job's own error, where no category fits it) as a quote,
    and the lines it was read from; nothing when the job has neither."""
    quoted = diagnosis.cause.message if diagnosis.cause is not None else None
    if quoted is None and diagnosis.recorded_error is not None:
        quoted = diagnosis.recorded_error.message
    if quoted is None:
        return []
    out = [f"> {_cell(quoted)}", "", "Evidence:", ""]
    for origin, event in evidence_events(diagnosis):
        text = first_line(event.text) if event else ""
        out.append(f"- `{_code(str(origin))}` {_cell(text)}")
    return [*out, ""]
