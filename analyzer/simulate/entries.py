"""Building Cloud Logging ``LogEntry`` dicts the way Vertex AI custom jobs write them.

Field names and shapes follow ``platform.md`` section 5: ``resource`` of type
``ml_job``, ``labels`` with the VM's ``compute.googleapis.com/resource_id``,
``timestamp`` with nanoseconds, ``receiveTimestamp`` one or two seconds later,
service messages as ``textPayload`` with task ``service``, container output as
``jsonPayload`` ``{"attrs": {"tag": ...}, "levelname": ..., "message": ...}``.
Times are integers of nanoseconds since the Unix epoch, so that the nanosecond
digits survive exactly.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


@dataclass(frozen=True, slots=True)
class JobIdentity:
    """Who a job is: ids that appear in its entries and in the console link."""

    project_id: str
    project_number: str
    job_id: str
    region: str = "us-central1"
    zone: str = "us-central1-a"

    @property
    def log_name(self) -> str:
        """``projects/<P>/logs/ml.googleapis.com%2F<job_id>``."""
        return f"projects/{self.project_id}/logs/ml.googleapis.com%2F{self.job_id}"

    @property
    def console_link(self) -> str:
        """The link the service appends to a replica's exit message."""
        return (
            "https://console.cloud.google.com/logs/viewer?"
            f"project={self.project_number}&resource=ml_job%2Fjob_id%2F{self.job_id}"
            "&advancedFilter=resource.type%3D%22ml_job%22%0A"
            f"resource.labels.job_id%3D%22{self.job_id}%22"
        )


@dataclass(frozen=True, slots=True)
class Machine:
    """One VM a worker runs on.

    ``resource_id`` and ``node`` (the VM's name, also ``resource_name``) change
    when the worker moves to another VM; ``hostname`` (the cluster address the
    runner prints) stays the same.
    """

    resource_id: str
    hostname: str
    node: str


def new_job_id(rng: random.Random) -> str:
    """A numeric Vertex AI job id (19 digits, like real ones)."""
    return str(rng.randint(1_000_000_000_000_000_000, 9_199_999_999_999_999_999))


def new_resource_id(rng: random.Random) -> str:
    """A Compute Engine instance id (19 digits)."""
    return str(rng.randint(1_000_000_000_000_000_000, 9_199_999_999_999_999_999))


def new_hostname(suffix: str, task: str) -> str:
    """The worker's hostname; it stays the same when the worker moves to another VM.

    Replicas of one pool share ``suffix``: ``cmle-training-workerpool1-<suffix>-<index>``.
    """
    pool, index = task.rsplit("-", 1)
    return f"cmle-training-{pool}-{suffix}-{index}"


def new_pool_suffix(rng: random.Random) -> str:
    """The random part of a pool's hostnames (10 hex digits)."""
    return "".join(rng.choice("0123456789abcdef") for _ in range(10))


def new_node_name(rng: random.Random) -> str:
    """The name of the VM (a GKE node) a worker runs on."""
    hexa = "0123456789abcdef"
    alnum = "abcdefghijklmnopqrstuvwxyz0123456789"
    return (
        f"gk3-cml-{rng.randint(1000, 1299):04d}-{rng.randint(0, 999999):06d}-"
        f"{''.join(rng.choice(hexa) for _ in range(4))}-nap-"
        f"{''.join(rng.choice(alnum) for _ in range(8))}-"
        f"{''.join(rng.choice(hexa) for _ in range(8))}-"
        f"{''.join(rng.choice(alnum) for _ in range(4))}"
    )


def new_insert_id(rng: random.Random) -> str:
    """A short opaque ``insertId``."""
    return "".join(rng.choice(_ID_ALPHABET) for _ in range(rng.choice((9, 13, 14, 15))))


def rfc3339(ns: int) -> str:
    """``2021-12-24T02:06:25.605309724Z`` from nanoseconds since the epoch."""
    seconds, frac = divmod(ns, SECOND)
    stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{frac:09d}Z"


def to_datetime(ns: int) -> datetime:
    """Aware UTC datetime (microsecond precision) from nanoseconds."""
    return datetime.fromtimestamp(ns // 1000 / 1_000_000, UTC)


def ns_from_datetime(value: datetime) -> int:
    """Nanoseconds since the epoch of an aware datetime."""
    delta = value - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * SECOND + delta.microseconds * 1000


def service_entry(
    rng: random.Random, job: JobIdentity, ns: int, text: str, severity: str = "INFO"
) -> dict[str, Any]:
    """An entry the training service writes (task ``service``, ``textPayload``)."""
    # Keys in alphabetical order, as the Logging API's JSON and gcloud print them.
    return {
        "insertId": new_insert_id(rng),
        "labels": {"ml.googleapis.com/job_id/log_area": "root"},
        "logName": job.log_name,
        "receiveTimestamp": rfc3339(ns + rng.randint(SECOND, 2 * SECOND)),
        "resource": {
            "labels": {"job_id": job.job_id, "project_id": job.project_id, "task_name": "service"},
            "type": "ml_job",
        },
        "severity": severity,
        "textPayload": text,
        "timestamp": rfc3339(ns),
    }


def worker_entry(
    rng: random.Random,
    job: JobIdentity,
    ns: int,
    task: str,
    machine: Machine,
    message: str,
    severity: str | None,
) -> dict[str, Any]:
    """One line of a worker container's stdout/stderr (``jsonPayload``).

    ``severity`` None gives an entry without severity (shown as ``DEFAULT``),
    as some container lines are.
    """
    payload: dict[str, Any] = {"attrs": {"tag": task}}
    if severity is not None:
        payload["levelname"] = severity
    payload["message"] = message
    entry: dict[str, Any] = {
        "insertId": new_insert_id(rng),
        "jsonPayload": payload,
        "labels": {
            "compute.googleapis.com/resource_id": machine.resource_id,
            "compute.googleapis.com/resource_name": machine.node,
            "compute.googleapis.com/zone": job.zone,
            "ml.googleapis.com/job_id/log_area": "user",
        },
        "logName": job.log_name,
        "receiveTimestamp": rfc3339(ns + rng.randint(SECOND, 2 * SECOND)),
        "resource": {
            "labels": {"job_id": job.job_id, "project_id": job.project_id, "task_name": task},
            "type": "ml_job",
        },
    }
    if severity is not None:
        entry["severity"] = severity
    entry["timestamp"] = rfc3339(ns)
    return entry


def entry_ns(entry: dict[str, Any]) -> int:
    """Nanoseconds of an entry built here (parses its ``timestamp``)."""
    text: str = entry["timestamp"]
    seconds = int(datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC).timestamp())
    frac = text[20:-1] if len(text) > 20 else ""
    return seconds * SECOND + int(frac.ljust(9, "0")[:9] or 0)


def entry_task(entry: dict[str, Any]) -> str:
    """The task name of an entry (``resource.labels.task_name``)."""
    task: str = entry.get("resource", {}).get("labels", {}).get("task_name", "unknown_task")
    return task


def entry_text(entry: dict[str, Any]) -> str:
    """``jsonPayload.message`` or ``textPayload``."""
    payload = entry.get("jsonPayload")
    if isinstance(payload, dict) and isinstance(payload.get("message"), str):
        message: str = payload["message"]
        return message
    text = entry.get("textPayload")
    return text if isinstance(text, str) else ""
