"""What jobdoctor concludes about a job: :class:`Diagnosis` and its parts.

``Diagnosis.to_dict()`` is the job object of the JSON contract (design.md); fields may be
added, none may change meaning.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from analyzer.events import Category
from analyzer.records import Origin
from analyzer.timeline import JobTimeline


class JobState(StrEnum):
    """The platform's ``JobState`` names."""

    UNSPECIFIED = "JOB_STATE_UNSPECIFIED"
    QUEUED = "JOB_STATE_QUEUED"
    PENDING = "JOB_STATE_PENDING"
    RUNNING = "JOB_STATE_RUNNING"
    SUCCEEDED = "JOB_STATE_SUCCEEDED"
    FAILED = "JOB_STATE_FAILED"
    CANCELLING = "JOB_STATE_CANCELLING"
    CANCELLED = "JOB_STATE_CANCELLED"
    PAUSED = "JOB_STATE_PAUSED"
    EXPIRED = "JOB_STATE_EXPIRED"
    UPDATING = "JOB_STATE_UPDATING"
    PARTIALLY_SUCCEEDED = "JOB_STATE_PARTIALLY_SUCCEEDED"


@dataclass(frozen=True, slots=True)
class Cause:
    """The root cause: the first initiating failure, with the lines that show it."""

    category: Category
    rule: str
    lang: str
    replica: str | None
    exit_code: int | None
    region: str | None
    message: str
    evidence: tuple[Origin, ...]
    attempt: int
    detail: str | None = None
    time: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "category": self.category.value,
            "rule": self.rule,
            "lang": self.lang,
            "replica": self.replica,
            "exit_code": self.exit_code,
            "region": self.region,
            "message": self.message,
            "evidence": [{"path": o.path, "line": o.line} for o in self.evidence],
            "detail": self.detail,
            "attempt": self.attempt,
            "time": _iso(self.time),
        }


@dataclass(frozen=True, slots=True)
class AttemptOutcome:
    """How one attempt ended: ``outcome`` is a category, ``succeeded``, ``failed``, ``running``."""

    attempt: int
    start: datetime | None
    end: datetime | None
    outcome: str
    restarts: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "start": _iso(self.start),
            "end": _iso(self.end),
            "outcome": self.outcome,
            "restarts": self.restarts,
        }


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """The verdict on one job."""

    job_id: str | None
    state: JobState
    observed_final: bool
    attempts: int
    retries: int
    worker_restarts: Mapping[str, int]
    cause: Cause | None
    advice: tuple[str, ...]
    attempt_log: tuple[AttemptOutcome, ...]
    timeline: JobTimeline
    notes: tuple[str, ...] = ()

    @property
    def first_seen(self) -> datetime | None:
        return self.timeline.first_seen

    @property
    def last_seen(self) -> datetime | None:
        return self.timeline.last_seen

    @property
    def duration(self) -> timedelta | None:
        if self.first_seen is None or self.last_seen is None:
            return None
        return self.last_seen - self.first_seen

    def to_dict(self) -> dict[str, Any]:
        """The job object of the ``jobdoctor.diagnosis/1`` JSON contract."""
        return {
            "job_id": self.job_id,
            "state": self.state.value,
            "observed_final": self.observed_final,
            "attempts": self.attempts,
            "retries": self.retries,
            "worker_restarts": dict(self.worker_restarts),
            "cause": self.cause.to_dict() if self.cause else None,
            "advice": list(self.advice),
            "attempt_log": [a.to_dict() for a in self.attempt_log],
            "first_seen": _iso(self.first_seen),
            "last_seen": _iso(self.last_seen),
            "notes": list(self.notes),
        }


def _iso(when: datetime | None) -> str | None:
    if when is None:
        return None
    return when.isoformat().replace("+00:00", "Z")
