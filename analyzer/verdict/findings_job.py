"""The findings read off a job's timeline: who wrote each line (its provenance), an
interrupted wait, a state only the SDK's state line shows.

Provenance (issue 27, point 5; platform.md section 9): the job's record (a describe) > the
service's lifecycle and error lines > the SDK's state lines and ``Job failed with:`` > the
runner's lines > the user's own output.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from analyzer.classify.tracebacks import exception_from_events, last_exception_line
from analyzer.rulebook.events import LIFECYCLE_KINDS, WORKER_KINDS, Event, EventKind, Writer
from analyzer.timeline.attempts import JobTimeline
from analyzer.verdict.findings import Finding, FindingKind, Provenance, finding

# What a tool prints of the job object: its state and error, a refusal, the job's name.
_TOOL_KINDS = frozenset(
    {EventKind.JOB_STATE, EventKind.JOB_ERROR, EventKind.CREATION_REFUSED, EventKind.JOB_NAMED}
)
# The job's record as gcloud's describe prints it (YAML): `state: JOB_STATE_FAILED`, the
# error's `message:` (rule describe.error-message).
_DESCRIBED_STATE = re.compile(r"^\s*state:\s")
_RECORD_RULES = frozenset({"describe.error-message"})


def provenance_of(event: Event) -> Provenance:
    """Who wrote ``event``'s line (platform.md section 9).

    A service message in a container's output is an echo (timeline._settle_provenance):
    the user's output, never the job's own fate.
    """
    if event.match.rule in _RECORD_RULES or (
        event.kind is EventKind.JOB_STATE and _DESCRIBED_STATE.match(event.text)
    ):
        return Provenance.RECORD
    if event.kind in _TOOL_KINDS:
        return Provenance.SDK
    if event.kind in WORKER_KINDS:
        return Provenance.RUNNER
    # Lifecycle lines left as the job's own by timeline._settle_provenance are the service's
    # (legacy "Task completed successfully." is written per task, by the service).
    if event.kind in LIFECYCLE_KINDS or (
        event.kind is not EventKind.ECHO and event.match.writer is Writer.SERVICE
    ):
        return Provenance.SERVICE
    return Provenance.USER


def strongest(events: Iterable[Event]) -> Provenance | None:
    """The strongest provenance among ``events`` (None when there is none)."""
    return min((provenance_of(e) for e in events), default=None)


# A Vertex AI resource name as the SDK prints it: its region and the kind of job.
_RESOURCE = re.compile(
    r"projects/[^/\s]+/locations/(?P<region>[a-z0-9-]+)/"
    r"(?P<collection>customJobs|hyperparameterTuningJobs|trainingPipelines)/(?P<id>[\w-]+)"
)
# gcloud's command group for each kind of job (a training pipeline has none).
_COMMANDS = {
    "customJobs": "custom-jobs",
    "hyperparameterTuningJobs": "hp-tuning-jobs",
    "trainingPipelines": "training-pipeline",
}
# Where the SDK waits for a job: its polling loop sleeps in these modules.
_SDK_WAIT = re.compile(r"google/cloud/aiplatform/")
_INTERRUPT = "KeyboardInterrupt"


def _events(timeline: JobTimeline) -> list[Event]:
    return [e for a in timeline.attempts for e in a.events]


def interrupted_wait(timeline: JobTimeline, state: str, final: bool) -> Finding | None:
    """platform.md section 10: a user's Ctrl-C (or the Jupyter kernel's interruption) while
    the SDK waits ends in the SDK's ``time.sleep(...)`` and ``KeyboardInterrupt``: the job goes
    on running on the platform. Found when the input's last exception is that interruption,
    raised inside the SDK's polling (a frame in google/cloud/aiplatform) or beside the SDK's
    state lines, and no final state of the job was seen."""
    if final:
        return None
    events = _events(timeline)
    exception = exception_from_events(events) or last_exception_line(events)
    if exception is None or exception.type.rsplit(".", 1)[-1] != _INTERRUPT:
        return None
    in_sdk = any(_SDK_WAIT.search(f.file) for f in exception.frames)
    if not in_sdk and not any(e.kind is EventKind.JOB_STATE for e in events):
        return None
    resource = _resource(events, timeline.job_id)
    return finding(
        FindingKind.INTERRUPTED_WAIT,
        Provenance.SDK,
        [exception.origin],
        resource=resource.group(0) if resource else None,
        job=resource.group("id") if resource else timeline.job_id,
        region=resource.group("region") if resource else None,
        command=_COMMANDS[resource.group("collection")] if resource else None,
        state=state if state != "UNSPECIFIED" else None,
    )


def _resource(events: Sequence[Event], job_id: str | None) -> re.Match[str] | None:
    """The resource name of the job the SDK waited for: the last one the input names (the
    job's own, when its id is known)."""
    found: re.Match[str] | None = None
    for event in events:
        for match in _RESOURCE.finditer(event.text):
            if job_id is None or match.group("id") == job_id or found is None:
                found = match
    return found


def sdk_state_only(timeline: JobTimeline, source: str | None) -> Finding | None:
    """The job's state rests on the SDK's state lines alone: no line of the service and no
    record of the job is in the input (issue 27, point 2)."""
    if source != Provenance.SDK.source:
        return None
    events = _events(timeline)
    if any(provenance_of(e) in (Provenance.RECORD, Provenance.SERVICE) for e in events):
        return None
    states = [e for e in events if e.kind is EventKind.JOB_STATE]
    if not states:
        return None
    return finding(
        FindingKind.SDK_STATE_ONLY,
        Provenance.SDK,
        [states[-1].origin],
        state=str(states[-1].match.field("state") or ""),
    )
