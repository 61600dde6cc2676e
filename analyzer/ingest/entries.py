"""Cloud Logging ``LogEntry`` objects, parsed or not, turned into records or skip reasons.

A line is parsed by orjson; msgspec (the block decoder's, :mod:`analyzer.classify._fastscan.
blockdecode`) would do too, and one library would be simpler, but it costs: per sink line
msgspec took 586 ms against orjson's 569 (+3%, the hottest path of the plain reader), and the
JSON report twice as long to write (26.5 ms against 12.9 for 18 MB), while msgspec's structs
are what makes the block decoder fast. Both stay (``bench/library_choices.py json``, CPU
medians of interleaved runs, issue 28 point 4).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from analyzer.ingest.records import NO_MESSAGE, LogRecord, Origin, entry_fields, record_from_fields

INVALID_JSON = "invalid JSON"
# The input's last line, without its line end, holding the start of a JSON object that the
# decoder runs out of data inside: a paste or an export cut short, not a damaged line.
CUT_SHORT = "cut short: the file ends inside a JSON object"
NOT_AN_ENTRY = "not a LogEntry object"
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


def load_json_repairing(raw: bytes) -> tuple[Any, bool]:
    """:func:`load_json` of ``raw``; a line that is not valid UTF-8 is read with its bad
    bytes replaced (U+FFFD), and the second value says so (the reader counts it)."""
    try:
        return load_json(raw), False
    except InvalidJson:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return load_json(raw.decode("utf-8", "replace").encode("utf-8")), True
        raise


def invalid_reason(raw: bytes, last: bool) -> str:
    """Why ``raw``, a line :func:`load_json` refused, is skipped: :data:`CUT_SHORT` when it is
    the input's last line, without its line end (``last``), and a JSON object the input's end
    cut; else :data:`INVALID_JSON`."""
    if not last or not raw.lstrip().startswith(b"{"):
        return INVALID_JSON
    # A cut may fall inside a UTF-8 sequence: read with it replaced, as a kept line would be.
    try:
        orjson.loads(raw.decode("utf-8", "replace").encode("utf-8"))
    except orjson.JSONDecodeError as error:
        return CUT_SHORT if error.msg.startswith("unexpected end of data") else INVALID_JSON
    return INVALID_JSON


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
    fields = entry_fields(entry)
    if fields == NO_MESSAGE and _api_status(entry):
        # A Google API's error body without its "error" wrapper, {"code": 429, "message":
        # "The following quota metrics exceed quota limits: ..."}: the API's refusal, read as
        # the text gcloud would print of it (rule api.creation-refused reads its code and
        # status; platform.md section 9).
        return LogRecord(None, None, None, "ERROR", api_status_text(entry), origin)
    if isinstance(fields, str):
        return fields
    try:
        return record_from_fields(fields, origin)
    except (ValueError, OverflowError):
        return INVALID_TIMESTAMP


# google.rpc.Status, the body of a Google API's error (its "error" object): an integer code and
# a message, a status name and details beside them, no other key.
_STATUS_KEYS = frozenset({"code", "message", "status", "details"})


# The status a code stands for where the body names none: HTTP 429 is google.rpc
# RESOURCE_EXHAUSTED alone (400 may be INVALID_ARGUMENT, FAILED_PRECONDITION or OUT_OF_RANGE).
_STATUS_OF_CODE = {429: "RESOURCE_EXHAUSTED"}


def api_status_text(entry: dict[str, Any]) -> str:
    """A google.rpc.Status as one line: ``429 RESOURCE_EXHAUSTED: message``."""
    code = entry["code"]
    status = entry.get("status")
    if not isinstance(status, str) or not status:
        status = _STATUS_OF_CODE.get(code, "")
    return f"{code} {status}: {entry['message']}" if status else f"{code}: {entry['message']}"


def _api_status(entry: dict[str, Any]) -> bool:
    """Whether ``entry`` is a google.rpc.Status (see :data:`_STATUS_KEYS`)."""
    return (
        isinstance(entry.get("code"), int)
        and isinstance(entry.get("message"), str)
        and entry.keys() <= _STATUS_KEYS
    )
