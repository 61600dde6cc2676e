"""Several jobs' logs in one text without job ids: where one job ends and the next begins.

A text export names no job on its lines (``gcloud ai custom-jobs stream-logs``, a paste);
the job it is about is read from a line that names it, the console link of the service's
failure message. A file that ``stream-logs`` of several runs was appended to (``>> logs.txt``),
or a paste of two runs one after the other, holds several jobs: read as one, the second
run's provisioning looked like a retry of the first, and every job but the first lost its id.

The platform writes ``Job failed.`` at the end of every failed attempt and ``Waiting for
job to be provisioned.`` at the start of the next (platform.md section 2), and a job's own
end (success, cancellation, retries exhausted) is final. So the text is cut where a
provisioning follows an end, and each part is named by the lines inside it. Two neighbouring
parts stay one job when they may be a retry: the later one names no job, or the same, and
the earlier one ended with ``Job failed.`` only. Whether such a retry was possible at all
(a failure the platform does not retry) is the verdict's to say.
"""

from __future__ import annotations

from collections.abc import Sequence

import regex

from analyzer.ingest.records import SERVICE_TASK
from analyzer.rulebook.events import Event, EventKind

# A job's console link, inside a message (the service's failure text cites it).
JOB_LINK = regex.compile(r"ml_job(?:%2F|/)job_id(?:%2F|/)([A-Za-z0-9_\-]+)")
# What begins a job (its first attempt, or its queueing), and what ends it for good (the
# timeline's separation of a text's jobs reads the same kinds).
BEGINS_JOB = frozenset({EventKind.ATTEMPT_STARTED, EventKind.JOB_QUEUED})
ENDS_JOB = frozenset(
    {EventKind.JOB_SUCCEEDED, EventKind.RETRIES_EXHAUSTED, EventKind.JOB_CANCELLED}
)
# An attempt's end after which the platform may start another attempt of the same job.
_MAY_RETRY = EventKind.JOB_FAILED

Part = tuple[str | None, list[Event]]


def named_job(event: Event) -> str | None:
    """The job ``event``'s line names: a rule's ``job_id`` field, else a console link in its
    text."""
    named = event.match.field("job_id")
    if isinstance(named, str) and named:
        return named
    found = JOB_LINK.search(event.text)
    return found.group(1) if found else None


def joined_jobs(events: Sequence[Event]) -> list[Part] | None:
    """The jobs ``events`` (one id-less text's, in reading order) hold one after another,
    each with the job its lines name (None: none named) and its events; None when the text
    names fewer than two jobs (it is one job, or several no line tells apart)."""
    parts = _cut(events)
    if len({name for name, _ in parts if name is not None}) < 2:
        return None
    joined: list[Part] = [parts[0]]
    for name, part in parts[1:]:
        before, earlier = joined[-1]
        if (name is None or name == before) and _may_be_retried(earlier):
            joined[-1] = (before or name, earlier + part)
        else:
            joined.append((name, part))
    return joined if len(joined) > 1 else None


def _service(event: Event) -> bool:
    return event.task in (None, SERVICE_TASK)


def _cut(events: Sequence[Event]) -> list[Part]:
    """``events`` cut where a job begins after one ended (for good or for an attempt), each
    part with the first job its lines name."""
    parts: list[list[Event]] = [[]]
    ended = False
    for event in events:
        if ended and event.kind in BEGINS_JOB and _service(event):
            parts.append([])
            ended = False
        parts[-1].append(event)
        if _service(event) and (event.kind in ENDS_JOB or event.kind is _MAY_RETRY):
            ended = True
    return [(_name(part), part) for part in parts if part]


def _name(part: list[Event]) -> str | None:
    return next((name for event in part if (name := named_job(event)) is not None), None)


def _may_be_retried(part: list[Event]) -> bool:
    """Whether the job ``part`` holds may go on in another attempt: its last end of a job or
    an attempt is ``Job failed.``, not a final state."""
    ends = [e.kind for e in part if _service(e) and (e.kind in ENDS_JOB or e.kind is _MAY_RETRY)]
    return bool(ends) and ends[-1] is _MAY_RETRY
