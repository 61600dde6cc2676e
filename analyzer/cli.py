"""The ``jobdoctor`` command line: a thin layer over the Python API.

Only this module prints or exits. Exit codes: 0 the analysis ran (whatever the jobs' fate),
1 ``--fail-on failed`` and a job failed, 2 bad usage or unreadable input (in a batch: after
the other inputs were diagnosed) or a full disk, 3 invalid rules or policy, 70 a bug in
jobdoctor (one line; ``JOBDOCTOR_DEBUG=1`` shows the traceback, its secrets redacted).
"""

from __future__ import annotations

import errno
import io
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from analyzer.errors import InputError, JobDoctorError, PolicyError, RuleError, SourceError

if TYPE_CHECKING:
    from analyzer.bigquery import BigQuerySource
    from analyzer.jobspec import JobSpec
    from analyzer.live.window import Window
    from analyzer.policy import RetryPolicy
    from analyzer.records import Source

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals may hold log content
    add_completion=False,
    help="Diagnose Vertex AI custom training jobs from their Cloud Logging logs.",
)
rules_app = typer.Typer(no_args_is_help=True, help="Work with rule files.")
app.add_typer(rules_app, name="rules")

EXIT_FAILED_JOB = 1
EXIT_USAGE = 2
EXIT_RULES = 3
EXIT_INTERNAL = 70  # a bug in jobdoctor (sysexits' EX_SOFTWARE)


class ReportFormat(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


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
    never = "never"


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


PROGRESS_MIN_BYTES = 50 << 20


@contextmanager
def _reading_progress(sources: Sequence[Source]) -> Iterator[None]:
    """A progress bar on stderr while large inputs, or any Cloud Storage tree, are read, only
    when stderr is a terminal: bytes, and for a tree the objects, done of the listed total."""
    import os

    from analyzer.ingest.gcs import GcsSource

    if not sys.stderr.isatty():
        yield
        return
    remote = sum(1 for s in sources if isinstance(s, GcsSource))
    total = 0
    for source in sources:
        if isinstance(source, GcsSource):
            total += source.size
        elif os.path.isfile(source.stats.path):
            total += os.path.getsize(source.stats.path)
    if not remote and total < PROGRESS_MIN_BYTES:
        yield
        return
    from rich.console import Console
    from rich.progress import DownloadColumn, Progress, TimeRemainingColumn

    from analyzer.classify import input_progress, reading_progress

    columns = (*Progress.get_default_columns()[:-1], DownloadColumn(), TimeRemainingColumn())
    label = f"reading 0/{remote} objects" if remote else "reading"
    read = [0]
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)

        def advance(size: int, count: int) -> None:
            bar.update(task, total=size, advance=count)

        def finished(path: str) -> None:
            if remote and path.startswith("gs://"):
                read[0] += 1
                bar.update(task, description=f"reading {read[0]}/{remote} objects")

        token = reading_progress.set(advance)
        told = input_progress.set(finished)
        try:
            yield
        finally:
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


PathsArg = Annotated[
    list[str],
    typer.Argument(help="Log files, directories, globs, or - for stdin.", show_default=False),
]
RulesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--rules", help="Extra rule directory (also JOBDOCTOR_RULES).", show_default=False
    ),
]
PolicyOpt = Annotated[
    Path | None,
    typer.Option("--policy", help="Policy profile to use instead of the built-in one."),
]


ProjectOpt = Annotated[
    str | None,
    typer.Option("--project", help="Read live from Cloud Logging in this project (with --job-id)."),
]
JobIdOpt = Annotated[
    str | None, typer.Option("--job-id", help="The job id to read live (with --project).")
]
SinceOpt = Annotated[
    str | None,
    typer.Option(
        "--since",
        help="Live window, or the hours of a sink tree to read: the last 30m, 12h, 7d"
        " (live default 7d; a tree is read whole without it).",
    ),
]
StartOpt = Annotated[
    str | None, typer.Option("--start", help="Window start (RFC 3339), live or a sink tree.")
]
EndOpt = Annotated[
    str | None, typer.Option("--end", help="Window end (RFC 3339), live or a sink tree.")
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
    ),
]


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
        help="The job id to read live (with --project); with --bigquery, only these jobs.",
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

    return bigquery_source(
        table,
        since=since,
        start=start,
        end=end,
        job_ids=job_ids or (),
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
    job: Annotated[str | None, typer.Option("--job", help="Only this job id.")] = None,
    output: Annotated[
        ReportFormat, typer.Option("--format", "-f", help="Report format.")
    ] = ReportFormat.text,
    fail_on: Annotated[
        FailOn, typer.Option("--fail-on", help="Exit 1 when a job's state is FAILED.")
    ] = FailOn.never,
    rules: RulesOpt = None,
    policy: PolicyOpt = None,
    project: ProjectOpt = None,
    job_ids: JobIdsOpt = None,
    since: SinceOpt = None,
    start: StartOpt = None,
    end: EndOpt = None,
    api_endpoint: EndpointOpt = None,
    bigquery: BigQueryOpt = None,
    billing_project: BillingOpt = None,
    max_bytes: MaxBytesOpt = "100GB",
    dry_run: DryRunOpt = False,
    follow: Annotated[
        bool, typer.Option("--follow", help="Live: poll, print what changes, stop when it ends.")
    ] = False,
    lang: Annotated[Lang, typer.Option("--lang", help="Language of the advice.")] = Lang.en,
    job_spec: Annotated[
        Path | None,
        typer.Option(
            "--job-spec",
            help="The job's 'gcloud ai custom-jobs describe' output (YAML, or --format=json): "
            "machine types, scheduling, recorded state.",
        ),
    ] = None,
    dask: DaskOpt = None,
) -> None:
    """Diagnose every job in the logs: state, retries, root cause, evidence, advice.

    Reads files, gs://BUCKET/PREFIX/ sink trees, live from Cloud Logging with --project and
    --job-id, or a BigQuery table with --bigquery (a dry run first: bytes and price, then
    bounded by --max-bytes).
    """
    # Only what reading needs: the rest loads while worker processes scan (analyzer.api).
    from analyzer.api import Analysis, analyze_sources
    from analyzer.rulebook import RuleBook

    live = project is not None or (bool(job_ids) and bigquery is None)
    job_id = job_ids[-1] if job_ids else None
    with _reported_errors():
        if bigquery is not None and (paths or project is not None or follow):
            raise InputError("give log files, --project or --bigquery, one of them")
        if live and job_ids and len(job_ids) > 1:
            raise InputError("live reading takes one --job-id")
        if live and paths:
            raise InputError("give log files or --project/--job-id, not both")
        if not live and not paths and bigquery is None:
            raise InputError(
                "no input: give log files, - for stdin, --project and --job-id, or --bigquery"
            )
        if follow and not live:
            raise InputError("--follow reads live logs: give --project and --job-id")
        if follow and end is not None:
            raise InputError("--follow runs until the job ends: drop --end")
        if (live or bigquery is not None) and dask is not None:
            raise InputError("--dask scans files and gs:// trees, not live logs or BigQuery")
        book = RuleBook.load(_rules_dirs(rules))
        # A policy file of the user's is checked before reading; the built-in one is loaded
        # once the logs are read (with YAML, while worker processes scan them).
        active_policy = _load_policy(policy) if policy is not None else None
        if follow:
            _follow(
                project or "",
                job_id or "",
                since,
                start,
                api_endpoint,
                book,
                active_policy or _load_policy(None),
            )
            return
        analysis: Analysis
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
                job_spec=_load_job_spec(job_spec),
                lang=lang.value,
                say=_say,
                dry_run=dry_run,
            )
            if found is None:
                return
            # The window (the first notice) was said before the queries ran.
            analysis, said = found, 1
        elif live:
            from analyzer.live import LiveQuery, LiveSource, describe_window

            query = _live_query(project, job_id, since, start, end, api_endpoint)
            assert isinstance(query, LiveQuery)
            spec = _load_job_spec(job_spec)
            analysis = analyze_sources(
                [LiveSource(query)],
                rules=book,
                policy=active_policy,
                job_spec=spec,
                lang=lang.value,
            )
            analysis = replace(analysis, notices=(*analysis.notices, describe_window(query)))
        else:
            spec = _load_job_spec(job_spec)
            unread: list[str] = []
            sources = _open_inputs(paths or [], unread, since, start, end)
            with _reading_progress(sources):
                analysis = analyze_sources(
                    sources,
                    rules=book,
                    policy=active_policy,
                    job=job,
                    job_spec=spec,
                    lang=lang.value,
                    unread=unread,
                    dask=dask,
                )
        for notice in analysis.notices[said:]:
            _say(notice)
        if job is not None and not analysis.diagnoses:
            raise InputError(f"job {job} is not in the inputs; run without --job to list them")
        from analyzer.diagnosis import JobState
        from analyzer.report import render_json, render_markdown

        if output is ReportFormat.json:
            sys.stdout.write(render_json(analysis))
        elif output is ReportFormat.markdown:
            sys.stdout.write(render_markdown(analysis))
        else:
            from rich.console import Console

            from analyzer.report.text import render_text

            render_text(analysis, Console(highlight=False))
    if analysis.unread:  # said above, one line each; the rest was diagnosed (as rg does)
        raise typer.Exit(EXIT_USAGE)
    if fail_on is FailOn.failed and any(d.state is JobState.FAILED for d in analysis.diagnoses):
        raise typer.Exit(EXIT_FAILED_JOB)


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

    with _reported_errors():
        if out is None:
            raise InputError("fetch needs -o FILE.jsonl")
        query = _live_query(project, job_id, since, start, end, api_endpoint)
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
    """Fleet report over many jobs: causes, retries, restarts, time lost, worst jobs, timelines.

    Reads files or gs://BUCKET/PREFIX/ sink trees (--since: only the hours of that window).
    """
    from analyzer.report.cli_report import report_command

    with _reported_errors():
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
            return
        if not paths:
            raise InputError("no input: give log files, directories, - for stdin, or --bigquery")
        analysis = report_command(
            paths,
            output.value,
            out,
            rules_dirs=_rules_dirs(rules),
            policy_path=policy,
            since=since,
            start=start,
            end=end,
            dask=dask,
        )
        for notice in analysis.notices:
            _say(notice)
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
) -> None:
    """Explain one message: its category, fields, what the platform does next, what to do.

    Exits 1 when no rule knows the message.
    """
    import json

    from analyzer.explain import explain as explain_message
    from analyzer.policy import load_policy
    from analyzer.rulebook import RuleBook

    with _reported_errors():
        text = message if message is not None else sys.stdin.read()
        if not text.strip():
            raise InputError("no message: pass it as an argument or on stdin")
        book = RuleBook.load(_rules_dirs(rules))
        result = explain_message(text, book, load_policy(policy), lang.value)
        if output is ExplainFormat.json:
            sys.stdout.write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
        else:
            _print_explanation(result)
    if not result.matched:
        raise typer.Exit(1)


def _print_explanation(result: object) -> None:
    from rich.console import Console
    from rich.text import Text

    from analyzer.controls import visible
    from analyzer.explain import Explanation

    assert isinstance(result, Explanation)
    console = Console(highlight=False)

    def say(line: str, style: str = "") -> None:
        # Fields and messages come from the pasted text: shown, never obeyed.
        console.print(Text(visible(line), style=style), soft_wrap=True)

    if result.match is None:
        console.print("No rule knows this message.", markup=False)
        return
    match = result.match
    kind = match.category.value if match.category else match.kind.value
    head = Text(kind, style="bold")
    head.append(f"  (rule {match.rule}, language {match.lang})", style="dim")
    console.print(head, soft_wrap=True)
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
    from analyzer.ingest.sources import TRUNCATED_COMPRESSED
    from analyzer.report.events import write_csv, write_jsonl
    from analyzer.rulebook import RuleBook

    with _reported_errors():
        book = RuleBook.load(_rules_dirs(rules))
        unread: list[str] = []
        sources = _open_inputs(paths, unread, since, start, end)
        for problem in unread:
            _say(problem)
        with _reading_progress(sources), dask_cluster(dask) as cluster:
            events = classify_sources(sources, book, cluster=cluster)
            if output is RowFormat.csv:
                write_csv(events, sys.stdout)
            else:
                write_jsonl(events, sys.stdout)
        for source in sources:  # read now: a cut .gz gave its rows up to the cut
            if source.stats.skip_reasons.get(TRUNCATED_COMPRESSED):
                unread.append(f"{source.stats.path}: truncated compressed data")
                _say(
                    f"{source.stats.path}: truncated compressed data, read up to the cut; the"
                    " rest of the file is lost"
                )
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
            "explorer-csv, summary-lines, utf16.",
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


def main() -> None:
    """Entry point of the ``jobdoctor`` console script."""
    try:
        app()
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
