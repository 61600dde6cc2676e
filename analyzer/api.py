"""The Python API: from inputs to diagnoses in one call.

Only this module and the CLI know the whole pipeline
(ingest → classify → timeline → predict).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.classify import Cluster, Collector
from analyzer.errors import InputError
from analyzer.ingest import Format, open_sources
from analyzer.records import NO_MESSAGE, InputStats, Source
from analyzer.rulebook import RULE_BUDGET_SECONDS, RuleBook

# What turns the scanned logs into diagnoses is imported while the scan runs (see
# _load_diagnosing), not here: a third of start-up, out of the way of the scan.
if TYPE_CHECKING:
    from analyzer.analysis import Analysis, DiagnosisList
    from analyzer.diagnosis import Diagnosis
    from analyzer.joblog import JobLog
    from analyzer.jobspec import JobSpec
    from analyzer.live.window import Window
    from analyzer.policy import RetryPolicy


def analyze_sources(
    sources: Iterable[Source],
    *,
    rules: RuleBook | None = None,
    policy: RetryPolicy | None = None,
    job: str | None = None,
    job_spec: JobSpec | None = None,
    lang: str = "en",
    window: Window | None = None,
    dask: object = None,
    unread: Sequence[str] = (),
    timelines: bool = True,
) -> Analysis:
    """Diagnose every job in ``sources`` (or only ``job``).

    ``job_spec`` (the job's describe output) refines the policy, the advice and the state check
    of the job it describes; ``lang`` (en, ja, he) is the language of the advice; ``window``
    keeps only the jobs active in it (see :func:`within`). ``unread`` names inputs that could
    not be opened (``open_sources``' problems): they are kept in the analysis with those that
    fail while read. ``dask`` scans the sink files on Dask workers instead of this machine's
    processes: ``"local"`` (a LocalCluster of this machine's cores), a scheduler address
    (``"tcp://HOST:PORT"``) or a ``distributed.Client``; the diagnoses are the same.
    ``timelines`` False: each diagnosis keeps its timeline's times and counts but not the
    events of its attempts (what the JSON and YAML reports show needs none): a run's memory
    is then that of its largest job, whatever the number of jobs and events.
    """
    book = rules if rules is not None else RuleBook.load()
    book.new_run()  # each rule's time budget is per run
    with dask_cluster(dask) as cluster:
        collector = Collector(book, cluster=cluster)
        collector.read_all(sources, while_waiting=_load_diagnosing)
    return diagnose_collected(
        collector,
        book,
        policy=policy,
        job=job,
        job_spec=job_spec,
        lang=lang,
        unread=unread,
        window=window,
        timelines=timelines,
    )


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
) -> Analysis:
    """The analysis of what ``collector`` has read with ``book`` (:func:`analyze_sources`
    once its sources are read; ``analyzer.bigquery`` fills a collector from query rows).
    ``unread``: inputs that could not be opened, kept with those that failed while read;
    ``window``: only the jobs active in it (:func:`within`); ``timelines``: see
    :func:`analyze_sources`; ``processes``: how many diagnose its jobs (None: several when
    they hold many events, :mod:`analyzer.diagnosing`). The collector's events are let go as
    its jobs are diagnosed: it can be diagnosed once."""
    from analyzer.diagnosing import each_diagnosis
    from analyzer.policy import load_policy
    from analyzer.predict import diagnose_timeline
    from analyzer.timeline import job_timelines

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

    # Job by job: each job's events are read back, diagnosed and let go before the next
    # job's are (the collector's logs are built one at a time), so the memory of a run is
    # that of its largest job, not of all of them (issue 19: flat from 200 MB to 1 GB).
    # Jobs with many events are built and diagnosed by several processes
    # (analyzer.diagnosing), in the same order.
    def diagnosed(log: JobLog) -> Iterator[Diagnosis]:
        if job is not None and log.job_id != job:
            return
        for timeline in job_timelines(log, budget):
            diagnosis = diagnose_timeline(timeline, active_policy, job_spec, lang, stats)
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
    from analyzer.analysis import Analysis

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


@contextmanager
def dask_cluster(dask: object) -> Iterator[Cluster | None]:
    """The Dask cluster ``dask`` names (see :func:`analyze_sources`), connected for the time
    of a scan; None for None."""
    if dask is None:
        yield None
        return
    from analyzer.cluster import DaskCluster

    with DaskCluster(dask) as cluster:
        yield cluster


def window_of(since: str | None, start: str | None, end: str | None) -> Window | None:
    """The time window ``--since``/``--start``/``--end`` give a sink tree; None when none of
    them is given (the whole tree is read)."""
    if since is None and start is None and end is None:
        return None
    from analyzer.live.window import parse_window

    return parse_window(since, start, end)


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


def __getattr__(name: str) -> Any:
    # The stage types, importable from here as before, loaded on first use: not before the
    # workers fork (see _load_diagnosing).
    if name in ("Analysis", "DiagnosisList"):
        import analyzer.analysis

        return getattr(analyzer.analysis, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _load_diagnosing() -> None:
    """Import and read what diagnosing needs; called while worker processes scan the inputs."""
    import analyzer.analysis
    import analyzer.changes
    import analyzer.predict
    import analyzer.report  # noqa: F401
    from analyzer.advice import load_advice
    from analyzer.policy import load_policy

    load_policy()
    load_advice()


PathsLike = str | Path | Iterable[str | Path]


def flatten_paths(paths: Iterable[PathsLike]) -> list[str]:
    """Paths given one by one or as lists (``glob.glob(...)``, ``Path.glob(...)``), flat."""
    flat: list[str] = []
    for item in paths:
        if isinstance(item, str | Path):
            flat.append(str(item))
        else:
            flat.extend(flatten_paths(item))
    return flat


def analyze(
    paths: Sequence[str | Path],
    *,
    rules_dirs: Sequence[Path] = (),
    policy_path: Path | None = None,
    job: str | None = None,
    job_spec_path: Path | None = None,
    lang: str = "en",
    since: str | None = None,
    start: str | None = None,
    end: str | None = None,
    dask: object = None,
) -> Analysis:
    """Read ``paths`` (files, directories, globs, ``-``, ``gs://BUCKET/PREFIX/``) and diagnose
    every job in them.

    ``job_spec_path``: ``gcloud ai custom-jobs describe`` output of the job (YAML or JSON).
    ``since`` (``7d``), or ``start`` and ``end`` (RFC 3339): read only the hourly sink files
    of a tree (directory, glob or ``gs://`` prefix) whose hour overlaps that window, and keep
    the jobs active in it (:func:`within`).
    ``dask``: see :func:`analyze_sources`.
    An input that cannot be read (a missing file, a binary one, a cut ``.gz``) is named in
    the analysis' :attr:`~Analysis.unread` and the others are diagnosed; InputError only
    when no input at all can be read.
    """
    from analyzer.jobspec import load_job_spec
    from analyzer.policy import load_policy

    book = RuleBook.load(tuple(Path(d) for d in rules_dirs))
    policy = load_policy(Path(policy_path) if policy_path is not None else None)
    spec = load_job_spec(Path(job_spec_path)) if job_spec_path is not None else None
    unread: list[str] = []
    window = window_of(since, start, end)
    sources = open_batch(flatten_paths(paths), unread, window)
    return analyze_sources(
        sources,
        rules=book,
        policy=policy,
        job=job,
        job_spec=spec,
        lang=lang,
        unread=unread,
        dask=dask,
        window=window,
    )


def open_batch(
    paths: Sequence[str], unread: list[str], window: Window | None = None
) -> list[Source]:
    """The sources of ``paths`` (trees cut to ``window``), each input that cannot be opened
    named in ``unread``.

    Raises InputError when none can be: the first problem, with how many more there are.
    """
    sources = open_sources(paths, unread, window)
    if not sources:
        if not unread:  # pragma: no cover - expand_paths raises for no input at all
            raise InputError("no input could be read")
        more = f" (and {len(unread) - 1} more inputs that cannot be read)" if unread[1:] else ""
        raise InputError(f"{unread[0]}{more}", tuple(unread))
    return sources


def diagnose(
    *paths: PathsLike,
    rules_dirs: Sequence[str | Path] = (),
    policy_path: str | Path | None = None,
    job_spec: str | Path | None = None,
    job: str | None = None,
    lang: str = "en",
    since: str | None = None,
    start: str | None = None,
    end: str | None = None,
    dask: object = None,
) -> DiagnosisList:
    """The diagnoses of every job in ``paths``: files, directories, globs, ``gs://`` trees,
    or lists of them (``diagnose(glob.glob("exports/*.json"))``), in the order ``jobdoctor
    diagnose`` prints them: failures first, the most recent first within a state
    (:func:`analyzer.report.overview.fleet_order`; :func:`analyze` keeps the JSON's order).

    ``rules_dirs``, ``policy_path`` and ``job_spec`` are the CLI's ``--rules``, ``--policy``
    and ``--job-spec``; ``since``/``start``/``end`` and ``dask``: see :func:`analyze`. A list
    that Jupyter shows as a table of verdicts with each job's timeline chart, and a plain REPL
    as one short verdict per job.
    """

    analysis = analyze(
        flatten_paths(paths),
        rules_dirs=[Path(d) for d in rules_dirs],
        policy_path=Path(policy_path) if policy_path is not None else None,
        job=job,
        job_spec_path=Path(job_spec) if job_spec is not None else None,
        lang=lang,
        since=since,
        start=start,
        end=end,
        dask=dask,
    )
    from analyzer.analysis import DiagnosisList
    from analyzer.report.overview import fleet_order

    return DiagnosisList(fleet_order(analysis.diagnoses))


def follow_job(
    project: str,
    job_id: str,
    on_change: Callable[[list[str], Diagnosis], None],
    *,
    since: str | None = None,
    start: str | None = None,
    endpoint: str | None = None,
    interval: float = 5.0,
    rules: RuleBook | None = None,
    policy: RetryPolicy | None = None,
) -> Diagnosis | None:
    """Poll a job's logs, diagnose after every poll and report what changed, until it ends.

    ``on_change`` gets the sentences of :func:`~analyzer.changes.describe_changes` and the new
    diagnosis. Returns the last diagnosis (None if no log line arrived). Ctrl-C stops cleanly.
    """
    from analyzer.changes import describe_changes
    from analyzer.live import LiveQuery, follow, parse_window
    from analyzer.policy import load_policy
    from analyzer.predict import diagnose_timeline
    from analyzer.records import LogRecord
    from analyzer.timeline import build_timeline

    book = rules if rules is not None else RuleBook.load()
    active_policy = policy if policy is not None else load_policy()
    query = LiveQuery(project, job_id, parse_window(since, start, None), endpoint)
    collector = Collector(book)
    stats = InputStats(path=query.origin_path, format="cloud-logging-api")
    latest: list[Diagnosis] = []

    class _Batch:
        def __init__(self, records: list[LogRecord]) -> None:
            self._records = records

        @property
        def stats(self) -> InputStats:
            return stats

        def records(self) -> Iterator[LogRecord]:
            for record in self._records:
                stats.lines += 1
                stats.used += 1
                stats.records += 1
                yield record

    def on_records(records: list[LogRecord]) -> bool:
        collector.read(_Batch(records))
        logs = [log for log in collector.logs() if log.job_id == job_id]
        if not logs:
            return False
        timeline = build_timeline(logs[0], active_policy.worker_restart_budget)
        diagnosis = diagnose_timeline(timeline, active_policy)
        changes = describe_changes(latest[-1] if latest else None, diagnosis)
        latest[:] = [diagnosis]
        if changes:
            on_change(changes, diagnosis)
        return diagnosis.observed_final

    follow(query, on_records, interval=interval)
    return latest[-1] if latest else None
