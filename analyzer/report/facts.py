"""Small facts about a diagnosis that every report format shows the same way."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from analyzer.ingest.entries import CUT_SHORT
from analyzer.ingest.explorer_csv import CUT_ROW
from analyzer.ingest.lines import LONG_LINE
from analyzer.ingest.records import InputStats, Origin
from analyzer.report.controls import one_line
from analyzer.rulebook.events import Event, EventKind
from analyzer.verdict.diagnosis import (
    Diagnosis,
    JobState,
    cause_phrase,
    observed_word,
    plural,
    short_state,
    stall_phrase,
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
    "stall_phrase",
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


# The label of a job whose logs name no id (a stream-logs paste, a text without the job's
# resource): where its first line is, so that two such jobs of one run never share a label.
NO_ID = "(no id)"


def job_label(diagnosis: Diagnosis) -> str:
    """The job's name in every report, table and frame: its id (with its trial), or, for a
    job whose logs name none, ``(no id) PATH:LINE`` of its first line read (``--job``
    takes it as it is printed)."""
    if diagnosis.job_id is not None:
        label = diagnosis.job_id
    else:
        origin = _first_origin(diagnosis)
        label = f"{NO_ID} {origin.path}:{origin.line}" if origin is not None else NO_ID
    # A name from the input, shown on one line whatever it holds (a forged line break).
    return one_line(f"{label} trial {diagnosis.trial}" if diagnosis.trial else label)


def _first_origin(diagnosis: Diagnosis) -> Origin | None:
    origins = [e.origin for a in diagnosis.timeline.attempts for e in a.events]
    if not origins and diagnosis.cause is not None:
        # A diagnosis kept without its events (the JSON reports'): its evidence still says
        # where the job is.
        origins = list(diagnosis.cause.evidence)
    if not origins and diagnosis.recorded_error is not None:
        origins = [diagnosis.recorded_error.origin]
    return min(origins, key=lambda o: (o.path, o.line)) if origins else None


# What became of a job, as a fleet counts it: the state, with a success after a failure told
# apart from a clean one (platform.md section 2: retries and restarts can get past a failure).
_OUTCOMES: dict[JobState, str] = {
    JobState.FAILED: "failed",
    JobState.SUCCEEDED: "succeeded",
    JobState.RUNNING: "running",
    JobState.UPDATING: "running",
    JobState.PAUSED: "paused",
    JobState.CANCELLING: "cancelled",
    JobState.CANCELLED: "cancelled",
    JobState.QUEUED: "queued",
    JobState.PENDING: "queued",
    JobState.EXPIRED: "expired",
    JobState.PARTIALLY_SUCCEEDED: "partially_succeeded",
    JobState.UNSPECIFIED: "unknown",
}
OUTCOMES: tuple[str, ...] = (
    "failed",
    "recovered",
    "succeeded",
    "running",
    "paused",
    "queued",
    "cancelled",
    "expired",
    "partially_succeeded",
    "unknown",
)


def outcome(diagnosis: Diagnosis) -> str:
    """``failed`` (observed or predicted), ``recovered`` (succeeded after a failure the
    platform's restarts or retries got past), ``succeeded`` (without one), ``running``,
    ``queued``, ``cancelled``, ... (:data:`OUTCOMES`)."""
    if diagnosis.state is JobState.SUCCEEDED and diagnosis.cause is not None:
        return "recovered"
    return _OUTCOMES.get(diagnosis.state, "unknown")


def observed_attempts(diagnosis: Diagnosis) -> int:
    """The attempts the logs show; the rest of ``diagnosis.attempts`` is predicted (a
    replay of the retry policy past the input's end: :func:`predicted_attempts`)."""
    if diagnosis.observed_final:
        return diagnosis.attempts
    return min(diagnosis.attempts, len(diagnosis.attempt_log))


def predicted_attempts(diagnosis: Diagnosis) -> int:
    """Attempts beyond those the logs show that the verdict predicts (0 when observed)."""
    return diagnosis.attempts - observed_attempts(diagnosis)


def observed_retries(diagnosis: Diagnosis) -> int:
    """The retries the logs show: every attempt after the first that they show."""
    return min(diagnosis.retries, max(0, observed_attempts(diagnosis) - 1))


def predicted_retries(diagnosis: Diagnosis) -> int:
    """Retries the verdict predicts beyond those the logs show."""
    return diagnosis.retries - observed_retries(diagnosis)


def counted(observed: int, predicted: int) -> str:
    """``2`` or ``2+2?``: a count the logs show, then the part only predicted, marked."""
    return f"{observed}+{predicted}?" if predicted else str(observed)


def worker_hours(diagnosis: Diagnosis) -> list[tuple[int, str, float]]:
    """``(attempt, task, hours)`` of every worker the logs show: from its first to its last
    line in each attempt, cut at the next attempt's start (so that a VM's lines that run past
    an attempt's end are not counted twice)."""
    found: list[tuple[int, str, float]] = []
    attempts = diagnosis.timeline.attempts
    for index, attempt in enumerate(attempts):
        lower = attempt.start if index else None
        upper = attempts[index + 1].start if index + 1 < len(attempts) else None
        for worker in attempt.workers:
            first, last = worker.first_seen, worker.last_seen
            if first is None or last is None:
                continue
            if lower is not None:
                first = max(first, lower)
            if upper is not None:
                last = min(last, upper)
            hours = max(0.0, (last - first).total_seconds() / 3600)
            found.append((attempt.number, worker.task, hours))
    return found


def attempt_hours(diagnosis: Diagnosis, number: int) -> float:
    """The machine-hours of attempt ``number`` (:func:`worker_hours`)."""
    return round(sum(h for n, _, h in worker_hours(diagnosis) if n == number), 4)


def counts_phrase(diagnosis: Diagnosis) -> str:
    """``2 attempts, 1 retry`` as the logs show them, with what is only predicted beyond them
    said apart: ``2 attempts, 1 retry (2 more of each predicted)``."""
    attempts, retries = observed_attempts(diagnosis), observed_retries(diagnosis)
    more_attempts, more_retries = predicted_attempts(diagnosis), predicted_retries(diagnosis)
    text = f"{plural(attempts, 'attempt')}, {plural(retries, 'retry')}".replace("retrys", "retries")
    if more_attempts and more_attempts == more_retries:
        text += f" ({more_attempts} more of each predicted)"
    elif more_attempts or more_retries:
        text += f" ({more_attempts} more attempts, {more_retries} more retries predicted)"
    return text


def verdict_line(diagnosis: Diagnosis) -> str:
    """The one line a person reads first, as every report prints it: the job's label
    (:func:`job_label`), its state and how it was reached, the counts the logs show (and
    those predicted, apart: :func:`counts_phrase`), the cause; of a stalled job, since when
    and who (:func:`~analyzer.verdict.diagnosis.stall_phrase`) in place of how the state was
    reached and the cause, as :func:`analyzer.verdict.diagnosis.verdict_line` says it."""
    if diagnosis.stalled is not None:
        return (
            f"job {job_label(diagnosis)}: {short_state(diagnosis)},"
            f" {stall_phrase(diagnosis.stalled)}, {counts_phrase(diagnosis)}"
        )
    return (
        f"job {job_label(diagnosis)}: {short_state(diagnosis)} ({observed_word(diagnosis)}), "
        f"{counts_phrase(diagnosis)} - {cause_phrase(diagnosis)}"
    )
