"""The fleet summary: what many jobs cost, by cause; rendered as Markdown and CSV here.

:func:`summarize` turns the diagnoses of an :class:`~analyzer.api.Analysis` into a
:class:`FleetSummary`: one :class:`JobSummary` per job (also the rows of
``analyzer.frames.diagnose_frame``), counts and shares by category and detail, retries and
restarts spent, time lost, the worst jobs, and every failed attempt in time for the
failures-over-time chart. The HTML report (``analyzer.report.html``) renders the same summary.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from analyzer.controls import visible
from analyzer.diagnosis import Diagnosis, JobState
from analyzer.events import Category
from analyzer.records import InputStats
from analyzer.report.facts import clock, span, verdict_line

if TYPE_CHECKING:
    from analyzer.api import Analysis

_CATEGORIES = frozenset(c.value for c in Category)
# How an attempt that did not fail ended: its time was not lost.
WORST_JOBS = 10


@dataclass(frozen=True, slots=True)
class JobSummary:
    """One job in one flat row: the verdict, the cause's fields, when, and what it cost.

    ``restarts`` sums ``worker_restarts``; ``lost_work`` is the diagnosis's (see
    :mod:`analyzer.work`); ``verdict`` is the one-line verdict of the text report.
    """

    job_id: str | None
    state: str
    observed_final: bool
    attempts: int
    retries: int
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
    lost_work: timedelta | None
    records: int
    verdict: str


# The columns of the job frame and of the CSV report, in order.
JOB_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(JobSummary))


def job_summary(diagnosis: Diagnosis) -> JobSummary:
    """The flat row of one diagnosis."""
    cause = diagnosis.cause
    return JobSummary(
        job_id=diagnosis.job_id,
        state=diagnosis.state.value,
        observed_final=diagnosis.observed_final,
        attempts=diagnosis.attempts,
        retries=diagnosis.retries,
        restarts=sum(diagnosis.worker_restarts.values()),
        category=cause.category.value if cause else None,
        detail=cause.detail if cause else None,
        replica=cause.replica if cause else None,
        exit_code=cause.exit_code if cause else None,
        region=cause.region if cause else None,
        message=cause.message if cause else None,
        first_seen=diagnosis.first_seen,
        last_seen=diagnosis.last_seen,
        duration=diagnosis.duration,
        lost_work=diagnosis.lost_work,
        records=diagnosis.timeline.records,
        verdict=verdict_line(diagnosis),
    )


@dataclass(frozen=True, slots=True)
class CauseCount:
    """Jobs whose root cause is ``category`` (and ``detail``, when counting by detail).

    ``share`` is of all jobs in the report.
    """

    category: str
    detail: str | None
    jobs: int
    share: float
    retries: int
    restarts: int
    lost_work: timedelta


@dataclass(frozen=True, slots=True)
class FailurePoint:
    """One failed attempt, for the failures-over-time chart."""

    time: datetime
    category: str
    job_id: str | None
    attempt: int


@dataclass(frozen=True, slots=True)
class FleetSummary:
    """Everything a fleet report shows, computed once for every format."""

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

    @property
    def failed(self) -> int:
        """Jobs whose state (observed or predicted) is FAILED."""
        return self.states.get(JobState.FAILED.value, 0)


def _counts(jobs: Sequence[JobSummary], total: int, key: str) -> tuple[CauseCount, ...]:
    groups: dict[tuple[str, str | None], list[JobSummary]] = {}
    for job in jobs:
        if job.category is None:
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
        )
        for (category, detail), members in groups.items()
    ]
    return tuple(sorted(counts, key=lambda c: (-c.jobs, c.category, c.detail or "")))


def _badness(job: JobSummary) -> tuple[timedelta, int, bool]:
    return (
        job.lost_work or timedelta(),
        job.retries + job.restarts,
        job.state == JobState.FAILED.value,
    )


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


def summarize(
    diagnoses: Iterable[Diagnosis], inputs: Iterable[InputStats] = (), worst: int = WORST_JOBS
) -> FleetSummary:
    """The fleet summary of ``diagnoses``; ``worst`` caps the worst-jobs list.

    Worst jobs are those that lost the most time, then spent the most retries and restarts;
    jobs that lost nothing and spent nothing are never "worst".
    """
    kept = tuple(diagnoses)
    jobs = tuple(job_summary(d) for d in kept)
    states = Counter(j.state for j in jobs)
    ranked = sorted((j for j in jobs if any(_badness(j)[:2])), key=_badness, reverse=True)
    return FleetSummary(
        jobs=jobs,
        diagnoses=kept,
        inputs=tuple(inputs),
        states=dict(sorted(states.items(), key=lambda item: (-item[1], item[0]))),
        by_category=_counts(jobs, len(jobs), "category"),
        by_detail=_counts(jobs, len(jobs), "detail"),
        retries=sum(j.retries for j in jobs),
        restarts=sum(j.restarts for j in jobs),
        lost_work=sum((j.lost_work or timedelta() for j in jobs), timedelta()),
        observed_time=sum((j.duration or timedelta() for j in jobs), timedelta()),
        worst=tuple(ranked[:worst]),
        failures=_failures(kept),
    )


def summarize_analysis(analysis: Analysis, worst: int = WORST_JOBS) -> FleetSummary:
    """The fleet summary of an :class:`~analyzer.api.Analysis`."""
    return summarize(analysis.diagnoses, analysis.inputs, worst)


def _csv_value(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, timedelta):
        return f"{value.total_seconds():g}"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def render_csv(summary: FleetSummary) -> str:
    """One CSV row per job, the columns of :data:`JOB_COLUMNS`; durations in seconds."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(JOB_COLUMNS)
    for job in summary.jobs:
        writer.writerow([_csv_value(getattr(job, name)) for name in JOB_COLUMNS])
    return out.getvalue()


def _cell(value: object) -> str:
    text = value if isinstance(value, str) else _csv_value(value)
    return " ".join(visible(text).split()).replace("|", "\\|").replace("`", "'") or "-"


def _share(value: float) -> str:
    return f"{100 * value:.0f}%"


def render_markdown_fleet(summary: FleetSummary) -> str:
    """The fleet summary as Markdown: totals, causes, worst jobs and every job's verdict."""
    n = len(summary.jobs)
    out = [
        "# jobdoctor fleet report",
        "",
        f"{n} jobs from {len(summary.inputs)} inputs: "
        + ", ".join(
            f"{count} {state.removeprefix('JOB_STATE_')}" for state, count in summary.states.items()
        )
        + ".",
        "",
        f"- retries spent: {summary.retries}",
        f"- worker restarts spent: {summary.restarts}",
        f"- time lost: {span(summary.lost_work)} (of {span(summary.observed_time)} observed)",
        "",
    ]
    if summary.by_category:
        out += [
            "## Causes",
            "",
            "| category | jobs | share | retries | restarts | time lost |",
            "|---|---|---|---|---|---|",
        ]
        out += [
            f"| {c.category} | {c.jobs} | {_share(c.share)} | {c.retries} | {c.restarts} "
            f"| {span(c.lost_work)} |"
            for c in summary.by_category
        ]
        out += ["", "| category | detail | jobs | share |", "|---|---|---|---|"]
        out += [
            f"| {c.category} | {_cell(c.detail)} | {c.jobs} | {_share(c.share)} |"
            for c in summary.by_detail
        ]
        out.append("")
    if summary.worst:
        out += [
            "## Worst jobs",
            "",
            "| job | state | retries | restarts | time lost | cause |",
            "|---|---|---|---|---|---|",
        ]
        out += [
            f"| {_cell(j.job_id)} | {j.state.removeprefix('JOB_STATE_')} | {j.retries} "
            f"| {j.restarts} | {span(j.lost_work)} | {_cell(j.category)} |"
            for j in summary.worst
        ]
        out.append("")
    out += ["## Jobs", "", "| job | first seen | duration | verdict |", "|---|---|---|---|"]
    out += [
        f"| {_cell(j.job_id)} | {clock(j.first_seen)} | {span(j.duration)} | {_cell(j.verdict)} |"
        for j in summary.jobs
    ]
    out.append("")
    return "\n".join(out)
