"""Cloud Logging ``LogEntry`` objects, parsed or not, turned into records or skip reasons."""

from __future__ import annotations

import json
from typing import Any

import orjson

from analyzer.records import LogRecord, Origin, parse_timestamp, record_from_entry

INVALID_JSON = "invalid JSON"
NOT_AN_ENTRY = "not a LogEntry object"
NO_MESSAGE = "no message text"
INVALID_TIMESTAMP = "invalid timestamp"


class InvalidJson(ValueError):
    """A line that is not one JSON value."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def load_json(raw: bytes) -> Any:
    """The JSON value of ``raw`` (UTF-8), or InvalidJson.

    orjson reads nearly every line. It also refuses numbers beyond a float's range (``1e999``),
    which RFC 8259 leaves to the reader: such a line is read again by the standard library,
    as infinity, so that an odd number in a field nobody reads does not cost the message (the
    block decoder, which skips such fields, sees the same). What both refuse stays refused:
    NaN and Infinity, lone surrogates, invalid UTF-8, raw control characters.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise InvalidJson from None
    if _has_lone_surrogate(value):  # json lets "\ud800" through; orjson and msgspec do not
        raise InvalidJson
    return value


def _has_lone_surrogate(value: Any) -> bool:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


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
