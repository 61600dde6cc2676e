"""A stalled job as every report shows it: its phrase, its labelled facts and its evidence.

The platform does not fail a hung job: it bills every VM until the job's
``scheduling.timeout`` (7 days by default; platform.md section 2). A report says since when
the job is stalled, which workers are silent and for how long, who waits on them, the lines
that show it, when the platform will stop the job and what it will have cost by then
(:class:`~analyzer.verdict.stall.Stall`). The text, Markdown and HTML reports and the fleet
report take their words from here, so that they say the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence

from analyzer.ingest.records import Origin
from analyzer.report.facts import clock, first_line, plural
from analyzer.rulebook.events import Event
from analyzer.verdict.diagnosis import Diagnosis
from analyzer.verdict.hangs import collective_words, duration_words
from analyzer.verdict.stall import SilentWorker, Stall, StallCost, StallKind

# What each kind of stall is, in the words of a report's "stalled" line.
_KIND_WORDS = {
    StallKind.STRAGGLER: "some workers silent while the others still write",
    StallKind.ALL_SILENT: "every worker silent, and nothing ends the job",
    StallKind.COLLECTIVE_TIMEOUT: "a collective or rendezvous timed out, and the job has not ended",
}
# Where the timeout comes from (Stall.timeout_source), platform.md section 2.
_TIMEOUT_SOURCES = {
    "job_spec": "the job spec's scheduling.timeout",
    "default": "the platform's default scheduling.timeout of 7 days",
}


def cost_phrase(cost: StallCost) -> str:
    """``12.5 machine-hours and 100.0 accelerator-hours (NVIDIA_A100) in the 156.2 h left``."""
    text = f"{cost.machine_hours:,.1f} machine-hours"
    if cost.accelerator_hours is not None:
        kind = f" ({cost.accelerator})" if cost.accelerator else ""
        text += f" and {cost.accelerator_hours:,.1f} accelerator-hours{kind}"
    return f"{text} in the {cost.hours_left:,.1f} h left to the timeout"


def timeout_phrase(stall: Stall) -> str:
    """When the platform stops the job and where that time comes from."""
    source = _TIMEOUT_SOURCES.get(stall.timeout_source, stall.timeout_source)
    if stall.timeout_at is None:
        return f"unknown (the job's start is not in the input); {source}"
    return f"{clock(stall.timeout_at)} UTC, by {source}: the platform bills every VM until then"


def _events(diagnosis: Diagnosis) -> dict[Origin, Event]:
    return {e.origin: e for a in diagnosis.timeline.attempts for e in a.events}


def _last_line(worker: SilentWorker, events: dict[Origin, Event]) -> str:
    """When the worker wrote last, and where, with its text, when a rule read that line (a
    line no rule reads is known only as a time)."""
    text = f"last line {clock(worker.last_line)}"
    origin = worker.last_origin
    if origin is None:
        return text
    event = events.get(origin)
    said = f": {first_line(event.text)}" if event is not None and event.text.strip() else ""
    return f"{text} at {origin}{said}"


def silent_fact(worker: SilentWorker, events: dict[Origin, Event]) -> str:
    """``workerpool1-3 for 47 min (its rhythm allows 4 min), last line ... at PATH:LINE: text``."""
    return (
        f"{worker.replica} for {duration_words(worker.silent_for)} (its rhythm allows"
        f" {duration_words(worker.threshold)}), {_last_line(worker, events)}"
    )


def stall_facts(diagnosis: Diagnosis) -> list[tuple[str, str]]:
    """The stall's labelled facts (none when the job is not stalled): since when and what
    shows it, each silent worker, those that wait, the timeout and the cost to it."""
    stall = diagnosis.stalled
    if stall is None:
        return []
    events = _events(diagnosis)
    facts = [
        (
            "stalled",
            f"since {clock(stall.since)} UTC ({_KIND_WORDS.get(stall.kind, stall.kind.value)});"
            f" the input ends {clock(stall.input_end)} UTC",
        )
    ]
    facts += [("silent", silent_fact(worker, events)) for worker in stall.workers]
    if stall.waiting:
        waits = f"in {collective_words(stall.collective)}" if stall.collective else "still writing"
        facts.append(("waiting", f"{', '.join(stall.waiting)} ({waits})"))
    elif stall.collective:
        facts.append(("timed out", collective_words(stall.collective)))
    facts.append(("timeout", timeout_phrase(stall)))
    if stall.cost_to_timeout is not None:
        facts.append(("cost", cost_phrase(stall.cost_to_timeout)))
    return facts


def stall_evidence(diagnosis: Diagnosis) -> list[tuple[Origin, Event | None]]:
    """The lines that show the stall (the timeout lines, each silent worker's last line),
    with the events they came from when known, in the order the verdict gives them; a
    silent worker's last line is left out, its "silent" fact cites it."""
    stall = diagnosis.stalled
    if stall is None:
        return []
    events = _events(diagnosis)
    cited = {w.last_origin for w in stall.workers}
    return [(origin, events.get(origin)) for origin in stall.evidence if origin not in cited]


def silent_workers(stall: Stall) -> str:
    """``workerpool1-3 (47 min)``: the silent workers in one cell (``-`` for none: a
    collective timed out while every worker still writes)."""
    if not stall.workers:
        return "-"
    return ", ".join(f"{w.replica} ({duration_words(w.silent_for)})" for w in stall.workers)


def burn_line(count: int, machine_hours: float, accelerator_hours: float | None) -> str:
    """``2 stalled jobs: the platform bills them until their timeouts, 1,339.8
    machine-hours more unless they are cancelled``."""
    spent = f"{machine_hours:,.1f} machine-hours"
    if accelerator_hours is not None:
        spent += f" ({accelerator_hours:,.1f} accelerator-hours)"
    them = "it" if count == 1 else "them"
    return (
        f"{plural(count, 'stalled job')}: the platform bills {them} until"
        f" {'its timeout' if count == 1 else 'their timeouts'}, {spent} more unless"
        f" {'it is' if count == 1 else 'they are'} cancelled"
    )


def fleet_burn(diagnoses: Sequence[Diagnosis]) -> str | None:
    """:func:`burn_line` of the stalled jobs among ``diagnoses`` (None when none is)."""
    costs = [d.stalled.cost_to_timeout for d in diagnoses if d.stalled is not None]
    if not costs:
        return None
    machines = sum(c.machine_hours for c in costs if c is not None)
    known = [
        c.accelerator_hours for c in costs if c is not None and c.accelerator_hours is not None
    ]
    return burn_line(len(costs), machines, sum(known) if known else None)
