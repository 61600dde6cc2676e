"""The literal prefilter: decide cheaply which rules could match a text.

Most log lines (training output, progress bars) match no rule. Each template
contributes one lower-cased word that every match of it contains; a text
that contains none of those words is rejected before any template regex
runs. :meth:`Prefilter.may_match_raw` applies the same test to a raw input
line (a JSON line whose message is still JSON-escaped) so that the reader can
skip JSON parsing for lines no rule can match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from analyzer.rulebook.model import Rule
from analyzer.rulebook.normalize import fold

# JSON writes non-ASCII as \uXXXX escapes (Go's encoder also escapes <, >, &, =
# that way); decoding them is cheap and keeps the test exact.
_JSON_UNICODE_ESCAPE = re.compile(rb"\\u([0-9a-fA-F]{4})")


def _unescape(match: re.Match[bytes]) -> bytes:
    codepoint = int(match.group(1), 16)
    if 0xD800 <= codepoint <= 0xDFFF:  # half of a surrogate pair: never part of a literal
        return b"?"
    return chr(codepoint).encode("utf-8")


def literals_of(rule: Rule) -> list[str | None]:
    """The prefilter keys of ``rule``: one per template, None for "always a candidate"."""
    return [word for template in rule.templates for word in template.literals or (None,)]


class Prefilter:
    """Maps literal words to the indexes of the rules that need them.

    ``always`` holds the rules that declared no literal: they are candidates
    for every text.
    """

    __slots__ = ("_always", "_any", "_by_literal", "_literals")

    def __init__(self, literals_by_rule: Sequence[Iterable[str | None]]) -> None:
        by_literal: dict[str, list[int]] = {}
        always: list[int] = []
        for index, literals in enumerate(literals_by_rule):
            for literal in literals:
                if literal is None:
                    always.append(index)
                else:
                    by_literal.setdefault(literal, []).append(index)
        self._by_literal = {key: tuple(value) for key, value in by_literal.items()}
        self._literals = tuple(self._by_literal)
        self._always = tuple(dict.fromkeys(always))
        # Longest first so that the alternation reports the most specific word;
        # membership of each word is rechecked anyway in candidates().
        ordered = sorted(self._literals, key=len, reverse=True)
        self._any = re.compile("|".join(re.escape(word) for word in ordered)) if ordered else None

    @property
    def literals(self) -> tuple[str, ...]:
        """The distinct literal words, lower-cased."""
        return self._literals

    def probe(self, text: str) -> str:
        """The form of ``text`` literals are looked up in."""
        return text.lower() if text.isascii() else fold(text).lower()

    def candidates(self, text: str) -> tuple[int, ...]:
        """Indexes of the rules that may match ``text``, in rule order; () for most lines."""
        probe = self.probe(text)
        if self._any is None or self._any.search(probe) is None:
            return self._always
        found = set(self._always)
        for literal in self._literals:
            if literal in probe:
                found.update(self._by_literal[literal])
        return tuple(sorted(found))

    def may_match_raw(self, raw: bytes) -> bool:
        """False only when no rule can match the message inside ``raw``.

        ``raw`` is an undecoded input line, e.g. a JSON line; escapes such as
        ``\\n`` or ``\\"`` never occur inside a literal word (words contain no
        whitespace, quotes, slashes or backslashes), and ``\\uXXXX`` escapes
        are decoded before looking.
        """
        if self._always:
            return True
        if self._any is None:
            return False
        if b"\\u" in raw:
            raw = _JSON_UNICODE_ESCAPE.sub(_unescape, raw)
        if raw.isascii():
            return self._any.search(raw.decode("ascii").lower()) is not None
        text = raw.decode("utf-8", "replace")
        return self._any.search(fold(text).lower()) is not None
