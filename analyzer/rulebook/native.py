"""Whether a rule really matches the texts of a block, decided in one C search per rule.

The literal prefilter (:mod:`.prefilter`) lets through every text holding a rule's literal
word; on a chatty log most of those match no rule (``error rate 0.01``, a harmless
``Traceback`` wording, ``quota`` in a progress line), and each cost a Python call. Here the
candidate texts of a block are normalised at once (as :func:`~.normalize.normalize` does each)
and joined by line ends, and each rule's templates search them in one ``finditer`` each: a
text no match touches is one no template matches, and never reaches Python (issue 32).

The search is the templates' own: the same ``regex`` engine (Hyperscan was tried and dropped:
its 5.4.12 build in the ``hyperscan`` wheel, on an AVX-512 machine, misses the matches of
``Command '[!-~].*' *returned`` on texts whose run is 17 bytes or more), on the same
normalised text. Only what joining changes is rewritten, from the syntax tree Python's own
parser makes of the pattern (``re._parser``):

* ``\\A``, ``^`` and ``\\Z``, ``$`` become ``^`` and ``$`` of multi-line mode: a normalised text
  holds no line end, so they match at each text's ends and nowhere else;
* named groups become plain ones (``regex`` lets alternatives share a name, ``re`` does not).

A match that runs from one text into the next (a class that takes a line end: ``\\s``,
``[^"]``) keeps every text it touches, so none that matches is left out. What cannot be
rewritten (a look-around that may see a line end, flags that change what ``^`` means, a
pattern ``re`` cannot parse) is said by :func:`rewrite`; texts holding such a template's literal
words are all kept, as before, and ``jobdoctor rules check`` lists the template.

Only texts of ASCII and :data:`~analyzer.rulebook.normalize.INERT_RANGES` characters (their
own NFKC form and lower case, none of them a space) without NUL are checked so; there
normalising is making each whitespace run one space and stripping the ends. Others are kept.
"""

from __future__ import annotations

import importlib
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain, compress, groupby, repeat
from operator import itemgetter, not_, or_
from typing import Any

import regex

# Python's own regex parser (private, stable across 3.11-3.13; typeshed has no stubs for it).
_parser: Any = importlib.import_module("re._parser")

# The flags of re._constants, as letters of an inline group.
_FLAG_LETTERS = {2: "i", 8: "m", 16: "s", 256: "a", 32: "u"}
_LOCALE, _MULTILINE, _VERBOSE = 4, 8, 64
_CATEGORIES = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
}
_ANCHORS = {
    "AT_BEGINNING": "^",
    "AT_BEGINNING_STRING": "^",
    "AT_END": "$",
    "AT_END_STRING": "$",
    "AT_BOUNDARY": r"\b",
    "AT_NON_BOUNDARY": r"\B",
}
_REPEATS = {"MAX_REPEAT": "", "MIN_REPEAT": "?", "POSSESSIVE_REPEAT": "+"}
_ASSERTIONS = {("ASSERT", 1): "?=", ("ASSERT", -1): "?<=", ("ASSERT_NOT", 1): "?!"}
_ASSERTIONS[("ASSERT_NOT", -1)] = "?<!"


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A template's regex for a block of normalised texts joined by line ends (``source``),
    or why it has none (``reason``); ``alternatives``: for an alternation, the regex of each
    alternative (:func:`_alternatives`)."""

    source: str | None
    reason: str | None
    alternatives: tuple[str, ...] = ()


class _Refused(Exception):
    """A construct the rewriting does not take."""


def _char(code: int) -> str:
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


class _Writer:
    """The source of one parsed pattern, for texts joined by line ends."""

    def sequence(self, items: Iterable[tuple[Any, Any]]) -> str:
        return "".join(self.item(op, value) for op, value in items)

    def item(self, op: Any, value: Any) -> str:
        name = str(op)
        if name == "LITERAL":
            return _char(value)
        if name == "NOT_LITERAL":
            return f"[^{_char(value)}]"
        if name == "ANY":
            return "."
        if name == "IN":
            return self.klass(value)
        if name in _REPEATS:
            low, high, body = value
            if name == "POSSESSIVE_REPEAT":
                _sees_one_text(body, "a possessive repeat")
            bound = "" if high == _parser.MAXREPEAT else str(high)
            return f"(?:{self.sequence(body)}){{{low},{bound}}}{_REPEATS[name]}"
        if name == "SUBPATTERN":
            return self.group(*value)
        if name == "ATOMIC_GROUP":
            _sees_one_text(value, "an atomic group")
            return f"(?>{self.sequence(value)})"
        if name == "BRANCH":
            return "(?:" + "|".join(self.sequence(branch) for branch in value[1]) + ")"
        if name == "AT":
            return self.anchor(str(value))
        if name in {"ASSERT", "ASSERT_NOT"}:
            return self.assertion(name, *value)
        if name == "GROUPREF":
            return f"(?:\\{value})"
        if name == "GROUPREF_EXISTS":
            group, yes, no = value
            return f"(?({group}){self.sequence(yes)}|{self.sequence(no or [])})"
        raise _Refused(f"{name}, which the rewriting does not take")

    def klass(self, items: Sequence[tuple[Any, Any]]) -> str:
        parts = []
        for op, value in items:
            name = str(op)
            if name == "NEGATE":
                parts.append("^")
            elif name == "LITERAL":
                parts.append(_char(value))
            elif name == "RANGE":
                parts.append(f"{_char(value[0])}-{_char(value[1])}")
            elif name == "CATEGORY" and str(value) in _CATEGORIES:
                parts.append(_CATEGORIES[str(value)])
            else:
                raise _Refused(f"{name} {value} in a class")
        return "[" + "".join(parts) + "]"

    def group(self, group: int | None, add: int, remove: int, body: Any) -> str:
        if (add | remove) & (_MULTILINE | _LOCALE):
            raise _Refused("a group that changes what ^ and $ mean")
        inner = self.sequence(body)
        if group is not None:
            return f"({inner})"
        on, off = _letters(add), _letters(remove)
        if on or off:
            return f"(?{on}{'-' + off if off else ''}:{inner})"
        return f"(?:{inner})"

    def anchor(self, name: str) -> str:
        if name not in _ANCHORS:
            raise _Refused(f"the anchor {name}")
        return _ANCHORS[name]

    def assertion(self, name: str, direction: int, body: Any) -> str:
        _sees_one_text(body, "a look-around")
        return f"({_ASSERTIONS[(name, direction)]}{self.sequence(body)})"


def _sees_one_text(body: Any, what: str) -> None:
    """Refuse ``what`` (a look-around, an atomic group, a possessive repeat: pieces that do
    not give back what they took) when its ``body`` may take a line end: at a text's end it
    would see or take the line end the next text is joined by, where the text alone has
    nothing, and fail where the template matches the text."""
    if any(_takes_line_end(name, value) for name, value in _atoms(body)):
        raise _Refused(f"{what} that may take the line end texts are joined by")


def _atoms(items: Iterable[tuple[Any, Any]]) -> Iterable[tuple[str, Any]]:
    """The pieces of ``items`` that take characters, at any depth (back-references too)."""
    for op, value in items:
        name = str(op)
        if name in {"LITERAL", "NOT_LITERAL", "IN", "ANY", "GROUPREF"}:
            yield name, value
        elif name in {"AT", "CATEGORY"}:
            continue
        else:
            yield from _nested_atoms(value)


def _nested_atoms(value: Any) -> Iterable[tuple[str, Any]]:
    if hasattr(value, "data"):  # a parsed sub-pattern
        yield from _atoms(value)
    elif isinstance(value, tuple | list):
        for part in value:
            yield from _nested_atoms(part)


def _takes_line_end(name: str, value: Any) -> bool:
    if name in {"ANY", "GROUPREF"}:
        return True
    if name == "LITERAL":
        return bool(value == 10)
    if name == "NOT_LITERAL":
        return bool(value != 10)
    return regex.fullmatch(_Writer().klass(value), "\n", regex.VERSION0) is not None


def _letters(flags: int) -> str:
    return "".join(letter for bit, letter in _FLAG_LETTERS.items() if flags & bit)


def rewrite(pattern: str) -> Rewrite:
    """``pattern`` (a template's regex) for normalised texts joined by line ends; or why not."""
    try:
        parsed = _parser.parse(_unique_group_names(pattern))
    except Exception as error:  # re.error, and anything else the parser raises
        return Rewrite(None, f"Python's re cannot parse it ({error})")
    flags = parsed.state.flags
    if flags & _LOCALE:
        return Rewrite(None, "it uses the LOCALE flag")
    try:
        body = _Writer().sequence(parsed)
    except _Refused as refusal:
        return Rewrite(None, f"it uses {refusal}")
    prefix = f"(?{_letters(flags & ~_VERBOSE)}m)"
    source = prefix + body
    try:
        regex.compile(source, regex.VERSION0)
    except regex.error as error:
        return Rewrite(None, f"its rewriting does not compile ({error})")
    return Rewrite(source, None, _alternatives(parsed, prefix))


def _alternatives(parsed: Any, prefix: str) -> tuple[str, ...]:
    """The alternatives of ``parsed``, a pattern that is one alternation at the top, each
    rewritten (``prefix``: the flags); () for another pattern, or one with back-references
    (whose group numbers would change). ``regex`` searches an alternation of alternatives
    that share no leading word at each position, and an alternative on its own by its
    leading word: sdk.job-state's five cost 5 times less searched one by one on the near-miss
    rows' blocks. A text a template matches is one an alternative matches, and the union of
    the texts the searches touch holds it, as the search of the whole does."""
    items = list(parsed)
    if len(items) != 1 or str(items[0][0]) != "BRANCH":
        return ()
    if not {"GROUPREF", "GROUPREF_EXISTS"}.isdisjoint(_operations(items)):
        return ()
    sources = tuple(prefix + _Writer().sequence(branch) for branch in items[0][1][1])
    try:
        for source in sources:
            regex.compile(source, regex.VERSION0)
    except regex.error:
        return ()
    return sources


def _operations(items: Iterable[tuple[Any, Any]]) -> Iterable[str]:
    """The names of the operations of parsed ``items``, at any depth."""
    for op, value in items:
        yield str(op)
        yield from _nested_operations(value)


def _nested_operations(value: Any) -> Iterable[str]:
    if hasattr(value, "data"):  # a parsed sub-pattern
        yield from _operations(value)
    elif isinstance(value, tuple | list):
        for part in value:
            yield from _nested_operations(part)


def _unique_group_names(pattern: str) -> str:
    """``pattern`` with its named groups unnamed: ``regex`` lets alternatives share a name,
    ``re`` does not, and names mean nothing here. Outside classes and escapes only; a
    reference to a name is left as it is (then refused)."""
    out: list[str] = []
    index = 0
    in_class = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if in_class:
            in_class = char != "]" or pattern[index - 1] == "["
        elif char == "[":
            in_class = True
            # A "]" first in a class (after "^") is one of its characters.
            skip = next((len(s) for s in ("[]", "[^]") if pattern.startswith(s, index)), 0)
            if skip:
                out.append(pattern[index : index + skip])
                index += skip
                continue
        elif pattern.startswith("(?P<", index) and (close := pattern.find(">", index)) != -1:
            out.append("(")
            index = close + 1
            continue
        out.append(char)
        index += 1
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Undecided:
    """A template whose rule is decided in Python on the texts holding its literal words."""

    rule: int  # its index in the book
    template: int  # its index in the rule
    reason: str


# A template: its rule's index, its regex source and its literal words.
TemplateSource = tuple[int, str, tuple[str, ...]]

# What str.split() takes for whitespace in a text of ASCII and inert characters, where a
# run of it is not already one space (replacing every single space would cost 5 times more).
_SPACE_RUN = re.compile(
    "[\t\n\x0b\x0c\r\x1c-\x1f][\t\n\x0b\x0c\r\x1c-\x1f ]*| [\t\n\x0b\x0c\r\x1c-\x1f ]+"
)


@dataclass(frozen=True, slots=True)
class BlockCheck:
    """The rewritten templates of a rule book, for :meth:`kept`."""

    # Per template: its rewrite compiled, or None (a text holding its words is kept).
    patterns: tuple[Any, ...]
    # Per template: its alternatives' rewrites compiled, or () (Rewrite.alternatives).
    alternatives: tuple[tuple[Any, ...], ...]
    # Per literal word of the prefilter (in its order): the templates holding it.
    templates_of: tuple[tuple[int, ...], ...]
    undecided: tuple[Undecided, ...]

    @classmethod
    def build(cls, templates: Sequence[TemplateSource], literals: Sequence[str]) -> BlockCheck:
        """The check of ``templates``; ``literals``: the prefilter's words, lower-cased."""
        patterns: list[Any] = []
        alternatives: list[tuple[Any, ...]] = []
        undecided: list[Undecided] = []
        place: dict[int, int] = {}
        holding: dict[str, list[int]] = {word: [] for word in literals}
        for number, (rule, source, words) in enumerate(templates):
            index = place[rule] = place.get(rule, -1) + 1
            written = rewrite(source)
            if written.source is None:
                undecided.append(Undecided(rule, index, written.reason or "not rewritten"))
                patterns.append(None)
            else:
                patterns.append(regex.compile(written.source, regex.VERSION0))
            alternatives.append(
                tuple(regex.compile(source, regex.VERSION0) for source in written.alternatives)
            )
            for word in words:
                holding[word.lower()].append(number)
        return cls(
            tuple(patterns),
            tuple(alternatives),
            tuple(tuple(dict.fromkeys(holding[word])) for word in literals),
            tuple(undecided),
        )

    def kept(
        self, texts: Sequence[str], words: Iterable[tuple[int, int]], timeout: float
    ) -> set[int]:
        """The indexes of ``texts`` (ASCII and inert characters, no NUL) a match of a template
        touches, or that hold a literal word of a template without a rewrite. ``words``: the
        prefilter's words in the texts, as (word, text index). A template's search that runs
        out of ``timeout`` (one text's budget, for all of them: a sound template needs
        microseconds) keeps all its texts: Python then decides each, as before, counting the
        timeouts of a pattern that is slow on some."""
        by_template = self._texts_by_template(words)
        kept: set[int] = set()
        if not by_template:
            return kept
        normal = _normal_forms(texts)
        for template, chosen in by_template.items():
            pattern = self.patterns[template]
            if pattern is None:
                kept.update(chosen)
                continue
            try:
                kept.update(
                    _touched(
                        pattern,
                        self.alternatives[template],
                        [normal[i] for i in chosen],
                        chosen,
                        timeout,
                    )
                )
            except TimeoutError:
                # Python decides each of these texts, counting its timeouts as before.
                kept.update(chosen)
        return kept

    def _texts_by_template(self, words: Iterable[tuple[int, int]]) -> dict[int, list[int]]:
        """The indexes of the texts holding a literal word of each template, in order, from
        (word, text index) pairs: grouped by word first (a block holds about a hundred
        distinct words, and tens of thousands of pairs on a chatty log)."""
        groups: dict[int, list[list[int]]] = {}
        templates_of = self.templates_of
        for word, pairs in groupby(sorted(set(words)), itemgetter(0)):
            texts = list(map(itemgetter(1), pairs))
            for template in templates_of[word]:
                groups.setdefault(template, []).append(texts)
        return {
            template: lists[0] if len(lists) == 1 else sorted(set(chain.from_iterable(lists)))
            for template, lists in groups.items()
        }


def _normal_forms(texts: Sequence[str]) -> list[str]:
    """``texts`` normalised as normalize() makes each of them (ASCII and inert characters):
    whitespace runs one space, the ends stripped. Most have nothing to change: no character
    outside the printable ones (which holds every whitespace but the space), no two spaces
    in a row, no space at an end; those are told apart in C, and only the others rewritten."""
    normal = list(texts)
    odd = map(
        or_, map(not_, map(str.isprintable, texts)), map(str.__contains__, texts, repeat("  "))
    )
    odd = map(or_, odd, map(str.startswith, texts, repeat(" ")))
    odd = map(or_, odd, map(str.endswith, texts, repeat(" ")))
    for index in compress(range(len(texts)), odd):
        normal[index] = _SPACE_RUN.sub(" ", texts[index]).strip(" ")
    return normal


def _touched(
    pattern: Any, alternatives: Sequence[Any], texts: list[str], indexes: list[int], timeout: float
) -> Iterable[int]:
    """The ``indexes`` of the ``texts`` a match of ``pattern`` in them joined by line ends
    touches (a match that runs on into the next text touches both); of one of its
    ``alternatives`` where it has them, searched one by one."""
    joined = "\n".join(texts)
    ends: list[int] | None = None
    for search in alternatives or (pattern,):
        for found in search.finditer(joined, timeout=timeout):
            start, end = found.span()
            if end == start:
                continue  # find() takes no empty match
            if ends is None:
                ends = list(accumulate(len(text) + 1 for text in texts))
            yield from indexes[bisect_right(ends, start) : bisect_right(ends, end - 1) + 1]
