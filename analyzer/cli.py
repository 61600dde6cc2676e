"""The ``jobdoctor`` command line: a thin layer over the Python API.

Only this module prints or exits. Exit codes: 0 the analysis ran (whatever the jobs' fate),
1 ``--fail-on failed`` and a job failed, 2 bad usage or unreadable input (in a batch: after
the other inputs were diagnosed) or a full disk, 3 invalid rules or policy, 70 a bug in
jobdoctor (one line; ``JOBDOCTOR_DEBUG=1`` shows the traceback, its secrets redacted).
"""

from __future__ import annotations

import errno
import gc
import inspect
import io
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, cast

import typer

from analyzer.errors import InputError, JobDoctorError, PolicyError, RuleError, SourceError

if TYPE_CHECKING:
    from rich.console import Console

    from analyzer.analysis import Analysis
    from analyzer.bigquery import BigQuerySource
    from analyzer.gcloud import JobName
    from analyzer.jobspec import JobSpec
    from analyzer.live.window import Window
    from analyzer.policy import RetryPolicy
    from analyzer.records import Source

_APP_SETTINGS: dict[str, Any] = {
    "no_args_is_help": True,
    "pretty_exceptions_show_locals": False,  # locals may hold log content
    # --install-completion / --show-completion, as typer gives them (bash, zsh, fish, pwsh).
    "add_completion": True,
    "help": "Diagnose Vertex AI custom training jobs from their Cloud Logging logs.",
}
app = typer.Typer(**_APP_SETTINGS)
rules_app = typer.Typer(no_args_is_help=True, help="Work with rule files.")
app.add_typer(rules_app, name="rules")

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
    never = "never"


class ColorMode(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


def _version(value: bool) -> None:
    if value:
        from analyzer import __version__

        sys.stdout.write(f"jobdoctor {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_version, is_eager=True
        ),
    ] = False,
) -> None:
    """Diagnose Vertex AI custom training jobs from their Cloud Logging logs."""


def _say(message: str) -> None:
    """One line on stderr, never wrapped (scripts grep it); a path or text from a log in it
    shows its control characters rather than sending them to the terminal, and a token or
    password in it (a server's echo, a URL's ``user:pass@``) is cut out."""
    from analyzer.controls import visible

    sys.stderr.write(f"jobdoctor: {visible(message)}\n")


@contextmanager
def _reported_errors() -> Iterator[None]:
    """Turn library errors into one line on stderr and the documented exit code."""
    try:
        yield
    except RuleError as exc:
        for problem in exc.problems:
            _say(f"{problem}")
        raise typer.Exit(EXIT_RULES) from None
    except PolicyError as exc:
        _say(f"{exc}")
        raise typer.Exit(EXIT_RULES) from None
    except InputError as exc:
        for problem in exc.problems:  # a batch's inputs that could not be read, one line each
            _say(problem)
        raise typer.Exit(EXIT_USAGE) from None
    except (SourceError, JobDoctorError) as exc:
        _say(f"{exc}")
        raise typer.Exit(EXIT_USAGE) from None
    except KeyboardInterrupt:
        _say("interrupted")
        raise typer.Exit(130) from None
    except BrokenPipeError:
        # The reader (head, less) went away: nothing left to say (main leaves without the
        # interpreter's own flush, which would complain about the pipe).
        raise typer.Exit(0) from None
    except OSError as exc:
        if exc.errno not in _FULL:
            raise
        # The report's file or stdout ran out of room: the user's disk, not a bug of ours.
        _say(_full_message(exc))
        raise typer.Exit(EXIT_USAGE) from None
    except (typer.Exit, typer.Abort):
        raise
    except Exception as exc:
        # A bug of ours: one line, no locals (they may hold log content); the traceback only
        # when asked for, and with its secrets cut out as well.
        if os.environ.get("JOBDOCTOR_DEBUG"):
            import traceback

            from analyzer.redact import redact

            sys.stderr.write(redact("".join(traceback.format_exception(exc))))
            raise typer.Exit(EXIT_INTERNAL) from None
        _say(
            f"internal error: {type(exc).__name__}: {exc}; rerun with JOBDOCTOR_DEBUG=1"
            " for the traceback and report it"
        )
        raise typer.Exit(EXIT_INTERNAL) from None


# Write failures that say the output's device is full (or the file too large for it).
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def _full_message(exc: OSError) -> str:
    reason = "no space left on device" if exc.errno == errno.ENOSPC else exc.strerror
    return f"cannot write the output: {(reason or 'no space left on device').lower()}"


# A read that ends sooner shows no bar at all (a bar that flashes is noise); any longer one,
# whatever its size or kind of input, shows one.
PROGRESS_DELAY_S = 0.5


class _Progress:
    """What the caller of :func:`_reading_progress` tells it: the sources once opened (a
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
def _reading_progress(paths: Sequence[str], *, writing: bool = False) -> Iterator[_Progress]:
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
        yield _Progress()
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

    from analyzer.progress import input_progress, reading_progress

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
        yield _Progress(opened)
    finally:
        with lock:
            ended = True
        timer.cancel()
        bar.stop()
        sys.stdin = saved
        input_progress.reset(told)
        reading_progress.reset(token)


@contextmanager
def _listing(paths: Sequence[str]) -> Iterator[None]:
    """A spinner on a terminal while a ``gs://`` prefix is listed."""
    remote = [p for p in paths if p.startswith("gs://")]
    if not remote or not sys.stderr.isatty():
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status(f"listing {', '.join(remote)}"):
        yield


def _open_inputs(
    paths: Sequence[str],
    unread: list[str],
    since: str | None,
    start: str | None,
    end: str | None,
) -> list[Source]:
    """:func:`_open_batch` with trees cut to the window of ``--since``/``--start``/``--end``."""
    from analyzer.api import window_of

    window = window_of(since, start, end)
    with _listing(paths):
        sources = _open_batch(paths, unread, window)
    if window is not None:
        # The window is always said: a tree is read by whole hours around it.
        _say(f"window {window}: {len(sources)} input(s) read, trees by the hours overlapping it")
    return sources


def _rules_dirs(rules: list[Path] | None) -> tuple[Path, ...]:
    dirs = list(rules or [])
    env = os.environ.get("JOBDOCTOR_RULES")
    if env:
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
    return tuple(dirs)


# Option groups of --help: a command with twenty options reads by what they are for.
OUTPUT_PANEL = "Output"
RULES_PANEL = "Rules and policy"
LIVE_PANEL = "Live (Cloud Logging, Vertex AI)"
WINDOW_PANEL = "Time window"

PathsArg = Annotated[
    list[str],
    typer.Argument(help="Log files, directories, globs, or - for stdin.", show_default=False),
]
RulesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--rules",
        help="Extra rule directory (also JOBDOCTOR_RULES).",
        show_default=False,
        rich_help_panel=RULES_PANEL,
    ),
]
PolicyOpt = Annotated[
    Path | None,
    typer.Option(
        "--policy",
        help="Policy profile to use instead of the built-in one.",
        rich_help_panel=RULES_PANEL,
    ),
]


ProjectOpt = Annotated[
    str | None,
    typer.Option(
        "--project",
        help="Project to read live from (with --job-id); default: CLOUDSDK_CORE_PROJECT, "
        "GOOGLE_CLOUD_PROJECT, then the active gcloud configuration's core/project.",
        show_default=False,
        rich_help_panel=LIVE_PANEL,
    ),
]
JobIdOpt = Annotated[
    str | None,
    typer.Option(
        "--job-id",
        help="The job to read live: its id, or projects/P/locations/L/customJobs/ID as gcloud "
        "prints it (which also gives the project and region).",
        rich_help_panel=LIVE_PANEL,
    ),
]
RegionOpt = Annotated[
    str | None,
    typer.Option(
        "--region",
        help="Live: the job's region, for its Vertex AI record; default: the resource name, "
        "CLOUDSDK_AI_REGION, gcloud's ai/region, then us-central1.",
        show_default=False,
        rich_help_panel=LIVE_PANEL,
    ),
]
SinceOpt = Annotated[
    str | None,
    typer.Option(
        "--since",
        help="Only the last 30m, 12h, 7d: live, the window read (default 7d); files, the jobs "
        "active in it, and a sink tree only its hours in it (read whole without it).",
        rich_help_panel=WINDOW_PANEL,
    ),
]
StartOpt = Annotated[
    str | None,
    typer.Option("--start", help="Window start (RFC 3339).", rich_help_panel=WINDOW_PANEL),
]
EndOpt = Annotated[
    str | None, typer.Option("--end", help="Window end (RFC 3339).", rich_help_panel=WINDOW_PANEL)
]
DaskOpt = Annotated[
    str | None,
    typer.Option(
        "--dask",
        help="Scan on Dask workers: 'local' (a cluster of this machine's cores) or an existing"
        " scheduler tcp://HOST:PORT; same output.",
        show_default=False,
    ),
]
EndpointOpt = Annotated[
    str | None,
    typer.Option(
        "--api-endpoint",
        help="Cloud Logging API endpoint (also JOBDOCTOR_LOGGING_ENDPOINT), e.g. an emulator.",
        rich_help_panel=LIVE_PANEL,
    ),
]
VertexEndpointOpt = Annotated[
    str | None,
    typer.Option(
        "--vertex-endpoint",
        help="Vertex AI API endpoint (also JOBDOCTOR_VERTEX_ENDPOINT), e.g. an emulator.",
        rich_help_panel=LIVE_PANEL,
    ),
]
ColorOpt = Annotated[
    ColorMode,
    typer.Option(
        "--color",
        help="Colour the terminal report: auto (not with NO_COLOR), always, never.",
        rich_help_panel=OUTPUT_PANEL,
    ),
]


def _parse_job_name(text: str) -> JobName:
    from analyzer.gcloud import parse_job_name

    return parse_job_name(text)


def _live_target(project: str | None, job_id: str | None, region: str | None) -> JobName:
    """The live job: its id, project and region, with gcloud's defaults filled in."""
    from analyzer.gcloud import JobName, default_project, default_region

    if not job_id:
        raise InputError("live reading needs both --project and --job-id")
    name = _parse_job_name(job_id)
    if project and name.project and project != name.project:
        raise InputError(
            f"--project {project} and the job's resource name (project {name.project}) disagree"
        )
    chosen = project or name.project
    if not chosen:
        found = default_project()
        if found is None:
            raise InputError(
                "live reading needs both --project and --job-id: give --project, set "
                "CLOUDSDK_CORE_PROJECT, or run `gcloud config set project PROJECT`"
            )
        chosen = found.value
    where = region or name.region or default_region().value
    return JobName(name.job_id, chosen, where)


def _live_job_record(
    live: JobName, logging_endpoint: str | None, endpoint: str | None, notices: list[str]
) -> JobSpec | None:
    """The job's record from Vertex AI, or None with a notice saying why not.

    The logs are the diagnosis; the record refines it, so a record that cannot be read is a
    notice, not an error. With Cloud Logging on an emulator, Google's real Vertex AI is not
    called unless an endpoint for it is given too (an emulator run never leaves the machine).
    """
    from urllib.parse import urlsplit

    from analyzer.jobspec import parse_job_spec
    from analyzer.live.client import ENDPOINT_ENV
    from analyzer.live.vertex import overridden, read_custom_job

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
    from analyzer.live.window import parse_window

    return parse_window(since, start, end)


BigQueryOpt = Annotated[
    str | None,
    typer.Option(
        "--bigquery",
        help="Read a BigQuery table, P.D.TABLE: a sink table, the per-job tables "
        "(ml_googleapis_com_*) or a Log Analytics view (_AllLogs); needs --since or --start.",
        show_default=False,
    ),
]
BillingOpt = Annotated[
    str | None,
    typer.Option("--billing-project", help="BigQuery: bill the queries to this project."),
]
MaxBytesOpt = Annotated[
    str, typer.Option("--max-bytes", help="BigQuery: refuse to scan more (e.g. 100GB, 1TB).")
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="BigQuery: print the bytes and price, run nothing.")
]
JobIdsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--job-id",
        help="The job to read live: its id, or projects/P/locations/L/customJobs/ID as gcloud "
        "prints it (which also gives the project and region); with --bigquery, only these "
        "jobs (repeatable).",
        rich_help_panel=LIVE_PANEL,
    ),
]


def _bigquery_source(
    table: str,
    since: str | None,
    start: str | None,
    end: str | None,
    job_ids: list[str] | None,
    billing_project: str | None,
    max_bytes: str,
) -> BigQuerySource:
    from analyzer.bigquery import bigquery_source

    # Ids as gcloud prints them (projects/P/locations/L/customJobs/ID) name their job.
    return bigquery_source(
        table,
        since=since,
        start=start,
        end=end,
        job_ids=[_parse_job_name(j).job_id for j in job_ids or ()],
        billing_project=billing_project,
        max_bytes=max_bytes,
    )


def _load_policy(path: Path | None) -> RetryPolicy:
    from analyzer.policy import load_policy

    return load_policy(path)


def _load_job_spec(path: Path | None) -> JobSpec | None:
    if path is None:
        return None
    from analyzer.jobspec import load_job_spec

    return load_job_spec(path)


def _live_query(
    project: str | None,
    job_id: str | None,
    since: str | None,
    start: str | None,
    end: str | None,
    endpoint: str | None,
) -> object:
    from analyzer.live import LiveQuery, parse_window

    if not project or not job_id:
        raise InputError("live reading needs both --project and --job-id")
    return LiveQuery(project, job_id, parse_window(since, start, end), endpoint)


@app.command()
def diagnose(
    paths: Annotated[
        list[str] | None,
        typer.Argument(help="Log files, directories, globs, or - for stdin.", show_default=False),
    ] = None,
    job: Annotated[
        str | None,
        typer.Option("--job", help="Only this job id (or projects/P/locations/L/customJobs/ID)."),
    ] = None,
    output: Annotated[
        ReportFormat,
        typer.Option(
            "--format",
            "-f",
            help="text (summary, table, details), table (the table alone), json (the "
            "contract), jsonl (one job object a line), yaml, markdown.",
            rich_help_panel=OUTPUT_PANEL,
        ),
    ] = ReportFormat.text,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet", "-q", help="Print only the verdict lines.", rich_help_panel=OUTPUT_PANEL
        ),
    ] = False,
    fail_on: Annotated[
        FailOn,
        typer.Option(
            "--fail-on",
            help="Exit 1 when a job FAILED (failed), did not succeed (not-succeeded), or was "
            "retried (retried).",
            rich_help_panel=OUTPUT_PANEL,
        ),
    ] = FailOn.never,
    rules: RulesOpt = None,
    policy: PolicyOpt = None,
    project: ProjectOpt = None,
    job_ids: JobIdsOpt = None,
    region: RegionOpt = None,
    since: SinceOpt = None,
    start: StartOpt = None,
    end: EndOpt = None,
    api_endpoint: EndpointOpt = None,
    vertex_endpoint: VertexEndpointOpt = None,
    job_record: Annotated[
        bool,
        typer.Option(
            "--job-record/--no-job-record",
            help="Live: read the job's own record from Vertex AI (customJobs.get), as --job-spec.",
            rich_help_panel=LIVE_PANEL,
        ),
    ] = True,
    bigquery: BigQueryOpt = None,
    billing_project: BillingOpt = None,
    max_bytes: MaxBytesOpt = "100GB",
    dry_run: DryRunOpt = False,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            help="Live: poll, print what changes, stop when it ends.",
            rich_help_panel=LIVE_PANEL,
        ),
    ] = False,
    lang: Annotated[
        Lang, typer.Option("--lang", help="Language of the advice.", rich_help_panel=OUTPUT_PANEL)
    ] = Lang.en,
    job_spec: Annotated[
        Path | None,
        typer.Option(
            "--job-spec",
            help="The job's 'gcloud ai custom-jobs describe' output (YAML, or --format=json): "
            "machine types, scheduling, recorded state.",
            rich_help_panel=RULES_PANEL,
        ),
    ] = None,
    color: ColorOpt = ColorMode.auto,
    dask: DaskOpt = None,
) -> None:
    """Diagnose every job in the logs: state, retries, root cause, evidence, advice.

    Reads files, gs://BUCKET/PREFIX/ sink trees, live from Cloud Logging with --job-id (and
    --project, default gcloud's), or a BigQuery table with --bigquery (a dry run first: bytes
    and price, then bounded by --max-bytes). --since/--start/--end keep the jobs active in
    that window, for files too.
    """
    # Only what reading needs: the rest (the stages after it, analyzer.analysis too) loads
    # while worker processes scan (analyzer.api).
    from analyzer.api import analyze_sources
    from analyzer.rulebook import RuleBook

    job_id = job_ids[-1] if job_ids else None
    with _reported_errors():
        if bigquery is not None and (paths or project is not None or follow):
            raise InputError("give log files, --project or --bigquery, one of them")
        wants_live = bigquery is None and (project is not None or bool(job_ids))
        if wants_live and job_ids and len(job_ids) > 1:
            raise InputError("live reading takes one --job-id")
        if paths and job_ids and bigquery is None:
            raise InputError("give log files or --job-id (live), not both")
        if paths and project is not None:
            raise InputError("--project reads live logs: give --job-id instead of log files")
        live = _live_target(project, job_id, region) if wants_live else None
        if live is not None or bigquery is not None:
            gc.enable()  # a network client's pages, not files (see main)
        if live is None and not paths and bigquery is None:
            raise InputError(
                "no input: give log files, - for stdin, --project and --job-id, or --bigquery"
            )
        if follow and live is None:
            raise InputError("--follow reads live logs: give --project and --job-id")
        if follow and end is not None:
            raise InputError("--follow runs until the job ends: drop --end")
        only = _parse_job_name(job).job_id if job is not None else None
        if (live is not None or bigquery is not None) and dask is not None:
            raise InputError("--dask scans files and gs:// trees, not live logs or BigQuery")
        book = RuleBook.load(_rules_dirs(rules))
        # A policy file of the user's is checked before reading; the built-in one is loaded
        # once the logs are read (with YAML, while worker processes scan them).
        active_policy = _load_policy(policy) if policy is not None else None
        if follow and live is not None:
            _follow(
                live.project or "",
                live.job_id,
                since,
                start,
                api_endpoint,
                book,
                active_policy or _load_policy(None),
            )
            return
        analysis: Analysis
        spec = _load_job_spec(job_spec)
        said = 0
        if bigquery is not None:
            from analyzer.bigquery import analyze_bigquery
            from analyzer.bigquery import describe_window as table_window

            wanted = [*(job_ids or []), *([job] if job else [])]
            source = _bigquery_source(
                bigquery, since, start, end, wanted, billing_project, max_bytes
            )
            _say(table_window(source))
            found = analyze_bigquery(
                source,
                rules=book,
                policy=active_policy,
                job_spec=spec,
                lang=lang.value,
                say=_say,
                dry_run=dry_run,
            )
            if found is None:
                return
            # The window (the first notice) was said before the queries ran.
            analysis, said = found, 1
        elif live is not None:
            from analyzer.live import LiveQuery, LiveSource, describe_window

            query = _live_query(live.project, live.job_id, since, start, end, api_endpoint)
            assert isinstance(query, LiveQuery)
            record_notices: list[str] = []
            if spec is None and job_record:
                spec = _live_job_record(live, api_endpoint, vertex_endpoint, record_notices)
            analysis = analyze_sources(
                [LiveSource(query)],
                rules=book,
                policy=active_policy,
                job_spec=spec,
                lang=lang.value,
            )
            analysis = replace(
                analysis,
                notices=(*analysis.notices, describe_window(query), *record_notices),
            )
        else:
            window = _file_window(since, start, end)
            unread: list[str] = []
            # Entered before opening: the bar counts stdin's bytes from its first one.
            with _reading_progress(paths or []) as progress:
                sources = _open_inputs(paths or [], unread, since, start, end)
                progress.opened(sources)
                analysis = analyze_sources(
                    sources,
                    rules=book,
                    policy=active_policy,
                    job=only,
                    job_spec=spec,
                    lang=lang.value,
                    window=window,
                    unread=unread,
                    dask=dask,
                )
        for notice in analysis.notices[said:]:
            _say(notice)
        if only is not None and not analysis.diagnoses:
            raise InputError(f"job {only} is not in the inputs; run without --job to list them")
        _write_diagnosis(analysis, output, quiet, color)
    if analysis.unread:  # said above, one line each; the rest was diagnosed (as rg does)
        raise typer.Exit(EXIT_USAGE)
    if _fails(analysis, fail_on):
        raise typer.Exit(EXIT_FAILED_JOB)


def _fails(analysis: object, fail_on: FailOn) -> bool:
    """Whether ``--fail-on`` asks for exit 1 on these diagnoses."""
    from analyzer.analysis import Analysis
    from analyzer.diagnosis import JobState

    assert isinstance(analysis, Analysis)
    jobs = analysis.diagnoses
    if fail_on is FailOn.failed:
        return any(d.state is JobState.FAILED for d in jobs)
    if fail_on is FailOn.not_succeeded:
        return any(d.state is not JobState.SUCCEEDED for d in jobs)
    if fail_on is FailOn.retried:
        return any(d.retries > 0 for d in jobs)
    return False


def _console(color: ColorMode) -> Console:
    """The console of the text reports: ``--color`` first, then ``NO_COLOR`` (rich reads it)."""
    from rich.console import Console

    class PipeAwareConsole(Console):
        def on_broken_pipe(self) -> None:
            # rich exits 1 when the reader went away; for jobdoctor that is the end of the
            # report, exit 0 (_reported_errors), as for every other format.
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
    from analyzer.analysis import Analysis
    from analyzer.report.json import render_json

    assert isinstance(analysis, Analysis)
    # Folded to the terminal's width only on a terminal: a file or a pipe keeps one fact a
    # line, whatever --color says.
    wrap = sys.stdout.isatty()
    if quiet and output in (ReportFormat.text, ReportFormat.table):
        from analyzer.report.text import render_verdicts

        render_verdicts(analysis, _console(color), wrap=wrap)
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

        render_table(analysis, _console(color), wrap=wrap)
    else:
        from analyzer.report.text import render_text

        render_text(analysis, _console(color), wrap=wrap)


def _open_batch(
    paths: Sequence[str], unread: list[str], window: Window | None = None
) -> list[Source]:
    """The sources of ``paths`` (trees cut to ``window``); an input that cannot be opened is
    named in ``unread`` and the others are read. When none can be, each is said and the run
    ends with exit 2."""
    from analyzer.ingest import open_sources

    sources = open_sources(paths, unread, window)
    if not sources:
        for problem in unread:
            _say(problem)
        raise typer.Exit(EXIT_USAGE)
    return sources


def _follow(
    project: str,
    job_id: str,
    since: str | None,
    start: str | None,
    endpoint: str | None,
    book: object,
    policy: object,
) -> None:
    from datetime import UTC, datetime

    from analyzer.api import follow_job
    from analyzer.diagnosis import Diagnosis
    from analyzer.policy import RetryPolicy
    from analyzer.rulebook import RuleBook

    assert isinstance(book, RuleBook) and isinstance(policy, RetryPolicy)
    gc.enable()  # a long run (see main)
    _say(f"following job {job_id} in project {project}; Ctrl-C to stop")

    def show(changes: list[str], diagnosis: Diagnosis) -> None:
        from analyzer.controls import visible

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
        _say("the job has ended")


@app.command()
def fetch(
    project: ProjectOpt = None,
    job_id: JobIdOpt = None,
    out: Annotated[
        Path | None, typer.Option("-o", "--out", help="The JSONL file to write.")
    ] = None,
    since: SinceOpt = None,
    start: StartOpt = None,
    end: EndOpt = None,
    api_endpoint: EndpointOpt = None,
) -> None:
    """Save a job's logs from Cloud Logging as sink-shaped JSONL, for offline and repeated use."""
    from analyzer.live import LiveQuery, describe_window, fetch_to_file

    gc.enable()  # pages of a network client, for as long as the job's logs take (see main)
    with _reported_errors():
        if out is None:
            raise InputError("fetch needs -o FILE.jsonl")
        live = _live_target(project, job_id, None)
        query = _live_query(live.project, live.job_id, since, start, end, api_endpoint)
        assert isinstance(query, LiveQuery)
        count = fetch_to_file(query, out)
        _say(f"wrote {count} entries to {out} ({describe_window(query)})")


@app.command()
def report(
    paths: Annotated[
        list[str] | None,
        typer.Argument(help="Log files, directories, globs, or - for stdin.", show_default=False),
    ] = None,
    output: Annotated[
        FleetFormat, typer.Option("--format", "-f", help="Report format.")
    ] = FleetFormat.html,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="File to write (default: stdout).", dir_okay=False),
    ] = None,
    rules: RulesOpt = None,
    policy: PolicyOpt = None,
    job_spec: Annotated[
        Path | None,
        typer.Option(
            "--job-spec",
            help="A job's 'gcloud ai custom-jobs describe' output (YAML or JSON): its "
            "accelerators give accelerator-hours.",
        ),
    ] = None,
    bigquery: BigQueryOpt = None,
    since: SinceOpt = None,
    start: StartOpt = None,
    end: EndOpt = None,
    job_ids: JobIdsOpt = None,
    billing_project: BillingOpt = None,
    max_bytes: MaxBytesOpt = "100GB",
    dry_run: DryRunOpt = False,
    dask: DaskOpt = None,
) -> None:
    """Fleet report over many jobs: causes, time lost, machine-hours, worst jobs, timelines.

    Reads files or gs://BUCKET/PREFIX/ sink trees (--since: only the hours of that window).
    HTML goes to --out (never to a terminal); markdown, csv and json may go to stdout.
    """
    from analyzer.report.cli_report import HTML_ON_TERMINAL, report_command

    with _reported_errors():
        if out is None and output is FleetFormat.html and sys.stdout.isatty():
            raise InputError(HTML_ON_TERMINAL)
        if bigquery is not None:
            from analyzer.bigquery.commands import bigquery_report

            if paths:
                raise InputError("give log files or --bigquery, not both")
            if dask is not None:
                raise InputError("--dask scans files and gs:// trees, not BigQuery")
            source = _bigquery_source(
                bigquery, since, start, end, job_ids, billing_project, max_bytes
            )
            bigquery_report(
                source, output.value, out, _rules_dirs(rules), policy, say=_say, dry_run=dry_run
            )
            if out is not None and not dry_run:
                _say(f"wrote the {output.value} report to {out}")
            return
        if not paths:
            raise InputError("no input: give log files, directories, - for stdin, or --bigquery")
        with _reading_progress(paths) as progress:
            progress.opened([])  # the report opens its inputs itself, with no spinner
            analysis = report_command(
                paths,
                output.value,
                out,
                rules_dirs=_rules_dirs(rules),
                policy_path=policy,
                job_spec_path=job_spec,
                terminal=sys.stdout.isatty(),
                since=since,
                start=start,
                end=end,
                dask=dask,
            )
        for notice in analysis.notices:
            _say(notice)
        if out is not None:
            jobs = len(analysis.diagnoses)
            _say(f"wrote the {output.value} report of {jobs} jobs to {out}")
    if analysis.unread:  # said above; the report covers the other inputs
        raise typer.Exit(EXIT_USAGE)


@app.command()
def sql(
    bigquery: BigQueryOpt = None,
    since: SinceOpt = None,
    start: StartOpt = None,
    end: EndOpt = None,
    job_ids: JobIdsOpt = None,
    dialect: Annotated[
        SqlDialect, typer.Option("--dialect", help="bigquery, or duckdb (what the tests run).")
    ] = SqlDialect.bigquery,
    billing_project: BillingOpt = None,
    rules: RulesOpt = None,
) -> None:
    """Print the queries diagnose --bigquery would run (the table's schema is read; free)."""
    with _reported_errors():
        if bigquery is None:
            raise InputError("sql prints the queries for a table: give --bigquery P.D.TABLE")
        from analyzer.bigquery import sql_text
        from analyzer.rulebook import RuleBook

        source = _bigquery_source(bigquery, since, start, end, job_ids, billing_project, "100GB")
        book = RuleBook.load(_rules_dirs(rules))
        sys.stdout.write(sql_text(source, dialect=dialect.value, rules=book))


@app.command()
def explain(
    message: Annotated[
        str | None,
        typer.Argument(help="The message, as pasted from the console; read from stdin if absent."),
    ] = None,
    output: Annotated[
        ExplainFormat, typer.Option("--format", "-f", help="Output format.")
    ] = ExplainFormat.text,
    lang: Annotated[
        Lang, typer.Option("--lang", help="Language of the explanation and advice.")
    ] = Lang.en,
    rules: RulesOpt = None,
    policy: PolicyOpt = None,
    color: ColorOpt = ColorMode.auto,
) -> None:
    """Explain one message: its category, fields, what the platform does next, what to do.

    Exits 1 when no rule knows the message.
    """
    from analyzer.explain import explain as explain_message
    from analyzer.policy import load_policy
    from analyzer.rulebook import RuleBook

    with _reported_errors():
        if message is None and sys.stdin.isatty():
            # Otherwise a user who forgot the argument sees a cursor and nothing else.
            _say("reading a message from stdin; paste it, then Ctrl-D (Ctrl-Z Enter on Windows)")
        text = message if message is not None else sys.stdin.read()
        if not text.strip():
            raise InputError("no message: pass it as an argument or on stdin")
        book = RuleBook.load(_rules_dirs(rules))
        result = explain_message(text, book, load_policy(policy), lang.value)
        if output is ExplainFormat.json:
            import json

            sys.stdout.write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
        elif _styled(color):
            _print_lines(_explanation_lines(result), _console(color))
        else:  # what rich writes off a terminal: the pieces, unstyled, never wrapped
            lines = _explanation_lines(result)
            sys.stdout.write("".join("".join(p for p, _ in line) + "\n" for line in lines))
    if not result.matched:
        raise typer.Exit(1)


# One line of an explanation: its pieces and their rich styles ("" for none).
Line = list[tuple[str, str]]


def _explanation_lines(result: object) -> list[Line]:
    """What ``jobdoctor explain`` prints, line by line, with the styles a terminal shows."""
    from analyzer.controls import visible
    from analyzer.explain import Explanation

    assert isinstance(result, Explanation)
    if result.match is None:
        return [[("No rule knows this message.", "")]]
    match = result.match
    kind = match.category.value if match.category else match.kind.value
    lines: list[Line] = [[(kind, "bold"), (f"  (rule {match.rule}, language {match.lang})", "dim")]]

    def say(line: str, style: str = "") -> None:
        # Fields and messages come from the pasted text: shown, never obeyed.
        lines.append([(visible(line), style)])

    for name, value in [*match.fields.items()] + [
        (f"also {k}", v) for m in result.also for k, v in m.fields.items()
    ]:
        say(f"  {name}: {value}")
    cause = result.cause
    if cause is not None and cause.detail:
        say(f"  detail: {cause.detail}")
    if cause is not None and cause.exit_meaning:
        say(f"  exit: {cause.exit_code}: {cause.exit_meaning}")
    if cause is not None and cause.exception is not None:
        seen = cause.exception
        where = (
            f" at {seen.frame.file}:{seen.frame.line} in {seen.frame.function}"
            if seen.frame
            else ""
        )
        say(f"  exception: {seen.type}: {seen.message}{where}")
    if result.job_id:
        say(f"  job: {result.job_id}")
    if result.next_step:
        say(f"  next: {result.next_step}")
    for advice in result.advice:
        say(f"  → {advice}", "green")
    return lines


def _print_lines(lines: Sequence[Line], console: Console) -> None:
    """``lines`` through rich: styled on a terminal, never wrapped (soft wrap)."""
    from rich.text import Text

    for line in lines:
        text = Text()
        for piece, style in line:
            text.append(piece, style=style)
        console.print(text, soft_wrap=True)


def _styled(color: ColorMode) -> bool:
    """Whether text output may carry styles, as rich decides it (``--color``, ``FORCE_COLOR``,
    ``TTY_COMPATIBLE``, a terminal): else it is written as plain text, without loading rich
    (a tenth of ``jobdoctor explain``'s start-up)."""
    if color is ColorMode.always:
        return True
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    forced = os.environ.get("FORCE_COLOR")
    if forced is not None:
        return forced != ""
    try:
        return sys.stdout.isatty()
    except ValueError:  # closed
        return False


@app.command()
def classify(
    paths: PathsArg,
    output: Annotated[RowFormat, typer.Option("--format", "-f", help="Row format.")] = (
        RowFormat.jsonl
    ),
    rules: RulesOpt = None,
    since: SinceOpt = None,
    start: StartOpt = None,
    end: EndOpt = None,
    dask: DaskOpt = None,
) -> None:
    """One row per record that matched a rule: time, job, task, category or event, fields.

    Reads files or gs://BUCKET/PREFIX/ sink trees (--since: only the hours of that window).
    """
    from analyzer.api import dask_cluster
    from analyzer.classify import classify_sources
    from analyzer.ingest.sources import damage_line
    from analyzer.report.events import write_csv, write_jsonl
    from analyzer.rulebook import RuleBook

    with _reported_errors():
        book = RuleBook.load(_rules_dirs(rules))
        unread: list[str] = []
        with _reading_progress(paths, writing=True) as progress:
            sources = _open_inputs(paths, unread, since, start, end)
            progress.opened(sources)
            for problem in unread:
                _say(problem)
            with dask_cluster(dask) as cluster:
                events = classify_sources(sources, book, cluster=cluster)
                if output is RowFormat.csv:
                    write_csv(events, sys.stdout)
                else:
                    write_jsonl(events, sys.stdout)
        for source in sources:  # read now: a cut .gz gave its rows up to the cut
            if (damage := damage_line(source.stats)) is not None:
                unread.append(damage)
                _say(damage)
    if unread:  # said above; the other inputs' rows were written
        raise typer.Exit(EXIT_USAGE)


@rules_app.command("check")
def rules_check(
    directory: Annotated[
        list[Path] | None,
        typer.Argument(help="Rule directories to check (default: the built-in rules)."),
    ] = None,
) -> None:
    """Validate rule files, run their examples, warn about risky patterns (exit 3 on errors)."""
    from analyzer.rulebook import builtin_rules_dir, check_rules

    with _reported_errors():
        dirs = list(directory or [])
        # User folders build on the built-in placeholders and may replace built-in rules.
        problems = check_rules(dirs, builtin=True)
        from analyzer.controls import visible

        for problem in problems:  # quoting the rule files' text: shown, not obeyed
            sys.stdout.write(f"{visible(str(problem))}\n")
        errors = sum(1 for p in problems if p.severity == "error")
        warnings = len(problems) - errors
        checked = ", ".join(str(d) for d in dirs) if dirs else str(builtin_rules_dir())
        _say(f"checked {checked}: {errors} errors, {warnings} warnings")
    if errors:
        raise typer.Exit(EXIT_RULES)


@app.command()
def simulate(
    scenario: Annotated[str, typer.Argument(help="Scenario name (see --list).")] = "",
    output: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="jsonl, gcloud-json, stream-logs, logs-explorer, yaml, explorer-json, "
            "explorer-csv, summary-lines, utf16, web-page.",
        ),
    ] = "jsonl",
    seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 0,
    out: Annotated[Path | None, typer.Option("-o", "--out", help="Write here, not stdout.")] = None,
    list_all: Annotated[bool, typer.Option("--list", help="List the scenarios.")] = False,
) -> None:
    """Write simulated logs of a scenario, shaped like a real export."""
    from analyzer.simulate import SCENARIOS, encoding, write
    from analyzer.simulate import simulate as run

    with _reported_errors():
        if list_all or not scenario:
            for name, definition in SCENARIOS.items():
                sys.stdout.write(f"{name:<32} {definition.description}\n")
            return
        codec = encoding(output)
        if out is None:
            if codec == "utf-8":
                write(run(scenario, seed), output, sys.stdout, seed=seed)
                return
            # Bytes in another encoding (utf16: what PowerShell writes), line ends as written.
            sys.stdout.flush()
            text = io.TextIOWrapper(sys.stdout.buffer, encoding=codec, newline="")
            write(run(scenario, seed), output, text, seed=seed)
            text.flush()
            text.detach()
            return
        try:
            with out.open("w", encoding=codec, newline="" if codec != "utf-8" else None) as handle:
                write(run(scenario, seed), output, handle, seed=seed)
        except OSError as exc:
            raise InputError(f"{out}: cannot write ({exc.strerror})") from exc


def _reflowed(doc: str) -> str:
    """``doc`` with each paragraph on one line: typer keeps the line breaks of a docstring's
    later paragraphs, so at a terminal's width they wrap raggedly ("--job-id (and" alone on a
    line); the terminal wraps a paragraph of one line evenly."""
    return "\n\n".join(" ".join(part.split()) for part in doc.split("\n\n"))


# The commands' help is their docstring, reflowed (set here, once, for the whole app).
for _info in (*app.registered_commands, *rules_app.registered_commands):
    if _info.help is None and _info.callback is not None and _info.callback.__doc__:
        _info.help = _reflowed(inspect.cleandoc(_info.callback.__doc__))


def command_app(args: Sequence[str]) -> typer.Typer:
    """The app that runs the command line ``args``: when they start with a command's name,
    an app of that command alone, else :data:`app`.

    Typer turns every command's signature into click's parameters on each run, before parsing:
    a tenth of the start-up of ``diagnose`` on a small file (measured, callgrind), of which
    the other commands are two thirds. The one-command app parses, helps and fails alike: the
    group's own options (``--version``, completion) come before a command's name, and shell
    completion (typer's ``_JOBDOCTOR_COMPLETE``) gets the whole app.
    """
    if not args or any(name.endswith("_COMPLETE") for name in os.environ):
        return app
    for info in app.registered_commands:
        callback = info.callback
        name = info.name or (callback.__name__.replace("_", "-") if callback else None)
        if name == args[0]:
            alone = typer.Typer(**_APP_SETTINGS)
            alone.registered_callback = app.registered_callback
            alone.registered_commands = [info]
            return alone
    return app


def main() -> None:
    """Entry point of the ``jobdoctor`` console script."""
    # A command runs once and leaves with os._exit (below). Start-up and the stages make
    # long-lived objects (modules, classes, the rule book, the scan's tallies) and hardly a
    # reference cycle, so the cyclic collector only walks them again and again: about 60
    # collections, 10 ms of a diagnose of a small file and 24 ms of the 200 MB fleet's parent
    # (gc.callbacks, load 3.5; 1.5% of the instructions: the walk misses the caches), freeing
    # nothing (the same peak RSS on the bench rows, 200 MB and 1 GB). What reads through a
    # network client (live logs, BigQuery, fetch, --follow, which may run for hours) collects
    # again: those libraries are not ours to vouch for.
    gc.disable()
    try:
        command_app(sys.argv[1:])()
        code: int | str | None = 0
    except SystemExit as exc:
        code = exc.code
    if isinstance(code, str):
        sys.stderr.write(code + "\n")
        code = 1
    # Leave without tearing down every object one by one (~20-50 ms after a large input):
    # nothing is left to do but flush what was written.
    try:
        sys.stdout.flush()
    except OSError as exc:
        # What was still buffered did not fit (stdout on a full disk): not a success.
        if exc.errno in _FULL:
            with suppress(OSError, ValueError):
                _say(_full_message(exc))
            code = EXIT_USAGE
    except ValueError:  # closed
        pass
    # The reader may have gone away (| head), or the stream be closed.
    with suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code or 0)


if __name__ == "__main__":
    main()
