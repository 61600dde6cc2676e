"""HTML: the self-contained fleet report, and the notebook display of diagnoses.

:func:`render_html` writes one file that works offline: CSS and SVG inline, no script, no
font or image fetched, and a Content-Security-Policy that forbids both even if some text got
through unescaped. Every piece of log text, job id and task name goes through
``html.escape``, and its control characters and bidi overrides are shown marked.
:func:`diagnosis_html` is one job's card (verdict, cause, evidence, attempts, timeline chart,
advice); :class:`~analyzer.pipeline.analysis.DiagnosisList` shows a list of them in Jupyter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from analyzer.report.chart import failures_svg, timeline_svg, tone_colour
from analyzer.report.controls import marked_html
from analyzer.report.facts import (
    clock,
    counted,
    evidence_events,
    first_line,
    job_label,
    plural,
    span,
    verdict_line,
)
from analyzer.report.fleet import (
    TIME_LOST_DEFINITION,
    CauseCount,
    FleetSummary,
    JobSummary,
    hours,
    summarize,
)
from analyzer.report.overview import summary_line
from analyzer.report.stalls import burn_line, silent_workers, stall_evidence, stall_facts
from analyzer.verdict.diagnosis import Diagnosis, JobState

if TYPE_CHECKING:
    pass

REPORT_TITLE = "jobdoctor fleet report"
# Lines of the cause's full message (a traceback tail, say) shown under the verdict.
_MESSAGE_LINES = 30
# A list of more diagnoses than this shows the table and only the first cards in a notebook.
_NOTEBOOK_CARDS = 20

_STATE_TONES = {
    JobState.SUCCEEDED.value: "succeeded",
    JobState.FAILED.value: "failed",
    JobState.CANCELLED.value: "cancelled",
    JobState.RUNNING.value: "running",
}

_CSS = """
.jd{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
  font-size:14px;line-height:1.45;color:#1d2329}
.jd h1{font-size:1.6em;margin:.2em 0 .1em}
.jd h2{font-size:1.25em;margin:1.6em 0 .5em;padding-bottom:.2em;border-bottom:1px solid #dde2e7}
.jd h3{font-size:1.05em;margin:0 0 .4em;display:flex;flex-wrap:wrap;align-items:center;
  gap:6px;overflow-wrap:anywhere}
.jd h3 .jd-id{overflow-wrap:anywhere;word-break:break-all}
.jd .jd-sub{color:#5a6570;margin:0 0 1em}
.jd .jd-cards{display:flex;flex-wrap:wrap;gap:10px;margin:1em 0}
.jd .jd-card{border:1px solid #dde2e7;border-radius:6px;padding:8px 14px;min-width:120px;
  background:#fafbfc}
.jd .jd-card b{display:block;font-size:1.5em}
.jd .jd-card span{color:#5a6570;font-size:.9em}
.jd table{border-collapse:collapse;margin:.4em 0 1em;font-size:.95em}
.jd th,.jd td{text-align:left;padding:4px 10px;border-bottom:1px solid #e6e9ed;
  vertical-align:top}
.jd th{background:#f1f4f7;font-weight:600;white-space:nowrap}
.jd td.num,.jd th.num{text-align:right;font-variant-numeric:tabular-nums}
.jd .jd-wide{width:100%}
.jd .jd-scroll{overflow-x:auto;max-width:100%}
.jd .jd-share{display:inline-block;height:10px;border-radius:2px;vertical-align:middle;
  margin-right:6px}
.jd .jd-badge{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;
  font-size:.85em;font-weight:600;white-space:nowrap;flex:none;line-height:1.5}
.jd tr.jd-total td{font-weight:600;border-top:1px solid #c8ced4}
.jd td.jd-sub{padding-left:1.6em;color:#3a4550}
.jd td.jd-path{white-space:nowrap;color:#5a6570}
.jd .jd-job{border:1px solid #dde2e7;border-radius:8px;padding:12px 16px;margin:14px 0;
  background:#fff}
.jd .jd-msg{margin:.4em 0;padding:6px 10px;border-left:4px solid #D55E00;background:#fbf6f3;
  white-space:pre-wrap;word-break:break-word;font-family:ui-monospace,SFMono-Regular,Menlo,
  Consolas,monospace;font-size:.88em;max-height:18em;overflow:auto}
.jd .jd-evidence{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
  font-size:.85em;color:#3a4550;margin:.2em 0 .6em;padding-left:1.2em}
.jd .jd-evidence li{word-break:break-all}
.jd .jd-note{color:#5a6570;font-style:italic}
.jd .jd-advice li{margin:.15em 0}
.jd a{color:#0b5cad}
.jd .jd-verdict{font-weight:600;overflow-wrap:anywhere}
.jd code{font-size:.9em}
.jd .jd-stall{margin:.4em 0;padding:6px 10px;border-left:4px solid #EE3377;background:#fdf2f6}
.jd .jd-stall ul{margin:.2em 0;padding-left:1.2em}
.jd mark.jd-control{background:#ffe08a;color:#1d2329;font-family:ui-monospace,monospace}
"""


# A stalled job is RUNNING and billed until its timeout (platform.md section 2): marked
# beside its state.
_STALLED_BADGE = f'<span class="jd-badge" style="background:{tone_colour("silent")}">STALLED</span>'


def _e(value: object) -> str:
    """Escaped text of ``value`` (``-`` for None), its control characters and bidi
    overrides shown marked (:func:`~analyzer.report.controls.marked_html`) rather than obeyed."""
    return marked_html("-" if value is None else str(value))


def _badge(state: str) -> str:
    tone = _STATE_TONES.get(state, "pending")
    return (
        f'<span class="jd-badge" style="background:{tone_colour(tone)}">'
        f"{_e(state.removeprefix('JOB_STATE_'))}</span>"
    )


def job_anchors(job_ids: Iterable[str | None]) -> list[str]:
    """One unique, HTML-safe anchor per job, in order (``job-<id>``)."""
    anchors: list[str] = []
    seen: set[str] = set()
    for job_id in job_ids:
        slug = re.sub(r"[^A-Za-z0-9_-]+", "-", job_id or "unknown").strip("-") or "unknown"
        anchor, n = f"job-{slug}", 2
        while anchor in seen:
            anchor, n = f"job-{slug}-{n}", n + 1
        seen.add(anchor)
        anchors.append(anchor)
    return anchors


def _cause_block(diagnosis: Diagnosis) -> str:
    cause = diagnosis.cause
    if cause is None:
        return '<p class="jd-note">No failure found.</p>'
    facts = [f"<b>{_e(cause.category.value)}</b>"]
    if cause.detail:
        facts.append(f"detail {_e(cause.detail)}")
    if cause.replica:
        facts.append(f"replica <code>{_e(cause.replica)}</code>")
    if cause.exit_code is not None:
        facts.append(f"exit code {_e(cause.exit_code)}")
    if cause.region:
        facts.append(f"region {_e(cause.region)}")
    facts.append(f"attempt {cause.attempt}")
    facts.append(f"rule <code>{_e(cause.rule)}</code>")
    evidence = evidence_events(diagnosis)
    # The full text of the first piece of evidence: a service error often carries the tail
    # of the traceback after its first sentence.
    full = next((event.text for _, event in evidence if event is not None), cause.message)
    lines = full.strip().splitlines()
    shown = "\n".join(lines[:_MESSAGE_LINES])
    if len(lines) > _MESSAGE_LINES:
        shown += f"\n… {len(lines) - _MESSAGE_LINES} more lines"
    items = "".join(
        f"<li>{_e(origin)}" + (f" · {_e(first_line(event.text, 140))}" if event else "") + "</li>"
        for origin, event in evidence
    )
    return f'<p>Cause: {", ".join(facts)}</p><div class="jd-msg">{_e(shown)}</div>' + (
        f'<ul class="jd-evidence">{items}</ul>' if items else ""
    )


def _stall_block(diagnosis: Diagnosis) -> str:
    """A stalled job's facts (since when, who is silent, who waits, the timeout and the cost
    to it) and the lines that show the stall; nothing for a job not stalled."""
    facts = stall_facts(diagnosis)
    if not facts:
        return ""
    items = "".join(f"<li><b>{_e(label)}</b> {_e(fact)}</li>" for label, fact in facts)
    evidence = "".join(
        f"<li>{_e(origin)}" + (f" · {_e(first_line(event.text, 140))}" if event else "") + "</li>"
        for origin, event in stall_evidence(diagnosis)
    )
    return f'<div class="jd-stall"><ul>{items}</ul>' + (
        f'<ul class="jd-evidence">{evidence}</ul></div>' if evidence else "</div>"
    )


def _attempts_table(diagnosis: Diagnosis) -> str:
    if not diagnosis.attempt_log:
        return ""
    rows = []
    for attempt in diagnosis.attempt_log:
        took = attempt.end - attempt.start if attempt.start and attempt.end else None
        rows.append(
            f"<tr><td class='num'>{attempt.attempt}</td><td>{_e(clock(attempt.start))}</td>"
            f"<td>{_e(clock(attempt.end))}</td><td class='num'>{_e(span(took))}</td>"
            f"<td><span class='jd-share' style='width:10px;background:"
            f"{tone_colour(attempt.outcome)}'></span>{_e(attempt.outcome)}</td>"
            f"<td class='num'>{attempt.restarts}</td></tr>"
        )
    return (
        "<div class='jd-scroll'><table><thead><tr><th class='num'>attempt</th><th>start (UTC)</th>"
        "<th>end (UTC)</th><th class='num'>took</th><th>outcome</th>"
        "<th class='num'>restarts</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
    )


def diagnosis_html(diagnosis: Diagnosis, anchor: str | None = None) -> str:
    """One job's card: verdict, cause with evidence, attempts, timeline chart, advice, notes.

    An HTML fragment (no ``<html>``); ``anchor`` becomes the card's ``id``.
    """
    ident = f' id="{_e(anchor)}"' if anchor else ""
    advice = "".join(f"<li>{_e(a)}</li>" for a in diagnosis.advice)
    notes = "".join(f'<p class="jd-note">{_e(n)}</p>' for n in diagnosis.notes)
    return (
        f'<section class="jd-job"{ident}>'
        f"<h3>{_badge(diagnosis.state.value)}"
        + (f" {_STALLED_BADGE}" if diagnosis.stalled is not None else "")
        + f" <span class='jd-id'>job {_e(job_label(diagnosis))}</span></h3>"
        f'<p class="jd-verdict">{_e(verdict_line(diagnosis))}</p>'
        + _stall_block(diagnosis)
        + _cause_block(diagnosis)
        + _attempts_table(diagnosis)
        + timeline_svg(diagnosis)
        + (f'<p><b>What to do</b></p><ul class="jd-advice">{advice}</ul>' if advice else "")
        + notes
        + "</section>"
    )


def _jobs_table(jobs: Sequence[JobSummary], anchors: dict[int, str], link: bool) -> str:
    rows = []
    for index, job in enumerate(jobs):
        name = _e(job.job)
        if link and index in anchors:
            name = f'<a href="#{_e(anchors[index])}">{name}</a>'
        observed = "observed" if job.observed_final else "predicted"
        cause = job.category or "-"
        if job.detail:
            cause += f" ({job.detail})"
        if job.outcome == "recovered":
            cause = f"recovered from {cause}"
        rows.append(
            f"<tr><td>{name}</td><td>{_e(job.trial or '-')}</td>"
            f"<td>{_badge(job.state)} <small>{observed}</small>"
            + (f" {_STALLED_BADGE}" if job.stalled_since is not None else "")
            + "</td>"
            f"<td class='num'>{_e(counted(job.attempts, job.attempts_predicted))}</td>"
            f"<td class='num'>{_e(counted(job.retries, job.retries_predicted))}</td>"
            f"<td class='num'>{job.restarts}</td><td>{_e(cause)}</td>"
            f"<td class='num'>{_e(span(job.time_lost))}</td>"
            f"<td class='num'>{_e(hours(job.machine_hours))}</td>"
            f"<td>{_e(clock(job.first_seen))}</td><td class='num'>{_e(span(job.duration))}</td>"
            f"<td class='jd-path' title='{_e(job.path or '-')}'><small>"
            f"{_e(_short_path(job.path))}</small></td>"
            "</tr>"
        )
    return (
        "<div class='jd-scroll'>"
        "<table class='jd-wide'><thead><tr><th>job</th><th>trial</th><th>state</th>"
        "<th class='num'>attempts</th><th class='num'>retries</th>"
        "<th class='num'>restarts</th><th>cause</th><th class='num'>time lost</th>"
        "<th class='num' title='machine-hours'>machine h</th>"
        "<th>first seen (UTC)</th><th class='num'>duration</th><th>source</th>"
        "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>"
    )


def _short_path(path: str | None) -> str:
    """The last two parts of ``path`` (a sink tree's hour file alone says too little); the
    whole path is the cell's title."""
    if not path:
        return "-"
    parts = path.replace("\\", "/").rstrip("/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 1 else path


def _cause_row(count: CauseCount, total: bool) -> str:
    colour = tone_colour(count.category)
    bar = max(2, round(120 * count.share))
    if total:
        first = (
            f"<td><span class='jd-share' style='width:10px;background:{colour}'></span>"
            f"{_e(count.category)}</td><td>all</td>"
        )
    else:
        first = f"<td></td><td class='jd-sub'>{_e(count.detail or '(no detail)')}</td>"
    return (
        f"<tr class='{'jd-total' if total else 'jd-detail'}'>{first}"
        f"<td class='num'>{count.jobs}</td>"
        f"<td><span class='jd-share' style='width:{bar}px;background:{colour}'></span>"
        f"{100 * count.share:.0f}%</td>"
        f"<td class='num'>{_e(counted(count.retries, count.retries_predicted))}</td>"
        f"<td class='num'>{count.restarts}</td>"
        f"<td class='num'>{_e(span(count.time_lost))}</td>"
        f"<td class='num'>{_e(hours(count.machine_hours))}</td></tr>"
    )


def _causes_table(summary: FleetSummary, recovered: bool = False) -> str:
    """Each category's totals, then its details under it (a category's share is never read
    off one of its details): of the failed jobs, or (``recovered``) of the jobs that
    succeeded after a failure."""
    counts = summary.recovered if recovered else summary.by_category
    if not counts:
        return '<p class="jd-note">No failure in these jobs.</p>'
    rows = []
    unexplained = summary.failed_unexplained if not recovered else 0
    for total in counts:
        if recovered:
            rows.append(_cause_row(total, True))
            continue
        rows.append(_cause_row(total, True))
        details = [c for c in summary.by_detail if c.category == total.category]
        if len(details) > 1 or (details and details[0].detail is not None):
            rows += [_cause_row(detail, False) for detail in details]
    return (
        "<table><thead><tr><th>category</th><th>detail</th><th class='num'>jobs</th>"
        "<th>share of all jobs</th><th class='num'>retries</th>"
        "<th class='num'>restarts</th><th class='num'>time lost</th>"
        "<th class='num'>machine-hours</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + (
            f'<p class="jd-note">{unexplained} failed jobs show no cause the rules know.</p>'
            if unexplained
            else ""
        )
    )


def _signatures_table(summary: FleetSummary, anchors: dict[str, str]) -> str:
    """The recurring failures, the most costly first, each job linked to its card."""
    if not summary.signatures:
        return '<p class="jd-note">No failed attempt in these jobs.</p>'
    rows = []
    for group in summary.signatures:
        jobs = ", ".join(
            f'<a href="#{_e(anchors[j])}">{_e(j)}</a>' if j in anchors else _e(j)
            for j in group.jobs
        )
        where = f"{group.evidence.path}:{group.evidence.line}" if group.evidence else "-"
        rows.append(
            f"<tr><td><code>{_e(group.signature.text)}</code>"
            f"<br><small>{_e(where)} · {_e(first_line(group.example, 140))}</small></td>"
            f"<td class='num'>{len(group.jobs)}</td><td class='num'>{group.attempts}</td>"
            f"<td>{_e(clock(group.first_seen))}</td><td>{_e(clock(group.last_seen))}</td>"
            f"<td class='num'>{_e(span(group.time_lost))}</td>"
            f"<td class='num'>{_e(hours(group.machine_hours))}</td><td>{jobs}</td></tr>"
        )
    return (
        "<div class='jd-scroll'><table class='jd-wide'><thead><tr><th>signature</th>"
        "<th class='num'>jobs</th><th class='num'>attempts</th><th>first seen (UTC)</th>"
        "<th>last seen (UTC)</th><th class='num'>time lost</th>"
        "<th class='num'>machine-hours</th><th>jobs</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
    )


def _stalled_table(summary: FleetSummary, anchors: dict[str, str]) -> str:
    """The stalled jobs and their burn, each linked to its card: silent workers, since
    when, the timeout and what the job will have cost by then."""
    count = len(summary.stalled)
    rows = []
    for stalled in summary.stalled:
        job, stall = stalled.job, stalled.stall
        name = _e(job.job)
        if job.job in anchors:
            name = f'<a href="#{_e(anchors[job.job])}">{name}</a>'
        accelerators = job.stall_accelerator_hours
        rows.append(
            f"<tr><td>{name}</td><td>{_e(clock(stall.since))}</td>"
            f"<td>{_e(silent_workers(stall))}</td><td>{_e(', '.join(stall.waiting) or '-')}</td>"
            f"<td>{_e(clock(stall.timeout_at))} <small>{_e(stall.timeout_source)}</small></td>"
            f"<td class='num'>{_e(hours(job.stall_machine_hours or 0.0))}</td>"
            f"<td class='num'>{_e('-' if accelerators is None else hours(accelerators))}</td>"
            "</tr>"
        )
    burn = burn_line(count, summary.stall_machine_hours, summary.stall_accelerator_hours)
    return (
        f'<p class="jd-stall">{_e(burn)}.</p>'
        "<div class='jd-scroll'><table class='jd-wide'><thead><tr><th>job</th>"
        "<th>stalled since (UTC)</th><th>silent</th><th>still writing</th>"
        "<th>timeout (UTC)</th><th class='num'>machine-hours to it</th>"
        "<th class='num'>accelerator-hours to it</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
    )


def _cards(summary: FleetSummary) -> str:
    def card(value: str, label: str) -> str:
        return f'<div class="jd-card"><b>{_e(value)}</b><span>{_e(label)}</span></div>'

    predicted = summary.retries_predicted
    return (
        '<div class="jd-cards">'
        + card(str(len(summary.jobs)), "jobs")
        + card(str(summary.failed), "failed")
        + card(str(summary.outcomes.get("recovered", 0)), "recovered after a failure")
        + card(str(summary.outcomes.get("succeeded", 0)), "succeeded without one")
        + card(
            str(summary.retries),
            f"retries spent ({predicted} more predicted)" if predicted else "retries spent",
        )
        + card(str(summary.restarts), "worker restarts spent")
        + card(span(summary.time_lost), "time lost")
        + card(hours(summary.machine_hours), "machine-hours")
        + (
            card(str(len(summary.stalled)), "stalled, billed until their timeouts")
            if summary.stalled
            else ""
        )
        + (
            card(hours(summary.accelerator_hours), "accelerator-hours")
            if summary.accelerator_hours is not None
            else ""
        )
        + "</div>"
    )


def _inputs_line(summary: FleetSummary) -> str:
    records = sum(s.records for s in summary.inputs)
    skipped = sum(s.skipped for s in summary.inputs)
    text = f"{plural(len(summary.inputs), 'input')}, {plural(records, 'record')}"
    if skipped:
        text += f", {plural(skipped, 'skipped line')}"
    return text


def render_html(
    summary: FleetSummary, *, title: str = REPORT_TITLE, generated: datetime | None = None
) -> str:
    """The fleet report as one self-contained HTML document.

    Totals, causes by category and detail (counts, share, retries, restarts, time lost),
    failed attempts over time, the worst jobs, every job with a link to its card, then one
    card per job with its timeline chart. Times are UTC.
    """
    when = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    anchors = dict(enumerate(job_anchors(j.job for j in summary.jobs)))
    by_label = {job.job: anchors[i] for i, job in enumerate(summary.jobs)}
    by_id = {id(job): index for index, job in enumerate(summary.jobs)}
    worst_anchors = {i: anchors[by_id[id(job)]] for i, job in enumerate(summary.worst)}
    states = ", ".join(
        f"{n} {s.removeprefix('JOB_STATE_').lower()}" for s, n in summary.states.items()
    )
    failures = [(p.time, p.category) for p in summary.failures]
    cards = "".join(diagnosis_html(d, anchors[i]) for i, d in enumerate(summary.diagnoses))
    body = (
        f'<main class="jd" style="max-width:1180px;margin:0 auto;padding:16px 24px">'
        f'<h1 id="top">{_e(title)}</h1>'
        f'<p class="jd-sub">Generated {_e(when)} from {_e(_inputs_line(summary))}. '
        f"{_e(states or 'No job found.')}. {_e(TIME_LOST_DEFINITION)} Machine-hours count "
        "each worker from its first to its last line.</p>"
        + _cards(summary)
        + (
            f"<h2>Stalled jobs ({len(summary.stalled)})</h2>" + _stalled_table(summary, by_label)
            if summary.stalled
            else ""
        )
        + f"<h2>Failed jobs by cause ({summary.failed})</h2>"
        + _causes_table(summary)
        + (
            "<h2>Recovered from</h2>" + _causes_table(summary, recovered=True)
            if summary.recovered
            else ""
        )
        + "<h2>Recurring failures</h2>"
        + _signatures_table(summary, by_label)
        + f"<h2>Failed attempts over time</h2>{failures_svg(failures)}"
        + "<h2>Worst jobs</h2>"
        + (
            _jobs_table(summary.worst, worst_anchors, True)
            if summary.worst
            else '<p class="jd-note">No job lost time or spent retries.</p>'
        )
        + f"<h2>All jobs ({len(summary.jobs)})</h2>"
        + _jobs_table(summary.jobs, anchors, True)
        + "<h2>Job by job</h2>"
        + cards
        + '<p><a href="#top">back to top</a></p></main>'
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        # No script may run and nothing may be fetched, whatever the logs contain.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>"
        f'<body style="margin:0;background:#f6f8fa">{body}</body></html>\n'
    )


def diagnoses_repr_html(diagnoses: Sequence[Diagnosis]) -> str:
    """The notebook display of a list of diagnoses (for ``DiagnosisList._repr_html_``): the
    fleet's verdict line, the table of jobs and the first job cards."""
    summary = summarize(diagnoses)
    anchors = dict(enumerate(job_anchors(j.job for j in summary.jobs)))
    shown = diagnoses[:_NOTEBOOK_CARDS]
    cards = "".join(diagnosis_html(d, anchors[i]) for i, d in enumerate(shown))
    more = len(diagnoses) - _NOTEBOOK_CARDS
    tail = (
        f'<p class="jd-note">{more} more jobs: show one with <code>list[i]</code>.</p>'
        if more > 0
        else ""
    )
    return (
        f"<style>{_CSS}</style><div class='jd'>"
        f"<p class='jd-verdict'>{_e(summary_line(diagnoses))}</p>"
        + _jobs_table(summary.jobs, anchors, False)
        + cards
        + tail
        + "</div>"
    )


def diagnosis_repr_html(diagnosis: Diagnosis) -> str:
    """The notebook display of one diagnosis (for ``Diagnosis._repr_html_``)."""
    return f"<style>{_CSS}</style><div class='jd'>{diagnosis_html(diagnosis)}</div>"
