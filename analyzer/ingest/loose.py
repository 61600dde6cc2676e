"""Log entries copied as JavaScript objects, or cut short: read for what they hold.

The Logs Explorer (and a browser console's copy of an entry) can give an entry in
JavaScript-object style, ``{ insertId: "1x2y", jsonPayload: { message: 'The replica ...' },
... }``: keys without quotes, strings in single or double quotes, commas between members or
not (the old Logs Viewer's expanded view puts each member on its own line without them),
a trailing comma. And a paste is often cut: the text stops inside a string or an object.
:func:`loose_object` reads such a text as far as it goes: every member read whole is kept, a
string cut at the end is kept as far as it goes, objects and arrays left open are closed. It
answers None when the text is no object at all, so that what it gives is an entry's own
words, never a guess.
"""

from __future__ import annotations

import re
from typing import Any

# A key without quotes: a JavaScript name, or a label's name as the viewer prints it
# (compute.googleapis.com/resource_id).
_BARE_KEY = re.compile(r"[A-Za-z_$][\w$.\-/]*")
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_WORD = re.compile(r"[A-Za-z_$][\w$]*")
_WORDS = {"true": True, "false": False, "null": None, "undefined": None}
_BLANK = re.compile(r"[\s,]*")
# What the viewer shows for a collapsed value.
_COLLAPSED = re.compile(r"\{\s*(?:…|\.\.\.)\s*\}|\[\s*(?:…|\.\.\.)\s*\]")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}
# How deep objects may nest: far beyond a LogEntry's, and no deeper than Python's stack.
_DEEPEST = 64


class _Cut(Exception):
    """The text ended: what was read so far is the answer."""


class _NotObject(Exception):
    """The text is no object (of this loose kind either)."""


def loose_object(text: str) -> dict[str, Any] | None:
    """The object ``text`` holds (see the module docstring), or None."""
    reader = _Reader(text)
    reader.blank()
    if not text.startswith("{", reader.position):
        return None
    try:
        found = reader.value(0)
    except _NotObject:
        return None
    return found if isinstance(found, dict) and found else None


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.position = 0

    def blank(self) -> None:
        found = _BLANK.match(self.text, self.position)
        assert found is not None
        self.position = found.end()

    def value(self, depth: int) -> Any:
        """The value at the current position; at the text's end, what was read of it."""
        if depth > _DEEPEST:
            raise _NotObject
        self.blank()
        text, at = self.text, self.position
        if at >= len(text):
            raise _Cut
        char = text[at]
        collapsed = _COLLAPSED.match(text, at)
        if collapsed is not None:
            self.position = collapsed.end()
            return {} if char == "{" else []
        if char == "{":
            return self._object(depth)
        if char == "[":
            return self._array(depth)
        if char in "\"'":
            return self._string()
        return self._scalar()

    def _object(self, depth: int) -> dict[str, Any]:
        self.position += 1
        found: dict[str, Any] = {}
        while True:
            self.blank()
            if self.position >= len(self.text):
                return found  # cut: closed as it is
            if self.text[self.position] == "}":
                self.position += 1
                return found
            try:
                key = self._key()
            except _CutValue:
                return found  # cut inside a key: the members before it
            self.blank()
            if not self.text.startswith(":", self.position):
                if self.position >= len(self.text):
                    return found
                raise _NotObject
            self.position += 1
            try:
                found[key] = self.value(depth + 1)
            except _Cut:
                return found
            except _CutValue as cut:
                found[key] = cut.value
                return found

    def _array(self, depth: int) -> list[Any]:
        self.position += 1
        found: list[Any] = []
        while True:
            self.blank()
            if self.position >= len(self.text):
                return found
            if self.text[self.position] == "]":
                self.position += 1
                return found
            try:
                found.append(self.value(depth + 1))
            except _Cut:
                return found
            except _CutValue as cut:
                found.append(cut.value)
                return found

    def _key(self) -> str:
        text, at = self.text, self.position
        if at < len(text) and text[at] in "\"'":
            return self._string()
        found = _BARE_KEY.match(text, at)
        if found is None:
            raise _NotObject
        self.position = found.end()
        return found.group()

    def _string(self) -> str:
        text = self.text
        quote = text[self.position]
        at = self.position + 1
        parts: list[str] = []
        while True:
            end = _next_stop(text, at, quote)
            parts.append(text[at:end])
            if end >= len(text):
                raise _CutValue("".join(parts))
            if text[end] == quote:
                self.position = end + 1
                return "".join(parts)
            # A backslash: the escape after it.
            if end + 1 >= len(text):
                raise _CutValue("".join(parts))
            escaped = text[end + 1]
            if escaped == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[end + 2 : end + 6]):
                parts.append(chr(int(text[end + 2 : end + 6], 16)))
                at = end + 6
            else:
                parts.append(_ESCAPES.get(escaped, escaped))
                at = end + 2

    def _scalar(self) -> Any:
        text, at = self.text, self.position
        number = _NUMBER.match(text, at)
        if number is not None:
            self.position = number.end()
            literal = number.group()
            return float(literal) if any(c in literal for c in ".eE") else int(literal)
        word = _WORD.match(text, at)
        if word is None:
            raise _NotObject
        self.position = word.end()
        return _WORDS.get(word.group(), word.group())


class _CutValue(Exception):
    """A string the text's end cut: ``value`` is what it held up to there."""

    def __init__(self, value: str) -> None:
        super().__init__(value)
        self.value = value


def _next_stop(text: str, start: int, quote: str) -> int:
    """Where the string from ``start`` stops: its closing ``quote``, a backslash, or the
    text's end."""
    ends = [found for found in (text.find(quote, start), text.find("\\", start)) if found != -1]
    return min(ends) if ends else len(text)
