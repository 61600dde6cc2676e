"""``jobdoctor explain``: what one message means, what the platform does next, what to do.

Deliberately light: it imports no pandas and reads no logs, so that it answers at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analyzer.advice import advice_for, next_step
from analyzer.diagnosis import Cause, JobState
from analyzer.events import EventKind, RuleMatch
from analyzer.policy import RetryPolicy
from analyzer.records import Origin
from analyzer.rulebook import RuleBook

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

    @property
    def matched(self) -> bool:
        return self.match is not None

    def to_dict(self) -> dict[str, Any]:
        """The ``explain --format json`` object."""
        if self.match is None:
            return {"matched": False, "message": self.message}
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
        }


def _primary(matches: tuple[RuleMatch, ...]) -> RuleMatch:
    """The match that says most: a failure before a finer detail before a lifecycle event."""
    for kind in (EventKind.ERROR, EventKind.DETAIL):
        for match in matches:
            if match.kind is kind:
                return match
    return matches[0]


def explain(message: str, book: RuleBook, policy: RetryPolicy, lang: str = "en") -> Explanation:
    """Explain ``message`` in ``lang`` (en, ja, he; other languages fall back to English)."""
    matches = book.match(message)
    if not matches:
        return Explanation(message, None, None, None, None, ())
    match = _primary(matches)
    also = tuple(m for m in matches if m is not match and m.rule == match.rule)
    category = match.category
    if category is None or match.kind is not EventKind.ERROR:
        event = match.kind.value if category is None else f"{match.kind.value}: {category.value}"
        return Explanation(
            message, match, None, None, next_step(None, None, policy, lang, event), (), also
        )
    exit_code = match.field("exit_code")
    code = exit_code if isinstance(exit_code, int) else None
    attempts = policy.attempts_allowed(category, code)
    replica = match.field("replica") or match.field("pool")
    region = match.field("region")
    cause = Cause(
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
    )
    return Explanation(
        message=message,
        match=match,
        permanent=attempts <= 1,
        max_retries=attempts - 1,
        next_step=next_step(category, code, policy, lang),
        advice=advice_for(cause, JobState.FAILED, policy, lang),
        also=also,
    )
