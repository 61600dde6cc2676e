"""What jobdoctor concludes about a job: :class:`Diagnosis` and its parts.

``Diagnosis.to_dict()`` is the job object of the JSON contract (design.md); fields may be
added, none may change meaning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from analyzer.classify.tracebacks import ExceptionInfo
from analyzer.ingest.records import Origin
from analyzer.rulebook.events import Category
from analyzer.timeline.attempts import JobTimeline
from analyzer.verdict.findings import Findings
from analyzer.verdict.hangs import clock, collective_words, duration_words
from analyzer.verdict.stall import Stall, StallKind


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
class CascadeFailure:
    """A later failure the root cause brought about (an NCCL timeout on another replica)."""

    replica: str | None
    detail: str | None
    exit_code: int | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "replica": self.replica,
            "detail": self.detail,
            "exit_code": self.exit_code,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class Cause:
    """The root cause: the first initiating failure, with the lines that show it.

    ``detail`` names a finer cause (a detail rule's name, or one jobdoctor derives such as
    ``killed-no-traceback``); ``exception`` is the Python exception that ended the failing
    process; ``signal``, ``exit_meaning`` and ``transient`` decode ``exit_code``;
    ``cascade`` lists the failures on other replicas that followed from this one.
    """

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
    exception: ExceptionInfo | None = None
    signal: str | None = None
    exit_meaning: str | None = None
    transient: bool | None = None
    cascade: tuple[CascadeFailure, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "category": self.category.value,
            "rule": self.rule,
            "lang": self.lang,
            "replica": self.replica,
            "exit_code": self.exit_code,
            "region": self.region,
            "message": self.message,
            "evidence": [o.to_dict() for o in self.evidence],
            "detail": self.detail,
            "attempt": self.attempt,
            "time": _iso(self.time),
            "exception": self.exception.to_dict() if self.exception else None,
            "signal": self.signal,
            "exit_meaning": self.exit_meaning,
            "transient": self.transient,
            "cascade": [c.to_dict() for c in self.cascade],
        }


@dataclass(frozen=True, slots=True)
class AttemptOutcome:
    """How one attempt ended: ``outcome`` is a category, ``succeeded``, ``failed``, ``running``."""

    attempt: int
    start: datetime | None
    end: datetime | None
    outcome: str
    restarts: int
    lost_work: timedelta | None = None
    startup_skew: timedelta | None = None
    startup_race: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "start": _iso(self.start),
            "end": _iso(self.end),
            "outcome": self.outcome,
            "restarts": self.restarts,
            "lost_work_seconds": _seconds(self.lost_work),
            "startup_skew_seconds": _seconds(self.startup_skew),
            "startup_race": self.startup_race,
        }


@dataclass(frozen=True, slots=True)
class RecordedError:
    """The job object's own error as a tool printed it (a describe's ``error.message``),
    when no category of the contract fits it (a disk shortage): quoted, with its line, in
    place of a cause. ``rule`` is the rule that read it, ``pool`` the pool it names."""

    message: str
    origin: Origin
    rule: str
    pool: str | None = None


@dataclass(frozen=True, slots=True)
class SpecCheck:
    """The job's recorded state and error code (from ``--job-spec``) against the prediction."""

    state: str | None
    error_code: int | None
    agrees: bool

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "error_code": self.error_code, "agrees": self.agrees}


@dataclass(frozen=True, slots=True, repr=False)
class Diagnosis:
    """The verdict on one job.

    ``str()`` is the one-line verdict; ``repr()`` a short summary (the generated one would
    print the whole timeline); in Jupyter, the card with its timeline chart.
    """

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
    lost_work: timedelta | None = None
    job_spec: SpecCheck | None = None
    # Not in to_dict(): the JSON carries it in notes and advice (cause stays null: no
    # category fits).
    recorded_error: RecordedError | None = None
    # Where the state was read: "record", "service", "sdk", "runner", or "predicted" (replayed
    # forward); None when the state is unknown (issue 27, point 5).
    state_source: str | None = None
    # The facts the advice was chosen from (analyzer.verdict.findings); not in to_dict().
    findings: Findings | None = None
    # A hang: RUNNING with a worker silent past its rhythm or a collective timed out (issue
    # 30, analyzer.verdict.stall); None when not stalled.
    stalled: Stall | None = None

    @property
    def trial(self) -> str | None:
        """The hyperparameter-tuning trial this diagnosis is about, if any."""
        return self.timeline.trial

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

    def __str__(self) -> str:
        return verdict_line(self)

    def __repr__(self) -> str:
        job = self.job_id or "(unknown job id)"
        if self.trial:
            job += f" trial {self.trial}"
        how = "observed" if self.observed_final else "predicted"
        cause = self.cause.category.value if self.cause else "no failure"
        text = (
            f"<Diagnosis job {job}: {self.state.value.removeprefix('JOB_STATE_')} ({how}),"
            f" {self.attempts} attempt{'s' if self.attempts != 1 else ''}, {cause}>"
        )
        # Job ids are short, but a legacy job's name is the user's: keep the repr short.
        return text if len(text) < 200 else text[:190] + "…>"

    def _repr_html_(self) -> str | None:
        """Jupyter's display: verdict, cause, attempts and the per-worker timeline chart (None,
        the plain repr, until a renderer is set: :func:`show_html_with`)."""
        return _HTML_RENDERER[0](self) if _HTML_RENDERER else None

    def to_dict(self) -> dict[str, Any]:
        """The job object of the ``jobdoctor.diagnosis/1`` JSON contract."""
        return {
            "job_id": self.job_id,
            "trial": self.trial,
            "state": self.state.value,
            "observed_final": self.observed_final,
            "state_source": self.state_source,
            "attempts": self.attempts,
            "retries": self.retries,
            "worker_restarts": dict(self.worker_restarts),
            "cause": self.cause.to_dict() if self.cause else None,
            "advice": list(self.advice),
            "attempt_log": [a.to_dict() for a in self.attempt_log],
            "first_seen": _iso(self.first_seen),
            "last_seen": _iso(self.last_seen),
            "notes": list(self.notes),
            "lost_work_seconds": _seconds(self.lost_work),
            "job_spec": self.job_spec.to_dict() if self.job_spec else None,
            "stalled": self.stalled.to_dict() if self.stalled else None,
        }


def _seconds(delta: timedelta | None) -> float | None:
    return None if delta is None else round(delta.total_seconds(), 3)


def _iso(when: datetime | None) -> str | None:
    if when is None:
        return None
    return when.isoformat().replace("+00:00", "Z")


# Small facts about a diagnosis that every report format (analyzer.report) and the plain
# REPL display show the same way.


def short_state(diagnosis: Diagnosis) -> str:
    """``FAILED`` for ``JOB_STATE_FAILED``."""
    return diagnosis.state.value.removeprefix("JOB_STATE_")


def observed_word(diagnosis: Diagnosis) -> str:
    """How the state was reached: read from the input, predicted, or unknown (no evidence)."""
    if diagnosis.state is JobState.UNSPECIFIED and not diagnosis.observed_final:
        return "unknown: not in the input"
    if diagnosis.state is JobState.UNSPECIFIED and diagnosis.attempts == 0:
        return "never created: the API refused it"
    if diagnosis.observed_final:
        return "observed"
    # A state replayed from a single entry (one exit line, one message) is a guess resting
    # on that entry alone: the verdict says so.
    lines = {e.origin for a in diagnosis.timeline.attempts for e in a.events}
    # (An attempt seen in its workers' lines alone rests on those too.)
    one = len(lines) == 1 and diagnosis.timeline.resumed is None
    return "predicted from one log entry" if one else "predicted"


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def cause_phrase(diagnosis: Diagnosis) -> str:
    """One phrase naming the cause: category, replica, exit code or region; of a stalled job,
    since when and who (:func:`stall_phrase`)."""
    if diagnosis.stalled is not None:
        return stall_phrase(diagnosis.stalled)
    cause = diagnosis.cause
    if cause is None:
        # "No failure" only of a job that succeeded: of any other, what the input lacks (a
        # paste cut before the failure would otherwise read as a clean run).
        if diagnosis.state is JobState.SUCCEEDED:
            return "no failure"
        if diagnosis.state is JobState.FAILED and diagnosis.recorded_error is not None:
            # Its first sentence says what ran out ("Replicas low on disk: workerpool0").
            first = diagnosis.recorded_error.message.split(". ")[0]
            return f"the job's error: {_clipped(first)}"
        if diagnosis.state is JobState.FAILED:
            return "no failure message the rules know"
        return "no failure message"
    parts = [cause.category.value]
    if cause.detail:
        parts[0] += f" ({cause.detail})"
    if cause.replica:
        parts.append(cause.replica)
    if cause.exit_code is not None:
        parts.append(f"exit {cause.exit_code}")
    if cause.region:
        parts.append(cause.region)
    if diagnosis.state is JobState.SUCCEEDED:
        # A failure the platform's restarts or retries got past: the job's end is a success,
        # and a bare category beside SUCCEEDED reads as the reason it failed.
        return "recovered from " + ", ".join(parts)
    return ", ".join(parts)


def _clipped(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def stall_phrase(stall: Stall) -> str:
    """``stalled since 14:02 (workerpool1-3 silent 47 min; the others wait in an all-reduce)``."""
    return f"stalled since {clock(stall.since, stall.input_end)} ({_who(stall)})"


def _who(stall: Stall) -> str:
    """Who is silent, and what the others do."""
    silent = [w.replica for w in stall.workers]
    longest = max((w.silent_for for w in stall.workers), default=None)
    if stall.kind is StallKind.ALL_SILENT:
        return f"every worker silent for {duration_words(stall.input_end - stall.since)}" + (
            " when the input ends"
        )
    named = ", ".join(silent[:3]) + (f" and {len(silent) - 3} more" if len(silent) > 3 else "")
    parts = [f"{named} silent {duration_words(longest)}"] if longest is not None else []
    if stall.kind is StallKind.COLLECTIVE_TIMEOUT:
        waiting = "the others wait in" if stall.waiting else "the workers wait in"
        parts.append(f"{waiting} {collective_words(stall.collective)} that timed out")
    elif stall.waiting:
        waiting = "the others" if len(stall.waiting) > 1 else stall.waiting[0]
        verb = "wait" if len(stall.waiting) > 1 else "waits"
        parts.append(
            f"{waiting} {verb} in {collective_words(stall.collective)}"
            if stall.collective
            else f"{waiting} still {'write' if len(stall.waiting) > 1 else 'writes'}"
        )
    return "; ".join(parts)


def verdict_line(diagnosis: Diagnosis) -> str:
    """The one line a person reads first: of a stalled job, ``RUNNING, stalled since 14:02
    (...)`` in place of how the state was reached and the cause."""
    job = diagnosis.job_id or "(unknown job id)"
    if diagnosis.trial:
        job += f" trial {diagnosis.trial}"
    if diagnosis.stalled is not None:
        return (
            f"job {job}: {short_state(diagnosis)}, {stall_phrase(diagnosis.stalled)}, "
            f"{plural(diagnosis.attempts, 'attempt')}, {plural(diagnosis.retries, 'retry')}"
        ).replace("retrys", "retries")
    return (
        f"job {job}: {short_state(diagnosis)} ({observed_word(diagnosis)}), "
        f"{plural(diagnosis.attempts, 'attempt')}, {plural(diagnosis.retries, 'retry')}"
        f" - {cause_phrase(diagnosis)}"
    ).replace("retrys", "retries")


# The HTML of a diagnosis is the report stage's: it is set from above (the pipeline, which
# hands diagnoses out) so that this verdict type imports no renderer.
_HTML_RENDERER: list[Callable[[Diagnosis], str]] = []


def show_html_with(renderer: Callable[[Diagnosis], str]) -> None:
    """Make ``renderer`` the notebook display of every :class:`Diagnosis`."""
    _HTML_RENDERER[:] = [renderer]
