"""read_blocks: whole lines, every byte once, the limit kept, whether or not it can seek back."""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.classify._fastscan.blockdecode import count_lines
from analyzer.classify._fastscan.jsonl import Block, read_blocks


def _expected_end(content: bytes, start: int, limit: int) -> int:
    """Where reading from ``start`` stops: the end, or the first line end at or after
    ``limit`` bytes."""
    if limit < 0 or start + limit >= len(content):
        return len(content)
    if limit == 0:
        return start
    at = content.find(b"\n", start + limit - 1)
    return len(content) if at < 0 else at + 1


def _check(blocks: list[Block], content: bytes, start: int, end: int) -> None:
    assert not any(block.long_line for block in blocks)
    assert b"".join(data[:stop] for data, stop, _ in blocks) == content[start:end]
    for index, (data, stop, _) in enumerate(blocks):
        assert 0 < stop <= len(data)
        if index < len(blocks) - 1:
            assert data[stop - 1 : stop] == b"\n"  # every block but the last ends a line
        assert count_lines(data, stop) == count_lines(data[:stop])


_CONTENT = st.lists(
    st.binary(max_size=40).map(lambda line: line.replace(b"\n", b"")), max_size=30
).flatmap(lambda lines: st.sampled_from([b"\n".join(lines), b"\n".join(lines) + b"\n"]))


@settings(max_examples=200, deadline=None)
@given(
    content=_CONTENT,
    block_bytes=st.integers(1, 64),
    start_fraction=st.floats(0, 1),
    limit=st.integers(-1, 200),
)
def test_a_file_is_read_again_from_each_cut(
    content: bytes, block_bytes: int, start_fraction: float, limit: int
) -> None:
    # A file can seek: each read is cut at its last line end and the next one starts there.
    start = int(len(content) * start_fraction)
    descriptor, name = tempfile.mkstemp()
    try:
        os.write(descriptor, content)
        os.close(descriptor)
        with open(name, "rb") as stream:
            stream.seek(start)
            blocks = list(read_blocks(stream, block_bytes, limit))
    finally:
        os.unlink(name)
    _check(blocks, content, start, _expected_end(content, start, limit))


@settings(max_examples=200, deadline=None)
@given(content=_CONTENT, block_bytes=st.integers(1, 64), limit=st.integers(-1, 200))
def test_a_stream_carries_the_next_line_over(content: bytes, block_bytes: int, limit: int) -> None:
    # A stream (stdin, gzip) cannot seek: the start of the next line waits for the next read.
    blocks = list(read_blocks(_Unseekable(content), block_bytes, limit))
    _check(blocks, content, 0, _expected_end(content, 0, limit))


@settings(max_examples=100, deadline=None)
@given(content=_CONTENT, block_bytes=st.integers(1, 64), limit=st.integers(-1, 200))
def test_bytes_in_memory_are_read_again_from_each_cut(
    content: bytes, block_bytes: int, limit: int
) -> None:
    _check(
        list(read_blocks(io.BytesIO(content), block_bytes, limit)),
        content,
        0,
        _expected_end(content, 0, limit),
    )


class _Unseekable(io.BufferedReader):
    """Bytes behind a reader that cannot seek, as stdin or a gzip stream."""

    def __init__(self, content: bytes) -> None:
        super().__init__(io.BytesIO(content))

    def seekable(self) -> bool:
        return False


def test_a_pipe_reads_like_a_file() -> None:
    content = b"".join(b'{"n":%d}\n' % n for n in range(5000))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the writer
        os.close(read)
        with os.fdopen(write, "wb") as out:
            out.write(content)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as stream:
        blocks = list(read_blocks(stream, 1000))
    os.waitpid(pid, 0)
    _check(blocks, content, 0, len(content))


def test_a_line_longer_than_many_blocks(tmp_path: Path) -> None:
    content = b"a\n" + b"x" * 10_000 + b"\nb\n"
    _check(list(read_blocks(_Unseekable(content), 7)), content, 0, len(content))
    _check(list(read_blocks(io.BytesIO(content), 7)), content, 0, len(content))
    path = tmp_path / "long.jsonl"
    path.write_bytes(content)
    with open(path, "rb") as stream:
        _check(list(read_blocks(stream, 7)), content, 0, len(content))


# Lines longer than a log entry can be (issue: a 100 MB line held whole cost 400-600 MB).
_WITH_LONG = st.lists(
    st.one_of(
        st.binary(max_size=12).map(lambda line: line.replace(b"\n", b"")),
        st.integers(13, 120).map(lambda size: b"L" * size),
    ),
    max_size=20,
).flatmap(lambda lines: st.sampled_from([b"\n".join(lines), b"\n".join(lines) + b"\n"]))
_LONG = b"<long>"


def _lines_of(blocks: list[Block]) -> list[bytes]:
    lines: list[bytes] = []
    for block in blocks:
        if block.long_line:
            assert block.data == b"" and block.end == 0
            lines.append(_LONG)
        else:
            assert 0 < block.end <= len(block.data)
            lines += block.data[: block.end].splitlines(keepends=True)
    return lines


def _expected_lines(content: bytes, longest: int) -> list[bytes]:
    return [
        _LONG if len(line.removesuffix(b"\n")) > longest else line
        for line in content.splitlines(keepends=True)
    ]


@settings(max_examples=300, deadline=None)
@given(
    content=_WITH_LONG,
    block_bytes=st.integers(1, 40),
    longest=st.integers(12, 40),
    start_fraction=st.floats(0, 1),
    limit=st.integers(-1, 200),
    kind=st.sampled_from(["file", "stream", "memory"]),
)
def test_a_line_longer_than_any_entry_is_read_past(
    content: bytes,
    block_bytes: int,
    longest: int,
    start_fraction: float,
    limit: int,
    kind: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    start = int(len(content) * start_fraction) if kind == "file" else 0
    end = _expected_end(content, start, limit)
    if kind == "file":
        path = tmp_path_factory.mktemp("long") / "lines.jsonl"
        path.write_bytes(content)
        with open(path, "rb") as stream:
            stream.seek(start)
            blocks = list(read_blocks(stream, block_bytes, limit, longest))
            # Reading stops at the same place: the next range starts right after.
            assert stream.tell() >= end or stream.tell() == len(content)
    elif kind == "stream":
        blocks = list(read_blocks(_Unseekable(content), block_bytes, limit, longest))
    else:
        blocks = list(read_blocks(io.BytesIO(content), block_bytes, limit, longest))
    assert _lines_of(blocks) == _expected_lines(content[start:end], longest)
