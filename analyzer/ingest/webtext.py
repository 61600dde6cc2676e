"""Text taken from a web page's source: its line ends are HTML ``<br />`` tags.

A stream-logs run or a console copy pasted into a blog post and taken from the page's source
(tests/real/gh-sinaungoding-tf-od-cloud-S: a WordPress ``<pre>`` block) keeps the page's
markup: each line ends with a ``<br />`` tag, the whole excerpt is often one physical line,
and ``<``, ``>``, ``&`` and quotes are entities (``File "&lt;string&gt;"``). Read as it is,
such a text is one line that no reader knows, and its failure goes unseen.

When the head of a text shows the tags standing for its line ends (:func:`breaks_lines`), the
readers see it through :class:`WebText`: each tag, with a line end right after it, is one line
end, and each entity is its character. Line numbers then count those lines, and the run says
so (``InputStats.web_text``).
"""

from __future__ import annotations

import io
import re
from typing import BinaryIO

# What a text read through WebText is read through (``InputStats.web_text`` says it).
WEB_TEXT = "web-text"
# What the head is looked at for (the window sniffing decides on is larger).
HEAD_BYTES = 1 << 12
# A line break tag (<br>, <br/>, <br />, any case) and the line end a page's source may keep
# after it: one line end in all.
_BREAK = re.compile(rb"<br\s*/?>(?:\r?\n)?", re.IGNORECASE)
# The longest tag or entity a read may cut (``&#x1F600;``, ``<br    />``): kept for the next.
_LONGEST = 16
# An entity closed by its semicolon. HTML also reads some names without one, but a log's
# URLs hold raw "&" ("...?project=1&resource=ml_job": "&reg" would become "\u00ae").
_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_CHUNK = 1 << 16


def breaks_lines(head: bytes) -> bool:
    """Whether the text whose first bytes are ``head`` marks its line ends with ``<br>`` tags:
    at least two, and on most of its lines. A JSON value (an export, not a page) never is:
    a ``<br>`` in a message of it is the message's."""
    body = head.lstrip()
    if body[:1] in (b"{", b"["):
        return False
    tags = len(_BREAK.findall(head))
    return tags >= 2 and tags * 2 >= head.count(b"\n")


class WebText(io.RawIOBase):
    """The text of ``raw`` with its ``<br>`` tags as line ends and its entities as
    characters, converted as it is read (never the whole input at once)."""

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self._raw = raw
        self._carried = b""
        self._pending = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending and not self._done:
            data = self._carried + self._raw.read(_CHUNK)
            self._done = len(data) == len(self._carried)
            cut = len(data) if self._done else _safe_end(data)
            self._carried = data[cut:]
            self._pending = _converted(data[:cut])
        count = min(len(buffer), len(self._pending))
        memoryview(buffer).cast("B")[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count

    def close(self) -> None:
        self._raw.close()
        super().close()


def _safe_end(data: bytes) -> int:
    """Where ``data`` can be cut without cutting a tag, the line end after a tag, or an
    entity: before a ``<`` near its end that is not closed yet or closes just before the end
    (a ``\\n`` may come next), or before an ``&`` that no ``;`` closes yet."""
    near = max(0, len(data) - _LONGEST)
    cut = len(data)
    tag = data.rfind(b"<", near)
    if tag != -1:
        close = data.find(b">", tag)
        if close == -1 or data[close + 1 :] in (b"", b"\r"):
            cut = tag
    entity = data.rfind(b"&", near)
    if entity != -1 and data.find(b";", entity) == -1:
        cut = min(cut, entity)
    return cut


def _converted(data: bytes) -> bytes:
    """``data`` with its tags as line ends and its entities as characters; bytes that are not
    UTF-8 pass through unchanged (surrogate escapes)."""
    text = _BREAK.sub(b"\n", data).decode("utf-8", "surrogateescape")
    if "&" in text:
        import html  # only for such a text: its table of names is not free to load

        text = _ENTITY.sub(lambda found: html.unescape(found.group()), text)
    return text.encode("utf-8", "surrogateescape")
