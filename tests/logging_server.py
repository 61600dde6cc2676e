"""A small Cloud Logging REST API server for tests, on 127.0.0.1.

It serves ``POST /v2/entries:list`` the way ``logging.googleapis.com`` does,
so the real ``google-cloud-logging`` client can be pointed at it::

    with LoggingServer(entries) as server:
        client_options = {"api_endpoint": server.url}

What it does:

- takes the JSON body ``{resourceNames, filter, orderBy, pageSize, pageToken}``
  and records every body it received (``server.requests``) with its headers;
- evaluates the filter clauses jobdoctor sends (``field="v"``, ``timestamp>="t"``,
  ``timestamp<"t"`` joined by ``AND``); any other filter is a 400, so a test
  notices when the client changed it (the library's 24-hour default included);
- orders by timestamp, pages with an opaque ``nextPageToken``;
- ``empty_pages``: first pages with no entries but a ``nextPageToken``;
- scripted failures (``fail_next``, ``fail_on``): a 403 permission denied,
  a 403 API disabled, a 429, a 503, a 404 project, a 401 whose message echoes the
  request's bearer token, and answers that are not the API's: a 200 that is not JSON
  (``Failure.raw``), or JSON of another shape (``Failure(200, ...)``).

``server.entries`` may be appended to while it runs (for follow tests).

It is also an OAuth token endpoint (``POST /token``, ``server.token_uri``) for a service
account key file whose ``token_uri`` names it: it answers a token, or what
``token_answers`` scripts (garbage, a token of the wrong type).
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.loopback import LoopbackServer

LIST_PATH = "/v2/entries:list"
TOKEN_PATH = "/token"
TOKEN = "ya29.test-access-token-from-the-loopback-server"

# One clause of the filters jobdoctor writes: a dotted field, an operator, a quoted value.
_CLAUSE = re.compile(r'^\s*([A-Za-z_][\w.]*)\s*(>=|<=|=|<|>)\s*"((?:[^"\\]|\\.)*)"\s*$')


def load_entries(path: Path) -> list[dict[str, Any]]:
    """Read a sink-shaped JSONL file: one LogEntry per line."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _nanos_key(timestamp: str) -> str:
    """An RFC 3339 UTC timestamp as a string that sorts by time, to the nanosecond."""
    text = timestamp.rstrip("Zz")
    whole, _, fraction = text.partition(".")
    return f"{whole}.{fraction.ljust(9, '0')[:9]}"


@dataclass(frozen=True, slots=True)
class Failure:
    """A scripted error response: HTTP status and the API's JSON error body."""

    status: int
    body: Any
    raw: bytes | None = None
    """Sent as it is instead of ``body`` as JSON (a proxy's HTML page, say)."""
    content_type: str = "application/json; charset=UTF-8"

    @staticmethod
    def raw_answer(status: int, raw: bytes, content_type: str = "text/html") -> Failure:
        return Failure(status, None, raw, content_type)

    @staticmethod
    def unauthenticated(token: str) -> Failure:
        # Some servers and proxies echo what they were sent: the secret must not be printed.
        return Failure(
            401,
            _error(
                401,
                "UNAUTHENTICATED",
                "Request had invalid authentication credentials. Expected OAuth 2 access token,"
                f" got 'Authorization: Bearer {token}' (access_token={token}).",
            ),
        )

    @staticmethod
    def permission_denied() -> Failure:
        return Failure(
            403,
            _error(
                403,
                "PERMISSION_DENIED",
                "Permission 'logging.logEntries.list' denied on resource (or it may not exist).",
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "IAM_PERMISSION_DENIED",
                    "domain": "iam.googleapis.com",
                    "metadata": {"permission": "logging.logEntries.list"},
                },
            ),
        )

    @staticmethod
    def api_disabled(project_number: str = "123456789012") -> Failure:
        return Failure(
            403,
            _error(
                403,
                "PERMISSION_DENIED",
                f"Cloud Logging API has not been used in project {project_number} before or it"
                " is disabled. Enable it by visiting https://console.developers.google.com/apis/"
                f"api/logging.googleapis.com/overview?project={project_number} then retry.",
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "SERVICE_DISABLED",
                    "domain": "googleapis.com",
                    "metadata": {
                        "service": "logging.googleapis.com",
                        "consumer": f"projects/{project_number}",
                    },
                },
            ),
        )

    @staticmethod
    def rate_limited() -> Failure:
        return Failure(
            429,
            _error(
                429,
                "RESOURCE_EXHAUSTED",
                "Quota exceeded for quota metric 'Read requests' and limit 'Read requests per"
                " minute' of service 'logging.googleapis.com'.",
            ),
        )

    @staticmethod
    def unavailable() -> Failure:
        return Failure(503, _error(503, "UNAVAILABLE", "The service is currently unavailable."))

    @staticmethod
    def project_not_found() -> Failure:
        return Failure(404, _error(404, "NOT_FOUND", "Requested entity was not found."))


def _error(code: int, status: str, message: str, *details: dict[str, Any]) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return {"error": error}


@dataclass(frozen=True, slots=True)
class ReceivedRequest:
    """One request the server received: path, JSON body and headers (lower-case names)."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]


@dataclass
class LoggingServer(LoopbackServer):
    """The fake Cloud Logging API; a context manager that runs it in a thread."""

    entries: list[dict[str, Any]] = field(default_factory=list)
    requests: list[ReceivedRequest] = field(default_factory=list)
    default_page_size: int = 50
    empty_pages: int = 0
    """Answer this many first pages of each listing with no entries but a token (as the
    real API does when it runs out of time scanning)."""
    token_answers: list[Failure] = field(default_factory=list)
    """The answers of the next token requests, one each; then a valid token."""
    _next_failures: list[Failure] = field(default_factory=list)
    _failures_on: dict[int, Failure] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def token_uri(self) -> str:
        """The OAuth token endpoint to put in a key file's ``token_uri``."""
        return self.url + TOKEN_PATH

    @property
    def list_bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of every ``entries:list`` request, in order."""
        with self._lock:
            return [r.body for r in self.requests if r.path == LIST_PATH]

    def add(self, entries: Iterable[dict[str, Any]]) -> None:
        """Append entries while the server runs (they appear in the next list call)."""
        with self._lock:
            self.entries.extend(entries)

    def fail_next(self, *failures: Failure) -> None:
        """Answer the next requests with these failures, one each, then serve normally."""
        with self._lock:
            self._next_failures.extend(failures)

    def fail_on(self, request_number: int, failure: Failure) -> None:
        """Answer the ``request_number``-th request (1-based, all requests) with ``failure``."""
        with self._lock:
            self._failures_on[request_number] = failure

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return type("_BoundHandler", (_Handler,), {"server_state": self})

    # -- request handling (called from the server thread) --

    def handle(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Failure:
        """Answer one request: a Failure is also how a 200 page is returned."""
        with self._lock:
            self.requests.append(ReceivedRequest(path, body, headers))
            if path == TOKEN_PATH:
                if self.token_answers:
                    return self.token_answers.pop(0)
                token = {"access_token": TOKEN, "expires_in": 3600, "token_type": "Bearer"}
                return Failure(200, token)
            number = len(self.requests)
            failure = self._failures_on.pop(number, None)
            if failure is None and self._next_failures:
                failure = self._next_failures.pop(0)
            entries = list(self.entries)
        if failure is not None:
            return failure
        if path != LIST_PATH:
            return Failure(404, _error(404, "NOT_FOUND", f"no such method: {path}"))
        try:
            return Failure(200, self._list(body, entries))
        except ValueError as exc:
            return Failure(400, _error(400, "INVALID_ARGUMENT", str(exc)))

    def _list(self, body: dict[str, Any], entries: list[dict[str, Any]]) -> dict[str, Any]:
        names = body.get("resourceNames")
        if not isinstance(names, list) or not names:
            raise ValueError("resourceNames is required")
        projects = {name.removeprefix("projects/") for name in names}
        clauses = _parse_filter(str(body.get("filter", "")))
        selected = [
            e
            for e in entries
            if _field(e, "resource.labels.project_id") in projects
            and all(_matches(e, clause) for clause in clauses)
        ]
        order = body.get("orderBy", "timestamp asc")
        if order not in ("timestamp asc", "timestamp desc"):
            raise ValueError(f"unsupported orderBy: {order}")
        selected.sort(key=lambda e: _nanos_key(e["timestamp"]), reverse=order.endswith("desc"))
        size = int(body.get("pageSize") or self.default_page_size)
        if not 0 < size <= 1000:
            raise ValueError("pageSize must be in 1..1000")
        token = body.get("pageToken")
        if str(token or "").startswith("empty:") or (not token and self.empty_pages):
            done = int(str(token).removeprefix("empty:")) if token else 0
            if done < self.empty_pages:
                return {"nextPageToken": f"empty:{done + 1}"}
            token = None
        offset = _decode_token(token)
        page = selected[offset : offset + size]
        answer: dict[str, Any] = {"entries": page} if page else {}
        if offset + size < len(selected):
            answer["nextPageToken"] = _encode_token(offset + size)
        return answer


Clause = tuple[str, str, str]


def _parse_filter(text: str) -> list[Clause]:
    if not text.strip():
        return []
    clauses: list[Clause] = []
    for part in re.split(r"\s+AND\s+", text.strip()):
        found = _CLAUSE.match(part)
        if found is None:
            raise ValueError(f"unsupported filter clause: {part!r}")
        name, op, value = found.groups()
        clauses.append((name, op, value.replace('\\"', '"').replace("\\\\", "\\")))
    return clauses


def _field(entry: dict[str, Any], name: str) -> Any:
    value: Any = entry
    for part in name.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _matches(entry: dict[str, Any], clause: Clause) -> bool:
    name, op, wanted = clause
    actual = _field(entry, name)
    if not isinstance(actual, str):
        return False
    if name == "timestamp":
        actual, wanted = _nanos_key(actual), _nanos_key(wanted)
    elif op != "=":
        raise ValueError(f"only timestamp supports {op}")
    return {
        "=": actual == wanted,
        ">=": actual >= wanted,
        ">": actual > wanted,
        "<=": actual <= wanted,
        "<": actual < wanted,
    }[op]


def _encode_token(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode()


def _decode_token(token: Any) -> int:
    if not token:
        return 0
    try:
        return int(base64.urlsafe_b64decode(str(token)).decode().removeprefix("offset:"))
    except ValueError as exc:
        raise ValueError("invalid pageToken") from exc


class _Handler(BaseHTTPRequestHandler):
    server_state: LoggingServer

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        headers = {k.lower(): v for k, v in self.headers.items()}
        path = self.path.split("?", 1)[0]
        answer = self.server_state.handle(path, body, headers)
        payload = answer.raw if answer.raw is not None else json.dumps(answer.body).encode()
        self.send_response(answer.status, HTTPStatus(answer.status).phrase)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        # Keep pytest output clean; the requests are recorded on the server instead.
        return
