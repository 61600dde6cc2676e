"""Cloud Logging failures turned into one-line SourceErrors, and the retry schedule.

The messages say what to run or which role to grant. They never include a
token, a credential file's content or its path: only the exception's class
and the API's own error message are used, and that message goes through
:func:`~analyzer.report.redact.redact` (a server may echo the request's token in it).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from analyzer.core.errors import SourceError
from analyzer.report.redact import redact

INSTALL_HINT = "pip install 'jobdoctor[gcp]'"
LOGIN_HINT = "run `gcloud auth application-default login`"


@dataclass(frozen=True, slots=True)
class Backoff:
    """Retry schedule for 429 (rate limited) and 503/504 (unavailable) answers.

    ``attempts`` retries at most, waiting ``initial * multiplier**n`` seconds
    (capped at ``maximum``) with up to 10% random jitter, so several followers
    of one project do not retry in lockstep.
    """

    attempts: int = 5
    initial: float = 1.0
    multiplier: float = 2.0
    maximum: float = 30.0

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        base = min(self.maximum, self.initial * self.multiplier**retry)
        return base * (1.0 + random.uniform(0.0, 0.1))


DEFAULT_BACKOFF = Backoff()


class MalformedAnswer(ValueError):
    """An answer of the endpoint that is not a Logging API page (not JSON, or not its shape)."""


def missing_extra() -> SourceError:
    """The error for a live option used without google-cloud-logging installed."""
    return SourceError(f"live Cloud Logging needs google-cloud-logging: {INSTALL_HINT}")


def is_retryable(exc: BaseException) -> bool:
    """True for the answers worth retrying: 429, 503, 504 (and their gRPC twins)."""
    from google.api_core import exceptions as api

    return isinstance(
        exc,
        api.TooManyRequests
        | api.ResourceExhausted
        | api.ServiceUnavailable
        | api.GatewayTimeout
        | api.DeadlineExceeded,
    )


def _reasons(exc: BaseException) -> str:
    """Everything machine-readable the API said about why, for matching (not for printing)."""
    parts = [str(getattr(exc, "reason", None) or ""), str(getattr(exc, "message", ""))]
    for detail in getattr(exc, "details", None) or ():
        parts.append(str(detail))
    return " ".join(parts)


def translate(exc: BaseException, project: str, endpoint: str) -> SourceError | None:
    """The SourceError for a failure of the client library, or None when it is not one.

    ``endpoint`` is the URL the client talked to (named in connection errors).
    """
    import requests
    from google.api_core import exceptions as api
    from google.auth import exceptions as auth

    if (
        isinstance(exc, TypeError | ValueError | KeyError)
        and not isinstance(exc, auth.GoogleAuthError)
        and _raised_in_auth(exc)
    ):
        # google-auth reads a token endpoint's answer as it expects it: HTML, a list or a
        # number where a token should be fails inside it (TypeError, ValueError).
        return SourceError(
            "the credentials' token endpoint answered with something that is not a token:"
            " check GOOGLE_APPLICATION_CREDENTIALS (its token_uri) or "
            f"{LOGIN_HINT}"
        )
    if isinstance(exc, auth.InvalidOperation):
        # An HTTP 401 to the anonymous credentials of a loopback endpoint: google-auth tries
        # to refresh them, which anonymous credentials cannot.
        return SourceError(
            f"Cloud Logging credentials rejected (HTTP 401) by {redact(endpoint)}: the endpoint "
            "asks for credentials that loopback endpoints are not sent"
        )
    if isinstance(exc, auth.DefaultCredentialsError):
        return SourceError(
            f"no credentials for Cloud Logging: {LOGIN_HINT} (or set "
            "GOOGLE_APPLICATION_CREDENTIALS to a service-account key file that exists)"
        )
    if isinstance(exc, auth.RefreshError | api.Unauthenticated | api.Unauthorized):
        return SourceError(f"Cloud Logging credentials rejected (or expired): {LOGIN_HINT}")
    if isinstance(exc, api.Forbidden | api.PermissionDenied):
        why = _reasons(exc)
        if "SERVICE_DISABLED" in why or "has not been used" in why or "is disabled" in why:
            return SourceError(
                f"the Cloud Logging API is disabled in project {project}: enable it with "
                f"`gcloud services enable logging.googleapis.com --project {project}`"
            )
        return SourceError(
            f"permission denied reading logs of project {project}: ask for the Logs Viewer "
            f"role (roles/logging.viewer) on project {project}"
        )
    if isinstance(exc, api.NotFound):
        return SourceError(
            f"project {project} not found in Cloud Logging: check --project "
            "(the project ID, e.g. my-project-123)"
        )
    if isinstance(exc, api.BadRequest | api.InvalidArgument):
        return SourceError(f"Cloud Logging rejected the query: {_said(exc)}")
    if is_retryable(exc):
        return SourceError(
            f"Cloud Logging is rate limiting or unavailable ({getattr(exc, 'code', '?')}) "
            "and retries ran out: wait a minute and try again, or narrow --since"
        )
    if isinstance(exc, api.GoogleAPICallError):
        return SourceError(f"Cloud Logging error {getattr(exc, 'code', '?')}: {_said(exc)}")
    if isinstance(exc, requests.ConnectionError | requests.Timeout | auth.TransportError):
        return SourceError(
            f"cannot reach Cloud Logging at {redact(endpoint)}: check the network or --api-endpoint"
        )
    # Before ValueError: requests' JSONDecodeError is one (a 200 answer that is not JSON).
    if isinstance(exc, MalformedAnswer | requests.exceptions.JSONDecodeError):
        what = "is not JSON" if not isinstance(exc, MalformedAnswer) else str(exc)
        return SourceError(
            f"Cloud Logging at {redact(endpoint)} answered with a page that {what}: check "
            "--api-endpoint (it must be the Logging API, e.g. https://logging.googleapis.com)"
        )
    return None


def _raised_in_auth(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside google-auth (its token refresh)."""
    trace = exc.__traceback__
    while trace is not None and trace.tb_next is not None:
        trace = trace.tb_next
    if trace is None:
        return False
    module = str(trace.tb_frame.f_globals.get("__name__", ""))
    return module.startswith(("google.auth", "google.oauth2"))


def _said(exc: BaseException) -> str:
    """What the API said about ``exc``, one line, its secrets cut out."""
    return redact(" ".join(str(getattr(exc, "message", exc)).split()))
