"""A small Vertex AI REST API server for tests, on 127.0.0.1.

It serves ``GET /v1/projects/P/locations/L/customJobs/ID`` (``customJobs.get``) the way
``REGION-aiplatform.googleapis.com`` does: the CustomJob resource as JSON, a 404 with the
API's error body for an unknown job, and scripted failures (``fail_next``): a 403 permission
denied, a 403 API disabled, a 429, a 503. Every request is recorded (``server.requests``:
path and headers), so a test sees which region and job were asked for.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.loopback import LoopbackServer

_GET = re.compile(r"^/v1/projects/([^/]+)/locations/([^/]+)/customJobs/([^/?]+)$")


def _error(code: int, status: str, message: str, *details: dict[str, Any]) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return {"error": error}


def permission_denied(job: str) -> tuple[int, dict[str, Any]]:
    return 403, _error(
        403,
        "PERMISSION_DENIED",
        f"Permission 'aiplatform.customJobs.get' denied on resource '{job}' (or it may not exist).",
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "IAM_PERMISSION_DENIED",
            "domain": "aiplatform.googleapis.com",
            "metadata": {"permission": "aiplatform.customJobs.get"},
        },
    )


def api_disabled() -> tuple[int, dict[str, Any]]:
    return 403, _error(
        403,
        "PERMISSION_DENIED",
        "Vertex AI API has not been used in project 123456789012 before or it is disabled.",
        {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "SERVICE_DISABLED",
            "domain": "googleapis.com",
            "metadata": {"service": "aiplatform.googleapis.com"},
        },
    )


def unavailable() -> tuple[int, dict[str, Any]]:
    return 503, _error(503, "UNAVAILABLE", "The service is currently unavailable.")


def custom_job(
    project: str,
    region: str,
    job_id: str,
    *,
    state: str = "JOB_STATE_FAILED",
    error_code: int | None = 3,
    machine_type: str = "n1-standard-4",
    replicas: int = 1,
    accelerator: tuple[str, int] | None = None,
    scheduling: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A CustomJob resource as ``customJobs.get`` returns it (``replicaCount`` a string)."""
    machine: dict[str, Any] = {"machineType": machine_type}
    if accelerator is not None:
        machine["acceleratorType"], machine["acceleratorCount"] = accelerator
    job: dict[str, Any] = {
        "name": f"projects/{project}/locations/{region}/customJobs/{job_id}",
        "displayName": "train",
        "jobSpec": {
            "workerPoolSpecs": [
                {
                    "machineSpec": machine,
                    "replicaCount": str(replicas),
                    "containerSpec": {"imageUri": "gcr.io/acme/trainer:1"},
                }
            ],
            "scheduling": scheduling or {},
        },
        "state": state,
        "createTime": "2024-04-04T00:20:00.000000Z",
    }
    if error_code is not None:
        job["error"] = {"code": error_code, "message": "The replica workerpool0-0 exited ..."}
    return job


@dataclass(frozen=True, slots=True)
class Received:
    path: str
    headers: dict[str, str]


@dataclass
class VertexServer(LoopbackServer):
    """The fake Vertex AI API; a context manager that runs it in a thread."""

    jobs: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    requests: list[Received] = field(default_factory=list)
    _next: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, job: dict[str, Any]) -> None:
        """Serve ``job`` at the path its ``name`` gives."""
        _, project, _, region, _, job_id = job["name"].split("/")
        self.jobs[(project, region, job_id)] = job

    def fail_next(self, *answers: tuple[int, dict[str, Any]]) -> None:
        with self._lock:
            self._next.extend(answers)

    def answer(self, path: str, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(Received(path, headers))
            if self._next:
                return self._next.pop(0)
        found = _GET.match(path)
        if found is None:
            return 404, _error(404, "NOT_FOUND", f"no such method: {path}")
        job = self.jobs.get((found[1], found[2], found[3]))
        if job is None:
            return 404, _error(404, "NOT_FOUND", f"The CustomJob does not exist: {path}")
        return 200, job

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return type("_Bound", (_Handler,), {"state": self})


class _Handler(BaseHTTPRequestHandler):
    state: VertexServer

    def do_GET(self) -> None:
        status, body = self.state.answer(self.path, {k.lower(): v for k, v in self.headers.items()})
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test output is not the place for an access log."""
