"""The rule book's data: placeholders, templates, rules, examples, problems.

Everything here is built once at load time by :mod:`analyzer.rulebook.loader`
and never changes afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from analyzer.rulebook._regex import Pattern
from analyzer.rulebook.events import Category, EventKind, Writer

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Location:
    """A place in a rule file: path and 1-based line and column."""

    path: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong (``error``) or risky (``warning``) in a rule file."""

    path: str
    line: int
    col: int
    severity: Severity
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}:{self.col}"
        if self.severity == "warning":
            return f"{where}: warning: {self.message}"
        return f"{where}: {self.message}"

    @classmethod
    def at(cls, location: Location, message: str, severity: Severity = "error") -> Problem:
        """A problem at ``location``."""
        return cls(location.path, location.line, location.col, severity, message)


class FieldType(StrEnum):
    """How a captured placeholder value becomes a field value."""

    TEXT = "text"  # the normalised text: NFKC per character, invisible marks gone, one space
    INT = "int"  # a decimal integer (full-width digits allowed)
    # "137" -> 137; legacy "9(SIGKILL)" -> 9 plus field "signal"; Python's return code "-9"
    # -> -9, and "<Signals.SIGKILL: 9>" -> -9 plus field "signal"
    EXIT_CODE = "exit_code"


@dataclass(frozen=True, slots=True)
class Placeholder:
    """A capitalised word in templates (``REPLICA_NAME``) and what it captures."""

    name: str
    field: str
    pattern: str
    type: FieldType
    location: Location


@dataclass(frozen=True, slots=True)
class Capture:
    """A named group of a compiled template: which field it fills, and how."""

    group: str
    field: str
    type: FieldType


@dataclass(frozen=True, slots=True)
class Template:
    """One sentence of one rule in one language, compiled into a tolerant regex.

    ``literal`` is a lower-cased word every match must contain (the
    prefilter's key); None for raw patterns without declared literals.
    """

    lang: str
    text: str
    regex: Pattern
    captures: tuple[Capture, ...]
    literals: tuple[str, ...]
    location: Location


@dataclass(frozen=True, slots=True)
class MatchExample:
    """A text the rule must match; ``fields`` holds one mapping per expected match."""

    text: str
    fields: tuple[Mapping[str, str | int], ...]
    lang: str | None
    location: Location


@dataclass(frozen=True, slots=True)
class NoMatchExample:
    """A text the rule must not match."""

    text: str
    location: Location


@dataclass(frozen=True, slots=True)
class Rule:
    """A validated, compiled rule.

    ``whole`` rules (lifecycle lines) must be the entire message; the others
    (error texts, often followed by a traceback tail) match anywhere in it. ``writer``
    says who writes the message (``written_by``): a service-only message inside a worker's
    output is that worker's evidence, not the job's lifecycle.
    """

    id: str
    kind: EventKind
    category: Category | None
    detail: str | None
    templates: tuple[Template, ...]
    whole: bool
    match_examples: tuple[MatchExample, ...]
    no_match_examples: tuple[NoMatchExample, ...]
    location: Location
    writer: Writer = Writer.ANY

    @property
    def languages(self) -> tuple[str, ...]:
        """The languages of the rule's templates, in file order, without repeats."""
        return tuple(dict.fromkeys(t.lang for t in self.templates))
