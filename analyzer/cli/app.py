"""The ``jobdoctor`` command line: a thin layer over the Python API, as a typer app.

Only the CLI prints or exits (exit codes: :mod:`analyzer.cli.commands`). The console script's entry
is :func:`analyzer.cli.console.main`, which runs :func:`command_app`; what the commands do once
parsed is :mod:`analyzer.cli.commands`. A usage error is one line on stderr, as jobdoctor's own
errors are (``jobdoctor: --format: 'xml' is not one of text, json, ...``), exit 2
(:mod:`analyzer.cli.usage_errors`).
"""

from __future__ import annotations

import gc
import inspect
import io
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from analyzer.cli import commands
from analyzer.cli.commands import (
    EXIT_RULES,
    EXIT_USAGE,
    ColorMode,
    ExplainFormat,
    FailOn,
    FleetFormat,
    GroupBy,
    Lang,
    ReportFormat,
    RowFormat,
    SqlDialect,
    console,
    live_query,
    live_target,
    open_inputs,
    reported_errors,
    rules_dirs,
    say,
    showing_progress,
    table_source,
)
from analyzer.cli.usage_errors import OneLineCommand, OneLineGroup
from analyzer.core.errors import InputError

if TYPE_CHECKING:
    from rich.console import Console


_APP_SETTINGS: dict[str, Any] = {
    "cls": OneLineGroup,
    "no_args_is_help": True,
    "pretty_exceptions_show_locals": False,  # locals may hold log content
    # --install-completion / --show-completion, as typer gives them (bash, zsh, fish, pwsh).
    "add_completion": True,
    "help": "Diagnose Vertex AI custom training jobs from their Cloud Logging logs.",
}
app = typer.Typer(**_APP_SETTINGS)
rules_app = typer.Typer(cls=OneLineGroup, no_args_is_help=True, help="Work with rule files.")
app.add_typer(rules_app, name="rules")


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
    no_redact: Annotated[
        bool,
        typer.Option(
            "--no-redact",
            help="Print log text raw: tokens, keys and passwords in it are not cut out.",
        ),
    ] = False,
) -> None:
    """Diagnose Vertex AI custom training jobs from their Cloud Logging logs."""
    if no_redact:
        from analyzer.report.redact import set_redaction

        set_redaction(False)


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
            help="text (summary, table, details), table (the table alone), wide (the table "
            "with more columns), json (the contract), jsonl (one job object a line), yaml, "
            "markdown.",
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
            help="Exit 1 when a job FAILED (failed), did not succeed (not-succeeded), was "
            "retried (retried), or is stalled: RUNNING with a worker silent past its rhythm or "
            "a collective timed out (stalled).",
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
            help="Live: poll, print what changes (a worker silent past its rhythm: a stall),"
            " stop when the job ends.",
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
    group_by: Annotated[
        GroupBy | None,
        typer.Option(
            "--group-by",
            help="signature: the table grouped by recurring failure, the most costly first.",
            rich_help_panel=OUTPUT_PANEL,
        ),
    ] = None,
) -> None:
    """Diagnose every job in the logs: state, retries, root cause, evidence, advice.

    Reads files, gs://BUCKET/PREFIX/ sink trees, live from Cloud Logging with --job-id (and
    --project, default gcloud's), or a BigQuery table with --bigquery (a dry run first: bytes
    and price, then bounded by --max-bytes). --since/--start/--end keep the jobs active in
    that window, for files too.
    """
    commands.diagnose(
        commands.DiagnoseOptions(
            paths=paths or (),
            job=job,
            output=output,
            quiet=quiet,
            fail_on=fail_on,
            rules=rules,
            policy=policy,
            project=project,
            job_ids=job_ids,
            region=region,
            since=since,
            start=start,
            end=end,
            api_endpoint=api_endpoint,
            vertex_endpoint=vertex_endpoint,
            job_record=job_record,
            bigquery=bigquery,
            billing_project=billing_project,
            max_bytes=max_bytes,
            dry_run=dry_run,
            follow=follow,
            lang=lang,
            job_spec=job_spec,
            color=color,
            dask=dask,
            group_by=group_by,
        )
    )


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
    from analyzer.engines.live import LiveQuery, describe_window, fetch_to_file

    gc.enable()  # pages of a network client, for as long as the job's logs take (see main)
    with reported_errors():
        if out is None:
            raise InputError("fetch needs -o FILE.jsonl")
        live = live_target(project, job_id, None)
        query = live_query(live.project, live.job_id, since, start, end, api_endpoint)
        assert isinstance(query, LiveQuery)
        count = fetch_to_file(query, out)
        say(f"wrote {count} entries to {out} ({describe_window(query)})")


def report_format(output: FleetFormat | None, out: Path | None) -> FleetFormat:
    """The report's format: the one asked for, else HTML, but Markdown on a terminal without
    ``--out`` (a page of markup is no use there)."""
    if output is not None:
        return output
    if out is None and sys.stdout.isatty():
        say("printing the Markdown report here: the HTML one needs --out report.html")
        return FleetFormat.markdown
    return FleetFormat.html


@app.command()
def report(
    paths: Annotated[
        list[str] | None,
        typer.Argument(help="Log files, directories, globs, or - for stdin.", show_default=False),
    ] = None,
    output: Annotated[
        FleetFormat | None,
        typer.Option(
            "--format",
            "-f",
            help="Report format (default: html, or markdown on a terminal without --out).",
            show_default=False,
        ),
    ] = None,
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
    group_by: Annotated[
        GroupBy | None,
        typer.Option(
            "--group-by",
            help="signature: with --format csv, one row per recurring failure.",
        ),
    ] = None,
) -> None:
    """Fleet report over many jobs: causes, time lost, machine-hours, worst jobs, timelines.

    Reads files or gs://BUCKET/PREFIX/ sink trees (--since: only the hours of that window).
    HTML goes to --out (never to a terminal: there, without --out, the Markdown report is
    printed); markdown, csv and json may go to stdout.
    """
    from analyzer.cli.report_command import HTML_ON_TERMINAL, report_command

    with reported_errors():
        output = report_format(output, out)
        if out is None and output is FleetFormat.html and sys.stdout.isatty():
            raise InputError(HTML_ON_TERMINAL)
        if bigquery is not None:
            from analyzer.cli.bigquery_commands import bigquery_report

            if paths:
                raise InputError("give log files or --bigquery, not both")
            if dask is not None:
                raise InputError("--dask scans files and gs:// trees, not BigQuery")
            source = table_source(bigquery, since, start, end, job_ids, billing_project, max_bytes)
            bigquery_report(
                source, output.value, out, rules_dirs(rules), policy, say=say, dry_run=dry_run
            )
            if out is not None and not dry_run:
                say(f"wrote the {output.value} report to {out}")
            return
        if not paths:
            raise InputError("no input: give log files, directories, - for stdin, or --bigquery")
        with showing_progress(paths) as progress:
            progress.opened([])  # the report opens its inputs itself, with no spinner
            analysis = report_command(
                paths,
                output.value,
                out,
                rules_dirs=rules_dirs(rules),
                policy_path=policy,
                job_spec_path=job_spec,
                terminal=sys.stdout.isatty(),
                since=since,
                start=start,
                end=end,
                dask=dask,
                group_by=group_by.value if group_by is not None else None,
            )
        for notice in analysis.notices:
            say(notice)
        if out is not None:
            jobs = len(analysis.diagnoses)
            say(f"wrote the {output.value} report of {jobs} jobs to {out}")
    if analysis.unread:  # said above; the report covers the other inputs
        raise SystemExit(EXIT_USAGE)


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
    with reported_errors():
        if bigquery is None:
            raise InputError("sql prints the queries for a table: give --bigquery P.D.TABLE")
        from analyzer.engines.bigquery import sql_text
        from analyzer.rulebook import RuleBook

        source = table_source(bigquery, since, start, end, job_ids, billing_project, "100GB")
        book = RuleBook.load(rules_dirs(rules))
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
    from analyzer.rulebook import RuleBook
    from analyzer.verdict.explain import explain as explain_message
    from analyzer.verdict.policy import load_policy

    with reported_errors():
        if message is None and sys.stdin.isatty():
            # Otherwise a user who forgot the argument sees a cursor and nothing else.
            say("reading a message from stdin; paste it, then Ctrl-D (Ctrl-Z Enter on Windows)")
        text = message if message is not None else sys.stdin.read()
        if not text.strip():
            raise InputError("no message: pass it as an argument or on stdin")
        book = RuleBook.load(rules_dirs(rules))
        result = explain_message(text, book, load_policy(policy), lang.value)
        if output is ExplainFormat.json:
            import json

            sys.stdout.write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
        elif _styled(color):
            _print_lines(_explanation_lines(result), console(color), fold=sys.stdout.isatty())
        else:  # what rich writes off a terminal: the pieces, unstyled, never wrapped
            plain = ["".join(p for p, _ in line) for line in _explanation_lines(result)]
            if sys.stdout.isatty():  # a terminal without colour: folded as rich folds
                plain = _folded(plain, shutil.get_terminal_size().columns)
            sys.stdout.write("".join(line + "\n" for line in plain))
    if not result.matched:
        raise SystemExit(1)


# One line of an explanation: its pieces and their rich styles ("" for none).
Line = list[tuple[str, str]]


def _unknown_lines(nearest: Sequence[str], paste_instead: str | None) -> list[Line]:
    """What explain says of a message no rule knows: the rules whose words it shares, and what
    to paste instead."""
    lines: list[Line] = [[("No rule knows this message.", "")]]
    if nearest:
        lines.append([("nearest rules: " + ", ".join(nearest), "dim")])
    if paste_instead:
        lines.append([(paste_instead, "")])
    return lines


def _explanation_lines(result: object) -> list[Line]:
    """What ``jobdoctor explain`` prints, line by line, with the styles a terminal shows."""
    from analyzer.report.controls import visible
    from analyzer.verdict.explain import Explanation

    assert isinstance(result, Explanation)
    if result.match is None:
        return _unknown_lines(result.nearest, result.paste_instead)
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


def _print_lines(lines: Sequence[Line], console: Console, *, fold: bool = False) -> None:
    """``lines`` through rich, styled; ``fold``: at word boundaries to the terminal's width,
    each folded line under the start of its text (as ``diagnose`` folds), else never
    wrapped (soft wrap)."""
    from rich.text import Text

    for line in lines:
        text = Text()
        for piece, style in line:
            text.append(piece, style=style)
        if not fold:
            console.print(text, soft_wrap=True)
            continue
        hang = _hanging(text.plain)
        for index, part in enumerate(text.wrap(console, max(20, console.width - len(hang)))):
            console.print(Text(hang) + part if index else part, soft_wrap=True)


def _hanging(line: str) -> str:
    """The indent of a folded line's continuation: under its text (after ``→ ``)."""
    indent = len(line) - len(line.lstrip(" "))
    return " " * (indent + (2 if line.lstrip(" ").startswith("→ ") else 0))


def _folded(lines: Sequence[str], width: int) -> list[str]:
    """``lines`` folded to ``width`` columns as the table folds its cells
    (:func:`analyzer.report.table.fold`: at spaces, a long word after ``_-/.``), each
    continuation hanging under its line's text (:func:`_hanging`)."""
    from analyzer.report.table import fold

    folded: list[str] = []
    for line in lines:
        indent, hang = " " * (len(line) - len(line.lstrip(" "))), _hanging(line)
        parts = fold(line.strip(), max(20, width) - len(hang))
        folded += [indent + parts[0], *(hang + part for part in parts[1:])]
    return folded


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
    from analyzer.classify.collector import classify_sources
    from analyzer.ingest.sources import damage_line
    from analyzer.report.events import write_csv, write_jsonl
    from analyzer.rulebook import RuleBook

    with reported_errors():
        book = RuleBook.load(rules_dirs(rules))
        unread: list[str] = []
        with showing_progress(paths, writing=True) as progress:
            sources = open_inputs(paths, unread, since, start, end)
            progress.opened(sources)
            for problem in unread:
                say(problem)
            with dask_cluster(dask) as cluster:
                events = classify_sources(sources, book, cluster=cluster)
                if output is RowFormat.csv:
                    write_csv(events, sys.stdout)
                else:
                    write_jsonl(events, sys.stdout)
        for source in sources:  # read now: a cut .gz gave its rows up to the cut
            if (damage := damage_line(source.stats)) is not None:
                unread.append(damage)
                say(damage)
    if unread:  # said above; the other inputs' rows were written
        raise SystemExit(EXIT_USAGE)


@rules_app.command("check")
def rules_check(
    directory: Annotated[
        list[Path] | None,
        typer.Argument(help="Rule directories to check (default: the built-in rules)."),
    ] = None,
) -> None:
    """Validate rule files, run their examples, warn about risky patterns (exit 3 on errors)."""
    from analyzer.rulebook import builtin_rules_dir, check_rules

    with reported_errors():
        dirs = list(directory or [])
        # User folders build on the built-in placeholders and may replace built-in rules.
        problems = check_rules(dirs, builtin=True)
        from analyzer.report.controls import visible

        for problem in problems:  # quoting the rule files' text: shown, not obeyed
            sys.stdout.write(f"{visible(str(problem))}\n")
        errors = sum(1 for p in problems if p.severity == "error")
        warnings = len(problems) - errors
        checked = ", ".join(str(d) for d in dirs) if dirs else str(builtin_rules_dir())
        say(f"checked {checked}: {errors} errors, {warnings} warnings")
    if errors:
        raise SystemExit(EXIT_RULES)


@app.command()
def simulate(
    scenario: Annotated[str, typer.Argument(help="Scenario name (see --list).")] = "",
    output: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="jsonl, gcloud-json, stream-logs, logs-explorer, yaml, explorer-json, "
            "explorer-csv, summary-lines, utf16, web-page, api-response.",
        ),
    ] = "jsonl",
    seed: Annotated[int, typer.Option("--seed", help="Random seed.")] = 0,
    out: Annotated[Path | None, typer.Option("-o", "--out", help="Write here, not stdout.")] = None,
    list_all: Annotated[bool, typer.Option("--list", help="List the scenarios.")] = False,
) -> None:
    """Write simulated logs of a scenario, shaped like a real export."""
    from analyzer.simulate import SCENARIOS, encoding, write
    from analyzer.simulate import simulate as run

    with reported_errors():
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


# The commands' help is their docstring, reflowed, and their usage errors one line (set here,
# once, for the whole app).
for _info in (*app.registered_commands, *rules_app.registered_commands):
    _info.cls = OneLineCommand
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


if __name__ == "__main__":
    command_app(sys.argv[1:])()
