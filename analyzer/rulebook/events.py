"""What rules recognise in records: categories, event kinds, matches and events.

A rule either names an error :class:`Category` (the failures the platform's
policy reacts to) or a lifecycle :class:`EventKind` (attempt started, worker
started, job failed, ...). A :class:`RuleMatch` is one rule matching one text;
an :class:`Event` is a match placed in time, in a job, on a worker.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from analyzer.ingest.records import LogRecord, Origin

# How far the later stages read around an event, written once: the reading stage thins
# repeated events only where none of these can see (analyzer.classify.eventstore).
# rootcause: without a traceback, detail lines this shortly before a death still count as
# its evidence;
DETAIL_WINDOW = timedelta(minutes=2)
# rootcause: the dying process's own lines are read up to this long after its death;
AFTER_DEATH = timedelta(seconds=1)
# predict (from work.py's measures): a stretch of training without a checkpoint longer than
# this is reported (platform.md section 2: checkpoint at least every 4 hours in jobs longer
# than 4 hours).
CHECKPOINT_INTERVAL = timedelta(hours=4)


class Category(StrEnum):
    """Root-cause categories of the JSON contract (``cause.category``)."""

    USER_CODE_EXCEPTION = "user_code_exception"
    OOM = "oom"
    STOCKOUT = "stockout"
    INTERNAL_ERROR = "internal_error"
    QUOTA = "quota"
    WORKER_RESTARTS_EXHAUSTED = "worker_restarts_exhausted"
    CANCELLED = "cancelled"


class EventKind(StrEnum):
    """What a matched record means for the job's lifecycle."""

    ERROR = "error"  # a failure message; the match carries its Category
    JOB_QUEUED = "job_queued"  # legacy "Job <id> is queued." / quota wait
    ATTEMPT_STARTED = "attempt_started"  # "Waiting for job to be provisioned."
    JOB_PROVISIONING = "job_provisioning"  # provisioning / setting up / waiting for program
    JOB_PREPARING = "job_preparing"  # "Job is preparing."
    JOB_RUNNING = "job_running"  # "Job is running."
    WORKER_STARTED = "worker_started"  # runner start lines on a worker
    WORKER_EXITED = "worker_exited"  # runner "Task completed. Exit code (N)..."
    TEARDOWN = "teardown"  # "Tearing down training program." / "Finished tearing down..."
    JOB_FAILED = "job_failed"  # "Job failed." (end of EVERY failed attempt)
    JOB_SUCCEEDED = "job_succeeded"  # "Job completed successfully." / legacy equivalents
    RETRIES_EXHAUSTED = "retries_exhausted"  # "Job will not be retried, max error retry..."
    JOB_CANCELLED = "job_cancelled"  # cancellation messages
    JOB_STATE = "job_state"  # the job object's state as the SDK prints it (JobState.JOB_STATE_X)
    JOB_ERROR = "job_error"  # the job object's error code as the SDK prints it ("code: 3")
    CREATION_REFUSED = "creation_refused"  # the API refused to create the job (HTTP 429, ...)
    JOB_NAMED = "job_named"  # a line naming the job (console link, customJobs/ID, jobId: ...)
    CHECKPOINT = "checkpoint"  # the user's code saved a checkpoint
    PROGRESS = "progress"  # the user's code reported training progress
    DETAIL = "detail"  # a finer cause (CUDA OOM, NCCL timeout, ...): evidence, not a verdict
    TRACEBACK = "traceback"  # "Traceback (most recent call last):" starts a Python traceback
    FRAME = "frame"  # '  File "...", line N, in fn' inside a traceback
    EXCEPTION = "exception"  # the "SomeError: message" line that ends a traceback
    # A service-only message found in a container's own output (a launcher printing a child
    # job's failure, an echoed stream-logs): evidence of that worker, never the job's fate
    # (platform.md section 9, provenance).
    ECHO = "echo"


# Vertex AI's other services answer 429 too: a generative model's per-minute request quota
# ("generate_content_requests_per_minute_per_project_per_base_model ... base model:
# gemini-pro"), an endpoint's traffic ("Rate of traffic exceeds capacity ... endpoint_id").
# Those refuse a request, not a training job's creation (tests/real/gh-Open_Data_QnA-61-V,
# gh-vertex-ai-samples-996-V, gh-langchain-google-355-V).
_OTHER_SERVICE = re.compile(
    r"generate_content|online_prediction|_requests_per_minute|\bbase model\b"
    r"|rate of traffic exceeds capacity|\bendpoint_id\b|\bdeployed_model_id\b",
    re.IGNORECASE,
)
OTHER_SERVICE_NOTE = (
    "the API error here refuses a request to another Vertex AI service (a generative model's"
    " request quota, an endpoint's traffic), not a training job's creation"
)


def other_service_text(text: str) -> bool:
    """Whether an API refusal's ``text`` is of a request to another Vertex AI service (a
    generative model's, an endpoint's), not of a training job's creation."""
    return _OTHER_SERVICE.search(text) is not None


# The kinds whose messages mark a step of the job's life (platform.md section 4): the service's
# lifecycle lines and the runner's start and exit lines. Other kinds are failures (ERROR), what
# tools say of the job (its recorded state, a refusal, a line naming it) or the program's own
# output (tracebacks, details, checkpoints) and its echoes.
LIFECYCLE_KINDS = frozenset(
    {
        EventKind.JOB_QUEUED,
        EventKind.ATTEMPT_STARTED,
        EventKind.JOB_PROVISIONING,
        EventKind.JOB_PREPARING,
        EventKind.JOB_RUNNING,
        EventKind.WORKER_STARTED,
        EventKind.WORKER_EXITED,
        EventKind.TEARDOWN,
        EventKind.JOB_FAILED,
        EventKind.JOB_SUCCEEDED,
        EventKind.RETRIES_EXHAUSTED,
        EventKind.JOB_CANCELLED,
    }
)
# The runner's lines on a worker, among them.
WORKER_KINDS = frozenset({EventKind.WORKER_STARTED, EventKind.WORKER_EXITED})


class Writer(StrEnum):
    """Who writes a rule's message (a rule's ``written_by``): the training service only,
    or anyone (worker runners, the user's code). A ``service`` message counts as the job's own
    only when its record's task is ``service`` or unknown (a text without a task column)."""

    SERVICE = "service"
    ANY = "any"


@dataclass(frozen=True, slots=True)
class RuleMatch:
    """One rule matching one text.

    ``fields`` holds the extracted values by placeholder name in lower case
    (``replica``, ``pool``, ``exit_code`` as int, ``reason``, ``region``, ...).
    ``category`` is set for ``EventKind.ERROR`` (and ``DETAIL``) rules only.
    ``detail`` is the finer cause a ``DETAIL`` rule names (its id suffix).
    """

    rule: str
    kind: EventKind
    category: Category | None
    lang: str
    fields: Mapping[str, str | int]
    detail: str | None = None
    writer: Writer = Writer.ANY

    def field(self, name: str) -> str | int | None:
        """The extracted value of ``name``, or None."""
        return self.fields.get(name)


@dataclass(frozen=True, slots=True)
class Event:
    """A rule match placed on a job's time line."""

    timestamp: datetime | None
    job_id: str | None
    task: str | None
    match: RuleMatch
    text: str
    origin: Origin
    vm: str | None = None
    insert_id: str | None = None
    trial: str | None = None

    @property
    def kind(self) -> EventKind:
        return self.match.kind

    @classmethod
    def from_record(cls, record: LogRecord, match: RuleMatch) -> Event:
        """The event ``match`` makes of ``record``."""
        return cls(
            timestamp=record.timestamp,
            job_id=record.job_id,
            task=record.task,
            match=match,
            text=record.text,
            origin=record.origin,
            vm=record.vm,
            insert_id=record.insert_id,
            trial=record.trial,
        )
