"""``jobdoctor explain``: what one message means, what the platform does next, what to do.

Deliberately light: it imports no pandas and reads no logs, so that it answers at once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from analyzer.classify.tracebacks import parse_text
from analyzer.ingest.records import LogRecord, Origin
from analyzer.rulebook import RuleBook
from analyzer.rulebook.derived import derived_fields
from analyzer.rulebook.events import (
    LIFECYCLE_KINDS,
    OTHER_SERVICE_NOTE,
    Category,
    Event,
    EventKind,
    RuleMatch,
    other_service_text,
)
from analyzer.timeline.exitcodes import decode
from analyzer.verdict.advice import advice_for, next_step
from analyzer.verdict.diagnosis import Cause, JobState
from analyzer.verdict.fragments import PASTE_INSTEAD, SIGNAL_EXITS, fragment_book, nearest_rules
from analyzer.verdict.policy import RetryPolicy

if TYPE_CHECKING:
    from analyzer.verdict.diagnosis import Diagnosis

# Always present in the JSON "fields", null when the message does not carry them.
_STANDARD_FIELDS = ("replica", "exit_code", "region")


@dataclass(frozen=True, slots=True)
class Explanation:
    """The meaning of one message. ``match`` is None when no rule knows it."""

    message: str
    match: RuleMatch | None
    permanent: bool | None
    max_retries: int | None
    next_step: str | None
    advice: tuple[str, ...]
    also: tuple[RuleMatch, ...] = ()  # further matches (a message naming several replicas)
    cause: Cause | None = None  # what diagnose would name: exception, detail, decoded exit
    job_id: str | None = None  # from the console link or a line naming the job
    # When no rule knows the message: the rules nearest to it, and what to paste instead.
    nearest: tuple[str, ...] = ()
    paste_instead: str | None = None

    @property
    def matched(self) -> bool:
        return self.match is not None

    def to_dict(self) -> dict[str, Any]:
        """The ``explain --format json`` object."""
        if self.match is None:
            return {
                "matched": False,
                "message": self.message,
                "nearest_rules": list(self.nearest),
                "paste_instead": self.paste_instead,
            }
        fields: dict[str, Any] = dict.fromkeys(_STANDARD_FIELDS)
        fields.update(self.match.fields)
        return {
            "matched": True,
            "category": self.match.category.value if self.match.category else None,
            "event": self.match.kind.value,
            "rule": self.match.rule,
            "lang": self.match.lang,
            "fields": fields,
            "detail": self.match.detail,
            "permanent": self.permanent,
            "max_retries": self.max_retries,
            "next": self.next_step,
            "advice": list(self.advice),
            "also": [dict(m.fields) for m in self.also],
            "job_id": self.job_id,
            "cause_detail": self.cause.detail if self.cause else None,
            "exception": (
                self.cause.exception.to_dict() if self.cause and self.cause.exception else None
            ),
            "signal": self.cause.signal if self.cause else None,
            "exit_meaning": self.cause.exit_meaning if self.cause else None,
        }


def _primary(matches: tuple[RuleMatch, ...]) -> RuleMatch:
    """The match that says most: a failure before a finer detail before a lifecycle event."""
    for kind in (
        EventKind.ERROR,
        EventKind.DETAIL,
        EventKind.CREATION_REFUSED,
        EventKind.JOB_STATE,  # (the SDK's state line names its job too)
    ):
        for match in matches:
            if match.kind is kind:
                return match
    return matches[0]


def _diagnosed(message: str, book: RuleBook, policy: RetryPolicy, lang: str) -> Diagnosis | None:
    """What ``diagnose`` concludes of ``message`` pasted alone: the same stages, so that the
    traceback tail, the finer detail, the decoded exit code and the console link's job id
    are found exactly as in a log (issue 13: explain knows what diagnose knows)."""
    from analyzer.classify.joblog import JobLog
    from analyzer.timeline.attempts import build_timeline
    from analyzer.verdict.predict import diagnose_timeline

    record = LogRecord(None, None, None, "DEFAULT", message, Origin("<message>", 1))
    events = tuple(
        Event.from_record(record, match) for match in derived_fields(book.match(message))
    )
    job_id = next((str(e.match.field("job_id")) for e in events if e.match.field("job_id")), None)
    log = JobLog(job_id, events, {}, 1, None, None)
    diagnosis = diagnose_timeline(build_timeline(log), policy, lang=lang)
    return diagnosis if diagnosis.cause is not None else None


def explain(message: str, book: RuleBook, policy: RetryPolicy, lang: str = "en") -> Explanation:
    """Explain ``message`` in ``lang`` (en, ja, he; other languages fall back to English)."""
    matches = derived_fields(book.match(message))
    if not matches:
        # A fragment (exit code 137, Killed, OOMKilled): read as diagnose would read it with
        # the fragment rules (a bare exit 137 is a kill without a traceback, say).
        books = (book, fragment_book())
        book = books[1]
        matches = book.match(message)
        nearest = () if matches else nearest_rules(message, books)
    if not matches:
        return Explanation(
            message, None, None, None, None, (), nearest=nearest, paste_instead=PASTE_INSTEAD
        )
    match = _primary(matches)
    also = tuple(m for m in matches if m is not match and m.rule == match.rule)
    category = match.category
    if match.kind is EventKind.DETAIL and category is not None:
        # A finer cause: what the failure it comes with means, with the detail's advice.
        cause = _cause(message, match, category)
        exception = parse_text(message)
        cause = replace(cause, exception=exception) if exception else cause
        return _explained(message, match, also, cause, policy, lang)
    if match.kind is EventKind.ERROR and category is not None:
        diagnosis = _diagnosed(message, book, policy, lang)
        found = diagnosis.cause if diagnosis is not None else None
        return _explained(
            message,
            match,
            also,
            found or _cause(message, match, category),
            policy,
            lang,
            diagnosis.job_id if diagnosis else None,
        )
    event = match.kind.value if category is None else f"{match.kind.value}: {category.value}"
    job_id = match.field("job_id")
    if match.kind is EventKind.CREATION_REFUSED and other_service_text(message):
        # As diagnose sets it aside (timeline.other_service): no training job was refused.
        note = OTHER_SERVICE_NOTE[0].upper() + OTHER_SERVICE_NOTE[1:] + "."
        return Explanation(message, match, None, None, note, (), also)
    return Explanation(
        message,
        match,
        None,
        None,
        next_step(
            None, None, policy, lang, event if match.kind in LIFECYCLE_KINDS else match.kind.value
        ),
        (),
        also,
        job_id=str(job_id) if job_id else None,
    )


def _cause(message: str, match: RuleMatch, category: Category) -> Cause:
    exit_code = match.field("exit_code")
    # A signal's message (the shell's "Killed") stands for its exit code.
    code = exit_code if isinstance(exit_code, int) else SIGNAL_EXITS.get(match.detail or "")
    replica = match.field("replica") or match.field("pool")
    region = match.field("region")
    decoded = decode(code, _text(match.field("signal"))) if code is not None else None
    return Cause(
        category=category,
        rule=match.rule,
        lang=match.lang,
        replica=str(replica) if replica is not None else None,
        exit_code=code,
        region=str(region) if region is not None else None,
        message=message.strip(),
        evidence=(Origin("<message>", 1),),
        attempt=1,
        detail=match.detail,
        signal=decoded.signal if decoded else None,
        exit_meaning=decoded.meaning if decoded else None,
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _explained(
    message: str,
    match: RuleMatch,
    also: tuple[RuleMatch, ...],
    cause: Cause,
    policy: RetryPolicy,
    lang: str,
    job_id: str | None = None,
) -> Explanation:
    attempts = policy.attempts_allowed(cause.category, cause.exit_code)
    return Explanation(
        message=message,
        match=match,
        permanent=attempts <= 1,
        max_retries=attempts - 1,
        next_step=next_step(cause.category, cause.exit_code, policy, lang),
        advice=advice_for(cause, JobState.FAILED, policy, lang),
        also=also,
        cause=cause,
        job_id=job_id,
    )
