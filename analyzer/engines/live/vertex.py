"""A job's own record, live: ``projects.locations.customJobs.get`` of the Vertex AI REST API.

What ``gcloud ai custom-jobs describe ID --format=json`` prints, read with the user's
Application Default Credentials (the ``gcp`` extra brings google-auth and requests), and then
used exactly as ``--job-spec`` is (:func:`analyzer.verdict.jobspec.parse_job_spec`).

The endpoint is regional (``https://REGION-aiplatform.googleapis.com``); ``--vertex-endpoint``
or ``JOBDOCTOR_VERTEX_ENDPOINT`` points elsewhere, and a loopback ``http://`` endpoint (an
emulator, the tests' server) gets no credentials, as the live Logging client does.
"""

from __future__ import annotations

import os
import time
from typing import Any
from urllib.parse import quote, urlsplit

from analyzer.core.errors import SourceError
from analyzer.engines.live.client import is_local
from analyzer.engines.live.errors import (
    DEFAULT_BACKOFF,
    INSTALL_HINT,
    LOGIN_HINT,
    Backoff,
    _raised_in_auth,
)
from analyzer.engines.live.gcloud import REGION_SHAPE
from analyzer.report.redact import redact

VERTEX_ENDPOINT_ENV = "JOBDOCTOR_VERTEX_ENDPOINT"
VIEWER_ROLE = "Vertex AI Viewer (roles/aiplatform.viewer)"
_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
_RETRIED = frozenset({429, 500, 503, 504})
_TIMEOUT = 30.0


def vertex_endpoint(region: str, endpoint: str | None = None) -> str:
    """``endpoint``, else ``$JOBDOCTOR_VERTEX_ENDPOINT``, else the region's public endpoint."""
    chosen = endpoint or os.environ.get(VERTEX_ENDPOINT_ENV) or ""
    if chosen:
        return chosen.rstrip("/")
    # The address is built from the region: only a region of the platform's shape (issue 31).
    if not REGION_SHAPE.fullmatch(region):
        raise SourceError(
            f"region {region!r} is not a region such as us-central1: nothing was sent"
        )
    return f"https://{region}-aiplatform.googleapis.com"


def overridden(endpoint: str | None = None) -> bool:
    """Whether an endpoint other than Google's was asked for (option or environment)."""
    return bool(endpoint or os.environ.get(VERTEX_ENDPOINT_ENV))


def job_url(project: str, region: str, job_id: str, endpoint: str | None = None) -> str:
    """The ``customJobs.get`` URL of one job."""
    path = "/".join(
        quote(part, safe="")
        for part in ("projects", project, "locations", region, "customJobs", job_id)
    )
    return f"{vertex_endpoint(region, endpoint)}/v1/{path}"


def _session(endpoint: str) -> Any:
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SourceError(
            f"invalid --vertex-endpoint {endpoint!r}: give a URL such as "
            "https://us-central1-aiplatform.googleapis.com or http://127.0.0.1:8086"
        )
    if parts.scheme == "http" and not is_local(endpoint):
        raise SourceError(
            f"refusing plain http to {parts.hostname}: credentials would travel unencrypted; "
            "use https, or http only for localhost/127.0.0.1 emulators"
        )
    try:
        import requests
    except ImportError:
        raise SourceError(
            f"reading the job from Vertex AI needs requests: {INSTALL_HINT}"
        ) from None
    if is_local(endpoint):
        return requests.Session()
    try:
        import google.auth
        from google.auth import exceptions as auth
        from google.auth.transport.requests import AuthorizedSession
    except ImportError:
        raise SourceError(
            f"reading the job from Vertex AI needs google-auth: {INSTALL_HINT}"
        ) from None
    try:
        credentials, _ = google.auth.default(scopes=list(_SCOPES))
    except auth.DefaultCredentialsError:
        raise SourceError(
            f"no credentials for Vertex AI: {LOGIN_HINT} (or set GOOGLE_APPLICATION_CREDENTIALS "
            "to a service-account key file that exists)"
        ) from None
    # google-auth is untyped here: hold its session class as Any rather than silence the call.
    session_class: Any = AuthorizedSession
    return session_class(credentials)


def _api_error(response: Any) -> tuple[str, str, str]:
    """The API's status, message and machine-readable reasons from an error response."""
    try:
        data = response.json()
    except ValueError:
        return "", response.text[:200].strip(), ""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return "", "", ""  # not the API's error shape (a proxy's page): the status says it
    details = error.get("details")
    reasons = " ".join(
        str(d.get("reason", ""))
        for d in (details if isinstance(details, list) else ())
        if isinstance(d, dict)
    )
    return str(error.get("status", "")), str(error.get("message", "")), reasons


def _failure(status: int, response: Any, project: str, region: str, job_id: str) -> SourceError:
    api_status, message, reasons = _api_error(response)
    where = f"project {project}, region {region}"
    if status == 401:
        return SourceError(f"Vertex AI rejected the credentials (401): {LOGIN_HINT}")
    if status == 403:
        if "SERVICE_DISABLED" in reasons or "has not been used" in message:
            return SourceError(
                f"the Vertex AI API is disabled in project {project}: enable it with "
                f"`gcloud services enable aiplatform.googleapis.com --project {project}`"
            )
        return SourceError(
            f"permission denied reading custom job {job_id} ({where}): ask for the "
            f"{VIEWER_ROLE} role on project {project}"
        )
    if status == 404:
        return SourceError(
            f"custom job {job_id} not found in {where}: check the job id and --region "
            "(the region the job ran in)"
        )
    said = f": {redact(message)}" if message else ""
    return SourceError(f"Vertex AI error {status} {api_status}{said}".replace("  ", " "))


def _auth_failure(exc: Exception) -> SourceError | None:
    """The SourceError for a failure of the credentials' token refresh, or None."""
    try:
        from google.auth import exceptions as auth
    except ImportError:
        return None
    if isinstance(exc, auth.RefreshError):
        return SourceError(f"Vertex AI credentials rejected (or expired): {LOGIN_HINT}")
    if isinstance(exc, auth.TransportError):
        return SourceError(
            "cannot reach the credentials' token endpoint for Vertex AI: check the network"
        )
    if isinstance(exc, TypeError | ValueError | KeyError) and _raised_in_auth(exc):
        # google-auth reads the token endpoint's answer as it expects it: HTML or a list
        # where a token should be fails inside it.
        return SourceError(
            "the credentials' token endpoint answered with something that is not a token:"
            f" check GOOGLE_APPLICATION_CREDENTIALS (its token_uri) or {LOGIN_HINT}"
        )
    return None


def read_custom_job(
    project: str,
    region: str,
    job_id: str,
    *,
    endpoint: str | None = None,
    backoff: Backoff = DEFAULT_BACKOFF,
) -> dict[str, Any]:
    """The CustomJob resource of ``job_id``, as the REST API returns it.

    Retries 429, 500, 503 and 504 answers on ``backoff``'s schedule. Raises
    :class:`~analyzer.core.errors.SourceError` with one line saying what to do (which role, which
    API to enable, which option to check) for anything else.
    """
    base = vertex_endpoint(region, endpoint)
    session = _session(base)
    url = job_url(project, region, job_id, endpoint)
    import requests

    from analyzer import __version__

    headers = {"User-Agent": f"jobdoctor/{__version__}", "Accept": "application/json"}
    for retry in range(backoff.attempts + 1):
        try:
            response = session.get(url, headers=headers, timeout=_TIMEOUT)
        except (requests.ConnectionError, requests.Timeout):
            raise SourceError(
                f"cannot reach Vertex AI at {redact(base)}: check the network or --vertex-endpoint"
            ) from None
        except Exception as exc:
            failure = _auth_failure(exc)
            if failure is None:
                raise
            raise failure from None
        status = int(response.status_code)
        if status == 200:
            try:
                data = response.json()
            except ValueError:
                data = None
            if not isinstance(data, dict):
                raise SourceError(
                    f"Vertex AI at {redact(base)} answered with something that is not a job:"
                    " check --vertex-endpoint"
                )
            return data
        if status in _RETRIED and retry < backoff.attempts:
            time.sleep(backoff.delay(retry))
            continue
        raise _failure(status, response, project, region, job_id)
    raise AssertionError("unreachable: the loop returns or raises")
