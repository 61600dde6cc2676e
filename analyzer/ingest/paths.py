"""Expanding command-line paths into input files: files, ``-``, directories, globs.

A Cloud Logging sink to Cloud Storage writes hourly files named
``<log_id>/YYYY/MM/DD/HH:00:00_HH:59:59_S<n>.json``, and late entries in
``..._A<n>:<unixtime>.json``; directories are walked recursively and sorted so
that each hour's regular shards come before its late ones.
"""

from __future__ import annotations

import errno
import glob
import os
import re
import stat
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Protocol

from analyzer.core.errors import InputError

STDIN = "-"

_SINK_NAME = re.compile(r"^(?P<hour>.*)_(?P<kind>[SA])(?P<shard>\d+)(?::(?P<unix>\d+))?\.json$")
_GLOB_CHARS = frozenset("*?[")
# The hour a sink file holds, from its path: .../YYYY/MM/DD/HH:00:00_HH:59:59_S0.json, late
# entries of that hour in ..._A0:<unixtime>.json.
_SINK_HOUR = re.compile(
    r"(?:^|/)(\d{4})/(\d\d)/(\d\d)/(\d\d):00:00_\4:59:59_(?:S\d+|A\d+:\d+)\.json$"
)


class TimeWindow(Protocol):
    """A half-open UTC range ``[start, end)`` (``analyzer.engines.live.Window`` is one)."""

    @property
    def start(self) -> datetime: ...

    @property
    def end(self) -> datetime: ...


def sink_hour(path: str) -> datetime | None:
    """The UTC hour whose entries the sink file at ``path`` holds (``/``-separated), or None
    when the path is not an hourly sink file's."""
    found = _SINK_HOUR.search(path.replace(os.sep, "/"))
    if found is None:
        return None
    try:
        year, month, day, hour = map(int, found.groups())
        return datetime(year, month, day, hour, tzinfo=UTC)
    except ValueError:  # 2024/02/31: not a date, so not the sink's
        return None


def in_window(path: str, window: TimeWindow) -> bool:
    """Whether ``path`` is an hourly sink file whose hour overlaps ``window``."""
    hour = sink_hour(path)
    return hour is not None and hour < window.end and hour + timedelta(hours=1) > window.start


def _name_key(name: str) -> tuple[str, int, int, int, str]:
    match = _SINK_NAME.match(name)
    if match is None:
        return (name, 0, 0, 0, name)
    kind = 0 if match["kind"] == "S" else 1
    return (match["hour"], kind, int(match["shard"]), int(match["unix"] or 0), name)


def _path_key(path: str) -> tuple[tuple[str, ...], tuple[str, int, int, int, str]]:
    head, name = os.path.split(path)
    return (tuple(head.split(os.sep)), _name_key(name))


def _walk(directory: str, problems: list[str] | None = None) -> list[str]:
    found: list[str] = []
    for root, dirs, files in os.walk(directory):
        # Hidden directories (.git, editor caches) hold no logs.
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        if problems is not None:
            # Links to directories are not followed (os.walk's default); one that leads back
            # up the tree (or to itself) is a loop, which is said.
            problems.extend(
                f"{os.path.join(root, name)}: a link loop, not followed"
                for name in dirs
                if _loops(os.path.join(root, name))
            )
        paths = [os.path.join(root, name) for name in files if not name.startswith(".")]
        # A pipe or socket in a folder is not an export (and a pipe nobody writes to would
        # be waited on forever); given by name, it is read.
        found.extend(path for path in paths if not special_file(path))
    return sorted(found, key=_path_key)


def _loops(path: str) -> bool:
    """Whether the link ``path`` leads to a directory that holds it (itself included)."""
    if not os.path.islink(path):
        return False
    target = os.path.realpath(path)
    here = os.path.realpath(os.path.dirname(path))
    return here == target or here.startswith(target.rstrip(os.sep) + os.sep)


def special_file(path: str) -> bool:
    """Whether ``path`` exists and is not a regular file: a pipe (the shell's ``<(...)``), a
    socket or a device, which can be read only once."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:  # missing (a broken link) or unreadable: said when it is opened
        return False


def _check_readable(path: str) -> None:
    # A pipe (the shell's <(...)) is opened once, by its reader: opening it here as well would
    # take the writer's data away from it.
    if special_file(path):
        if not os.access(path, os.R_OK):
            raise InputError(f"{path}: permission denied, make the file readable")
        return
    try:
        with open(path, "rb"):
            pass
    except PermissionError:
        raise InputError(f"{path}: permission denied, make the file readable") from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise InputError(f"{path}: a link loop, not followed") from None
        if error.errno == errno.ENOENT and os.path.islink(path):
            raise InputError(
                f"{path}: a dangling link (its target does not exist), check the path"
            ) from None
        raise InputError(f"{path}: cannot be opened ({error.strerror}), check the path") from None


def _windowed(path: str, files: list[str], window: TimeWindow | None) -> list[str]:
    """``files`` found under ``path``; with a window, only its hourly sink files in it.

    A folder without any hourly sink file (a folder of ordinary exports) is read whole: the
    window then keeps the jobs whose span meets it, as for files named one by one.
    """
    if window is None or not any(sink_hour(file) is not None for file in files):
        return files
    kept = [file for file in files if in_window(file, window)]
    if not kept:
        raise InputError(empty_window_message(path, files, window))
    return kept


def empty_window_message(path: str, files: Sequence[str], window: TimeWindow) -> str:
    """What to say when no sink file under ``path`` falls in ``window``: the hours there are."""
    hours = sorted(hour for hour in map(sink_hour, files) if hour is not None)
    shown = f"{window.start:%Y-%m-%dT%H:%M:%SZ} .. {window.end:%Y-%m-%dT%H:%M:%SZ}"
    if not hours:
        return f"{path}: no hourly sink file (YYYY/MM/DD/HH:00:00_HH:59:59_S0.json) in it"
    return (
        f"{path}: no sink file in the window {shown}; its files hold"
        f" {hours[0]:%Y-%m-%dT%H}:00Z .. {hours[-1]:%Y-%m-%dT%H}:59Z, widen --since or set"
        " --start/--end"
    )


def _expand_one(
    path: str, problems: list[str] | None = None, window: TimeWindow | None = None
) -> list[str]:
    if path == STDIN:
        return [STDIN]
    if os.path.isdir(path):
        if not os.access(path, os.R_OK | os.X_OK):
            raise InputError(f"{path}: permission denied, make the directory readable")
        files = _walk(path, problems)
        if not files:
            raise InputError(f"{path}: empty directory, point to the directory holding the logs")
        return _windowed(path, files, window)
    if os.path.exists(path):
        return [path]
    if _GLOB_CHARS.intersection(path):
        matches = sorted(glob.glob(path, recursive=True), key=_path_key)
        if not matches:
            raise InputError(f"{path}: no file matches this pattern, check the pattern")
        expanded: list[str] = []
        for match in matches:
            if os.path.isdir(match):
                expanded.extend(_walk(match, problems))
            elif not os.path.basename(match).startswith("."):
                expanded.append(match)
        return _windowed(path, expanded, window)
    if os.path.islink(path):
        try:
            os.stat(path)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise InputError(f"{path}: a link loop, not followed") from None
        raise InputError(f"{path}: a dangling link (its target does not exist), check the path")
    raise InputError(f"{path}: no such file or directory, check the path")


def expand_paths(
    paths: Sequence[str],
    problems: list[str] | None = None,
    window: TimeWindow | None = None,
) -> list[str]:
    """Input files for ``paths``, in argument order, each argument's files sorted.

    The same file named twice (directly, by a glob or in a directory) is read
    once. Raises InputError for a missing or unreadable path, an empty directory,
    or a glob that matches nothing; with a ``problems`` list, appends each such
    message there instead (one line naming the path) and goes on with the other
    paths, as a batch does; link loops in walked folders are said there too.
    With ``window``, a directory or glob gives only its hourly sink files whose
    hour overlaps it (a file named by itself is always read); none in it is a
    problem of that path.
    """
    if not paths:
        raise InputError("no input given, pass a file, a directory, a glob pattern or '-'")
    seen: set[str] = set()
    files: list[str] = []
    for path in paths:
        try:
            expanded = _expand_one(path, problems, window)
        except InputError as error:
            if problems is None:
                raise
            problems.append(str(error))
            continue
        for file in expanded:
            identity = file if file == STDIN else os.path.realpath(file)
            if identity in seen:
                continue
            seen.add(identity)
            if file != STDIN:
                try:
                    _check_readable(file)
                except InputError as error:
                    if problems is None:
                        raise
                    problems.append(str(error))
                    continue
            files.append(file)
    return files
