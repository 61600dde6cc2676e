"""Templates into tolerant regular expressions, and matches into field values.

A template is the documentation's sentence with its placeholders
(``The replica REPLICA_NAME exited with ... EXIT_CODE.``). It is normalised
like a message, cut into words, punctuation, spaces and placeholders, and
each piece becomes a regex piece:

* a word stays literal (escaped);
* a space becomes ``\\s*`` (real text doubles spaces, breaks lines, and glues
  words together: ``אםGoogle Cloud``);
* punctuation may be preceded by spaces (``EXIT_CODE .``); a sentence-final
  period is optional (logs cut it, or keep a trailing space after it);
* a placeholder becomes a named group with its declared pattern.

Messages are normalised the same way before matching (:mod:`.normalize`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from analyzer.rulebook._regex import Match
from analyzer.rulebook.events import RuleMatch
from analyzer.rulebook.model import Capture, FieldType, Placeholder, Rule, Template
from analyzer.rulebook.normalize import fold, normalize, original_span
from analyzer.rulebook.windows import finditer as windowed
from analyzer.rulebook.windows import occurrences, window_plan

# Placeholders are capitalised words, the way the documentation writes them
# (REPLICA_NAME, REASON); ASCII-only look-arounds so that a placeholder glued
# to Hebrew or Japanese letters is still found. A capitalised word that is not
# declared is literal text (SIGKILL, SUCCEEDED) unless it has an underscore or
# looks like a misspelt placeholder: then it is reported as unknown.
PLACEHOLDER_RE = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_])")
PUNCTUATION = frozenset(".,:;!?()[]{}\"'/\\。、「」")
_SPACE = r"\s*"
_COMMON_WORDS = frozenset({"training", "completed", "finished", "program", "memory"})
_FINAL_STOPS = frozenset({re.escape("."), re.escape("。")})
# "137", legacy "9(SIGKILL)", Python's return code of a process killed by a signal ("-9"), and
# what Python 3's CalledProcessError prints for it instead ("<Signals.SIGKILL: 9>": -9).
_EXIT_CODE_RE = re.compile(r"(-?\d+)(?:\s*\(\s*(SIG[A-Z0-9]+)\s*\))?")
_SIGNALS_REPR_RE = re.compile(r"<\s*Signals\s*\.\s*(SIG[A-Z0-9]+)\s*:\s*(\d+)\s*>")


@dataclass(frozen=True, slots=True)
class CompiledSource:
    """A template turned into regex source, with its captures and literal words."""

    source: str
    captures: tuple[Capture, ...]
    words: tuple[str, ...]
    unknown: tuple[str, ...]


def _pieces(text: str) -> Iterator[tuple[str, str]]:
    """Split literal template text into ("ws"|"punct"|"word", piece) tokens."""
    word: list[str] = []
    for char in text:
        kind = "ws" if char.isspace() else "punct" if char in PUNCTUATION else "word"
        if kind == "word":
            word.append(char)
            continue
        if word:
            yield "word", "".join(word)
            word = []
        yield kind, char
    if word:
        yield "word", "".join(word)


def template_source(
    template: str, placeholders: Mapping[str, Placeholder], *, whole: bool
) -> CompiledSource:
    """The tolerant regex source of ``template``; see the module docstring."""
    text = normalize(template)
    parts: list[str] = []
    captures: list[Capture] = []
    words: list[str] = []
    unknown: list[str] = []

    def space() -> None:
        if not parts or parts[-1] != _SPACE:
            parts.append(_SPACE)

    position = 0
    for found in PLACEHOLDER_RE.finditer(text):
        name = found.group()
        placeholder = placeholders.get(name)
        if placeholder is None and not looks_like_placeholder(name, placeholders):
            continue  # literal text; emitted with the next literal run
        _literal(text[position : found.start()], parts, words, space)
        if placeholder is None:
            unknown.append(name)
            parts.append("(?:.+?)")
        else:
            group = f"{name}_{len(captures)}"
            parts.append(f"(?P<{group}>(?:{placeholder.pattern}))")
            captures.append(Capture(group, placeholder.field, placeholder.type))
        position = found.end()
    _literal(text[position:], parts, words, space)

    while parts and parts[-1] == _SPACE:
        parts.pop()
    # A sentence-final period is optional: logs cut it or add a space after it.
    if len(parts) >= 2 and parts[-1] in _FINAL_STOPS and parts[-2] == _SPACE:
        parts[-2:] = [rf"(?:\s*{parts[-1]})?"]
    body = "".join(parts)
    source = rf"\A\s*(?:{body})\s*\Z" if whole else body
    return CompiledSource(source, tuple(captures), tuple(words), tuple(unknown))


def looks_like_placeholder(name: str, placeholders: Mapping[str, Placeholder]) -> bool:
    """Whether an undeclared capitalised word was meant as a placeholder."""
    return "_" in name or bool(difflib.get_close_matches(name, list(placeholders), n=1, cutoff=0.8))


def _literal(text: str, parts: list[str], words: list[str], space: Callable[[], None]) -> None:
    for kind, piece in _pieces(text):
        if kind == "ws":
            space()
        elif kind == "punct":
            # Spaces and line breaks may surround punctuation ("EXIT_CODE .",
            # a line break after "、").
            space()
            parts.append(re.escape(piece))
            space()
        else:
            parts.append(re.escape(piece))
            words.append(piece)


def best_literal(words: Sequence[str]) -> str | None:
    """The word the prefilter keys a template on: the longest one, lower-cased.

    Every match of the template contains each of its words contiguously, so
    any word is safe; the longest is usually the most selective, except for
    words that training output itself is full of.
    """
    if not words:
        return None
    return max(words, key=lambda w: (w.lower() not in _COMMON_WORDS, len(w))).lower()


def convert(value: str, field_type: FieldType, field: str) -> dict[str, str | int]:
    """The field values one captured ``value`` gives."""
    folded = fold(value)
    if field_type is FieldType.TEXT:
        # The normalised value (issue 13: `us-central1`, not a full-width `us-central１`), as
        # templates compare it: NFKC per character, invisible marks gone, one space.
        return {field: " ".join(folded.split())}
    if field_type is FieldType.INT:
        return {field: int(folded)}
    if (killed := _SIGNALS_REPR_RE.fullmatch(folded)) is not None:
        return {field: -int(killed.group(2)), "signal": killed.group(1)}
    found = _EXIT_CODE_RE.fullmatch(folded)
    if found is None:  # the placeholder's pattern admits more than digits
        digits = re.match(r"\d+", folded)
        return {field: int(digits.group())} if digits else {field: value}
    fields: dict[str, str | int] = {field: int(found.group(1))}
    if found.group(2):
        fields["signal"] = found.group(2)
    return fields


def _fields(
    found: Match, captures: Sequence[Capture], offsets: Sequence[int], original: str
) -> dict[str, str | int]:
    fields: dict[str, str | int] = {}
    for capture in captures:
        if found.group(capture.group) is None:
            continue
        value = original_span(
            offsets, original, found.start(capture.group), found.end(capture.group)
        )
        fields.update(convert(value, capture.type, capture.field))
    return fields


class MatchTimeout(Exception):
    """A rule's regex ran out of time on one text (the match is skipped)."""


def find(
    rule: Rule,
    normalized: str,
    offsets: Sequence[int],
    original: str,
    timeout: float,
    probe: Container[str] | None = None,
    lowered: str | None = None,
) -> list[tuple[int, RuleMatch]]:
    """Every match of ``rule`` in ``normalized`` as (start, match), in text order.

    All templates are tried, except, given the prefilter's ``probe`` of the text (or the set
    of the literal words it holds), those none of whose literal words it holds (they cannot
    match: the prefilter's own premise). Where matches
    of several templates overlap, the one starting first wins, then the longest (the full
    sentence over its shorter form). Raises :class:`MatchTimeout` when a regex runs too long.

    ``lowered``, ``normalized.lower()`` of the same length, lets a long text be searched only
    near the words of a template whose matches span a bounded number of words
    (:func:`analyzer.rulebook.windows.window_plan`, :func:`~analyzer.rulebook.windows.finditer`:
    the same matches).
    """
    spans: list[tuple[int, int, int, Match]] = []
    for index, template in enumerate(rule.templates):
        literals = template.literals
        if probe is not None and literals and not any(word in probe for word in literals):
            continue
        try:
            for found in _template_matches(template, normalized, timeout, probe, lowered):
                if found.end() > found.start():
                    spans.append((found.start(), -found.end(), index, found))
        except TimeoutError as exc:
            raise MatchTimeout(rule.id) from exc
    if not spans:
        return []
    return _first_longest(rule, spans, offsets, original)


def _template_matches(
    template: Template,
    normalized: str,
    timeout: float,
    probe: Container[str] | None,
    lowered: str | None,
) -> Iterable[Match]:
    """The matches of one template in ``normalized``: searched only near its words where
    its matches span a bounded number of words (see :func:`find`), else everywhere."""
    literals = template.literals
    plan = window_plan(template.regex.pattern, literals) if lowered else None
    starts = None
    if plan is not None and lowered is not None:
        words = plan.words
        if plan.literals and probe is not None:
            words = tuple(word for word in literals if word in probe)
        starts = occurrences(lowered, words)
    if plan is not None and starts is not None:
        return windowed(template.regex, normalized, starts, plan.bound, timeout)
    matches: Iterable[Match] = template.regex.finditer(normalized, timeout=timeout)
    return matches


def _first_longest(
    rule: Rule,
    spans: list[tuple[int, int, int, Match]],
    offsets: Sequence[int],
    original: str,
) -> list[tuple[int, RuleMatch]]:
    """The matches of ``spans`` (start, minus end, template, match) that overlap none
    before them, in text order: the one starting first wins, then the longest."""
    spans.sort(key=lambda item: item[:3])
    results: list[tuple[int, RuleMatch]] = []
    taken_until = -1
    for start, negative_end, index, found in spans:
        if start < taken_until:
            continue
        taken_until = -negative_end
        template = rule.templates[index]
        results.append(
            (
                start,
                RuleMatch(
                    rule=rule.id,
                    kind=rule.kind,
                    category=rule.category,
                    lang=template.lang,
                    fields=_fields(found, template.captures, offsets, original),
                    detail=rule.detail,
                    writer=rule.writer,
                ),
            )
        )
    return results
