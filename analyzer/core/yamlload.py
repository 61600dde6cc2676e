"""YAML reading through libyaml when PyYAML has it: the pure-Python loader takes ~60 ms for
the advice file alone, a third of a small diagnosis."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """``yaml.safe_load``, through libyaml when available."""
    return yaml.load(text, Loader=LOADER)


def compose(text: str) -> yaml.Node | None:
    """``yaml.compose`` (nodes with their line marks), through libyaml when available."""
    return yaml.compose(text, Loader=LOADER)


# A rule or policy file is a few KB; what is larger (a link to a log, to /dev/zero) is not one.
MAX_FILE_BYTES = 1 << 20


class NotARegularFile(OSError):
    """A configuration path that is a FIFO, a device or a socket, or that is too large."""


def read_config(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of the regular file ``path`` of at most ``limit`` bytes.

    Opened without waiting (a FIFO nobody writes to would block) and checked on the open
    descriptor; raises :class:`NotARegularFile` (an OSError) naming what is wrong, OSError
    when it cannot be read, UnicodeDecodeError.
    """
    handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(handle, "rb") as stream:
        mode = os.fstat(handle).st_mode
        if not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
            raise NotARegularFile(f"{kind}, not a regular file; rule files are plain files")
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise NotARegularFile(f"larger than {limit >> 20} MiB: not a rule file")
    return data.decode("utf-8")


def first_alias(text: str) -> tuple[int, int, str] | None:
    """Where ``text`` first uses a YAML anchor (``&name``) or alias (``*name``): 1-based line,
    column and which; None when it uses neither.

    An alias makes one node stand for many: a few hundred bytes of them ("billion laughs")
    expand to gigabytes once a tree is built from the nodes. Reads events only, which is
    linear in the text.
    """
    try:
        for event in yaml.parse(text, Loader=LOADER):
            anchor = getattr(event, "anchor", None)
            if anchor is None:
                continue
            what = f"alias *{anchor}" if isinstance(event, yaml.AliasEvent) else f"anchor &{anchor}"
            mark = event.start_mark
            return (mark.line + 1, mark.column + 1, what) if mark else (1, 1, what)
    except yaml.YAMLError:
        return None  # a syntax error: the parse that follows reports it where it is
    return None
