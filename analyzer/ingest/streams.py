"""Byte streams under the readers: gzip by magic bytes, and replaying a sniffed head.

Readers see one binary stream per input, already decompressed. A damaged gzip
stream ends early instead of raising: :class:`GzipGuard` remembers the damage so
that the source can count it as a skipped line with a reason.
"""

from __future__ import annotations

import codecs
import gzip
import io
import zlib
from collections.abc import Callable
from typing import BinaryIO

from analyzer.ingest.webtext import HEAD_BYTES, WEB_TEXT, WebText, breaks_lines

GZIP_MAGIC = b"\x1f\x8b"
BUFFER_SIZE = 1 << 16
# Why a gzip stream ended early, as a skip reason. Cut short (the stream stops before its
# end marker: a download or copy that did not finish) and damaged (bad data, a CRC mismatch)
# ask the user for different things: copy the file again, or find another copy.
TRUNCATED_COMPRESSED = "truncated compressed data"
CORRUPT_COMPRESSED = "corrupt compressed data"


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
        # Straight into the caller's buffer: stdin's reader fills it with one copy, where
        # read() would allocate a chunk's worth anew (and fault its pages in) for every read.
        readinto = getattr(self._rest, "readinto", None)
        if readinto is not None:
            return int(readinto(target))
        data = self._rest.read(len(target))
        target[: len(data)] = data
        return len(data)


class CountingReader(io.RawIOBase):
    """``raw``'s bytes, each read's count told to ``on_bytes``: how far a reader has got, in
    the input's own bytes (compressed ones for a gzip file), whatever its format."""

    def __init__(self, raw: BinaryIO, on_bytes: Callable[[int], None]) -> None:
        super().__init__()
        self._raw = raw
        self._on_bytes = on_bytes
        # read1: what is there now, without waiting for a whole buffer (a pipe's writer may
        # be slow); a plain read where there is none.
        self._read = getattr(raw, "read1", raw.read)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        target = memoryview(buffer).cast("B")
        data = self._read(len(target))
        target[: len(data)] = data
        if data:
            self._on_bytes(len(data))
        return len(data)

    def close(self) -> None:
        self._raw.close()
        super().close()


class CountingFile(io.FileIO):
    """A file opened for reading whose every read's count is told to ``on_bytes``: a reader
    that seeks (a light scanner reading on where it stopped, a block cut at a line end) sees
    a file, and its progress is still counted where the bytes come from."""

    def __init__(self, path: str, on_bytes: Callable[[int], None]) -> None:
        super().__init__(path, "rb")
        self._on_bytes = on_bytes

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        count = super().readinto(buffer)
        if count:
            self._on_bytes(count)
        return count or 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size)
        if data:
            self._on_bytes(len(data))
        return data or b""

    def readall(self) -> bytes:
        data = super().readall()
        if data:
            self._on_bytes(len(data))
        return data


def open_counted(path: str, on_bytes: Callable[[int], None]) -> BinaryIO:
    """The file at ``path``, buffered as ``open(path, "rb")`` is, its reads told to
    ``on_bytes`` (:class:`CountingFile`)."""
    return io.BufferedReader(CountingFile(path, on_bytes), buffer_size=BUFFER_SIZE)


class GzipGuard(io.RawIOBase):
    """Decompress ``raw``; a truncated or corrupt stream ends early and sets ``damaged``
    (``reason`` says which).

    It decompresses in pieces of ``BUFFER_SIZE`` whatever the reader asks for: gzip drops what
    a read had decompressed when it meets the damage, so with pieces of one size every reader
    (line by line, or in blocks of half a megabyte) keeps the same bytes of a damaged file.
    """

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__()
        self._gzip = gzip.GzipFile(fileobj=raw, mode="rb")
        self.damaged = False
        self.truncated = False  # the stream ended before its end marker (EOFError)
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
            except EOFError:
                self.damaged = self.truncated = True
                return 0
            except (OSError, zlib.error):
                self.damaged = True
                return 0
            self._at = 0
        count = min(len(buffer), len(self._piece) - self._at)
        memoryview(buffer).cast("B")[:count] = self._piece[self._at : self._at + count]
        self._at += count
        return count

    @property
    def reason(self) -> str:
        """The skip reason of the damage: :data:`TRUNCATED_COMPRESSED` or
        :data:`CORRUPT_COMPRESSED`."""
        return TRUNCATED_COMPRESSED if self.truncated else CORRUPT_COMPRESSED

    def close(self) -> None:
        self._gzip.close()
        super().close()


def buffered(raw: io.RawIOBase) -> BinaryIO:
    """Wrap a raw stream for fast ``readline`` iteration."""
    return io.BufferedReader(raw, buffer_size=BUFFER_SIZE)


def peeked(stream: BinaryIO, size: int) -> tuple[bytes, BinaryIO]:
    """The first ``size`` bytes of ``stream`` and a stream that reads them again: the file
    itself sought back (no layer between reader and file), or a :class:`ReplayReader`."""
    head = stream.read(size)
    if stream.seekable():
        stream.seek(-len(head), io.SEEK_CUR)
        return head, stream
    return head, buffered(ReplayReader(head, stream))


def decompressed(stream: BinaryIO) -> tuple[BinaryIO, GzipGuard | None]:
    """``stream`` itself, or its gzip-decompressed view when it starts with the gzip magic.

    The bytes looked at are read again: a file (that can seek) from its start, with no layer
    between the reader and the file; a stream through :class:`ReplayReader`.
    """
    head, source = peeked(stream, len(GZIP_MAGIC))
    if head != GZIP_MAGIC:
        return source, None
    guard = GzipGuard(source)
    return buffered(guard), guard


def read_head(stream: BinaryIO, limit: int) -> bytes:
    """The first bytes of ``stream``: its leading blank space, whatever its length, then up to
    ``limit`` bytes more (fewer at the end of the input).

    Stopping at ``limit`` bytes of blank space would sniff an export that starts with that much
    of it as empty, and lose every record after it.
    """
    parts: list[bytes] = []
    blank = True
    size = 0
    while size < limit:
        chunk = stream.read(min(BUFFER_SIZE, limit - size) if not blank else BUFFER_SIZE)
        if not chunk:
            break
        parts.append(chunk)
        if blank:
            stripped = _without_bom(chunk, first=len(parts) == 1).lstrip()
            if not stripped:
                continue
            blank = False
            size = len(stripped)
        else:
            size += len(chunk)
    return b"".join(parts)


def _without_bom(chunk: bytes, first: bool) -> bytes:
    # A UTF-8 byte-order mark before a blank head is not text: the head is still blank (with
    # it, 64 KiB of blank lines after a BOM were sniffed as empty and every record lost).
    return chunk[len(codecs.BOM_UTF8) :] if first and chunk.startswith(codecs.BOM_UTF8) else chunk


def read_window(stream: BinaryIO, limit: int) -> tuple[bytes, int]:
    """What :func:`read_head` reads, but with the blank space before the last blank piece
    dropped, and how many line ends it held: a sniff needs only the window after it (and the
    line numbers), not gigabytes of spaces in memory."""
    dropped = 0
    kept: list[bytes] = []
    size = 0
    blank = True
    first = True
    while size < limit:
        chunk = stream.read(min(BUFFER_SIZE, limit - size) if not blank else BUFFER_SIZE)
        if not chunk:
            break
        if blank:
            stripped = _without_bom(chunk, first).lstrip()
            first = False
            if not stripped:
                if kept:
                    dropped += kept[0].count(b"\n")
                kept = [chunk]
                continue
            blank = False
            size = len(stripped)
        else:
            size += len(chunk)
        kept.append(chunk)
    return b"".join(kept), dropped


# Byte-order marks of UTF-16 (Windows PowerShell's redirections write UTF-16 LE with one).
UTF16_BOMS = {codecs.BOM_UTF16_LE: "utf-16-le", codecs.BOM_UTF16_BE: "utf-16-be"}


def utf16_encoding(head: bytes) -> str | None:
    """The UTF-16 codec of an input whose first bytes are ``head``: by its byte-order mark, or,
    without one, by text whose every other byte is NUL (ASCII in UTF-16); None for others."""
    for bom, codec in UTF16_BOMS.items():
        if head.startswith(bom):
            return codec
    sample = head[:256]
    if len(sample) >= 8 and len(sample) % 2 == 0:
        odd, even = sample[1::2], sample[0::2]
        if not odd.strip(b"\x00") and b"\x00" not in even:
            return "utf-16-le"
        if not even.strip(b"\x00") and b"\x00" not in odd:
            return "utf-16-be"
    return None


class Utf8Transcoder(io.RawIOBase):
    """UTF-8 bytes of a UTF-16 stream, decoded as it is read (never the whole input at once).

    A leading byte-order mark is dropped; undecodable units (a lone surrogate, an odd last
    byte) become U+FFFD.
    """

    def __init__(self, raw: BinaryIO, codec: str) -> None:
        super().__init__()
        self._raw = raw
        self._decoder = codecs.getincrementaldecoder(codec)("replace")
        self._pending = b""
        self._first = True
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self._pending and not self._done:
            data = self._raw.read(BUFFER_SIZE)
            text = self._decoder.decode(data, final=not data)
            if self._first and text:
                text = text.removeprefix("\ufeff")
                self._first = False
            self._pending = text.encode("utf-8")
            self._done = not data
        count = min(len(buffer), len(self._pending))
        memoryview(buffer).cast("B")[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count

    def close(self) -> None:
        self._raw.close()
        super().close()


def transcoded(stream: BinaryIO) -> tuple[BinaryIO, str | None]:
    """``stream`` as the readers read it, and through what: itself (None), its UTF-8 view
    when it is UTF-16 (the codec), and then, when it is text taken from a web page's source,
    with its ``<br>`` tags as line ends (:data:`~analyzer.ingest.webtext.WEB_TEXT`)."""
    # One look serves both questions; only a UTF-16 stream is looked at again, as UTF-8.
    head, source = peeked(stream, HEAD_BYTES)
    codec = utf16_encoding(head)
    if codec is not None:
        head, source = peeked(buffered(Utf8Transcoder(source, codec)), HEAD_BYTES)
    if breaks_lines(head):
        return buffered(WebText(source)), WEB_TEXT
    return source, codec
