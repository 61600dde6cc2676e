"""A typed face for the ``regex`` package (it ships no type stubs).

``regex`` is used instead of ``re`` for one reason: every search accepts a
``timeout``, so a runaway pattern in a user's rule file cannot hang a run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, cast

import regex as _regex


class Match(Protocol):
    """The part of ``regex.Match`` the rule book uses."""

    def start(self, group: int | str = 0) -> int: ...
    def end(self, group: int | str = 0) -> int: ...
    def group(self, group: int | str = 0) -> str | None: ...


class Pattern(Protocol):
    """The part of ``regex.Pattern`` the rule book uses."""

    @property
    def pattern(self) -> str: ...
    @property
    def groupindex(self) -> dict[str, int]: ...
    @property
    def groups(self) -> int: ...
    def search(
        self, text: str, pos: int = 0, endpos: int | None = None, *, timeout: float | None = None
    ) -> Match | None: ...
    def finditer(
        self, text: str, *, overlapped: bool = False, timeout: float | None = None
    ) -> Iterator[Match]: ...


error: type[Exception] = _regex.error


def compile_pattern(source: str) -> Pattern:
    """Compile ``source`` (raises :data:`error` when it is not a valid pattern)."""
    return cast(Pattern, _regex.compile(source, _regex.VERSION0))
