"""Physical lines of a binary stream, counted into the input's stats."""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from analyzer.ingest.sniff import BOM
from analyzer.records import InputStats


def text_lines(stream: BinaryIO, stats: InputStats) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each physical line, counting it in ``stats.lines``.

    Undecodable bytes are replaced (U+FFFD), kept and counted (``stats.invalid_utf8``): a log
    line with one bad byte still carries its message. The line ending and a leading BOM are
    removed.
    """
    for raw in stream:
        stats.lines += 1
        if stats.lines == 1 and raw.startswith(BOM):
            raw = raw[len(BOM) :]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace")
            stats.invalid_utf8 += 1
        yield stats.lines, text.rstrip("\r\n")
