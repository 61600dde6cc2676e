"""The Python API: from inputs to diagnoses in one call.

Only this module and the CLI know the whole pipeline
(ingest → classify → timeline → predict).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.classify.collector import Cluster, Collector
from analyzer.core.errors import InputError
from analyzer.ingest import open_sources
from analyzer.ingest.records import InputStats, Source
from analyzer.pipeline import stages
from analyzer.rulebook import RuleBook

# What turns the scanned logs into diagnoses is imported while the scan runs (see
# _load_diagnosing), not here: a third of start-up, out of the way of the scan.
if TYPE_CHECKING:
    from datetime import datetime

    from analyzer.engines.live.window import Window
    from analyzer.pipeline.analysis import Analysis, DiagnosisList
    from analyzer.verdict.diagnosis import Diagnosis
    from analyzer.verdict.jobspec import JobSpec
    from analyzer.verdict.policy import RetryPolicy


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
    now: datetime | None = None,
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
    is then that of its largest job, whatever the number of jobs and events. ``now``: the
    time of a live read, against which a running job's silence is a stall (None: the latest
    time the inputs show).
    """
    book = rules if rules is not None else RuleBook.load()
    book.new_run()  # each rule's time budget is per run
    with dask_cluster(dask) as cluster:
        collector = Collector(book, cluster=cluster)
        collector.read_all(sources, while_waiting=_load_diagnosing)
    return stages.diagnose_collected(
        collector,
        book,
        policy=policy,
        job=job,
        job_spec=job_spec,
        lang=lang,
        unread=unread,
        window=window,
        timelines=timelines,
        now=now,
    )


@contextmanager
def dask_cluster(dask: object) -> Iterator[Cluster | None]:
    """The Dask cluster ``dask`` names (see :func:`analyze_sources`), connected for the time
    of a scan; None for None."""
    if dask is None:
        yield None
        return
    from analyzer.engines.dask import DaskCluster

    with DaskCluster(dask) as cluster:
        yield cluster


def window_of(since: str | None, start: str | None, end: str | None) -> Window | None:
    """The time window ``--since``/``--start``/``--end`` give a sink tree; None when none of
    them is given (the whole tree is read)."""
    if since is None and start is None and end is None:
        return None
    from analyzer.engines.live.window import parse_window

    return parse_window(since, start, end)


def __getattr__(name: str) -> Any:
    # The stage types, importable from here as before, loaded on first use: not before the
    # workers fork (see _load_diagnosing).
    if name in ("Analysis", "DiagnosisList"):
        import analyzer.pipeline.analysis

        return getattr(analyzer.pipeline.analysis, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _load_diagnosing() -> None:
    """Import and read what diagnosing needs; called while worker processes scan the inputs."""
    from analyzer.verdict.advice import load_advice
    from analyzer.verdict.policy import load_policy

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
    from analyzer.verdict.jobspec import load_job_spec
    from analyzer.verdict.policy import load_policy

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
    from analyzer.pipeline.analysis import DiagnosisList
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

    ``on_change`` gets the sentences of :func:`~analyzer.report.changes.describe_changes` and the
    new
    diagnosis. Returns the last diagnosis (None if no log line arrived). Ctrl-C stops cleanly.
    """
    from datetime import UTC, datetime

    from analyzer.engines.live import LiveQuery, follow, parse_window
    from analyzer.ingest.records import LogRecord
    from analyzer.report.changes import describe_changes
    from analyzer.timeline.attempts import build_timeline
    from analyzer.verdict.hangs import InputEnd
    from analyzer.verdict.policy import load_policy
    from analyzer.verdict.predict import diagnose_timeline

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

    def diagnose_now() -> bool:
        """Diagnose what was read so far, report what changed; True once the job ended."""
        logs = [log for log in collector.logs() if log.job_id == job_id]
        if not logs:
            return False
        timeline = build_timeline(logs[0], active_policy.worker_restart_budget)
        # The input ends now: a worker's silence grows with the clock (issue 30).
        now = InputEnd(datetime.now(UTC), live=True)
        diagnosis = diagnose_timeline(timeline, active_policy, end=now)
        changes = describe_changes(latest[-1] if latest else None, diagnosis)
        latest[:] = [diagnosis]
        if changes:
            on_change(changes, diagnosis)
        return diagnosis.observed_final

    def on_records(records: list[LogRecord]) -> bool:
        collector.read(_Batch(records))
        return diagnose_now()

    # A poll that brings nothing is diagnosed too: a worker's silence grows with the clock.
    follow(query, on_records, interval=interval, on_quiet=diagnose_now)
    return latest[-1] if latest else None
