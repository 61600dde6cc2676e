"""What to read from Cloud Logging: project, job, window, endpoint; and its filter text."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from analyzer.engines.live.window import Window, rfc3339


@dataclass(frozen=True, slots=True)
class LiveQuery:
    """One job's logs in one project over an explicit window.

    ``endpoint`` overrides the API endpoint (``--api-endpoint``); when None,
    ``JOBDOCTOR_LOGGING_ENDPOINT`` is consulted, then the public endpoint.
    """

    project: str
    job_id: str
    window: Window
    endpoint: str | None = None

    @property
    def origin_path(self) -> str:
        """The path records from this query cite: ``cloudlogging://<project>/<job_id>``."""
        return f"cloudlogging://{self.project}/{self.job_id}"


def _quote(value: str) -> str:
    # The Logging query language takes C-style escapes inside double quotes.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def job_filter(job_id: str, start: datetime, end: datetime | None) -> str:
    """The filter for one job's entries from ``start`` (inclusive) to ``end`` (exclusive).

    ``end=None`` leaves the window open (for following a running job); ``start``
    is always there, so the client library never adds its 24-hour default.
    """
    clauses = [
        'resource.type="ml_job"',
        f"resource.labels.job_id={_quote(job_id)}",
        f'timestamp>="{rfc3339(start)}"',
    ]
    if end is not None:
        clauses.append(f'timestamp<"{rfc3339(end)}"')
    return " AND ".join(clauses)


def build_filter(query: LiveQuery) -> str:
    """The Cloud Logging filter for ``query``, with both window bounds explicit.

    >>> from datetime import UTC, datetime
    >>> w = Window(datetime(2024, 5, 1, tzinfo=UTC), datetime(2024, 5, 8, tzinfo=UTC))
    >>> build_filter(LiveQuery("p", "123", w))  # doctest: +NORMALIZE_WHITESPACE
    'resource.type="ml_job" AND resource.labels.job_id="123"
     AND timestamp>="2024-05-01T00:00:00Z" AND timestamp<"2024-05-08T00:00:00Z"'
    """
    return job_filter(query.job_id, query.window.start, query.window.end)
