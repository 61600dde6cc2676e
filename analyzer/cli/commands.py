"""What the ``jobdoctor`` commands do once the typer app (:mod:`analyzer.cli`) has parsed
their arguments.

Only the CLI prints or exits: a body leaves with ``SystemExit`` and the documented code
(click passes a ``SystemExit`` through as it is). Exit codes: 0 the analysis
ran (whatever the jobs' fate), 1 a job did what ``--fail-on`` names (failed, was retried, is
stalled, ...), 2 bad usage or unreadable input (in a batch: after the other inputs were
diagnosed) or a full disk, 3 invalid rules or policy, 70 a bug in jobdoctor (one line;
``JOBDOCTOR_DEBUG=1`` shows the traceback, its secrets redacted).
"""

from __future__ import annotations

import errno
import gc
import io
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, cast

from analyzer.core.errors import InputError, JobDoctorError, PolicyError, RuleError, SourceError

if TYPE_CHECKING:
    from rich.console import Console

    from analyzer.engines.bigquery import BigQuerySource
    from analyzer.engines.live.gcloud import JobName
    from analyzer.engines.live.window import Window
    from analyzer.ingest.records import Source
    from analyzer.pipeline.analysis import Analysis
    from analyzer.rulebook import RuleBook
    from analyzer.verdict.jobspec import JobSpec
    from analyzer.verdict.policy import RetryPolicy


EXIT_FAILED_JOB = 1
EXIT_USAGE = 2
EXIT_RULES = 3
EXIT_INTERNAL = 70  # a bug in jobdoctor (sysexits' EX_SOFTWARE)


class ReportFormat(StrEnum):
    text = "text"
    json = "json"
    jsonl = "jsonl"
    yaml = "yaml"
    markdown = "markdown"
    table = "table"
    wide = "wide"


class GroupBy(StrEnum):
    signature = "signature"


class ExplainFormat(StrEnum):
    text = "text"
    json = "json"


class RowFormat(StrEnum):
    jsonl = "jsonl"
    csv = "csv"


class Lang(StrEnum):
    en = "en"
    ja = "ja"
    he = "he"


class FleetFormat(StrEnum):
    html = "html"
    markdown = "markdown"
    csv = "csv"
    json = "json"


class SqlDialect(StrEnum):
    bigquery = "bigquery"
    duckdb = "duckdb"


class FailOn(StrEnum):
    failed = "failed"
    not_succeeded = "not-succeeded"
    retried = "retried"
    stalled = "stalled"
    never = "never"


class ColorMode(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


def say(message: str) -> None:
    """One line on stderr, never wrapped (scripts grep it); a path or text from a log in it
    shows its control characters rather than sending them to the terminal, and a token or
    password in it (a server's echo, a URL's ``user:pass@``) is cut out."""
    from analyzer.report.controls import one_line

    sys.stderr.write(f"jobdoctor: {one_line(message)}\n")


@contextmanager
def reported_errors() -> Iterator[None]:
    """Turn library errors into one line on stderr and the documented exit code."""
    try:
        yield
    except RuleError as exc:
        for problem in exc.problems:
            say(f"{problem}")
        raise SystemExit(EXIT_RULES) from None
    except PolicyError as exc:
        say(f"{exc}")
        raise SystemExit(EXIT_RULES) from None
    except InputError as exc:
        for problem in exc.problems:  # a batch's inputs that could not be read, one line each
            say(problem)
        raise SystemExit(EXIT_USAGE) from None
    except (SourceError, JobDoctorError) as exc:
        say(f"{exc}")
        raise SystemExit(EXIT_USAGE) from None
    except KeyboardInterrupt:
        say("interrupted")
        raise SystemExit(130) from None
    except BrokenPipeError:
        # The reader (head, less) went away: nothing left to say (main leaves without the
        # interpreter's own flush, which would complain about the pipe).
        raise SystemExit(0) from None
    except OSError as exc:
        if exc.errno not in FULL:
            raise
        # The report's file or stdout ran out of room: the user's disk, not a bug of ours.
        say(full_message(exc))
        raise SystemExit(EXIT_USAGE) from None
    except Exception as exc:
        # A bug of ours: one line, no locals (they may hold log content); the traceback only
        # when asked for, and with its secrets cut out as well.
        if os.environ.get("JOBDOCTOR_DEBUG"):
            import traceback

            from analyzer.report.redact import redact

            sys.stderr.write(redact("".join(traceback.format_exception(exc))))
            raise SystemExit(EXIT_INTERNAL) from None
        say(
            f"internal error: {type(exc).__name__}: {exc}; rerun with JOBDOCTOR_DEBUG=1"
            " for the traceback and report it"
        )
        raise SystemExit(EXIT_INTERNAL) from None


# Write failures that say the output's device is full (or the file too large for it).
FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def full_message(exc: OSError) -> str:
    reason = "no space left on device" if exc.errno == errno.ENOSPC else exc.strerror
    return f"cannot write the output: {(reason or 'no space left on device').lower()}"


# A read that ends sooner shows no bar at all (a bar that flashes is noise); any longer one,
# whatever its size or kind of input, shows one.
PROGRESS_DELAY_S = 0.5


class ReadProgress:
    """What the caller of :func:`showing_progress` tells it: the sources once opened (a
    ``gs://`` tree's objects are then counted as they are read)."""

    def __init__(self, update: Callable[[int], None] | None = None) -> None:
        self._update = update

    def opened(self, sources: Sequence[Source]) -> None:
        """The inputs are open: the bar may show from now on."""
        from analyzer.ingest.gcs import GcsSource

        if self._update is not None:
            self._update(sum(1 for s in sources if isinstance(s, GcsSource)))
            self._update = None


@contextmanager
def showing_progress(paths: Sequence[str], *, writing: bool = False) -> Iterator[ReadProgress]:
    """A progress bar on stderr while the inputs are read, only when stderr is a terminal and
    the read lasts longer than :data:`PROGRESS_DELAY_S`.

    Files (directories and globs included) are counted by :mod:`analyzer.classify` as it reads
    them, gzip files by what they expand to; stdin by the bytes read from it, with no total; a
    Cloud Storage tree by its bytes and objects (``opened`` tells how many). Enter it before
    the inputs are opened: stdin is then counted from its first byte. ``writing``: the
    command writes its output while it reads; then rows that go to the same terminal are the
    feedback, and a bar would be drawn through them.
    """
    if not sys.stderr.isatty() or (writing and sys.stdout.isatty()):
        yield ReadProgress()
        return
    import threading

    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    from analyzer.ingest.progress import input_progress, reading_progress

    stdin = "-" in paths
    columns = (
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    # No redirection: what is written while the bar shows goes where it was going.
    bar = Progress(
        *columns,
        console=Console(stderr=True),
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
    )
    task = bar.add_task("reading stdin" if stdin else "reading", total=None)
    remote = [0, 0]  # objects listed, objects read

    def advance(total: int | None, count: int) -> None:
        if total is not None:
            bar.update(task, total=total)
        bar.update(task, advance=count)

    def opened(count: int) -> None:
        remote[0] = count
        # Only now may the bar show: opening may have shown a listing's spinner, and rich
        # draws one live display at a time. Objects are read over the network: their bar
        # shows at once.
        if count:
            bar.update(task, description=f"reading 0/{count} objects")
            show()
        else:
            timer.start()

    def finished(path: str) -> None:
        if remote[0] and path.startswith("gs://"):
            remote[1] += 1
            bar.update(task, description=f"reading {remote[1]}/{remote[0]} objects")

    # The bar appears once the read has lasted a while; the lock keeps a late timer from
    # starting it after the read ended.
    lock = threading.Lock()
    ended = False

    def show() -> None:
        with lock:
            if not ended:
                bar.start()

    timer = threading.Timer(PROGRESS_DELAY_S, show)
    timer.daemon = True
    token = reading_progress.set(advance)
    told = input_progress.set(finished)
    saved = sys.stdin
    raw = getattr(sys.stdin, "buffer", None)
    if stdin and isinstance(raw, io.BufferedIOBase):
        from analyzer.ingest.streams import CountingReader

        counted = CountingReader(cast(BinaryIO, raw), lambda n: advance(None, n))
        sys.stdin = io.TextIOWrapper(io.BufferedReader(counted), encoding="utf-8")
    try:
        yield ReadProgress(opened)
    finally:
        with lock:
            ended = True
        timer.cancel()
        bar.stop()
        sys.stdin = saved
        input_progress.reset(told)
        reading_progress.reset(token)


@contextmanager
def listing(paths: Sequence[str]) -> Iterator[None]:
    """A spinner on a terminal while a ``gs://`` prefix is listed."""
    remote = [p for p in paths if p.startswith("gs://")]
    if not remote or not sys.stderr.isatty():
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status(f"listing {', '.join(remote)}"):
        yield


def open_inputs(
    paths: Sequence[str],
    unread: list[str],
    since: str | None,
    start: str | None,
    end: str | None,
) -> list[Source]:
    """:func:`open_batch` with trees cut to the window of ``--since``/``--start``/``--end``."""
    from analyzer.api import window_of

    window = window_of(since, start, end)
    with listing(paths):
        sources = open_batch(paths, unread, window)
    if window is not None:
        # The window is always said: a tree is read by whole hours around it.
        say(f"window {window}: {len(sources)} input(s) read, trees by the hours overlapping it")
    return sources


def rules_dirs(rules: Sequence[Path] | None) -> tuple[Path, ...]:
    dirs = list(rules or [])
    env = os.environ.get("JOBDOCTOR_RULES")
    if env:
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
    return tuple(dirs)


def parse_job_name(text: str) -> JobName:
    """``text`` (a job id, or its resource name as gcloud prints it) as a job name."""
    from analyzer.engines.live import gcloud

    return gcloud.parse_job_name(text)


def live_target(project: str | None, job_id: str | None, region: str | None) -> JobName:
    """The live job: its id, project and region, with gcloud's defaults filled in and each
    checked for its shape (:func:`analyzer.engines.live.gcloud.resolve_live_job`)."""
    from analyzer.engines.live.gcloud import resolve_live_job

    return resolve_live_job(project, job_id, region)


def _live_job_record(
    live: JobName, logging_endpoint: str | None, endpoint: str | None, notices: list[str]
) -> JobSpec | None:
    """The job's record from Vertex AI, or None with a notice saying why not.

    The logs are the diagnosis; the record refines it, so a record that cannot be read is a
    notice, not an error. With Cloud Logging on an emulator, Google's real Vertex AI is not
    called unless an endpoint for it is given too (an emulator run never leaves the machine).
    """
    from urllib.parse import urlsplit

    from analyzer.engines.live.client import ENDPOINT_ENV
    from analyzer.engines.live.vertex import overridden, read_custom_job
    from analyzer.verdict.jobspec import parse_job_spec

    logging_at = logging_endpoint or os.environ.get(ENDPOINT_ENV) or ""
    loopback = urlsplit(logging_at).hostname in ("localhost", "127.0.0.1", "::1")
    if loopback and not overridden(endpoint):
        return None
    assert live.project is not None and live.region is not None
    try:
        record = read_custom_job(live.project, live.region, live.job_id, endpoint=endpoint)
        spec = parse_job_spec(record)
    except (SourceError, ValueError) as exc:
        notices.append(f"the job's record was not read, the logs alone are used: {exc}")
        return None
    notices.append(f"read the job's record from Vertex AI ({live.resource}): {spec.state}")
    return spec


def _file_window(since: str | None, start: str | None, end: str | None) -> Window | None:
    """The window that keeps file inputs' jobs, when one was asked for."""
    if since is None and start is None and end is None:
        return None
    from analyzer.engines.live.window import parse_window

    return parse_window(since, start, end)


def table_source(
    table: str,
    since: str | None,
    start: str | None,
    end: str | None,
    job_ids: list[str] | None,
    billing_project: str | None,
    max_bytes: str,
) -> BigQuerySource:
    from analyzer.engines import bigquery

    # Ids as gcloud prints them (projects/P/locations/L/customJobs/ID) name their job.
    return bigquery.bigquery_source(
        table,
        since=since,
        start=start,
        end=end,
        job_ids=[parse_job_name(j).job_id for j in job_ids or ()],
        billing_project=billing_project,
        max_bytes=max_bytes,
    )


def _load_policy(path: Path | None) -> RetryPolicy:
    from analyzer.verdict.policy import load_policy

    return load_policy(path)


def _load_job_spec(path: Path | None) -> JobSpec | None:
    if path is None:
        return None
    from analyzer.verdict.jobspec import load_job_spec

    return load_job_spec(path)


def live_query(
    project: str | None,
    job_id: str | None,
    since: str | None,
    start: str | None,
    end: str | None,
    endpoint: str | None,
) -> object:
    from analyzer.engines.live import LiveQuery, parse_window

    if not project or not job_id:
        raise InputError("live reading needs both --project and --job-id")
    return LiveQuery(project, job_id, parse_window(since, start, end), endpoint)


@dataclass(frozen=True, slots=True)
class DiagnoseOptions:
    """``jobdoctor diagnose``'s arguments, as :mod:`analyzer.cli` documents them."""

    paths: Sequence[str] = ()
    job: str | None = None
    output: ReportFormat = ReportFormat.text
    quiet: bool = False
    fail_on: FailOn = FailOn.never
    rules: Sequence[Path] | None = None
    policy: Path | None = None
    project: str | None = None
    job_ids: Sequence[str] | None = None
    region: str | None = None
    since: str | None = None
    start: str | None = None
    end: str | None = None
    api_endpoint: str | None = None
    vertex_endpoint: str | None = None
    job_record: bool = True
    bigquery: str | None = None
    billing_project: str | None = None
    max_bytes: str = "100GB"
    dry_run: bool = False
    follow: bool = False
    lang: Lang = Lang.en
    job_spec: Path | None = None
    color: ColorMode = ColorMode.auto
    dask: str | None = None
    group_by: GroupBy | None = None


def diagnose(options: DiagnoseOptions) -> None:
    """``jobdoctor diagnose``: read the inputs the options name (files, live logs or a
    BigQuery table), write the report, leave with the documented exit code."""
    from analyzer.rulebook import RuleBook

    with reported_errors():
        live = _live_job(options)
        if live is not None or options.bigquery is not None:
            gc.enable()  # a network client's pages, not files (see main)
        _check_combination(options, live)
        only, label = chosen_job(options.job)
        if (live is not None or options.bigquery is not None) and options.dask is not None:
            raise InputError("--dask scans files and gs:// trees, not live logs or BigQuery")
        book = RuleBook.load(rules_dirs(options.rules))
        # A policy file of the user's is checked before reading; the built-in one is loaded
        # once the logs are read (with YAML, while worker processes scan them).
        policy = _load_policy(options.policy) if options.policy is not None else None
        if options.follow and live is not None:
            o = options
            _follow(live, o.since, o.start, o.api_endpoint, book, policy or _load_policy(None))
            return
        spec = _load_job_spec(options.job_spec)
        said = 0
        if options.bigquery is not None:
            found = _table_analysis(options, options.bigquery, book, policy, spec)
            if found is None:
                return  # a dry run
            # The window (the first notice) was said before the queries ran.
            analysis, said = found, 1
        elif live is not None:
            analysis = _live_analysis(options, live, book, policy, spec)
        else:
            analysis = _files_analysis(options, (only, label), book, policy, spec)
        for notice in analysis.notices[said:]:
            say(notice)
        analysis = only_labelled(analysis, label)
        if only is not None and not analysis.diagnoses:
            raise InputError(f"job {only} is not in the inputs; run without --job to list them")
        write_table(analysis, options.output, options.quiet, options.color, options.group_by)
    if analysis.unread:  # said above, one line each; the rest was diagnosed (as rg does)
        raise SystemExit(EXIT_USAGE)
    if _fails(analysis, options.fail_on):
        raise SystemExit(EXIT_FAILED_JOB)


def _live_job(options: DiagnoseOptions) -> JobName | None:
    """The job to read live from Cloud Logging, when the options ask for one (``--project``
    or ``--job-id`` without ``--bigquery``); InputError for sources that do not go together."""
    o = options
    if o.bigquery is not None and (o.paths or o.project is not None or o.follow):
        raise InputError("give log files, --project or --bigquery, one of them")
    wants_live = o.bigquery is None and (o.project is not None or bool(o.job_ids))
    if wants_live and o.job_ids and len(o.job_ids) > 1:
        raise InputError("live reading takes one --job-id")
    if o.paths and o.job_ids and o.bigquery is None:
        raise InputError("give log files or --job-id (live), not both")
    if o.paths and o.project is not None:
        raise InputError("--project reads live logs: give --job-id instead of log files")
    if not wants_live:
        return None
    return live_target(o.project, o.job_ids[-1] if o.job_ids else None, o.region)


def _check_combination(options: DiagnoseOptions, live: JobName | None) -> None:
    """InputError when nothing is to be read, or ``--follow`` has no live job to follow."""
    if live is None and not options.paths and options.bigquery is None:
        raise InputError(
            "no input: give log files, - for stdin, --project and --job-id, or --bigquery"
        )
    if options.follow and live is None:
        raise InputError("--follow reads live logs: give --project and --job-id")
    if options.follow and options.end is not None:
        raise InputError("--follow runs until the job ends: drop --end")


def _table_analysis(
    options: DiagnoseOptions,
    table: str,
    book: RuleBook,
    policy: RetryPolicy | None,
    spec: JobSpec | None,
) -> Analysis | None:
    """The diagnosis of the jobs of a BigQuery table (None after a dry run); the window is
    said first, before the queries run."""
    from analyzer.engines.bigquery import analyze_bigquery
    from analyzer.engines.bigquery import describe_window as table_window

    o = options
    wanted = [*(o.job_ids or []), *([o.job] if o.job else [])]
    source = table_source(table, o.since, o.start, o.end, wanted, o.billing_project, o.max_bytes)
    say(table_window(source))
    return analyze_bigquery(
        source,
        rules=book,
        policy=policy,
        job_spec=spec,
        lang=o.lang.value,
        say=say,
        dry_run=o.dry_run,
    )


def _live_analysis(
    options: DiagnoseOptions,
    live: JobName,
    book: RuleBook,
    policy: RetryPolicy | None,
    spec: JobSpec | None,
) -> Analysis:
    """The diagnosis of a job read live from Cloud Logging, with its Vertex AI record unless
    ``--job-spec`` or ``--no-job-record``; the window read and the record's fate as notices."""
    from datetime import UTC, datetime

    from analyzer.api import analyze_sources
    from analyzer.engines.live import LiveQuery, LiveSource, describe_window

    o = options
    query = live_query(live.project, live.job_id, o.since, o.start, o.end, o.api_endpoint)
    assert isinstance(query, LiveQuery)
    record_notices: list[str] = []
    if spec is None and o.job_record:
        spec = _live_job_record(live, o.api_endpoint, o.vertex_endpoint, record_notices)
    # A live read ends now (issue 30: a worker silent until now is silent, not cut off by
    # the export), or at the window's end when it is in the past.
    now = min(datetime.now(UTC), query.window.end)
    analysis = analyze_sources(
        [LiveSource(query)], rules=book, policy=policy, job_spec=spec, lang=o.lang.value, now=now
    )
    notices = (*analysis.notices, describe_window(query), *record_notices)
    return replace(analysis, notices=notices)


def _files_analysis(
    options: DiagnoseOptions,
    chosen: tuple[str | None, str | None],
    book: RuleBook,
    policy: RetryPolicy | None,
    spec: JobSpec | None,
) -> Analysis:
    """The diagnosis of the files, directories, globs, ``-`` and ``gs://`` trees given, with a
    progress bar on a terminal."""
    # Only what reading needs: the rest (the stages after it, analyzer.pipeline.analysis too) loads
    # while worker processes scan (analyzer.api).
    from analyzer.api import analyze_sources

    o = options
    only, label = chosen  # the job's id, or the label of a job without one (chosen_job)
    window = _file_window(o.since, o.start, o.end)
    unread: list[str] = []
    paste_prompt(o.paths)
    # Entered before opening: the bar counts stdin's bytes from its first one.
    with showing_progress(o.paths) as progress:
        sources = open_inputs(o.paths, unread, o.since, o.start, o.end)
        progress.opened(sources)
        return analyze_sources(
            sources,
            rules=book,
            policy=policy,
            job=only,
            job_spec=spec,
            lang=o.lang.value,
            window=window,
            unread=unread,
            dask=o.dask,
            timelines=keeps_events(o.output, label),
        )


# The reports that show no event of a job's timeline: their diagnoses keep none, so that a
# run's memory stays that of its largest job (analyzer.api.analyze_sources' ``timelines``).
_WITHOUT_EVENTS = frozenset({ReportFormat.json, ReportFormat.jsonl, ReportFormat.yaml})


def chosen_job(job: str | None) -> tuple[str | None, str | None]:
    """``--job`` as ``(job id, None)``, or as ``(None, label)`` when it names a job by the
    label the reports print: a job whose logs name no id (``(no id) PATH:LINE``), or a
    trial (``ID trial N``)."""
    from analyzer.report.facts import NO_ID

    if job is None:
        return None, None
    if job.startswith(NO_ID) or " trial " in job:
        return None, job
    return parse_job_name(job).job_id, None


def keeps_events(output: ReportFormat, label: str | None) -> bool:
    """Whether the diagnoses keep their events: for the reports that show them, and to find
    a job by its label (which names its first line)."""
    return output not in _WITHOUT_EVENTS or label is not None


def only_labelled(analysis: object, label: str | None) -> Analysis:
    """``analysis`` with only the job the reports label ``label`` (all of it for None);
    InputError when no job has that label."""
    from analyzer.pipeline.analysis import Analysis
    from analyzer.report.facts import job_label

    assert isinstance(analysis, Analysis)
    if label is None:
        return analysis
    kept = tuple(d for d in analysis.diagnoses if job_label(d) == label.strip())
    if not kept:
        raise InputError(f"job {label!r} is not in the inputs; run without --job to list them")
    return replace(analysis, diagnoses=type(analysis.diagnoses)(kept))


def paste_prompt(paths: Sequence[str]) -> None:
    """Say how to end a paste when ``-`` reads a terminal (the cursor would otherwise just
    wait, with no word of what it waits for), and make the first Ctrl-D end it."""
    if "-" in paths and sys.stdin.isatty():
        say("reading the log from the terminal: paste the log, then Ctrl-D (Windows: Ctrl-Z Enter)")
        reader = io.BufferedReader(_EndsAtFirstEof(sys.stdin.fileno()))
        sys.stdin = io.TextIOWrapper(reader, encoding="utf-8")


class _EndsAtFirstEof(io.RawIOBase):
    """A terminal's input that stays at its end once Ctrl-D ended it: a terminal's end of
    input is one empty read, and the readers after the sniffer would each wait for another
    Ctrl-D."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._ended = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._ended:
            return 0
        target = memoryview(buffer).cast("B")
        data = os.read(self._fd, len(target))
        self._ended = not data
        target[: len(data)] = data
        return len(data)


def write_table(
    analysis: object, output: ReportFormat, quiet: bool, color: ColorMode, group_by: GroupBy | None
) -> None:
    """The diagnoses as ``output`` says; the tables of ``--format table|wide`` (wide: more
    columns, never folded) and ``--group-by signature`` (the table under each recurring
    failure's heading, the most costly first) here."""
    if group_by is None and output is not ReportFormat.wide:
        _write_diagnosis(analysis, output, quiet, color)
        return
    # Only here: the plain reports load none of the signatures' and tables' modules.
    from analyzer.pipeline.analysis import Analysis
    from analyzer.report.overview import fleet_order
    from analyzer.report.table import grouped_table_lines, table_lines

    assert isinstance(analysis, Analysis)
    if group_by is not None and output not in (ReportFormat.table, ReportFormat.wide):
        raise InputError("--group-by signature groups the table: add --format table (or wide)")
    if quiet:
        _write_diagnosis(analysis, ReportFormat.table, quiet, color)
        return
    shown = console(color)
    width = shown.width if sys.stdout.isatty() else None
    ordered = fleet_order(analysis.diagnoses)
    wide = output is ReportFormat.wide
    lines = (
        grouped_table_lines(ordered, width, wide=wide)
        if group_by is not None
        else table_lines(ordered, width, wide=wide)
    )
    for line in lines:
        shown.print(line, soft_wrap=True)


def _fails(analysis: object, fail_on: FailOn) -> bool:
    """Whether ``--fail-on`` asks for exit 1 on these diagnoses."""
    from analyzer.pipeline.analysis import Analysis
    from analyzer.verdict.diagnosis import JobState

    assert isinstance(analysis, Analysis)
    jobs = analysis.diagnoses
    if fail_on is FailOn.failed:
        return any(d.state is JobState.FAILED for d in jobs)
    if fail_on is FailOn.not_succeeded:
        return any(d.state is not JobState.SUCCEEDED for d in jobs)
    if fail_on is FailOn.retried:
        return any(d.retries > 0 for d in jobs)
    if fail_on is FailOn.stalled:
        # A hung job is billed until its timeout (platform.md section 2): cron and CI stop
        # on it as on a failure.
        return any(d.stalled is not None for d in jobs)
    return False


def console(color: ColorMode) -> Console:
    """The console of the text reports: ``--color`` first, then ``NO_COLOR`` (rich reads it)."""
    from rich.console import Console

    class PipeAwareConsole(Console):
        def on_broken_pipe(self) -> None:
            # rich exits 1 when the reader went away; for jobdoctor that is the end of the
            # report, exit 0 (reported_errors), as for every other format.
            self.quiet = True
            raise BrokenPipeError

    if color is ColorMode.never:
        return PipeAwareConsole(highlight=False, color_system=None)
    if color is ColorMode.always:
        # An explicit flag beats NO_COLOR (no-color.org); the layout still follows whether
        # stdout is a terminal (see _write_diagnosis).
        return PipeAwareConsole(highlight=False, force_terminal=True, no_color=False)
    return PipeAwareConsole(highlight=False)


def _write_diagnosis(analysis: object, output: ReportFormat, quiet: bool, color: ColorMode) -> None:
    from analyzer.pipeline.analysis import Analysis
    from analyzer.report.json import render_json

    assert isinstance(analysis, Analysis)
    # Folded to the terminal's width only on a terminal: a file or a pipe keeps one fact a
    # line, whatever --color says.
    wrap = sys.stdout.isatty()
    if quiet and output in (ReportFormat.text, ReportFormat.table):
        from analyzer.report.text import render_verdicts

        render_verdicts(analysis, console(color), wrap=wrap)
    elif output is ReportFormat.json:
        sys.stdout.write(render_json(analysis))
    elif output is ReportFormat.jsonl:
        from analyzer.report.json import render_jsonl

        sys.stdout.write(render_jsonl(analysis))
    elif output is ReportFormat.yaml:
        from analyzer.report.json import render_yaml

        sys.stdout.write(render_yaml(analysis))
    elif output is ReportFormat.markdown:
        from analyzer.report.markdown import render_markdown

        sys.stdout.write(render_markdown(analysis))
    elif output is ReportFormat.table:
        from analyzer.report.text import render_table

        render_table(analysis, console(color), wrap=wrap)
    else:
        from analyzer.report.text import render_text

        render_text(analysis, console(color), wrap=wrap)


def open_batch(
    paths: Sequence[str], unread: list[str], window: Window | None = None
) -> list[Source]:
    """The sources of ``paths`` (trees cut to ``window``); an input that cannot be opened is
    named in ``unread`` and the others are read. When none can be, each is said and the run
    ends with exit 2."""
    from analyzer.ingest import open_sources

    sources = open_sources(paths, unread, window)
    if not sources:
        for problem in unread:
            say(problem)
        raise SystemExit(EXIT_USAGE)
    return sources


def _follow(
    live: JobName,
    since: str | None,
    start: str | None,
    endpoint: str | None,
    book: RuleBook,
    policy: RetryPolicy,
) -> None:
    from datetime import UTC, datetime

    from analyzer.api import follow_job
    from analyzer.verdict.diagnosis import Diagnosis

    gc.enable()  # a long run (see main)
    project, job_id = live.project or "", live.job_id
    say(f"following job {job_id} in project {project}; Ctrl-C to stop")

    def show(changes: list[str], diagnosis: Diagnosis) -> None:
        from analyzer.report.controls import visible

        now = datetime.now(UTC).strftime("%H:%M:%S")
        for change in changes:  # sentences quoting the job's log lines: shown, not obeyed
            sys.stdout.write(f"{now}  {visible(change)}\n")
        sys.stdout.flush()

    last = follow_job(
        project,
        job_id,
        show,
        since=since,
        start=start,
        endpoint=endpoint,
        rules=book,
        policy=policy,
    )
    if last is not None and last.observed_final:
        say("the job has ended")
