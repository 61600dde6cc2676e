"""Cloud Logging ``LogEntry`` objects, parsed or not, turned into records or skip reasons."""

from __future__ import annotations

from typing import Any

from analyzer.records import LogRecord, Origin, parse_timestamp, record_from_entry

INVALID_JSON = "invalid JSON"
NOT_AN_ENTRY = "not a LogEntry object"
NO_MESSAGE = "no message text"
INVALID_TIMESTAMP = "invalid timestamp"


def record_or_reason(entry: Any, origin: Origin) -> LogRecord | str:
    """The record for a decoded JSON value, or why it gives none (a skip reason)."""
    if not isinstance(entry, dict):
        return NOT_AN_ENTRY
    try:
        return record_from_entry(entry, origin)
    except (ValueError, OverflowError):
        pass
    raw_time = entry.get("timestamp") or entry.get("receiveTimestamp")
    if isinstance(raw_time, str):
        try:
            parse_timestamp(raw_time)
        except (ValueError, OverflowError):
            return INVALID_TIMESTAMP
    return NO_MESSAGE
