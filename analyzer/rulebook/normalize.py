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
from collections.abc import Sequence

# Invisible formatting characters that real copies of the messages carry:
# LRM/RLM, the bidi embeddings/overrides and isolates, ALM, ZWSP, word joiner, BOM.
INVISIBLE = frozenset(
    "\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\u061c\ufeff"
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
    """The ASCII case, a word at a time (most log lines: no per-character Python loop)."""
    normalized = " ".join(text.split())
    if normalized == text:
        return text, range(len(text) + 1)
    offsets: list[int] = []
    previous_end = -1
    for word in _WORD.finditer(text):
        start, end = word.span()
        if previous_end >= 0:
            offsets.append(previous_end)
        offsets.extend(range(start, end))
        previous_end = end
    offsets.append(len(text))
    return normalized, offsets


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
