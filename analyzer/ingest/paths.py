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

from analyzer.errors import InputError

STDIN = "-"

_SINK_NAME = re.compile(r"^(?P<hour>.*)_(?P<kind>[SA])(?P<shard>\d+)(?::(?P<unix>\d+))?\.json$")
_GLOB_CHARS = frozenset("*?[")


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


def _expand_one(path: str, problems: list[str] | None = None) -> list[str]:
    if path == STDIN:
        return [STDIN]
    if os.path.isdir(path):
        if not os.access(path, os.R_OK | os.X_OK):
            raise InputError(f"{path}: permission denied, make the directory readable")
        files = _walk(path, problems)
        if not files:
            raise InputError(f"{path}: empty directory, point to the directory holding the logs")
        return files
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
        return expanded
    if os.path.islink(path):
        try:
            os.stat(path)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise InputError(f"{path}: a link loop, not followed") from None
        raise InputError(f"{path}: a dangling link (its target does not exist), check the path")
    raise InputError(f"{path}: no such file or directory, check the path")


def expand_paths(paths: Sequence[str], problems: list[str] | None = None) -> list[str]:
    """Input files for ``paths``, in argument order, each argument's files sorted.

    The same file named twice (directly, by a glob or in a directory) is read
    once. Raises InputError for a missing or unreadable path, an empty directory,
    or a glob that matches nothing; with a ``problems`` list, appends each such
    message there instead (one line naming the path) and goes on with the other
    paths, as a batch does; link loops in walked folders are said there too.
    """
    if not paths:
        raise InputError("no input given, pass a file, a directory, a glob pattern or '-'")
    seen: set[str] = set()
    files: list[str] = []
    for path in paths:
        try:
            expanded = _expand_one(path, problems)
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
