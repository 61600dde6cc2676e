"""The fleet summary: what many jobs cost, by cause; rendered as Markdown, CSV and JSON here.

:func:`summarize` turns the diagnoses of an :class:`~analyzer.pipeline.analysis.Analysis` into a
:class:`FleetSummary`: one :class:`JobSummary` per job (also the rows of
``analyzer.frames.diagnose_frame``), counts and shares by category and detail, retries and
restarts spent, time lost, machine- and accelerator-hours, the worst jobs, and every failed
attempt in time for the failures-over-time chart. The HTML report (``analyzer.report.html``)
renders the same summary.

What the costs mean (:data:`TIME_LOST_DEFINITION` is printed in every report):

- *time lost*: the wall-clock time of every failed attempt (start to end, whatever failed:
  a stockout's wait for capacity counts as much as a crash), plus, in attempts that did not
  fail, the work redone after worker restarts (since the last checkpoint when one was logged:
  :mod:`analyzer.verdict.work`). Predicted attempts that the logs do not show cost nothing here.
- *machine-hours*: each worker's time from its first to its last line in each attempt, summed
  (one worker is one VM); *accelerator-hours* weigh each worker by its pool's accelerator
  count, known only from the job's record (``--job-spec`` or the live record).
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from analyzer.ingest.records import InputStats
from analyzer.report.controls import csv_cell, visible
from analyzer.report.facts import (
    OUTCOMES,
    clock,
    counted,
    job_label,
    observed_attempts,
    observed_retries,
    outcome,
    plural,
    predicted_attempts,
    predicted_retries,
    span,
    verdict_line,
    worker_hours,
)
from analyzer.report.redact import shown
from analyzer.report.signatures import Recurring, failed_attempts, recurring
from analyzer.report.stalls import burn_line, silent_workers
from analyzer.rulebook.events import Category
from analyzer.verdict.diagnosis import Diagnosis, JobState
from analyzer.verdict.stall import Stall

if TYPE_CHECKING:
    from analyzer.pipeline.analysis import Analysis
    from analyzer.verdict.jobspec import JobSpec

_CATEGORIES = frozenset(c.value for c in Category)
# The outcomes of an attempt that failed: its whole wall-clock time was lost.
FAILED_OUTCOMES = _CATEGORIES | {"failed", "cancelled"}
WORST_JOBS = 10
FLEET_SCHEMA = "jobdoctor.fleet/1"
TIME_LOST_DEFINITION = (
    "Time lost is the wall-clock time of failed attempts and of work redone after worker "
    "restarts (since the last checkpoint when one was logged)."
)


@dataclass(frozen=True, slots=True)
class JobSummary:
    """One job in one flat row: the verdict, the cause's fields, when, and what it cost.

    ``job`` is the job's label (:func:`~analyzer.report.facts.job_label`: never empty, so a
    job whose logs name no id keeps its row in a ``groupby``); ``trial`` is the
    hyperparameter-tuning trial (None for a plain job); ``outcome`` is
    :func:`~analyzer.report.facts.outcome` (``failed``, ``recovered``, ``succeeded``, ...);
    ``attempts`` and ``retries`` are what the logs show, ``attempts_predicted`` and
    ``retries_predicted`` what the verdict predicts beyond them; ``restarts`` sums
    ``worker_restarts``; ``time_lost`` is :func:`time_lost`; ``lost_work`` is the diagnosis's
    work lost since checkpoints (see :mod:`analyzer.verdict.work`); ``machine_hours`` and
    ``accelerator_hours`` are :func:`machine_hours` (the latter None without the job's
    record); ``path`` is the input the cause's evidence (else the job's first line) is in;
    ``verdict`` is the one-line verdict of the text report. A stalled job (issue 30) has
    ``stalled_since``, ``stall_timeout_at`` (when the platform stops it) and its burn, the
    machine- and accelerator-hours it will have cost by then (``stall_machine_hours``,
    ``stall_accelerator_hours``: the latter only with the job's record); all None for a job
    not stalled.
    """

    job: str
    job_id: str | None
    trial: str | None
    state: str
    observed_final: bool
    outcome: str
    attempts: int
    attempts_predicted: int
    retries: int
    retries_predicted: int
    restarts: int
    category: str | None
    detail: str | None
    replica: str | None
    exit_code: int | None
    region: str | None
    message: str | None
    first_seen: datetime | None
    last_seen: datetime | None
    duration: timedelta | None
    time_lost: timedelta
    lost_work: timedelta | None
    machine_hours: float
    accelerator_hours: float | None
    records: int
    path: str | None
    verdict: str
    stalled_since: datetime | None = None
    stall_timeout_at: datetime | None = None
    stall_machine_hours: float | None = None
    stall_accelerator_hours: float | None = None


# The columns of the job frame, in order; the CSV report's are the same with the durations
# in seconds and named so (CSV_COLUMNS).
JOB_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(JobSummary))
_DURATIONS = frozenset({"duration", "time_lost", "lost_work"})
CSV_COLUMNS: tuple[str, ...] = tuple(f"{n}_s" if n in _DURATIONS else n for n in JOB_COLUMNS)


def time_lost(diagnosis: Diagnosis) -> timedelta:
    """What the report's definition says (:data:`TIME_LOST_DEFINITION`): every failed
    attempt's wall-clock time, plus the work redone after restarts in the other attempts.

    A job refused at creation (no attempt: ``attempts`` is 0) never ran and lost nothing.
    """
    if diagnosis.attempts == 0:
        return timedelta()
    total = timedelta()
    for attempt in diagnosis.attempt_log:
        if attempt.outcome in FAILED_OUTCOMES:
            if attempt.start is not None and attempt.end is not None:
                total += attempt.end - attempt.start
        elif attempt.lost_work is not None:
            total += attempt.lost_work
    return total


def machine_hours(diagnosis: Diagnosis, spec: JobSpec | None = None) -> tuple[float, float | None]:
    """Machine-hours and accelerator-hours the logs show.

    Each worker counts from its first to its last line within each attempt
    (:func:`~analyzer.report.facts.worker_hours`). Accelerator-hours weigh each worker by its
    pool's accelerator count in ``spec``; None when ``spec`` is None or describes another job.
    """
    if spec is not None and not spec.applies_to(diagnosis.job_id):
        spec = None
    machines = accelerators = 0.0
    for _, task, hours in worker_hours(diagnosis):
        machines += hours
        pool = spec.pool(task) if spec is not None else None
        if pool is not None:
            accelerators += hours * pool.accelerator_count
    return round(machines, 4), (round(accelerators, 4) if spec is not None else None)


def _source(diagnosis: Diagnosis) -> str | None:
    if diagnosis.cause is not None and diagnosis.cause.evidence:
        return diagnosis.cause.evidence[0].path
    for attempt in diagnosis.timeline.attempts:
        for event in attempt.events:
            return event.origin.path
    return None


def job_summary(diagnosis: Diagnosis, spec: JobSpec | None = None) -> JobSummary:
    """The flat row of one diagnosis; ``spec`` (the job's record) gives accelerator-hours."""
    cause = diagnosis.cause
    machines, accelerators = machine_hours(diagnosis, spec)
    return JobSummary(
        job=job_label(diagnosis),
        job_id=diagnosis.job_id,
        trial=diagnosis.trial,
        state=diagnosis.state.value,
        observed_final=diagnosis.observed_final,
        outcome=outcome(diagnosis),
        attempts=observed_attempts(diagnosis),
        attempts_predicted=predicted_attempts(diagnosis),
        retries=observed_retries(diagnosis),
        retries_predicted=predicted_retries(diagnosis),
        restarts=sum(diagnosis.worker_restarts.values()),
        category=cause.category.value if cause else None,
        detail=cause.detail if cause else None,
        replica=cause.replica if cause else None,
        exit_code=cause.exit_code if cause else None,
        region=cause.region if cause else None,
        # Log text entering the fleet's rows (CSV, JSON, the job frame): redacted here, once.
        message=shown(cause.message) if cause else None,
        first_seen=diagnosis.first_seen,
        last_seen=diagnosis.last_seen,
        duration=diagnosis.duration,
        time_lost=time_lost(diagnosis),
        lost_work=diagnosis.lost_work,
        machine_hours=machines,
        accelerator_hours=accelerators,
        records=diagnosis.timeline.records,
        path=_source(diagnosis),
        verdict=verdict_line(diagnosis),
        **_stall_fields(diagnosis),
    )


def _stall_fields(diagnosis: Diagnosis) -> dict[str, Any]:
    stall = diagnosis.stalled
    if stall is None:
        return {}
    cost = stall.cost_to_timeout
    return {
        "stalled_since": stall.since,
        "stall_timeout_at": stall.timeout_at,
        "stall_machine_hours": None if cost is None else round(cost.machine_hours, 4),
        "stall_accelerator_hours": (
            None
            if cost is None or cost.accelerator_hours is None
            else round(cost.accelerator_hours, 4)
        ),
    }


@dataclass(frozen=True, slots=True)
class CauseCount:
    """Jobs of one outcome (failed, or recovered) whose root cause is ``category`` (and
    ``detail``, when counting by detail).

    ``share`` is of all jobs in the report; ``retries`` are those the logs show,
    ``retries_predicted`` those predicted beyond them; ``time_lost`` and ``machine_hours`` sum
    the jobs'.
    """

    category: str
    detail: str | None
    jobs: int
    share: float
    retries: int
    restarts: int
    lost_work: timedelta
    time_lost: timedelta = timedelta()
    machine_hours: float = 0.0
    retries_predicted: int = 0


@dataclass(frozen=True, slots=True)
class StalledJob:
    """A stalled job of the fleet: its row and its stall (who is silent, the timeout, the
    burn to it)."""

    job: JobSummary
    stall: Stall


@dataclass(frozen=True, slots=True)
class FailurePoint:
    """One failed attempt, for the failures-over-time chart."""

    time: datetime
    category: str
    job_id: str | None
    attempt: int


@dataclass(frozen=True, slots=True)
class FleetSummary:
    """Everything a fleet report shows, computed once for every format.

    Totals count what the logs show; ``retries_predicted`` is what the verdicts predict beyond
    them. ``by_category`` and ``by_detail`` count the jobs that failed (observed or predicted)
    by cause, ``recovered`` those that succeeded after a failure, by the failure they got past;
    ``outcomes`` counts every job by :func:`~analyzer.report.facts.outcome`; ``signatures``
    are the recurring failures, the most costly first (:mod:`analyzer.report.signatures`);
    ``stalled`` the stalled jobs, the most costly to their timeout first.
    """

    jobs: tuple[JobSummary, ...]
    diagnoses: tuple[Diagnosis, ...]
    inputs: tuple[InputStats, ...]
    states: Mapping[str, int]
    by_category: tuple[CauseCount, ...]
    by_detail: tuple[CauseCount, ...]
    retries: int
    restarts: int
    lost_work: timedelta
    observed_time: timedelta
    worst: tuple[JobSummary, ...]
    failures: tuple[FailurePoint, ...]
    time_lost: timedelta = timedelta()
    machine_hours: float = 0.0
    accelerator_hours: float | None = None
    retries_predicted: int = 0
    outcomes: Mapping[str, int] = field(default_factory=dict)
    recovered: tuple[CauseCount, ...] = ()
    signatures: tuple[Recurring, ...] = ()
    stalled: tuple[StalledJob, ...] = ()

    @property
    def stall_machine_hours(self) -> float:
        """What the stalled jobs will have cost by their timeouts, in machine-hours."""
        return round(sum(s.job.stall_machine_hours or 0.0 for s in self.stalled), 4)

    @property
    def stall_accelerator_hours(self) -> float | None:
        """The same in accelerator-hours, of the stalled jobs whose record gives them
        (None when none does)."""
        known = [s.job.stall_accelerator_hours for s in self.stalled]
        given = [h for h in known if h is not None]
        return round(sum(given), 4) if given else None

    @property
    def failed(self) -> int:
        """Jobs whose state (observed or predicted) is FAILED."""
        return self.states.get(JobState.FAILED.value, 0)

    @property
    def failed_unexplained(self) -> int:
        """Failed jobs no cause category fits (so the causes table sums to :attr:`failed`
        with these)."""
        return self.failed - sum(c.jobs for c in self.by_category)


def _counts(
    jobs: Sequence[JobSummary], total: int, key: str, of: str = "failed"
) -> tuple[CauseCount, ...]:
    groups: dict[tuple[str, str | None], list[JobSummary]] = {}
    for job in jobs:
        if job.category is None or job.outcome != of:
            continue
        detail = job.detail if key == "detail" else None
        groups.setdefault((job.category, detail), []).append(job)
    counts = [
        CauseCount(
            category=category,
            detail=detail,
            jobs=len(members),
            share=len(members) / total if total else 0.0,
            retries=sum(j.retries for j in members),
            restarts=sum(j.restarts for j in members),
            lost_work=sum((j.lost_work or timedelta() for j in members), timedelta()),
            time_lost=sum((j.time_lost for j in members), timedelta()),
            machine_hours=round(sum(j.machine_hours for j in members), 4),
            retries_predicted=sum(j.retries_predicted for j in members),
        )
        for (category, detail), members in groups.items()
    ]
    return tuple(sorted(counts, key=lambda c: (-c.jobs, c.category, c.detail or "")))


def _badness(job: JobSummary) -> tuple[bool, timedelta, int]:
    # A job that failed produced nothing: it leads, whatever a succeeded one lost on the way.
    return (job.state == JobState.FAILED.value, job.time_lost, job.retries + job.restarts)


def _failures(diagnoses: Iterable[Diagnosis]) -> tuple[FailurePoint, ...]:
    points = []
    for diagnosis in diagnoses:
        for attempt in diagnosis.attempt_log:
            when = attempt.end or attempt.start
            if attempt.outcome in _CATEGORIES and when is not None:
                points.append(
                    FailurePoint(when, attempt.outcome, diagnosis.job_id, attempt.attempt)
                )
    return tuple(sorted(points, key=lambda p: (p.time, p.category)))


def _outcomes(jobs: Sequence[JobSummary]) -> dict[str, int]:
    counts = Counter(j.outcome for j in jobs)
    return {name: counts[name] for name in OUTCOMES if counts[name]}


def _signatures(
    diagnoses: Sequence[Diagnosis], jobs: Sequence[JobSummary]
) -> tuple[Recurring, ...]:
    return recurring(
        attempt
        for diagnosis, job in zip(diagnoses, jobs, strict=True)
        for attempt in failed_attempts(diagnosis, job.job)
    )


def summarize(
    diagnoses: Iterable[Diagnosis],
    inputs: Iterable[InputStats] = (),
    worst: int = WORST_JOBS,
    job_spec: JobSpec | None = None,
) -> FleetSummary:
    """The fleet summary of ``diagnoses``; ``worst`` caps the worst-jobs list; ``job_spec``
    (a job's record) gives the accelerator-hours of the job it describes.

    Worst jobs are the failed ones first, then those that lost the most time, then spent the
    most retries and restarts; jobs that failed not, lost nothing and spent nothing are never
    "worst".
    """
    kept = tuple(diagnoses)
    jobs = tuple(job_summary(d, job_spec) for d in kept)
    states = Counter(j.state for j in jobs)
    ranked = sorted((j for j in jobs if any(_badness(j))), key=_badness, reverse=True)
    known = [j.accelerator_hours for j in jobs if j.accelerator_hours is not None]
    return FleetSummary(
        jobs=jobs,
        diagnoses=kept,
        inputs=tuple(inputs),
        states=dict(sorted(states.items(), key=lambda item: (-item[1], item[0]))),
        by_category=_counts(jobs, len(jobs), "category"),
        by_detail=_counts(jobs, len(jobs), "detail"),
        retries=sum(j.retries for j in jobs),
        retries_predicted=sum(j.retries_predicted for j in jobs),
        restarts=sum(j.restarts for j in jobs),
        outcomes=_outcomes(jobs),
        recovered=_counts(jobs, len(jobs), "category", of="recovered"),
        signatures=_signatures(kept, jobs),
        lost_work=sum((j.lost_work or timedelta() for j in jobs), timedelta()),
        observed_time=sum((j.duration or timedelta() for j in jobs), timedelta()),
        worst=tuple(ranked[:worst]),
        failures=_failures(kept),
        time_lost=sum((j.time_lost for j in jobs), timedelta()),
        machine_hours=round(sum(j.machine_hours for j in jobs), 4),
        accelerator_hours=round(sum(known), 4) if known else None,
        stalled=_stalled(kept, jobs),
    )


def _stalled(diagnoses: Sequence[Diagnosis], jobs: Sequence[JobSummary]) -> tuple[StalledJob, ...]:
    """The stalled jobs, the most costly to their timeout first (then the longest stalled)."""
    stalled = [
        StalledJob(job, diagnosis.stalled)
        for diagnosis, job in zip(diagnoses, jobs, strict=True)
        if diagnosis.stalled is not None
    ]
    return tuple(
        sorted(
            stalled,
            key=lambda s: (-(s.job.stall_machine_hours or 0.0), s.stall.since, s.job.job),
        )
    )


def summarize_analysis(
    analysis: Analysis, worst: int = WORST_JOBS, job_spec: JobSpec | None = None
) -> FleetSummary:
    """The fleet summary of an :class:`~analyzer.pipeline.analysis.Analysis`."""
    return summarize(analysis.diagnoses, analysis.inputs, worst, job_spec)


def _csv_value(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, timedelta):
        return f"{value.total_seconds():g}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        # Log text, job ids and paths: shown safely to a spreadsheet (issue 31, point 4).
        return str(csv_cell(value))
    return str(value)


def render_csv(summary: FleetSummary) -> str:
    """One CSV row per job, the columns of :data:`CSV_COLUMNS` (durations in seconds,
    ``duration_s``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for job in summary.jobs:
        writer.writerow([_csv_value(getattr(job, name)) for name in JOB_COLUMNS])
    return out.getvalue()


def _cell(value: object) -> str:
    """``value`` on one line inside a code span of a Markdown table: only a backtick or a
    pipe could leave it."""
    text = value if isinstance(value, str) else _csv_value(value)
    return " ".join(visible(text).split()).replace("|", "\\|").replace("`", "'") or "-"


# Outside a code span a job id, a file name or log text could open a link, an image or raw
# HTML (issue 31, point 5): as report.markdown escapes them.
_MARKDOWN = str.maketrans({"\\": "\\\\", "[": "\\[", "]": "\\]", "<": "&lt;"})


def _text(value: object) -> str:
    """``value`` as Markdown text in a table cell, nothing in it read as Markdown."""
    text = value if isinstance(value, str) else _csv_value(value)
    return _cell(text.translate(_MARKDOWN))


def hours(value: float) -> str:
    """``12.3 h``: machine- and accelerator-hours as reports print them."""
    return f"{value:.1f} h" if value >= 0.1 or value == 0 else f"{value:.2f} h"


def _share(value: float) -> str:
    return f"{100 * value:.0f}%"


def _retries_text(observed: int, predicted: int) -> str:
    return f"{observed} ({predicted} more predicted)" if predicted else str(observed)


def render_markdown_fleet(summary: FleetSummary) -> str:
    """The fleet summary as Markdown: totals, failed jobs by cause, the failures jobs
    recovered from, recurring failures, worst jobs and every job's verdict."""
    n = len(summary.jobs)
    out = [
        "# jobdoctor fleet report",
        "",
        f"{n} jobs from {len(summary.inputs)} inputs: "
        + ", ".join(f"{count} {name}" for name, count in summary.outcomes.items())
        + ".",
        "",
        f"- retries spent: {_retries_text(summary.retries, summary.retries_predicted)}",
        f"- worker restarts spent: {summary.restarts}",
        f"- time lost: {span(summary.time_lost)} (of {span(summary.observed_time)} observed)",
        f"- machine-hours: {hours(summary.machine_hours)}",
    ]
    if summary.accelerator_hours is not None:
        out.append(f"- accelerator-hours: {hours(summary.accelerator_hours)}")
    out += ["", TIME_LOST_DEFINITION, ""]
    out += _markdown_stalled(summary)
    out += _markdown_causes(summary)
    out += _markdown_signatures(summary.signatures)
    if summary.worst:
        out += [
            "## Worst jobs",
            "",
            "| job | state | retries | restarts | time lost | cause |",
            "|---|---|---|---|---|---|",
        ]
        out += [
            f"| {_text(j.job)} | {j.state.removeprefix('JOB_STATE_')} "
            f"| {counted(j.retries, j.retries_predicted)} "
            f"| {j.restarts} | {span(j.time_lost)} | {_text(_cause_cell(j))} |"
            for j in summary.worst
        ]
        out.append("")
    out += ["## Jobs", "", "| job | first seen | duration | verdict |", "|---|---|---|---|"]
    out += [
        f"| {_text(j.job)} | {clock(j.first_seen)} | {span(j.duration)} | {_text(j.verdict)} |"
        for j in summary.jobs
    ]
    out.append("")
    return "\n".join(out)


def _markdown_stalled(summary: FleetSummary) -> list[str]:
    """The stalled jobs, a section of their own (none when no job is stalled): each job's
    silent workers, since when, its timeout and what it will have cost by then."""
    if not summary.stalled:
        return []
    count = len(summary.stalled)
    out = [
        f"## Stalled jobs ({count})",
        "",
        burn_line(count, summary.stall_machine_hours, summary.stall_accelerator_hours) + ".",
        "",
        "| job | stalled since | silent | timeout | machine-hours to it "
        "| accelerator-hours to it |",
        "|---|---|---|---|---|---|",
    ]
    for stalled in summary.stalled:
        job, stall = stalled.job, stalled.stall
        out.append(
            f"| {_cell(job.job)} | {clock(stall.since)} | {_cell(silent_workers(stall))} "
            f"| {clock(stall.timeout_at)} ({_cell(stall.timeout_source)}) "
            f"| {_hours_or_dash(job.stall_machine_hours)} "
            f"| {_hours_or_dash(job.stall_accelerator_hours)} |"
        )
    return [*out, ""]


def _hours_or_dash(value: float | None) -> str:
    return "-" if value is None else hours(value)


def _cause_cell(job: JobSummary) -> str:
    if job.category is None:
        return "-"
    what = f"{job.category} ({job.detail})" if job.detail else job.category
    return f"recovered from {what}" if job.outcome == "recovered" else what


def _markdown_causes(summary: FleetSummary) -> list[str]:
    out: list[str] = []
    head = "| category | jobs | share | retries | restarts | time lost | machine-hours |"
    if summary.by_category or summary.failed:
        out += [f"## Failed jobs by cause ({summary.failed} failed)", "", head]
        out.append("|---|---|---|---|---|---|---|")
        out += [_markdown_count(c) for c in summary.by_category]
        if summary.failed_unexplained:
            out.append(f"| no cause the rules know | {summary.failed_unexplained} | | | | | |")
        out += ["", "| category | detail | jobs | share |", "|---|---|---|---|"]
        out += [
            f"| {c.category} | {_text(c.detail)} | {c.jobs} | {_share(c.share)} |"
            for c in summary.by_detail
        ]
        out.append("")
    if summary.recovered:
        jobs = sum(c.jobs for c in summary.recovered)
        out += [f"## Recovered from ({plural(jobs, 'job')} succeeded after a failure)", "", head]
        out.append("|---|---|---|---|---|---|---|")
        out += [_markdown_count(c) for c in summary.recovered]
        out.append("")
    return out


def _markdown_count(c: CauseCount) -> str:
    return (
        f"| {c.category} | {c.jobs} | {_share(c.share)} "
        f"| {counted(c.retries, c.retries_predicted)} | {c.restarts} "
        f"| {span(c.time_lost)} | {hours(c.machine_hours)} |"
    )


def _markdown_signatures(signatures: Sequence[Recurring]) -> list[str]:
    if not signatures:
        return []
    out = [
        "## Recurring failures",
        "",
        "Failed attempts grouped by signature (exception, message with its variable parts"
        " as `<n>`, `<path>`, ..., and the user's frame; else the rule and its fields), the"
        " most costly first.",
        "",
        "| signature | jobs | attempts | first seen | last seen | time lost | machine-hours "
        "| job ids | evidence |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in signatures:
        shown = ", ".join(r.jobs[:_JOBS_SHOWN]) + (", ..." if len(r.jobs) > _JOBS_SHOWN else "")
        where = f"{r.evidence.path}:{r.evidence.line}" if r.evidence else "-"
        out.append(
            # In code: a Markdown viewer would take <n> and <path> for HTML tags.
            f"| `{_cell(r.signature.text)}` | {len(r.jobs)} | {r.attempts} "
            f"| {clock(r.first_seen)} | {clock(r.last_seen)} | {span(r.time_lost)} "
            f"| {hours(r.machine_hours)} | {_text(shown)} | {_text(where)} |"
        )
    out.append("")
    return out


# How many of a signature's jobs a table row names (the JSON and CSV name them all).
_JOBS_SHOWN = 5


def _seconds(delta: timedelta | None) -> float | None:
    return None if delta is None else round(delta.total_seconds(), 3)


def _job_json(job: JobSummary) -> dict[str, object]:
    row: dict[str, object] = {}
    for name in JOB_COLUMNS:
        value = getattr(job, name)
        if name in _DURATIONS:
            row[f"{name}_s"] = _seconds(value)
        elif isinstance(value, datetime):
            row[name] = _csv_value(value)
        else:
            row[name] = value
    return row


def _count_json(count: CauseCount) -> dict[str, object]:
    return {
        "category": count.category,
        "detail": count.detail,
        "jobs": count.jobs,
        "share": round(count.share, 4),
        "retries": count.retries,
        "retries_predicted": count.retries_predicted,
        "restarts": count.restarts,
        "time_lost_s": _seconds(count.time_lost),
        "machine_hours": count.machine_hours,
    }


def fleet_document(summary: FleetSummary) -> dict[str, object]:
    """The fleet summary as a ``jobdoctor.fleet/1`` JSON object, for dashboards (``report
    --format json`` adds it to the diagnosis document as ``fleet``).

    Durations are seconds (``_s``), hours are hours; totals count what the logs show, with
    ``retries_predicted`` beside them; ``by_category``/``by_detail`` count the failed jobs,
    ``recovered`` the jobs that succeeded after a failure; ``signatures`` are the recurring
    failures, the most costly first (:func:`signature_json`); ``worst`` lists jobs in rank
    order; ``stalled`` the stalled jobs, the most costly to their timeout first, each with
    its ``stalled`` object; ``jobs`` holds the CSV's rows (the diagnoses are the document's
    own ``jobs``).
    """
    return {
        "schema": FLEET_SCHEMA,
        "definitions": {"time_lost": TIME_LOST_DEFINITION},
        "totals": {
            "jobs": len(summary.jobs),
            "states": dict(summary.states),
            "outcomes": dict(summary.outcomes),
            "retries": summary.retries,
            "retries_predicted": summary.retries_predicted,
            "restarts": summary.restarts,
            "time_lost_s": _seconds(summary.time_lost),
            "observed_s": _seconds(summary.observed_time),
            "machine_hours": summary.machine_hours,
            "accelerator_hours": summary.accelerator_hours,
            "stalled": len(summary.stalled),
            "stall_machine_hours": summary.stall_machine_hours,
            "stall_accelerator_hours": summary.stall_accelerator_hours,
        },
        "by_category": [_count_json(c) for c in summary.by_category],
        "by_detail": [_count_json(c) for c in summary.by_detail],
        "recovered": [_count_json(c) for c in summary.recovered],
        "signatures": [signature_json(r) for r in summary.signatures],
        "worst": [{"job": j.job, "job_id": j.job_id, "trial": j.trial} for j in summary.worst],
        "stalled": [_stalled_json(s) for s in summary.stalled],
        "jobs": [_job_json(j) for j in summary.jobs],
    }


def _stalled_json(stalled: StalledJob) -> dict[str, object]:
    """One stalled job as the fleet document lists it: which job, and its stall as the
    diagnosis' ``stalled`` object has it (who is silent, the timeout, the cost to it)."""
    job = stalled.job
    return {"job": job.job, "job_id": job.job_id, "trial": job.trial, **stalled.stall.to_dict()}


def signature_json(group: Recurring) -> dict[str, object]:
    """One recurring failure as the fleet document lists it."""
    signature = group.signature
    return {
        "signature": signature.text,
        "exception": signature.exception,
        "message": signature.message,
        "frame": signature.frame,
        "category": signature.category,
        "rule": signature.rule,
        "exit_code": signature.exit_code,
        "region": signature.region,
        "jobs": len(group.jobs),
        "attempts": group.attempts,
        "first_seen": _csv_value(group.first_seen) or None,
        "last_seen": _csv_value(group.last_seen) or None,
        "time_lost_s": _seconds(group.time_lost),
        "machine_hours": group.machine_hours,
        "job_ids": list(group.jobs),
        "evidence": (
            {"path": group.evidence.path, "line": group.evidence.line} if group.evidence else None
        ),
        "example": group.example,
    }


SIGNATURE_COLUMNS: tuple[str, ...] = (
    "signature",
    "exception",
    "message",
    "frame",
    "category",
    "rule",
    "exit_code",
    "region",
    "jobs",
    "attempts",
    "first_seen",
    "last_seen",
    "time_lost_s",
    "machine_hours",
    "job_ids",
)


def render_signatures_csv(summary: FleetSummary) -> str:
    """One CSV row per recurring failure, the most costly first (its jobs' labels joined by
    ``; ``: a label of a job without an id holds spaces)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(SIGNATURE_COLUMNS)
    for group in summary.signatures:
        row = signature_json(group)
        row["job_ids"] = "; ".join(group.jobs)
        writer.writerow([_csv_value(row[name]) for name in SIGNATURE_COLUMNS])
    return out.getvalue()
