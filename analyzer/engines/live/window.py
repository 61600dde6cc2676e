"""The time window of a live query, always explicit and in UTC.

``google-cloud-logging`` silently adds ``timestamp>="<now - 24h>"`` to a filter
that does not mention ``timestamp``; jobdoctor always sends both bounds and
states them in its report, so a job older than a day is never half-read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from analyzer.core.errors import SourceError
from analyzer.ingest.records import parse_timestamp

DEFAULT_SPAN = timedelta(days=7)
"""The window when neither ``--since`` nor ``--start`` is given (a job's default timeout)."""

_UNITS = {
    "w": timedelta(weeks=1),
    "d": timedelta(days=1),
    "h": timedelta(hours=1),
    "m": timedelta(minutes=1),
    "s": timedelta(seconds=1),
}
_SPAN_PART = re.compile(r"(\d+)([wdhms])")


@dataclass(frozen=True, slots=True)
class Window:
    """A half-open UTC time range ``[start, end)`` of log entries to read."""

    start: datetime
    end: datetime

    def __str__(self) -> str:
        span = format_span(self.end - self.start)
        return f"{rfc3339(self.start)} .. {rfc3339(self.end)} ({span})"

    def to_dict(self) -> dict[str, str]:
        """The window as JSON-ready RFC 3339 strings."""
        return {"start": rfc3339(self.start), "end": rfc3339(self.end)}


def rfc3339(moment: datetime) -> str:
    """``moment`` in UTC as RFC 3339 with ``Z``; microseconds only when non-zero."""
    utc = moment.astimezone(UTC)
    if utc.microsecond:
        return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return utc.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_span(text: str) -> timedelta:
    """Parse a duration such as ``7d``, ``12h``, ``30m``, ``90s``, ``2w`` or ``1d12h``.

    Raises SourceError for anything else, or for a zero duration.
    """
    compact = text.strip().lower().replace(" ", "")
    parts = _SPAN_PART.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise SourceError(
            f"invalid --since {text!r}: use a number and a unit, e.g. 7d, 12h, 30m, 90s or 1d12h"
        )
    span = sum((int(n) * _UNITS[u] for n, u in parts), timedelta())
    if span <= timedelta():
        raise SourceError(f"invalid --since {text!r}: the duration must be more than zero")
    return span


def format_span(span: timedelta) -> str:
    """The inverse of :func:`parse_span`, for the report: ``7d``, ``1d12h``, ``45m``."""
    seconds = int(span.total_seconds())
    out = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            out.append(f"{count}{unit}")
    return "".join(out) or "0s"


def _moment(text: str, option: str) -> datetime:
    try:
        return parse_timestamp(text)
    except ValueError:
        raise SourceError(
            f"invalid {option} {text!r}: use RFC 3339, e.g. 2024-05-06T10:00:00Z"
            " (a time without a zone is taken as UTC)"
        ) from None


def parse_window(
    since: str | None,
    start: str | None,
    end: str | None,
    *,
    now: datetime | None = None,
) -> Window:
    """Turn ``--since`` / ``--start`` / ``--end`` into an explicit UTC window.

    - ``since`` alone: the last ``since`` up to now; with ``end``: the ``since``
      before ``end``. ``since`` and ``start`` together are refused.
    - ``start`` (and optionally ``end``, default now).
    - nothing: the last 7 days (:data:`DEFAULT_SPAN`); ``end`` alone: the 7 days before it.

    Raises SourceError on a malformed value or an empty window.
    """
    current = (now or datetime.now(UTC)).astimezone(UTC)
    if current.microsecond:
        # Whole seconds read better in the report; rounding up keeps "now" inside the window.
        current = current.replace(microsecond=0) + timedelta(seconds=1)
    if since is not None and start is not None:
        raise SourceError("give either --since or --start, not both")
    upper = _moment(end, "--end") if end is not None else current
    if start is not None:
        lower = _moment(start, "--start")
    elif since is not None:
        lower = upper - parse_span(since)
    else:
        lower = upper - DEFAULT_SPAN
    if lower >= upper:
        raise SourceError(
            f"empty time window: start {rfc3339(lower)} is not before end {rfc3339(upper)}"
        )
    return Window(start=lower, end=upper)
