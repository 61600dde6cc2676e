"""Reading one job's entries from Cloud Logging, as a :class:`~analyzer.ingest.records.Source`.

:func:`iter_entries` is the one read loop ``LiveSource``, ``fetch_to_file`` and
``follow`` share: ascending ``entries:list`` over an explicit window, retried
with backoff on 429/503 by resuming after the last entry delivered
(:class:`Cursor`), never restarting from the top, never delivering an entry twice.

Entries are read as the API's JSON through the client's own authorized
connection rather than through ``Client.list_entries``: that path turns each
entry into a ``LogEntry`` whose first use of every log name builds a ``Logger``,
and ``Logger()`` probes the GCE metadata server twice (up to 5 s each off GCP,
again on every follow poll); ``LogEntry.to_api_repr()`` also drops
``receiveTimestamp`` and cuts nanoseconds. ``list_entries`` stays the fallback
if a future client lacks the connection.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from analyzer.engines.live.client import PUBLIC_ENDPOINT, make_client, resolve_endpoint
from analyzer.engines.live.errors import (
    DEFAULT_BACKOFF,
    Backoff,
    MalformedAnswer,
    is_retryable,
    translate,
)
from analyzer.engines.live.query import LiveQuery, job_filter
from analyzer.ingest.entries import record_or_reason
from analyzer.ingest.records import NO_MESSAGE, InputStats, LogRecord, Origin, parse_timestamp

FORMAT = "cloud-logging-api"
DEFAULT_PAGE_SIZE = 1000
"""The API's largest page: fewest requests against the 60 reads/minute project quota."""

SKIP_NO_TEXT = NO_MESSAGE
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_PRUNE_AT = 4096


def entry_key(entry: dict[str, Any]) -> str:
    """What identifies one entry across reads: log name, ``insertId`` and timestamp.

    Cloud Logging itself deduplicates on ``insertId`` within a log and
    timestamp; an entry without one is keyed by its whole content.
    """
    insert_id = entry.get("insertId")
    if isinstance(insert_id, str) and insert_id:
        return f"{entry.get('logName', '')}\x00{insert_id}\x00{entry.get('timestamp', '')}"
    return json.dumps(entry, sort_keys=True, default=str)


def _moment(entry: dict[str, Any]) -> datetime | None:
    value = entry.get("timestamp")
    if not isinstance(value, str):
        return None
    try:
        return parse_timestamp(value)
    except ValueError:
        return None


@dataclass(slots=True)
class Cursor:
    """How far a read got: the newest timestamp delivered and the entries seen near it.

    A read resumes at ``newest - overlap`` with ``>=`` and drops entries already
    seen there. ``overlap`` is zero for a retry within one read; ``follow``
    uses a minute so entries ingested late (with an earlier timestamp than
    ones already shown) are still picked up.
    """

    overlap: timedelta = timedelta()
    newest: datetime | None = None
    _seen: dict[str, datetime] = field(default_factory=dict)
    _prune_at: int = _PRUNE_AT

    def resume_from(self, start: datetime) -> datetime:
        """Where the next read starts, never before the window's ``start``."""
        if self.newest is None:
            return start
        return max(start, self.newest - self.overlap)

    def admit(self, entry: dict[str, Any]) -> bool:
        """Record ``entry`` as delivered; False when it already was."""
        key = entry_key(entry)
        if key in self._seen:
            return False
        moment = _moment(entry) or self.newest or _EPOCH
        self._seen[key] = moment
        if self.newest is None or moment > self.newest:
            self.newest = moment
            if len(self._seen) > self._prune_at:
                self._prune()
        return True

    def _prune(self) -> None:
        assert self.newest is not None
        horizon = self.newest - self.overlap
        self._seen = {k: t for k, t in self._seen.items() if t >= horizon}
        # Grow the threshold so a long burst within the overlap does not prune every entry.
        self._prune_at = max(_PRUNE_AT, 2 * len(self._seen))


def api_json(entry: Any) -> dict[str, Any]:
    """One client ``LogEntry`` as API JSON (sink-shaped).

    ``to_api_repr()`` leaves out ``receiveTimestamp``; it is put back. Timestamps
    come back with microseconds (the library parses nanoseconds into datetime).
    """
    data: dict[str, Any] = entry.to_api_repr()
    received = getattr(entry, "received_timestamp", None)
    if isinstance(received, datetime):
        data["receiveTimestamp"] = received.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return data


def raw_entries(
    client: Any, project: str, filter_: str, page_size: int = DEFAULT_PAGE_SIZE
) -> Iterator[dict[str, Any]]:
    """Yield the entries ``filter_`` selects in ``project``, oldest first, as the API sent them.

    One ``entries:list`` request per page; errors are the client's
    ``google.api_core.exceptions``.
    """
    api_request = getattr(getattr(client, "_connection", None), "api_request", None)
    if api_request is None:
        for entry in client.list_entries(
            filter_=filter_, order_by="timestamp asc", page_size=page_size
        ):
            yield api_json(entry)
        return
    body: dict[str, Any] = {
        "resourceNames": [f"projects/{project}"],
        "filter": filter_,
        "orderBy": "timestamp asc",
        "pageSize": page_size,
    }
    while True:
        page = api_request(method="POST", path="/entries:list", data=body)
        # Whatever answered (a proxy's page, a wrong endpoint) may not be the API's shape.
        if not isinstance(page, dict):
            raise MalformedAnswer(f"is a JSON {type(page).__name__}, not an object")
        entries = page.get("entries", ())
        if not isinstance(entries, list | tuple):
            raise MalformedAnswer("has entries that are not a list")
        token = page.get("nextPageToken")
        if token is not None and not isinstance(token, str):
            raise MalformedAnswer("has a nextPageToken that is not a string")
        for entry in entries:
            if isinstance(entry, dict):
                yield entry
        # The API may answer an empty page with a token (it ran out of time): keep going.
        if not token:
            return
        body = {**body, "pageToken": token}


def iter_entries(
    client: Any,
    query: LiveQuery,
    cursor: Cursor,
    *,
    end: datetime | None,
    page_size: int = DEFAULT_PAGE_SIZE,
    backoff: Backoff = DEFAULT_BACKOFF,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[dict[str, Any]]:
    """Yield the job's entries from the cursor's position to ``end``, ascending, as API JSON.

    Raises SourceError for permission, credential, project and exhausted-retry
    failures.
    """
    endpoint = resolve_endpoint(query) or PUBLIC_ENDPOINT
    retries = 0
    while True:
        filter_ = job_filter(query.job_id, cursor.resume_from(query.window.start), end)
        try:
            for data in raw_entries(client, query.project, filter_, page_size):
                if cursor.admit(data):
                    # The retry budget bounds consecutive failures, not a long read's total.
                    retries = 0
                    yield data
            return
        except Exception as exc:
            if is_retryable(exc) and retries < backoff.attempts:
                sleep(backoff.delay(retries))
                retries += 1
                continue
            error = translate(exc, query.project, endpoint)
            if error is None:
                raise
            # "from None": the library's exception text may name a credentials file.
            raise error from None


class LiveSource:
    """One Vertex AI job's logs read live from Cloud Logging (a ``records.Source``).

    Records cite ``cloudlogging://<project>/<job_id>`` and the entry's 1-based
    position in the read. Nothing is requested before :meth:`records` is
    iterated; each iteration reads again and refills :attr:`stats`.
    """

    def __init__(
        self,
        query: LiveQuery,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        backoff: Backoff = DEFAULT_BACKOFF,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.query = query
        self._page_size = page_size
        self._backoff = backoff
        self._sleep = sleep
        self._stats = InputStats(path=query.origin_path, format=FORMAT)

    @property
    def stats(self) -> InputStats:
        """How the read went: one ``line`` per entry received."""
        return self._stats

    def records(self) -> Iterator[LogRecord]:
        """Yield the job's records in timestamp order over the query's window."""
        stats = self._stats = InputStats(path=self.query.origin_path, format=FORMAT)
        client = make_client(self.query)
        entries = iter_entries(
            client,
            self.query,
            Cursor(),
            end=self.query.window.end,
            page_size=self._page_size,
            backoff=self._backoff,
            sleep=self._sleep,
        )
        for entry in entries:
            stats.lines += 1
            # The one LogEntry mapping, with its skip reasons (no text, another resource).
            record = record_or_reason(entry, Origin(stats.path, stats.lines))
            if isinstance(record, str):
                stats.skip(record)
                continue
            stats.records += 1
            stats.used += 1
            yield record


def describe_window(query: LiveQuery) -> str:
    """The line a report shows about a live read: project, job and the window used."""
    return f"Cloud Logging project {query.project}, job {query.job_id}, window {query.window}"
