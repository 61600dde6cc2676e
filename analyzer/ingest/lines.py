"""Physical lines of a binary stream, counted into the input's stats, none longer than a log
entry can be."""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from typing import BinaryIO

from analyzer.ingest.records import InputStats

# Cloud Logging refuses a LogEntry over about 256 KiB (an audit entry: 512 KiB; the Logging
# quotas page), so no export holds a line of one entry much longer: JSON-escaping every byte
# as \u00XX makes an audit entry 3 MiB at most. A line beyond this is no log line (a minified
# blob, a dump pasted in), and holding it cost 400-600 MB of memory for 100 MB: it is read past
# in pieces and skipped with :data:`LONG_LINE`.
# The UTF-8 byte order mark some editors write before a file's first line.
BOM = codecs.BOM_UTF8
LONGEST_LINE = 4 << 20
LONG_LINE = "line longer than any log entry"
# The pieces a long line is read past in.
_PIECE_BYTES = 1 << 16


def read_past_line(stream: BinaryIO) -> int:
    """Read ``stream`` on to the end of the line being read (through its ``\\n``, or to the
    input's end), a piece at a time; the bytes read."""
    used = 0
    while piece := stream.readline(_PIECE_BYTES):
        used += len(piece)
        if piece.endswith(b"\n"):
            break
    return used


def capped_lines(stream: BinaryIO) -> Iterator[bytes | None]:
    """The physical lines of ``stream`` (each with its line end), None for a line longer than
    :data:`LONGEST_LINE` (without its line end), which is read past without being held."""
    readline = stream.readline
    while line := readline(LONGEST_LINE + 1):
        if len(line) > LONGEST_LINE and not line.endswith(b"\n"):
            read_past_line(stream)
            yield None
        else:
            yield line


def skip_long_line(stats: InputStats, number: int) -> None:
    """Count line ``number`` of ``stats``'s input as longer than any log entry."""
    stats.skip(LONG_LINE)
    stats.long_lines.append(number)


def text_lines(stream: BinaryIO, stats: InputStats) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each physical line, counting it in ``stats.lines``.

    Undecodable bytes are replaced (U+FFFD), kept and counted (``stats.invalid_utf8``): a log
    line with one bad byte still carries its message. The line ending and a leading BOM are
    removed. A line longer than any log entry is counted as skipped (:data:`LONG_LINE`) and
    not yielded.
    """
    # capped_lines, written inline: a generator between this one and the stream cost 2% of a
    # text reader's instructions (callgrind, 5 MB of stream-logs read plainly).
    readline = stream.readline
    while raw := readline(LONGEST_LINE + 1):
        stats.lines += 1
        if len(raw) > LONGEST_LINE and not raw.endswith(b"\n"):
            read_past_line(stream)
            skip_long_line(stats, stats.lines)
            continue
        if stats.lines == 1 and raw.startswith(BOM):
            raw = raw[len(BOM) :]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace")
            stats.invalid_utf8 += 1
        yield stats.lines, text.rstrip("\r\n")
