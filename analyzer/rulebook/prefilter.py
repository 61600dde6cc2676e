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
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate, compress
from typing import Any

from analyzer.rulebook.model import Rule
from analyzer.rulebook.normalize import INVISIBLE, fold

# JSON writes non-ASCII as \uXXXX escapes (Go's encoder also escapes <, >, &, =
# that way); decoding them is cheap and keeps the test exact.
_JSON_UNICODE_ESCAPE = re.compile(rb"\\u([0-9a-fA-F]{4})")


_INVISIBLE = re.compile("[" + "".join(sorted(INVISIBLE)) + "]")


def _unchanged_by_fold(text: str) -> bool:
    # An NFKC-normalised text holds no character that NFKC changes on its own, so fold() only
    # removes invisible marks from it (checked for every code point in tests/test_fastpath.py).
    return unicodedata.is_normalized("NFKC", text) and _INVISIBLE.search(text) is None


def _hyperscan_database(literals: Sequence[str], encoding: str) -> Any:
    """A Hyperscan block database of ``literals`` in ``encoding``, or None without the wheel."""
    try:
        import hyperscan
    except ImportError:
        return None
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=[
            "".join(f"\\x{byte:02x}" for byte in word.encode(encoding)).encode()
            for word in literals
        ],
        ids=list(range(len(literals))),
        flags=[0] * len(literals),
    )
    return database


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

    __slots__ = ("_always", "_any", "_by_literal", "_engines", "_literals")

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
        # Built on first use: only large inputs read through select() need them.
        self._engines: tuple[Any, Any] | None = None

    @property
    def literals(self) -> tuple[str, ...]:
        """The distinct literal words, lower-cased."""
        return self._literals

    def probe(self, text: str) -> str:
        """The form of ``text`` literals are looked up in."""
        return text.lower() if text.isascii() else fold(text).lower()

    def candidates(self, text: str) -> tuple[int, ...]:
        """Indexes of the rules that may match ``text``, in rule order; () for most lines."""
        return self.candidates_in(self.probe(text))

    def candidates_in(self, probe: str) -> tuple[int, ...]:
        """:meth:`candidates` of the text whose :meth:`probe` is ``probe``."""
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

    def select(self, texts: Sequence[str]) -> list[int]:
        """Indexes of the ``texts`` for which :meth:`candidates` is not empty, in order.

        The same answer as asking text by text, for a whole block at once: the probes are
        joined and searched in one pass (by Hyperscan when installed, else by ``re``).
        """
        if self._always:
            return list(range(len(texts)))
        if self._any is None or not texts:
            return []
        ascii_flags = list(map(str.isascii, texts))
        if all(ascii_flags):
            return self._select_ascii(texts)
        # Most texts are ASCII. One wide text makes the joined block wide, and lower() and the
        # search of a wide string cost several times more per character: search the ASCII
        # texts on their own and pay that only for the others.
        narrow = list(compress(range(len(texts)), ascii_flags))
        wide = [index for index, flag in enumerate(ascii_flags) if not flag]
        hits = [narrow[i] for i in self._select_ascii([texts[index] for index in narrow])]
        hits += [wide[i] for i in self._select_wide([texts[index] for index in wide])]
        return sorted(hits)

    def _select_ascii(self, texts: Sequence[str]) -> list[int]:
        # For ASCII, fold() is the identity and lower() keeps every length.
        if not texts:
            return []
        return self._hit_indexes(map(len, texts), "\n".join(texts).lower())

    def _select_wide(self, texts: Sequence[str]) -> list[int]:
        folded = "\n".join(texts)
        # Normalisation never reaches across a newline (a starter nothing composes with), so
        # the joined texts are unchanged by fold() exactly when each one is: one check for all.
        if _unchanged_by_fold(folded):
            probes = list(texts)
        else:
            probes = [
                text if text.isascii() or _unchanged_by_fold(text) else fold(text) for text in texts
            ]
            folded = "\n".join(probes)
        probe = folded.lower()
        if len(probe) != len(folded):
            # lower() made some character longer (İ): lower each probe on its own.
            probes = [p.lower() for p in probes]
            probe = "\n".join(probes)
        return self._hit_indexes(map(len, probes), probe)

    def _hit_indexes(self, lengths: Iterable[int], probe: str) -> list[int]:
        """Indexes of the probes (of ``lengths``, joined by newlines into ``probe``) that hold
        a literal, in order."""
        starts = list(accumulate(map((1).__add__, lengths), initial=0))
        hits = {bisect_right(starts, at) - 1 for at in self._hit_offsets(probe)}
        return sorted(hits)

    def _hit_offsets(self, probe: str) -> Iterable[int]:
        """Character offsets inside ``probe`` at which some literal occurs (ends or starts)."""
        if self._engines is None:
            self._engines = (
                _hyperscan_database(self._literals, "utf-8"),
                _hyperscan_database(self._literals, "utf-32-le"),
            )
        ascii_db, wide_db = self._engines
        if ascii_db is None or self._any is None:
            assert self._any is not None
            return [found.start() for found in self._any.finditer(probe)]
        offsets: list[int] = []
        if probe.isascii():
            data, width, database = probe.encode("ascii"), 1, ascii_db
        else:
            # Four bytes per character: a byte offset divided by four is a character offset.
            data, width, database = probe.encode("utf-32-le"), 4, wide_db

        def on_match(_id: int, _start: int, end: int, _flags: int, _context: object) -> None:
            offsets.append((end - 1) // width)

        database.scan(data, match_event_handler=on_match)
        return offsets
