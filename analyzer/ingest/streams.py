"""Byte streams under the readers: gzip by magic bytes, and replaying a sniffed head.

Readers see one binary stream per input, already decompressed. A damaged gzip
stream ends early instead of raising: :class:`GzipGuard` remembers the damage so
that the source can count it as a skipped line with a reason.
"""

from __future__ import annotations

import gzip
import io
import zlib
from typing import BinaryIO

GZIP_MAGIC = b"\x1f\x8b"
BUFFER_SIZE = 1 << 16


class ReplayReader(io.RawIOBase):
    """Yield ``head`` first, then the rest of ``rest``: a stream read once can still be sniffed."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        super().__init__()
        self._head = memoryview(head)
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        target = memoryview(buffer).cast("B")
        if self._head:
            count = min(len(target), len(self._head))
            target[:count] = self._head[:count]
            self._head = self._head[count:]
            return count
        data = self._rest.read(len(target))
        target[: len(data)] = data
        return len(data)


class GzipGuard(io.RawIOBase):
    """Decompress ``raw``; a truncated or corrupt stream ends early and sets ``damaged``.

    It decompresses in pieces of ``BUFFER_SIZE`` whatever the reader asks for: gzip drops what
    a read had decompressed when it meets the damage, so with pieces of one size every reader
    (line by line, or in blocks of half a megabyte) keeps the same bytes of a damaged file.
    """

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self._gzip = gzip.GzipFile(fileobj=raw, mode="rb")
        self.damaged = False
        self._piece = b""
        self._at = 0  # bytes of the piece already handed out

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._at == len(self._piece):
            if self.damaged:
                return 0
            try:
                self._piece = self._gzip.read(BUFFER_SIZE)
            except (EOFError, OSError, zlib.error):
                self.damaged = True
                return 0
            self._at = 0
        count = min(len(buffer), len(self._piece) - self._at)
        memoryview(buffer).cast("B")[:count] = self._piece[self._at : self._at + count]
        self._at += count
        return count

    def close(self) -> None:
        self._gzip.close()
        super().close()


def buffered(raw: io.RawIOBase) -> BinaryIO:
    """Wrap a raw stream for fast ``readline`` iteration."""
    return io.BufferedReader(raw, buffer_size=BUFFER_SIZE)


def decompressed(stream: BinaryIO) -> tuple[BinaryIO, GzipGuard | None]:
    """``stream`` itself, or its gzip-decompressed view when it starts with the gzip magic.

    The bytes looked at are read again: a file (that can seek) from its start, with no layer
    between the reader and the file; a stream through :class:`ReplayReader`.
    """
    head = stream.read(len(GZIP_MAGIC))
    source: BinaryIO
    if stream.seekable():
        stream.seek(-len(head), io.SEEK_CUR)
        source = stream
    else:
        source = buffered(ReplayReader(head, stream))
    if head != GZIP_MAGIC:
        return source, None
    guard = GzipGuard(source)
    return buffered(guard), guard


def read_head(stream: BinaryIO, limit: int) -> bytes:
    """The first bytes of ``stream``, up to ``limit``, until a non-blank byte is seen."""
    parts: list[bytes] = []
    size = 0
    while size < limit:
        chunk = stream.read(min(BUFFER_SIZE, limit - size))
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
        if chunk.strip():
            break
    return b"".join(parts)
