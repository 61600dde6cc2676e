"""The later stages run over what the classify stage collected: every job's timeline, its
verdict, and the :class:`~analyzer.pipeline.analysis.Analysis` that holds them.

The files' path (:func:`analyzer.api.analyze_sources`) and the BigQuery engine
(:mod:`analyzer.engines.bigquery`, a collector filled from query rows) both end here.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from analyzer.core.errors import InputError
from analyzer.ingest import Format
from analyzer.ingest.records import NO_MESSAGE, InputStats
from analyzer.rulebook import RULE_BUDGET_SECONDS, RuleBook

if TYPE_CHECKING:
    from analyzer.classify.collector import Collector
    from analyzer.classify.joblog import JobLog
    from analyzer.engines.live.window import Window
    from analyzer.pipeline.analysis import Analysis
    from analyzer.verdict.diagnosis import Diagnosis
    from analyzer.verdict.jobspec import JobSpec
    from analyzer.verdict.policy import RetryPolicy


def _without_events(diagnosis: Diagnosis) -> Diagnosis:
    """``diagnosis`` whose timeline keeps its times and counts but no attempt (their events:
    about 440 B each, every job's held to the end of a run otherwise)."""
    from dataclasses import replace

    return replace(diagnosis, timeline=replace(diagnosis.timeline, attempts=()))


def diagnose_collected(
    collector: Collector,
    book: RuleBook,
    *,
    policy: RetryPolicy | None = None,
    job: str | None = None,
    job_spec: JobSpec | None = None,
    lang: str = "en",
    unread: Sequence[str] = (),
    window: Window | None = None,
    timelines: bool = True,
    processes: int | None = None,
    now: datetime | None = None,
) -> Analysis:
    """The analysis of what ``collector`` has read with ``book`` (:func:`analyze_sources`
    once its sources are read; ``analyzer.engines.bigquery`` fills a collector from query rows).
    ``unread``: inputs that could not be opened, kept with those that failed while read;
    ``window``: only the jobs active in it (:func:`within`); ``timelines``: see
    :func:`analyze_sources`; ``processes``: how many diagnose its jobs (None: several when
    they hold many events, :mod:`analyzer.pipeline.diagnosing`); ``now``: the time of a live
    read, against which a running job's silence is judged (None: for each job, the latest
    time the inputs holding its lines show, whichever job wrote it; see
    :mod:`analyzer.verdict.hangs`). The collector's events are let go as its jobs are
    diagnosed: it can be diagnosed once."""
    from analyzer.pipeline.diagnosing import each_diagnosis
    from analyzer.timeline.attempts import job_timelines
    from analyzer.verdict.hangs import InputEnd
    from analyzer.verdict.policy import load_policy
    from analyzer.verdict.predict import diagnose_timeline

    active_policy = policy if policy is not None else load_policy()
    stats = collector.stats
    unnamed = collector.without_jobs()
    missing = (*unread, *collector.unread)
    if not collector.has_logs():
        # Nothing to diagnose, and an input no reader recognised: say so rather than "no job".
        unknown = [
            s.path for s in stats if (s.path in unnamed or not s.records) and _unrecognised(s)
        ]
        if unknown:
            said = f"{unknown[0]}: {NOT_AN_EXPORT}"
            raise InputError(said, (*missing, said))
    quiet = [f"{path}: no Vertex AI job message in it" for path in unnamed]
    pages = [f"{s.path}: {WEB_TEXT_NOTICE}" for s in stats if s.web_text]
    budget = active_policy.worker_restart_budget
    # Issue 30: a job is silent against the end of the inputs that hold its lines (a project
    # sink goes on after a hung job's last line; an unrelated export read beside it says
    # nothing of it), or against now for a live read.
    live_end = InputEnd(now, live=True) if now is not None else None

    # Job by job: each job's events are read back, diagnosed and let go before the next
    # job's are (the collector's logs are built one at a time), so the memory of a run is
    # that of its largest job, not of all of them (issue 19: flat from 200 MB to 1 GB).
    # Jobs with many events are built and diagnosed by several processes
    # (analyzer.pipeline.diagnosing), in the same order.
    def diagnosed(log: JobLog) -> Iterator[Diagnosis]:
        if job is not None and log.job_id != job:
            return
        for timeline in job_timelines(log, budget, active_policy.ends_job):
            # A job of several one text holds ends its own stream (one run's stream-logs):
            # another run's later lines say nothing of its silence.
            ends = timeline.input_end or log.input_end
            end = live_end or (InputEnd(ends) if ends else None)
            diagnosis = diagnose_timeline(timeline, active_policy, job_spec, lang, stats, end)
            yield diagnosis if timelines else _without_events(diagnosis)

    diagnoses = tuple(each_diagnosis(collector, diagnosed, processes))
    # A runaway pattern was cut short by its timeout: say so, since it may have missed a line;
    # one that used up its budget was not run on the rest of the inputs.
    disabled = set(book.disabled)
    slow = [
        f"rule {rule} timed out on {count} message(s) and was disabled for the rest of the run"
        f" ({RULE_BUDGET_SECONDS:g} s budget per rule); its matches after that are missing:"
        " run `jobdoctor rules check` on it"
        if rule in disabled
        else f"rule {rule} timed out on {count} message(s) and was skipped there;"
        " run `jobdoctor rules check` on it"
        for rule, count in sorted(book.timeouts.items())
    ]
    kept: tuple[str, ...] = ()
    if window is not None:
        diagnoses, kept = within(diagnoses, window)
    from analyzer.pipeline.analysis import Analysis

    return Analysis(
        tuple(stats),
        diagnoses,
        (*missing, *pages, *book.notices, *slow, *quiet, *kept),
        missing,
        book.disabled,
    )


def within(
    diagnoses: Sequence[Diagnosis], window: Window
) -> tuple[tuple[Diagnosis, ...], tuple[str, ...]]:
    """The diagnoses of jobs active in ``window``, and a notice saying what was left out.

    A job is active when the span of its records (first to last seen) meets the half-open
    window: a job cut by the window is kept whole, since half a job's lines would predict a
    wrong outcome. A job whose input has no times (plain text) is kept, and said to be.
    """
    kept: list[Diagnosis] = []
    untimed = 0
    for diagnosis in diagnoses:
        first = diagnosis.first_seen
        last = diagnosis.last_seen or first
        if first is None or last is None:
            untimed += 1
            kept.append(diagnosis)
        elif first < window.end and last >= window.start:
            kept.append(diagnosis)
    notice = f"kept {len(kept)} of {len(diagnoses)} jobs active in {window}"
    if untimed:
        notice += f" ({untimed} without times in the logs, kept)"
    return tuple(kept), (notice,)


WEB_TEXT_NOTICE = (
    "text from a web page's source: its <br> tags read as line ends and its HTML entities as"
    " characters; line numbers count those lines"
)
NOT_AN_EXPORT = (
    "not a log export jobdoctor knows: no line is a Vertex AI job message or a log entry; "
    "export the job's logs with gcloud logging read "
    """'resource.type="ml_job" AND resource.labels.job_id="JOB_ID"' --format=json > logs.json"""
    " (or gcloud ai custom-jobs stream-logs JOB_ID > logs.txt)"
)
# What a JSON input's lines are skipped for when none of them is a log entry.
_NOT_ENTRIES = frozenset({"blank line", "invalid JSON", "not a LogEntry object", NO_MESSAGE})


def _unrecognised(stats: InputStats) -> bool:
    """Whether an input that gave no job is a shape no reader knows: a text without a word of a
    job's logs in its first lines, or JSON none of whose values is a log entry (a project-wide
    sink's entries of other resources are log entries: known, it just holds no job)."""
    if stats.format == Format.PLAIN_TEXT.value:
        return not stats.recognised
    json_formats = (Format.CLOUD_LOGGING_JSONL.value, Format.GCLOUD_JSON.value)
    return (
        stats.format in json_formats
        and stats.records == 0
        and stats.skip_reasons.get("blank line", 0) < stats.skipped
        and set(stats.skip_reasons) <= _NOT_ENTRIES
    )
