"""Recurring failures: every failed attempt of a fleet under one signature, grouped.

A team's first question of a fleet is "which bug costs us most?", and no tool it has groups
training-job failures that way (issue 33). A failure's signature is what stays the same when
the same bug strikes again:

- with a traceback (:class:`~analyzer.classify.tracebacks.ExceptionInfo`): the exception's
  type, its message with the parts that change from run to run put in angle brackets
  (:func:`normalise`: times, gs:// paths under a bucket, ids, hex, sizes, numbers), and the
  deepest frame in the user's code as file and function, not line (a line moves with every
  commit);
- without one: the rule that read the failure and its fields (category with its detail, exit
  code, region), which the rule book already keeps free of the variable parts.

:func:`recurring` groups a fleet's failed attempts by signature, most costly first (time lost,
then machine-hours, then attempts).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from analyzer.classify.tracebacks import ExceptionInfo, exception_from_events
from analyzer.ingest.records import Origin
from analyzer.report.facts import attempt_hours
from analyzer.report.redact import shown
from analyzer.rulebook.events import Category, EventKind
from analyzer.timeline.attempts import Attempt
from analyzer.verdict.diagnosis import Cause, Diagnosis, JobState

# The outcomes of a failed attempt: a cause category, or "failed" when no rule read why. A
# cancellation is someone's decision, not a failure that recurs.
FAILURES = frozenset(c.value for c in Category if c is not Category.CANCELLED) | {"failed"}

# The variable parts of a message, in the order they are replaced: a time before the numbers
# in it, a gs:// path before the ids in its objects' names, a UUID before its hex, a size
# before its number.
_VARIABLE: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
        ),
        "<time>",
    ),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>"),
    # The bucket says whose data it is; the objects under it change with every run.
    # (Cloud Storage FUSE mounts buckets at /gcs/BUCKET: the same objects by another name.)
    (re.compile(r"(\bgs:/|(?<![\w/])/gcs)/([a-z0-9][a-z0-9._-]*)/[^\s'\"),;\]]+"), r"\1/\2/<path>"),
    # A local path likewise: its top directory (a mount, /tmp, /data) and what is under it.
    (re.compile(r"(?<![\w:/.<>])/(?!gcs/)([\w.-]+)/[^\s'\"),;\]]+"), r"/\1/<path>"),
    (
        re.compile(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
        "<id>",
    ),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b"), "<hex>"),
    (
        re.compile(
            r"\b\d+(?:\.\d+)?\s?(?:[KMGTP]i?B|bytes|[kKMGT]B?)\b(?:\s?\(\s?[^)]*?\bbytes\))?"
        ),
        "<size>",
    ),
    (re.compile(r"(?<![A-Za-z_])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"), "<n>"),
)
_LATEST = datetime.max.replace(tzinfo=UTC)
_SPACES = re.compile(r"\s+")
_PARTIAL = re.compile(r"<[a-z]*$")
# A message is cut to this many characters: what follows is seldom what tells two bugs apart.
_MESSAGE_CHARS = 200


def normalise(message: str) -> str:
    """``message`` with its variable parts replaced: times by ``<time>``, what is under a
    bucket or a local path's top directory by ``gs://BUCKET/<path>`` and ``/DIR/<path>``,
    UUIDs by ``<id>``, hex by ``<hex>``, sizes by ``<size>``, numbers by ``<n>``; whitespace
    folded, cut to 200 characters; a secret in it cut out first (before a number of it is
    replaced, which would leave the rest unrecognisable). Idempotent."""
    text = _SPACES.sub(" ", shown(message)).strip()
    for pattern, replacement in _VARIABLE:
        text = pattern.sub(replacement, text)
    if len(text) <= _MESSAGE_CHARS:
        return text
    # Cut after the replacing (two messages apart by a number's length are cut alike), at a
    # space: never inside a placeholder or a word (which the next reading would change).
    cut = text[:_MESSAGE_CHARS]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else _PARTIAL.sub("", cut)).rstrip()


@dataclass(frozen=True, slots=True)
class Signature:
    """What stays the same when one failure recurs (see the module docstring).

    ``exception``, ``message`` (normalised) and ``frame`` (``FILE in FUNCTION``) come from a
    traceback, None without one; ``rule`` is the rule that read the failure; ``category`` is
    the cause category with its detail (``user_code_exception (cuda-oom)``).
    """

    exception: str | None
    message: str | None
    frame: str | None
    category: str
    rule: str | None
    exit_code: int | None = None
    region: str | None = None

    @property
    def text(self) -> str:
        """The signature in one line, as every report prints it."""
        if self.exception is not None:
            said = f"{self.exception}: {self.message}" if self.message else self.exception
            return f"{said} at {self.frame}" if self.frame else said
        fields = [self.category]
        if self.exit_code is not None:
            fields.append(f"exit {self.exit_code}")
        if self.region:
            fields.append(self.region)
        if self.rule is None:
            return f"{', '.join(fields)} (no message the rules know)"
        return f"{self.rule}: {', '.join(fields)}"


def _category(category: str, detail: str | None) -> str:
    return f"{category} ({detail})" if detail else category


def _from_exception(info: ExceptionInfo, category: str, rule: str | None) -> Signature:
    frame = f"{info.frame.file} in {info.frame.function}" if info.frame else None
    return Signature(info.type, normalise(info.message) or None, frame, category, rule)


def cause_signature(cause: Cause) -> Signature:
    """The signature of a job's root cause."""
    category = _category(cause.category.value, cause.detail)
    if cause.exception is not None:
        return _from_exception(cause.exception, category, cause.rule)
    return Signature(None, None, None, category, cause.rule, cause.exit_code, cause.region)


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """One failed attempt of one job, with its signature and what it cost."""

    signature: Signature
    job: str
    attempt: int
    start: datetime | None
    end: datetime | None
    time_lost: timedelta
    machine_hours: float
    evidence: Origin | None
    example: str
    ran: bool = True


def _attempt_signature(
    diagnosis: Diagnosis, number: int, outcome: str, attempt: Attempt | None
) -> tuple[Signature, Origin | None, str]:
    cause = diagnosis.cause
    if cause is not None and cause.attempt == number and cause.category.value == outcome:
        origin = cause.exception.origin if cause.exception else None
        return cause_signature(cause), origin or next(iter(cause.evidence), None), cause.message
    # Another attempt: its own first failure of that category, read from its events.
    events = attempt.events if attempt is not None else ()
    error = next(
        (
            e
            for e in events
            if e.kind is EventKind.ERROR
            and e.match.category is not None
            and e.match.category.value == outcome
        ),
        None,
    )
    if error is None:
        return Signature(None, None, None, outcome, None), None, ""
    info = exception_from_events(events) if outcome == Category.USER_CODE_EXCEPTION.value else None
    detail = error.match.detail
    category = _category(outcome, detail)
    if info is not None:
        return _from_exception(info, category, error.match.rule), info.origin, error.text
    exit_code = error.match.field("exit_code")
    region = error.match.field("region")
    signature = Signature(
        None,
        None,
        None,
        category,
        error.match.rule,
        exit_code if isinstance(exit_code, int) else None,
        str(region) if region else None,
    )
    return signature, error.origin, error.text


def failed_attempts(diagnosis: Diagnosis, job: str) -> Iterator[FailedAttempt]:
    """Every failed attempt of ``diagnosis`` the logs show (``job`` is the job's label), each
    with its signature; a job refused before any attempt ran gives its cause once."""
    attempts = {a.number: a for a in diagnosis.timeline.attempts}
    failed = [a for a in diagnosis.attempt_log if a.outcome in FAILURES]
    for outcome in failed:
        attempt = attempts.get(outcome.attempt)
        signature, origin, example = _attempt_signature(
            diagnosis, outcome.attempt, outcome.outcome, attempt
        )
        lost = (
            outcome.end - outcome.start
            if outcome.start is not None and outcome.end is not None
            else timedelta()
        )
        yield FailedAttempt(
            signature,
            job,
            outcome.attempt,
            outcome.start,
            outcome.end,
            lost,
            attempt_hours(diagnosis, outcome.attempt),
            origin,
            example,
        )
    cause = diagnosis.cause
    if not failed and cause is not None and diagnosis.state is JobState.FAILED:
        # No failed attempt in the log (the API refused the job; a paste of the error alone):
        # the job still failed of its cause, at no cost the logs show.
        yield FailedAttempt(
            cause_signature(cause),
            job,
            cause.attempt,
            cause.time,
            cause.time,
            timedelta(),
            0.0,
            next(iter(cause.evidence), None),
            cause.message,
            ran=False,
        )


@dataclass(frozen=True, slots=True)
class Recurring:
    """One signature over a fleet: its jobs and failed attempts, when, and what they cost.

    ``attempts`` counts the failed attempts the logs show (a job refused before any attempt
    ran counts none); ``evidence`` is the first attempt's line, ``example`` its message.
    """

    signature: Signature
    jobs: tuple[str, ...]
    attempts: int
    first_seen: datetime | None
    last_seen: datetime | None
    time_lost: timedelta
    machine_hours: float
    evidence: Origin | None
    example: str


def _group(signature: Signature, members: list[FailedAttempt]) -> Recurring:
    jobs = tuple(dict.fromkeys(m.job for m in members))
    starts = [t for m in members for t in (m.start, m.end) if t is not None]
    first = min(members, key=lambda m: (m.start is None, m.start or _LATEST))
    return Recurring(
        signature=signature,
        jobs=jobs,
        attempts=sum(1 for m in members if m.ran),
        first_seen=min(starts) if starts else None,
        last_seen=max(starts) if starts else None,
        time_lost=sum((m.time_lost for m in members), timedelta()),
        machine_hours=round(sum(m.machine_hours for m in members), 4),
        evidence=first.evidence,
        example=first.example,
    )


def recurring(attempts: Iterable[FailedAttempt]) -> tuple[Recurring, ...]:
    """Failed attempts grouped by signature, the most costly first: time lost, then
    machine-hours, then attempts and jobs, then the signature's text."""
    groups: dict[Signature, list[FailedAttempt]] = {}
    for attempt in attempts:
        groups.setdefault(attempt.signature, []).append(attempt)
    found = [_group(signature, members) for signature, members in groups.items()]
    return tuple(
        sorted(
            found,
            key=lambda r: (
                -r.time_lost,
                -r.machine_hours,
                -r.attempts,
                -len(r.jobs),
                r.signature.text,
            ),
        )
    )
