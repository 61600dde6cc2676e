"""Where each table shape keeps a LogEntry path: the naming rules of BigQuery's log sink and of
the Log Analytics view, applied to the paths of the one mapping table (``analyzer.ingest.records``).

A LogEntry's own fields (``insertId``, ``resource.type``, ``resource.labels``) keep their names
in a sink table; the keys inside the objects that are the user's (``labels``,
``resource.labels``, ``jsonPayload``) are renamed by :func:`sink_name`. The Log Analytics view
names the LogEntry's fields as its proto does (``insert_id``, ``json_payload``) and keeps the
user's objects as JSON columns, read inside with their keys as written.
"""

from __future__ import annotations

import re

from analyzer.ingest.records import PAYLOAD_PATH, EntryPath

# The LogEntry type's maps of strings (map<string, string>): a value there is a string.
STRING_MAPS: tuple[EntryPath, ...] = (("labels",), ("resource", "labels"))
# The objects whose keys are the user's, not the LogEntry type's.
USER_KEYED: tuple[EntryPath, ...] = (*STRING_MAPS, PAYLOAD_PATH)

_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_]")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def sink_name(key: str) -> str:
    """A user's key (a label's, a payload's) as BigQuery's log sink names its column.

    Cloud Logging's "BigQuery schema for logs": a field name holds only letters, digits and
    ``_`` (any other character becomes ``_``), user-supplied names are lower-cased, and a name
    starts with a letter or digit (leading underscores are removed), so
    ``ml.googleapis.com/trial_id`` is ``ml_googleapis_com_trial_id``. Two keys of one object
    can so share a column (``Message`` and ``message``): a table cannot tell them apart.
    """
    return _NOT_IN_NAME.sub("_", key).lower().lstrip("_")


def _user_keys_from(path: EntryPath) -> int:
    """The index of the first key of ``path`` that is the user's (``len(path)``: none)."""
    for keyed in USER_KEYED:
        if len(path) > len(keyed) and path[: len(keyed)] == keyed:
            return len(keyed)
    return len(path)


def sink_column(path: EntryPath) -> str:
    """The dotted column path of ``path`` in a sink table (``labels.ml_googleapis_com_job_id``)."""
    start = _user_keys_from(path)
    return ".".join((*path[:start], *(sink_name(key) for key in path[start:])))


def _snake(name: str) -> str:
    return _WORD_START.sub("_", name).lower()


def log_analytics_place(path: EntryPath) -> tuple[str, EntryPath]:
    """The Log Analytics column of ``path`` and the keys to read inside its JSON value (none:
    the column is the value): ``("labels", "trial_id")`` is ``("labels", ("trial_id",))``,
    ``("receiveTimestamp",)`` is ``("receive_timestamp", ())``."""
    start = _user_keys_from(path)
    return ".".join(_snake(key) for key in path[:start]), path[start:]


def in_string_map(path: EntryPath) -> bool:
    """True when ``path`` is a key of one of the LogEntry's maps of strings."""
    return any(len(path) == len(keyed) + 1 and path[:-1] == keyed for keyed in STRING_MAPS)


def json_path(keys: EntryPath) -> str:
    """``keys`` as a quoted JSONPath (``$."ml.googleapis.com/trial_id"``), in a SQL literal."""
    for key in keys:
        if any(c in key for c in "\"'\\\n\r"):
            raise ValueError(f"a key with a quote or a backslash: {key!r}")
    return "'$" + "".join(f'."{key}"' for key in keys) + "'"


def json_member(column: str, keys: EntryPath) -> str:
    """The JSON value at ``keys`` inside the JSON ``column``: BigQuery's field access when
    every key is an identifier (``c_json_payload.attrs.tag``), else ``JSON_QUERY``."""
    if all(_IDENTIFIER.fullmatch(key) for key in keys):
        return ".".join((column, *keys))
    return f"JSON_QUERY({column}, {json_path(keys)})"
