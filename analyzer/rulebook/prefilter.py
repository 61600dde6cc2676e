"""The literal prefilter: decide cheaply which rules could match a text.

Most log lines (training output, progress bars) match no rule. Each template
contributes one lower-cased word that every match of it contains; a text
that contains none of those words is rejected before any template regex
runs. :meth:`Prefilter.select` applies the test to a whole block of texts at
once.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate, compress, repeat
from typing import Any, Literal

from analyzer.core import cache
from analyzer.rulebook import native
from analyzer.rulebook.model import Rule
from analyzer.rulebook.normalize import INERT_RANGES as INERT_RANGES  # where it was, for callers
from analyzer.rulebook.normalize import INVISIBLE, fold

_INVISIBLE = re.compile("[" + "".join(sorted(INVISIBLE)) + "]")

# Characters beyond which a text is searched on its own, once for all the literal words
# (Hyperscan, each word reported once), rather than once per word, or among the texts of its
# block (where every occurrence of every word would be reported).
LONG_TEXT = 2048


def _unchanged_by_fold(text: str) -> bool:
    # An NFKC-normalised text holds no character that NFKC changes on its own, so fold() only
    # removes invisible marks from it (checked for every code point in tests/test_fastpath.py).
    return unicodedata.is_normalized("NFKC", text) and _INVISIBLE.search(text) is None


_NOT_INERT = (
    "[^\\x00-\\x7f"
    + "".join(f"\\x{{{first:x}}}-\\x{{{last:x}}}" for first, last in INERT_RANGES)
    + "]"
).encode()


def _byte_pattern(word: str, encoding: str) -> bytes:
    return "".join(f"\\x{byte:02x}" for byte in word.encode(encoding)).encode()


def _hyperscan_database(literals: Sequence[str], encoding: str, *, single: bool = False) -> Any:
    """A Hyperscan block database of ``literals`` in ``encoding``, or None without the wheel;
    ``single``: each literal reported at its first occurrence only."""
    try:
        import hyperscan
    except ImportError:
        return None
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=[_byte_pattern(word, encoding) for word in literals],
        ids=list(range(len(literals))),
        flags=[hyperscan.HS_FLAG_SINGLEMATCH if single else 0] * len(literals),
    )
    return database


def _caseless_databases(literals: Sequence[str]) -> tuple[Any, Any] | None:
    """Two Hyperscan databases: ``literals`` in UTF-8, ASCII letters caseless; and one
    pattern matching every character outside :data:`INERT_RANGES` and ASCII. None without
    the wheel. Apart, they compile in a third of the time one database of both takes."""
    try:
        import hyperscan
    except ImportError:
        return None
    words = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    words.compile(
        expressions=[_byte_pattern(word, "utf-8") for word in literals],
        ids=list(range(len(literals))),
        flags=[hyperscan.HS_FLAG_CASELESS] * len(literals),
    )
    others = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    others.compile(expressions=[_NOT_INERT], ids=[0], flags=[hyperscan.HS_FLAG_UTF8])
    return words, others


def _utf8(texts: Sequence[str]) -> tuple[bytes, list[int]]:
    """``texts`` joined by line ends in UTF-8, and the length of each in bytes.
    UnicodeEncodeError for a lone surrogate. (Encoding the joined texts costs as much: most
    blocks hold a wide character, which makes the joined string wide.)"""
    encoded = list(map(str.encode, texts))
    return b"\n".join(encoded), list(map(len, encoded))


def _bounds(lengths: Iterable[int]) -> list[int]:
    """Where each text after the first of texts of ``lengths`` (in bytes) starts in them
    joined by line ends: the text holding a match that ends at offset ``end`` is
    ``bisect_right(bounds, end)`` (its last byte, at ``end - 1``, is before the line end
    after that text)."""
    return list(accumulate(map((1).__add__, lengths)))


def literals_of(rule: Rule) -> list[str | None]:
    """The prefilter keys of ``rule``: one per template, None for "always a candidate"."""
    return [word for template in rule.templates for word in template.literals or (None,)]


class Prefilter:
    """Maps literal words to the indexes of the rules that need them.

    ``always`` holds the rules that declared no literal: they are candidates
    for every text.
    """

    __slots__ = (
        "_always",
        "_any",
        "_by_literal",
        "_caseless",
        "_engines",
        "_literals",
        "_native",
        "_present",
        "_templates",
    )

    def __init__(
        self,
        literals_by_rule: Sequence[Iterable[str | None]],
        templates: Sequence[native.TemplateSource] = (),
    ) -> None:
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
        self._caseless: Any = False  # False: not built yet; None: no Hyperscan
        self._engines: tuple[Any, Any] | None = None
        # Each literal reported once (HS_FLAG_SINGLEMATCH): which literals a long text holds,
        # in one pass. Built by warm(), or on the first long text.
        self._present: Any = False
        # The rules' templates as Hyperscan patterns (analyzer.rulebook.native), for confirm():
        # built by warm(); None without Hyperscan, templates, or where a rule without a literal
        # word makes every text a candidate anyway.
        self._templates = tuple(templates)
        self._native: native.BlockCheck | Literal[False] | None = False

    def warm(self) -> None:
        """Build the Hyperscan databases :meth:`select` uses now rather than on first use."""
        if self._caseless is False:
            # No literal, nothing to search for (and Hyperscan refuses an empty database).
            self._caseless = _caseless_databases(self._literals) if self._literals else None
        if self._present is False and self._literals:
            self._present = _hyperscan_database(self._literals, "utf-8", single=True)
        self._native_check()

    def _native_check(self) -> native.BlockCheck | None:
        if self._native is False:
            self._native = None
            if self._templates and not self._always and self._caseless:
                self._native = native.BlockCheck.build(self._templates, self._literals)
        return self._native

    @property
    def undecided(self) -> tuple[native.Undecided, ...] | None:
        """The templates :meth:`confirm` leaves to Python (their literal words select texts for
        their rule), with why; None when it confirms nothing (no Hyperscan, or a rule without
        literal words makes every text a candidate)."""
        self.warm()
        check = self._native_check()
        return check.undecided if check is not None else None

    def __getstate__(self) -> dict[str, Any]:
        # Hyperscan databases do not pickle: they travel as their serialized bytes. The
        # fallback engines (_engines) are rarely needed and are built again when they are.
        state = {name: getattr(self, name) for name in self.__slots__}
        state["_engines"] = None
        if self._caseless:
            state["_caseless"] = tuple(map(cache.dump_hyperscan, self._caseless))
        if self._present:
            state["_present"] = cache.dump_hyperscan(self._present)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        if self._caseless:
            try:
                self._caseless = tuple(map(cache.load_hyperscan, self._caseless))
            except Exception:  # another Hyperscan build: compile them again when needed
                self._caseless = False
        if self._present:
            try:
                self._present = cache.load_hyperscan(self._present)
            except Exception:
                self._present = False

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
        return self.literals_in(probe)[0]

    def literals_in(self, probe: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """:meth:`candidates_in` ``probe``, and the literal words ``probe`` holds.

        A long probe (a traceback of many kilobytes) is searched once for all the words (with
        Hyperscan), not once per word."""
        if self._any is None:
            return self._always, ()
        if len(probe) > LONG_TEXT and self._present_database() is not None:
            present = tuple(self._present_words(probe))
        elif self._any.search(probe) is None:
            return self._always, ()
        else:
            present = tuple([literal for literal in self._literals if literal in probe])
        if not present:
            return self._always, present
        found = set(self._always)
        for literal in present:
            found.update(self._by_literal[literal])
        return tuple(sorted(found)), present

    def _present_database(self) -> Any:
        if self._present is False:
            self._present = _hyperscan_database(self._literals, "utf-8", single=True)
        return self._present

    def _present_words(self, text: str) -> list[str]:
        """The literal words ``text`` holds (exact bytes: a probe is lower case already)."""
        found: list[str] = []
        literals = self._literals

        def on_word(word: int, _start: int, _end: int, _flags: int, _context: object) -> None:
            found.append(literals[word])

        # UTF-8 is self-synchronising: a word's bytes occur exactly where the word does. A
        # lone surrogate (never part of a word) is passed through.
        self._present.scan(text.encode("utf-8", "surrogatepass"), match_event_handler=on_word)
        return found

    def select(self, texts: Sequence[str]) -> list[int]:
        """Indexes of the ``texts`` for which :meth:`candidates` is not empty, in order.

        The same answer as asking text by text, for a whole block at once: with Hyperscan, one
        caseless search of the texts' UTF-8 (:meth:`_select_utf8`); else the probes are joined
        and searched by ``re``, ASCII and wide texts apart.
        """
        if self._always:
            return list(range(len(texts)))
        if self._any is None or not texts:
            return []
        self.warm()
        if self._caseless is not None:
            try:
                data, lengths = _utf8(texts)
            except UnicodeEncodeError:  # a lone surrogate: not for Hyperscan's UTF-8 mode
                pass
            else:
                # A long text (a traceback) may hold many words, each occurrence a callback:
                # such a block is searched apart. Asked by length, not by stopping the search
                # after some hundred words: a chatty block holds that many in short texts
                # (400 on the near-miss rows) and was searched twice.
                if max(lengths) > LONG_TEXT:
                    return self._select_long_apart(texts, lengths)
                return self._select_utf8(texts, data, lengths)
        return self._select_by_re(texts)

    def confirm(self, texts: Sequence[str], hits: list[int], timeout: float) -> list[int]:
        """Those of ``hits`` (indexes of ``texts`` :meth:`select` chose) that some rule's
        template really matches: each template searches, in one call, the texts holding its
        literal words, normalised and joined (:class:`analyzer.rulebook.native.BlockCheck`);
        the others match no template. Texts holding a character neither ASCII nor inert
        (whose normalised form may differ in more than whitespace), NUL or a lone surrogate
        are all kept."""
        check = self._native_check() if hits else None
        if check is None:
            return hits
        chosen = [texts[index] for index in hits]
        try:
            encoded = [text.encode() for text in chosen]
        except UnicodeEncodeError:
            return hits
        kept: set[int] = set()
        joined = b"\n".join(encoded)
        if not joined.isascii():
            kept.update(
                self._not_inert([p for p, d in enumerate(encoded) if not d.isascii()], encoded)
            )
        if 0 in joined:
            kept.update(place for place, data in enumerate(encoded) if 0 in data)
        places: Sequence[int] = range(len(hits))
        if kept:
            places = [place for place in places if place not in kept]
            chosen = [chosen[place] for place in places]
            encoded = [encoded[place] for place in places]
            joined = b"\n".join(encoded)
        found = check.kept(chosen, self._words_in(joined, encoded), timeout)
        kept.update(places[index] for index in found)
        return [hits[place] for place in sorted(kept)]

    def _words_in(self, joined: bytes, encoded: Sequence[bytes]) -> Iterable[tuple[int, int]]:
        """The literal words in the texts ``encoded`` (``joined`` by line ends), as (word,
        text index), by one caseless search (exact for ASCII and inert texts)."""
        words: list[int] = []
        ends: list[int] = []
        add_word, add_end = words.append, ends.append

        def on_word(word: int, _start: int, end: int, _flags: int, _context: object) -> None:
            add_word(word)
            add_end(end)

        self._caseless[0].scan(joined, match_event_handler=on_word)
        return zip(words, map(bisect_right, repeat(_bounds(map(len, encoded))), ends), strict=True)

    def _not_inert(self, places: list[int], encoded: list[bytes]) -> list[int]:
        """Those of ``places`` (in ``encoded``) whose text holds a character neither ASCII nor
        inert (:data:`INERT_RANGES`)."""
        others = self._caseless[1]
        ends: list[int] = []

        def on_other(_id: int, _start: int, end: int, _flags: int, _context: object) -> None:
            ends.append(end)

        others.scan(b"\n".join([encoded[place] for place in places]), match_event_handler=on_other)
        starts = list(accumulate((len(encoded[place]) + 1 for place in places), initial=0))
        return sorted({places[bisect_right(starts, end - 1) - 1] for end in ends})

    def _select_long_apart(self, texts: Sequence[str], lengths: list[int]) -> list[int]:
        """:meth:`select` of a block holding a long text (of ``lengths`` bytes in UTF-8 above
        :data:`LONG_TEXT`: a traceback holding many words), decided alone, in one pass; the
        others in one search still."""
        short = [i for i, length in enumerate(lengths) if length <= LONG_TEXT]
        chosen = [texts[i] for i in short]
        found = self._select_utf8(chosen, "\n".join(chosen).encode(), [lengths[i] for i in short])
        hits = [short[i] for i in found]
        hits += [
            i
            for i, length in enumerate(lengths)
            if length > LONG_TEXT and self.candidates(texts[i])
        ]
        return sorted(hits)

    def _select_by_re(self, texts: Sequence[str]) -> list[int]:
        """:meth:`select` without Hyperscan (or for a block holding a lone surrogate): the
        probes joined and searched by ``re``, ASCII and wide texts apart."""
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

    def _select_utf8(self, texts: Sequence[str], data: bytes, lengths: list[int]) -> list[int]:
        """:meth:`select` by one caseless search of the texts' UTF-8 joined by line ends
        (``data``; ``lengths``: each text's in bytes).

        For a text of ASCII and inert characters the probe differs from the text only in the
        case of ASCII letters, and literals are lower case: a caseless search of the text finds
        what a search of the probe finds. A text holding any other character (the search
        reports where) is decided the exact way, by :meth:`candidates`.
        """
        literal_ends: list[int] = []
        other_ends: list[int] = []
        add_literal, add_other = literal_ends.append, other_ends.append

        def on_literal(_id: int, _start: int, end: int, _flags: int, _context: object) -> None:
            add_literal(end)

        def on_other(_id: int, _start: int, end: int, _flags: int, _context: object) -> None:
            add_other(end)

        if not texts:
            return []
        words, others = self._caseless
        words.scan(data, match_event_handler=on_literal)
        if not data.isascii():
            others.scan(data, match_event_handler=on_other)
        if not literal_ends and not other_ends:
            return []
        bounds = _bounds(lengths)
        hits = set(map(bisect_right, repeat(bounds), literal_ends))
        if other_ends:
            unsure = set(map(bisect_right, repeat(bounds), other_ends))
            hits -= unsure
            hits.update(index for index in unsure if self.candidates(texts[index]))
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
            # (A lone surrogate, which no literal holds, is passed through as one.)
            data, width, database = probe.encode("utf-32-le", "surrogatepass"), 4, wide_db

        def on_match(_id: int, _start: int, end: int, _flags: int, _context: object) -> None:
            offsets.append((end - 1) // width)

        database.scan(data, match_event_handler=on_match)
        return offsets
