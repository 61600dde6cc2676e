"""Small facts about a diagnosis that every report format shows the same way."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from analyzer.ingest.entries import CUT_SHORT
from analyzer.ingest.explorer_csv import CUT_ROW
from analyzer.ingest.lines import LONG_LINE
from analyzer.ingest.records import InputStats, Origin
from analyzer.rulebook.events import Event, EventKind
from analyzer.verdict.diagnosis import (
    Diagnosis,
    cause_phrase,
    observed_word,
    plural,
    short_state,
    verdict_line,
)

__all__ = [
    "cause_phrase",
    "clock",
    "cut_line",
    "depth_facts",
    "evidence_events",
    "first_line",
    "jobs_list_line",
    "no_entry_line",
    "observed_word",
    "period",
    "plural",
    "short_state",
    "skip_line",
    "span",
    "verdict_line",
]


def skip_line(stats: InputStats, reason: str, count: int) -> str:
    """What ``count`` lines of ``stats`` skipped for ``reason`` were, in one line: a last line
    cut short is named by its number (a paste or a copy that stopped early, not damage)."""
    if reason == CUT_SHORT and stats.cut_line is not None and count == 1:
        return f"line {stats.cut_line:,}, the last, is {reason}"
    if reason == CUT_ROW and stats.cut_line is not None:
        lines = "line" if count == 1 else f"{count} lines to line"
        return f"{lines} {stats.cut_line:,}, the last, {'is' if count == 1 else 'are'} {reason}"
    if reason == LONG_LINE and len(stats.long_lines) == count:
        # Which lines: a dump pasted in, a minified blob, to look at or cut out.
        numbers = ", ".join(f"{number:,}" for number in stats.long_lines[:_NAMED_LINES])
        more = ", ..." if count > _NAMED_LINES else ""
        what = reason.removeprefix("line ")
        if count == 1:
            return f"line {numbers} is {what}, skipped unread"
        return f"{count} lines ({numbers}{more}) are {what}, skipped unread"
    return f"{count} skipped: {reason}"


# How many long lines a skip line names.
_NAMED_LINES = 5


def cut_line(stats: InputStats) -> str | None:
    """The line that says a JSON array input ends before its closing ``]`` (None when it does
    not): the entries read are whole, but what followed them is not in the input."""
    if stats.cut_line is None or CUT_SHORT in stats.skip_reasons or CUT_ROW in stats.skip_reasons:
        return None  # a line or a row cut short says it in its skip line
    if stats.format == "logging-api-response":
        return (
            f"line {stats.cut_line:,}, the last, ends inside a Logging API response (its"
            " entries or its braces not closed): the input was cut short, entries after it"
            " are not in it"
        )
    return (
        f"line {stats.cut_line:,}, the last, ends inside the JSON array (no closing ]): the"
        " input was cut short, entries after it are not in it"
    )


def no_entry_line(stats: InputStats) -> str | None:
    """The line that says an input holds no log entry at all (None when it holds one, even of
    another resource): an empty file, blank lines, ``[]``, the Logging API's ``{}``. Read like
    any input (exit 0); this says what an export of a filter that matched nothing looks like."""
    if stats.records or set(stats.skip_reasons) - {"blank line"}:
        return None
    if stats.more_pages:
        # entries:list answers an empty page with a token when searching took long.
        return "holds no log entry: the Logging API stopped searching before it found any"
    return (
        "holds no log entry (what an export or request whose filter matched nothing holds:"
        " check its job id, resource.type and time window)"
    )


def jobs_list_line(stats: InputStats) -> str | None:
    """The line that says an input is a list of jobs (None when it is not): it shows each
    job's state, not what happened to it, so no cause can be read from it."""
    if stats.format != "gcloud-jobs-list":
        return None
    return (
        "a list of jobs shows each job's state, not its cause: diagnose a job's own logs"
        " (gcloud ai custom-jobs stream-logs ID, or jobdoctor fetch) to see why it failed"
    )


def more_pages_line(stats: InputStats) -> str | None:
    """The line that says the input's last Logging API response has a nextPageToken (None
    when it has none): the request matched more entries than the input holds."""
    if not stats.more_pages:
        return None
    return (
        "its last Logging API response has a nextPageToken: the request matched more entries,"
        " and the pages after it are not in the input (request them with that pageToken)"
    )


def clock(when: datetime | None) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S") if when else "-"


def period(start: datetime | None, end: datetime | None) -> str:
    """``2024-04-04 00:20:35 → 00:33:46``: the end's date only when it differs."""
    if start is not None and end is not None and start.date() == end.date():
        return f"{clock(start)} → {end.strftime('%H:%M:%S')}"
    return f"{clock(start)} → {clock(end)}"


def span(delta: timedelta | None) -> str:
    """``1h02m03s`` style durations."""
    if delta is None:
        return "-"
    seconds = int(delta.total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def evidence_events(diagnosis: Diagnosis) -> list[tuple[Origin, Event | None]]:
    """The cause's evidence lines (or the job's recorded error's, when no category fits it)
    with the events they came from (when known).

    The decisive message first, then the lines that back it in the order they happened, so the
    story reads top to bottom.
    """
    if diagnosis.cause is None and diagnosis.recorded_error is None:
        return []
    by_origin = {
        event.origin: event for attempt in diagnosis.timeline.attempts for event in attempt.events
    }
    if diagnosis.cause is None:
        assert diagnosis.recorded_error is not None
        origin = diagnosis.recorded_error.origin
        return [(origin, by_origin.get(origin))]
    first, *rest = [(origin, by_origin.get(origin)) for origin in diagnosis.cause.evidence]

    def when(item: tuple[Origin, Event | None]) -> tuple[bool, datetime]:
        event = item[1]
        moment = event.timestamp if event is not None else None
        return (moment is None, moment or datetime.min.replace(tzinfo=UTC))

    return [first, *sorted(rest, key=when)]


def first_line(text: str, limit: int = 160) -> str:
    line = " ".join(text.strip().splitlines()[0].split()) if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def depth_facts(diagnosis: Diagnosis) -> list[tuple[str, str]]:
    """Labelled facts of the root cause in depth: exception, exit code, cascade, lost work,
    the job's record."""
    facts: list[tuple[str, str]] = []
    cause = diagnosis.cause
    if cause is not None and cause.exception is not None:
        exc = cause.exception
        where = (
            f" at {exc.frame.file}:{exc.frame.line} in {exc.frame.function}" if exc.frame else ""
        )
        facts.append(("exception", f"{exc.type}: {exc.message}{where}"))
    if cause is not None and cause.exit_meaning is not None:
        transient = ", transient: the job is retried" if cause.transient else ""
        facts.append(("exit", f"{cause.exit_code}: {cause.exit_meaning}{transient}"))
    if cause is not None:
        for other in cause.cascade:
            facts.append(
                ("cascade", f"{other.replica} then failed ({other.detail}): {other.message}")
            )
    if diagnosis.lost_work is not None and diagnosis.lost_work.total_seconds() > 0:
        saved = any(
            e.kind is EventKind.CHECKPOINT for a in diagnosis.timeline.attempts for e in a.events
        )
        since = "since the last checkpoints" if saved else "no checkpoint was logged"
        facts.append(("lost work", f"{span(diagnosis.lost_work)} ({since})"))
    if diagnosis.job_spec is not None:
        spec = diagnosis.job_spec
        verdict = "agrees" if spec.agrees else "DISAGREES"
        facts.append(("job spec", f"{spec.state}, error code {spec.error_code}: {verdict}"))
    return facts
