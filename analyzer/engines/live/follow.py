"""``diagnose --follow``: poll a running job's logs and hand over what is new.

Each poll asks for entries from a minute before the newest one already seen
(entries can be ingested a little late, with earlier timestamps) and drops
those already delivered, so the callback sees every entry once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from enum import StrEnum

from analyzer.core.errors import SourceError
from analyzer.engines.live.client import make_client
from analyzer.engines.live.errors import DEFAULT_BACKOFF, Backoff
from analyzer.engines.live.query import LiveQuery
from analyzer.engines.live.source import DEFAULT_PAGE_SIZE, Cursor, iter_entries
from analyzer.ingest.records import LogRecord, Origin, record_from_entry

DEFAULT_OVERLAP = timedelta(minutes=1)


class FollowEnd(StrEnum):
    """Why :func:`follow` returned."""

    JOB_ENDED = "job_ended"  # the callback returned True
    INTERRUPTED = "interrupted"  # Ctrl-C (KeyboardInterrupt)
    MAX_POLLS = "max_polls"  # the poll limit given was reached


def follow(
    query: LiveQuery,
    on_records: Callable[[list[LogRecord]], bool],
    *,
    interval: float = 5.0,
    overlap: timedelta = DEFAULT_OVERLAP,
    max_polls: int | None = None,
    page_size: int = DEFAULT_PAGE_SIZE,
    backoff: Backoff = DEFAULT_BACKOFF,
    sleep: Callable[[float], None] = time.sleep,
    on_quiet: Callable[[], bool] | None = None,
) -> FollowEnd:
    """Poll the job's entries every ``interval`` seconds and pass new records to ``on_records``.

    The first poll delivers everything from ``query.window.start``; the
    window's end is ignored (following has no end but the job's). Records
    cite ``cloudlogging://<project>/<job_id>`` and their running position.
    ``on_records`` is called only with new records and returns True to stop
    (the job ended). ``on_quiet`` is called after a poll that brought nothing
    new, and returns True to stop too: silence is news when a job may hang
    (a worker's silence grows with the clock, not with its lines). Ctrl-C stops
    cleanly. Cloud Logging allows 60 list requests a minute per project: keep
    ``interval`` at a few seconds.
    Raises SourceError (a failure that retries did not fix).
    """
    if interval <= 0:
        raise SourceError(f"invalid follow interval {interval}: must be more than 0 seconds")
    path = query.origin_path
    position = 0
    polls = 0
    try:
        client = make_client(query)
        cursor = Cursor(overlap=overlap)
        while True:
            batch: list[LogRecord] = []
            for entry in iter_entries(
                client,
                query,
                cursor,
                end=None,
                page_size=page_size,
                backoff=backoff,
                sleep=sleep,
            ):
                position += 1
                try:
                    batch.append(record_from_entry(entry, Origin(path, position)))
                except ValueError:
                    # No text, nothing to show; its position still counts so lines stay stable.
                    continue
            polls += 1
            if batch and on_records(batch):
                return FollowEnd.JOB_ENDED
            if not batch and on_quiet is not None and on_quiet():
                return FollowEnd.JOB_ENDED
            if max_polls is not None and polls >= max_polls:
                return FollowEnd.MAX_POLLS
            sleep(interval)
    except KeyboardInterrupt:
        return FollowEnd.INTERRUPTED
