"""BigQuery failures turned into one-line errors that say what to do.

Only the exception's class, its HTTP reason and the API's own message are used: never a
token or a credential file's content.
"""

from __future__ import annotations

import re

from analyzer.core.errors import InputError, SourceError

LOGIN_HINT = "run `gcloud auth application-default login`"
ROLES = (
    "BigQuery Data Viewer (roles/bigquery.dataViewer) on the dataset and BigQuery Job User"
    " (roles/bigquery.jobUser) on the billing project"
)
_UNRECOGNIZED = re.compile(
    r"Unrecognized name: (\S+)|Field name (\S+) does not exist|"
    r"Name (\S+) not found inside (\S+)"
)


def _reasons(exc: BaseException) -> str:
    parts = [str(getattr(exc, "message", "") or exc)]
    for error in getattr(exc, "errors", None) or ():
        if isinstance(error, dict):
            parts.append(str(error.get("reason", "")))
            parts.append(str(error.get("message", "")))
    return " ".join(parts)


def _message(exc: BaseException) -> str:
    text = str(getattr(exc, "message", "") or exc)
    return " ".join(text.split())[:300]


def translate(
    exc: BaseException, table: str, billing_project: str, endpoint: str | None
) -> InputError | SourceError | None:
    """The one-line error for a failure of google-cloud-bigquery, or None when it is not one
    of its failures (a bug of ours, left to the CLI's internal-error line)."""
    try:
        import requests
        from google.api_core import exceptions as api
        from google.auth import exceptions as auth
    except ImportError:
        return None
    if isinstance(exc, api.RetryError) and isinstance(exc.cause, BaseException):
        exc = exc.cause  # the retries ran out: what the last try met
    why = _reasons(exc)
    error: InputError | SourceError | None = _credentials_error(exc)
    if error is None:
        error = _limit_error(exc, why, billing_project)
    if error is None:
        error = _refusal_error(exc, why, table, billing_project)
    if error is not None:
        return error
    if isinstance(exc, api.GoogleAPICallError):
        return SourceError(f"BigQuery error {getattr(exc, 'code', '?')}: {_message(exc)}")
    if isinstance(exc, requests.ConnectionError | requests.Timeout | auth.TransportError):
        where = endpoint or "https://bigquery.googleapis.com"
        return SourceError(
            f"cannot reach BigQuery at {where}: check the network or JOBDOCTOR_BIGQUERY_ENDPOINT"
        )
    return None


def _credentials_error(exc: BaseException) -> SourceError | None:
    """No credentials, or credentials refused: how to log in."""
    from google.api_core import exceptions as api
    from google.auth import exceptions as auth

    if isinstance(exc, auth.DefaultCredentialsError):
        return SourceError(
            f"no credentials for BigQuery: {LOGIN_HINT} (or set GOOGLE_APPLICATION_CREDENTIALS"
            " to a service-account key file that exists)"
        )
    if isinstance(exc, auth.RefreshError | api.Unauthenticated):
        return SourceError(f"BigQuery credentials were rejected or expired: {LOGIN_HINT}")
    return None


def _limit_error(exc: BaseException, why: str, billing_project: str) -> SourceError | None:
    """The query stopped at --max-bytes, or a quota or rate limit reached."""
    from google.api_core import exceptions as api

    if "bytesBilledLimitExceeded" in why or "billed limit" in why.lower():
        return SourceError(
            f"BigQuery stopped the query at --max-bytes ({_message(exc)}): narrow --since or"
            " --job-id, or raise --max-bytes"
        )
    if isinstance(exc, api.TooManyRequests) or any(
        word in why for word in ("quotaExceeded", "rateLimitExceeded", "Quota exceeded")
    ):
        return SourceError(
            f"BigQuery quota or rate limit reached for project {billing_project}"
            f" ({_message(exc)}): wait and try again, or use another --billing-project"
        )
    return None


def _refusal_error(
    exc: BaseException, why: str, table: str, billing_project: str
) -> InputError | SourceError | None:
    """The API refused: disabled, permission denied, no such dataset or table, a column
    the table lacks (not a sink table), or another bad request."""
    from google.api_core import exceptions as api

    if isinstance(exc, api.Forbidden | api.PermissionDenied):
        if "accessDenied" in why and "disabled" in why.lower():
            return SourceError(
                f"the BigQuery API is disabled in project {billing_project}: enable it with"
                f" `gcloud services enable bigquery.googleapis.com --project {billing_project}`"
            )
        return SourceError(
            f"permission denied (403) reading {table} from project {billing_project}: {ROLES}"
        )
    if isinstance(exc, api.NotFound):
        lowered = why.lower()
        what = "dataset" if "dataset" in lowered and "table" not in lowered else "table"
        return InputError(
            f"{what} not found reading {table} ({_message(exc)}): check --bigquery"
            " PROJECT.DATASET.TABLE"
        )
    if isinstance(exc, api.BadRequest):
        found = _UNRECOGNIZED.search(why)
        if found:
            column = next(group for group in found.groups() if group)
            return InputError(
                f"{table} has no column {column.rstrip('.;,')} that jobdoctor reads: is it a"
                " Cloud Logging sink table or a Log Analytics view?"
            )
        return SourceError(f"BigQuery refused the query: {_message(exc)}")
    return None
