"""The rule book compiled for RE2, the regex engine of BigQuery and DuckDB.

Templates are compiled by jobdoctor for Python's ``regex`` package. RE2 reads the same syntax
but for two constructs the built-in rules use: ``\\Z`` (RE2 writes ``\\z``) and a look-behind
(RE2 has none). A look-behind of one character class at the start of a top-level alternative
is rewritten as ``(?:^|[^...])`` (negative) or ``[...]`` (positive): the same answer to "does
the text contain a match", which is all the SQL asks. Anything else RE2 refuses, or that it
would read differently (``{,n}``), makes the template *Python only*: its literal word still
selects rows, and Python decides.

RE2's verdict is only ever used on ASCII texts, whitespace-folded as :func:`normalize` folds
them; there the two engines agree (``\\w``, ``\\d``, ``\\b``, case folding and ``\\s`` only
differ beyond ASCII).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from analyzer.core.errors import SourceError
from analyzer.rulebook.model import Location, Problem, Rule

INSTALL_HINT = "pip install 'jobdoctor[bigquery]'"


@dataclass(frozen=True, slots=True)
class Re2Template:
    """One template of one rule as the SQL sees it.

    ``literal`` is the prefilter's word (lower case) or None (a candidate for every text);
    ``source`` the RE2 pattern, or None when the template is Python only (``reason`` says
    why). ``ascii_literal`` is False for a word no ASCII text can hold (then the template
    can only match texts the SQL returns anyway, the non-ASCII ones).
    """

    rule: str
    lang: str
    literal: str | None
    source: str | None
    reason: str | None
    location: Location

    @property
    def ascii_literal(self) -> bool:
        return self.literal is None or self.literal.isascii()


def _class_end(pattern: str, start: int) -> int:
    """The index after the ``]`` closing the character class opened at ``start``, or -1."""
    index = start + 1
    if index < len(pattern) and pattern[index] == "^":
        index += 1
    if index < len(pattern) and pattern[index] == "]":
        index += 1  # a leading ] is a literal
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "[" and pattern.startswith("[:", index):
            close = pattern.find(":]", index + 2)
            if close == -1:
                return -1
            index = close + 2
            continue
        if char == "]":
            return index + 1
        index += 1
    return -1


def _one_class(pattern: str, start: int) -> tuple[str, int] | None:
    """The one-character unit at ``start`` (a class, an escape or a plain character) and the
    index after it, when a ``)`` follows it; else None."""
    if start >= len(pattern):
        return None
    char = pattern[start]
    if char == "[":
        end = _class_end(pattern, start)
        if end == -1:
            return None
        unit = pattern[start:end]
    elif char == "\\" and start + 1 < len(pattern) and pattern[start + 1] in "dDwWsS":
        unit, end = pattern[start : start + 2], start + 2
    elif char == "\\" and start + 1 < len(pattern) and not pattern[start + 1].isalnum():
        unit, end = f"[{pattern[start : start + 2]}]", start + 2
    elif char.isalnum() or char in " -_:/=,;@#%&~<>`'\"":
        unit, end = f"[{_escape_char(char)}]", start + 1
    else:
        return None
    if end < len(pattern) and pattern[end] == ")":
        return unit, end + 1
    return None


def _escape_char(char: str) -> str:
    return char if char.isalnum() else "\\" + char


def _negated(unit: str) -> str:
    """The class matching any one character ``unit`` does not."""
    if unit.startswith("[^"):
        return "[" + unit[2:]
    if unit.startswith("["):
        return "[^" + unit[1:]
    # \d \w \s and their negations
    letter = unit[1]
    return "\\" + (letter.upper() if letter.islower() else letter.lower())


def to_re2(pattern: str) -> tuple[str | None, str | None]:
    """``pattern`` (Python ``regex`` syntax) as RE2 source with ASCII-only text, and None;
    or None and the reason RE2 cannot be given it."""
    out: list[str] = []
    depth = 0
    # At the start of a top-level alternative: where a look-behind may be rewritten.
    at_branch_start = True
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            if index + 1 >= len(pattern):
                return None, "a trailing backslash"
            escaped = pattern[index + 1]
            if escaped == "Z":
                out.append("\\z")
            elif not escaped.isascii():
                out.append(f"\\x{{{ord(escaped):x}}}")
            else:
                out.append(char + escaped)
            index += 2
            at_branch_start = False
            continue
        if char == "[":
            end = _class_end(pattern, index)
            if end == -1:
                return None, "an unclosed character class"
            out.append(_ascii_only(pattern[index:end]))
            index = end
            at_branch_start = False
            continue
        if pattern.startswith(("(?<=", "(?<!"), index):
            negative = pattern[index + 3] == "!"
            unit = _one_class(pattern, index + 4)
            if unit is None or depth != 0 or not at_branch_start:
                return None, "a look-behind RE2 cannot express"
            body, index = unit
            out.append(f"(?:^|{_negated(body)})" if negative else body)
            continue
        if pattern.startswith(("(?=", "(?!"), index):
            return None, "a look-ahead (RE2 has none)"
        if pattern.startswith("{,", index):
            return None, "a '{,n}' repeat (RE2 reads it as text)"
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            out.append(char)
            index += 1
            at_branch_start = True
            continue
        out.append(char if char.isascii() else f"\\x{{{ord(char):x}}}")
        index += 1
        at_branch_start = False
    return "".join(out), None


def _ascii_only(unit: str) -> str:
    return "".join(c if c.isascii() else f"\\x{{{ord(c):x}}}" for c in unit)


@cache
def _re2_module() -> Any:
    try:
        import re2
    except ImportError:
        return None
    return re2


def re2_refuses(source: str) -> str | None:
    """Why RE2 refuses ``source`` (its own error message), or None when it compiles.

    Raises SourceError when google-re2 is not installed (the ``bigquery`` extra).
    """
    module = _re2_module()
    if module is None:
        raise SourceError(f"compiling the rules for BigQuery needs google-re2: {INSTALL_HINT}")
    options = module.Options()
    options.log_errors = False  # RE2 would print every refusal on stderr
    try:
        module.compile(source, options)
    except Exception as exc:  # re2.error, which has no common base to name
        return str(exc).strip() or type(exc).__name__
    return None


def compile_rules(rules: Sequence[Rule]) -> tuple[Re2Template, ...]:
    """Every template of ``rules`` for RE2, in rule order (Python-only ones included)."""
    compiled: list[Re2Template] = []
    for rule in rules:
        for template in rule.templates:
            literals = template.literals or (None,)
            source, reason = to_re2(template.regex.pattern)
            if source is not None:
                refusal = re2_refuses(source)
                if refusal is not None:
                    source, reason = None, f"RE2 refuses it ({refusal})"
            for literal in literals:
                compiled.append(
                    Re2Template(rule.id, template.lang, literal, source, reason, template.location)
                )
    return tuple(compiled)


def python_only_problems(rules: Sequence[Rule]) -> list[Problem]:
    """A warning for each template BigQuery cannot check, for ``jobdoctor rules check``;
    nothing when google-re2 is not installed (then there is nothing to tell it by)."""
    if _re2_module() is None:
        return []
    problems: list[Problem] = []
    seen: set[tuple[str, Location]] = set()
    for template in compile_rules(rules):
        if template.source is not None or (template.rule, template.location) in seen:
            continue
        seen.add((template.rule, template.location))
        problems.append(
            Problem.at(
                template.location,
                f"rule {template.rule} ({template.lang}): used from Python only on BigQuery,"
                f" {template.reason}; its literal still selects the rows, so verdicts are"
                " unchanged, but more rows are read",
                "warning",
            )
        )
    return problems
