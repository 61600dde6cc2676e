"""Text normalisation shared by templates, messages and the prefilter.

Real messages are damaged in a few recurring ways (see ``platform.md`` section 3):
full-width digits and punctuation, bidi control marks around left-to-right
placeholders in right-to-left text, line breaks and doubled spaces inside
sentences, stray spaces before a period. Folding is done character by
character so that every normalised character still points back to the
character it came from: extracted values are cut from the original text.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Sequence
from typing import overload

# Invisible formatting characters that real copies of the messages carry:
# LRM/RLM, the bidi embeddings/overrides and isolates, ALM, ZWSP, word joiner, BOM.
INVISIBLE = frozenset(
    "\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\u061c\ufeff"
)


# Non-ASCII characters that leave a text's probe unchanged but for ASCII case: each is its own
# NFKC form, is not an invisible mark, and is its own lower case (tests/test_prefilter_inert.py
# checks every one). A text of ASCII and these is searched as UTF-8, ASCII letters caselessly,
# with no folding and no lower(). These are what training output holds: Latin-1 signs,
# Hebrew letters, dashes, quotes and bullets, arrows, box drawing and block elements (progress
# bars), check marks, kana, CJK ideographs, Hangul syllables, emoji.
INERT_RANGES = (
    (0x00B0, 0x00B1),
    (0x00B7, 0x00B7),
    (0x00D7, 0x00D7),
    (0x00F7, 0x00F7),
    (0x05D0, 0x05EA),
    (0x2013, 0x2014),
    (0x2018, 0x2019),
    (0x201C, 0x201D),
    (0x2022, 0x2022),
    (0x2190, 0x2193),
    (0x2500, 0x259F),
    (0x2713, 0x2718),
    (0x3001, 0x3002),
    (0x3041, 0x3096),
    (0x30A1, 0x30FA),
    (0x30FC, 0x30FC),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7A3),
    (0x1F300, 0x1F64F),
    (0x1F680, 0x1F6FF),
    (0x1F900, 0x1F9FF),
)


class _FoldTable(dict[int, str]):
    """``str.translate`` table computing per-character NFKC lazily (C speed once cached)."""

    def __missing__(self, codepoint: int) -> str:
        char = chr(codepoint)
        folded = "" if char in INVISIBLE else unicodedata.normalize("NFKC", char)
        self[codepoint] = folded
        return folded


_FOLD = _FoldTable()


def fold(text: str) -> str:
    """``text`` with each character NFKC-folded and invisible marks removed.

    Per character, not per string: a combining mark never merges into the
    preceding letter, so a literal found in the original is found here too.
    """
    if text.isascii():
        return text
    return text.translate(_FOLD)


def normalize(text: str) -> str:
    """The form templates and messages are compared in.

    :func:`fold`, then every whitespace run (line breaks included) becomes one
    space, and leading and trailing whitespace is dropped. Idempotent.
    """
    return " ".join(fold(text).split())


# For ASCII text the fold is the identity, so only whitespace runs change: cut it into words.
_WORD = re.compile(r"\S+")


def normalize_with_offsets(text: str) -> tuple[str, Sequence[int]]:
    """:func:`normalize` plus, for each normalised character, its index in ``text``.

    The offsets have one extra entry, ``len(text)``, so that a match ending at the end of the
    normalised text maps back too. A whitespace run's single space points at the run's first
    character.
    """
    if text.isascii():
        return _ascii_with_offsets(text)
    out: list[str] = []
    offsets: list[int] = []
    pending_space = -1  # index of the first original char of a whitespace run
    for index, char in enumerate(text):
        folded = char if char.isascii() else _FOLD[ord(char)]
        for piece in folded:
            if piece.isspace():
                if pending_space < 0:
                    pending_space = index
                continue
            if pending_space >= 0:
                if out:
                    out.append(" ")
                    offsets.append(pending_space)
                pending_space = -1
            out.append(piece)
            offsets.append(index)
    offsets.append(len(text))
    return "".join(out), offsets


def _ascii_with_offsets(text: str) -> tuple[str, Sequence[int]]:
    """The ASCII case: the words joined by single spaces, and offsets computed from the words
    only when asked (most texts a rule matches need a few; a long traceback would otherwise
    cost a list of every character's offset)."""
    normalized = _joined_words(text)
    if normalized == text:
        return text, range(len(text) + 1)
    return normalized, _WordOffsets(text, len(normalized))


# Past this many characters a text's words are joined a piece at a time.
_PIECE = 1 << 16
_SPACE = re.compile(r"\s")


def _joined_words(text: str) -> str:
    """``" ".join(text.split())``: of a long text (a traceback of 4 MiB, 600,000 words), a
    piece at a time, each cut at a space, without a list of all its words (35 MB there)."""
    if len(text) <= _PIECE:
        return " ".join(text.split())
    pieces = []
    at = 0
    while at < len(text):
        space = _SPACE.search(text, at + _PIECE)
        end = space.start() if space else len(text)
        joined = " ".join(text[at:end].split())
        if joined:
            pieces.append(joined)
        at = end
    return " ".join(pieces)


class _WordOffsets(Sequence[int]):
    """The offsets of :func:`normalize_with_offsets` for an ASCII text whose whitespace runs
    changed: each word's characters point at themselves, the space after a word at the first
    character of the run that followed it, the end at ``len(text)``."""

    __slots__ = ("_length", "_original", "_starts", "_text")

    def __init__(self, text: str, length: int) -> None:
        self._text = text
        self._length = length + 1
        # Per word: its start in the normalised text and in the original (on first use).
        self._starts: tuple[list[int], list[int]] | None = None

    def __len__(self) -> int:
        return self._length

    def _words(self) -> tuple[list[int], list[int]]:
        if self._starts is None:
            normalized: list[int] = []
            original: list[int] = []
            at = 0
            for word in _WORD.finditer(self._text):
                start, end = word.span()
                normalized.append(at)
                original.append(start)
                at += end - start + 1
            self._starts = (normalized, original)
        return self._starts

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[int]: ...

    def __getitem__(self, index: int | slice) -> int | Sequence[int]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._length))]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(index)
        if index == self._length - 1:
            return len(self._text)
        normalized, original = self._words()
        word = bisect_right(normalized, index) - 1
        # Inside the word, or the space after it: the first character of the run after it.
        return original[word] + index - normalized[word]


def original_span(offsets: Sequence[int], text: str, start: int, end: int) -> str:
    """The original text behind the normalised span ``[start, end)``, marks removed."""
    if start >= end:
        return ""
    begin = offsets[start]
    # Extend to the end of the last original character (one character may fold
    # into several, so use the offset of the last normalised char, plus one).
    finish = offsets[end - 1] + 1
    piece = text[begin:finish]
    if piece.isascii():  # no invisible mark is ASCII
        return piece.strip()
    return "".join(c for c in piece if c not in INVISIBLE).strip()
