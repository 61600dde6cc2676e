"""The block decoder reads a block of sink lines as the line-by-line reader would, or declines.

``decode_block`` may only return entries for a block the plain reader would read as one JSON
object per line, with the same values in the fields it declares; whenever that is not certain it
must return None (and the line-by-line reader decides). Its two raw-byte guards are tested on
their own: ``valid_utf8`` against Python's own UTF-8 decoder, ``shape`` through the blocks it
must refuse and a property over lines of several values.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from analyzer.classify._fastscan import blockdecode
from analyzer.classify._fastscan import jsonl as fastjsonl
from analyzer.classify._fastscan.blockdecode import decode_block
from analyzer.classify.collector import collect
from analyzer.ingest import open_sources
from analyzer.ingest.entries import InvalidJson, load_json
from analyzer.ingest.records import InputStats
from analyzer.pipeline.analysis import Analysis
from analyzer.rulebook import RuleBook
from analyzer.simulate import fleet
from analyzer.timeline.attempts import build_timeline
from analyzer.verdict.policy import load_policy
from analyzer.verdict.predict import diagnose_timeline

needs_hyperscan = pytest.mark.skipif(
    not blockdecode.available(), reason="hyperscan is not installed: no block decoding"
)


def _guard() -> Any:
    """The Hyperscan guard of the block decoder (built on first use)."""
    assert blockdecode.available()
    guard = blockdecode._GUARD
    assert guard is not None and guard is not False
    return guard


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# 1. valid_utf8 is exactly "bytes.decode('utf-8') succeeds"

_TRICKY_UTF8 = [
    b"\xed\xa0\x80",  # a surrogate (U+D800) encoded
    b"\xed\xbf\xbf",  # U+DFFF encoded
    b"\xed\x9f\xbf",  # U+D7FF: the last before the surrogates
    b"\xee\x80\x80",  # U+E000: the first after them
    b"\xc0\xaf",  # overlong "/"
    b"\xc1\xbf",  # overlong U+007F
    b"\xe0\x80\x80",  # overlong NUL
    b"\xe0\x9f\xbf",  # overlong U+07FF
    b"\xe0\xa0\x80",  # U+0800
    b"\xf0\x8f\xbf\xbf",  # overlong U+FFFF
    b"\xf0\x90\x80\x80",  # U+10000
    b"\xf4\x8f\xbf\xbf",  # U+10FFFF
    b"\xf4\x90\x80\x80",  # beyond U+10FFFF
    b"\xf5\x80\x80\x80",
    b"\xc2\x80",
    b"\xdf\xbf",
    b"\xef\xbf\xbf",
    b"\xff",
    b"\xfe",
    b"\x80",
    b"\xbf",
    b"\n",
    b"\r\n",
    b"\x00",
    b"\x7f",
    b"{",
    b"}",
]


def _one_byte(low: int, high: int) -> st.SearchStrategy[bytes]:
    return st.integers(low, high).map(lambda b: bytes([b]))


def _prefixes(encoded: bytes) -> st.SearchStrategy[bytes]:
    """A proper, non-empty prefix of a multi-byte character: a truncated sequence."""
    return st.integers(1, len(encoded) - 1).map(lambda n: encoded[:n])


_truncated = (
    st.characters(min_codepoint=0x80, codec="utf-8")
    .map(lambda c: c.encode("utf-8"))
    .flatmap(_prefixes)
)
_pieces = st.one_of(
    st.sampled_from(_TRICKY_UTF8),
    _one_byte(0xC0, 0xFF),  # lead bytes, valid or not
    _one_byte(0x80, 0xBF),  # continuation bytes
    _one_byte(0x00, 0x7F),
    st.text(min_size=1, max_size=4).map(lambda s: s.encode("utf-8")),
    _truncated,
)
_utf8_blocks = st.one_of(
    st.binary(max_size=48),
    st.lists(_pieces, max_size=24).map(b"".join),
    # valid text with damage at the very end: the anchored pattern must still see it
    st.tuples(st.text(max_size=16), _truncated).map(lambda t: t[0].encode("utf-8") + t[1]),
)


@needs_hyperscan
@settings(max_examples=600, deadline=None)
@given(_utf8_blocks)
@example(b"")
@example(b"\xc3")
@example(b"\xc3\n")
@example(b"\xe2\x82\n")
@example(b"\xf0\x9f\x98")
@example(b"{}\n\xed\xa0\x80\n{}")
@example(b"\xe9" + "é".encode() * 3)
def test_valid_utf8_is_python_decoding(data: bytes) -> None:
    assert _guard().valid_utf8(data) is _utf8(data)


@needs_hyperscan
def test_valid_utf8_every_two_bytes() -> None:
    guard = _guard()
    wrong = [
        pair
        for pair in (bytes([a, b]) for a in range(256) for b in range(256))
        if guard.valid_utf8(pair) is not _utf8(pair)
    ]
    assert wrong == []


@needs_hyperscan
def test_valid_utf8_three_and_four_byte_boundaries() -> None:
    # Every lead byte of a long sequence, with second (and third) bytes at each range edge.
    edges = [0x00, 0x0A, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF]
    guard = _guard()
    wrong: list[bytes] = []
    for lead in range(0xE0, 0x100):
        for rest in itertools.chain(
            itertools.product(edges, repeat=2), itertools.product(edges, repeat=3)
        ):
            for tail in (b"", b"\n", b"a"):
                data = bytes([lead, *rest]) + tail
                if guard.valid_utf8(data) is not _utf8(data):
                    wrong.append(data)
    assert wrong == []


@needs_hyperscan
@pytest.mark.parametrize("bad", [*_TRICKY_UTF8[:14], b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98"])
def test_valid_utf8_after_a_long_valid_prefix(bad: bytes) -> None:
    prefix = ("é€😀 plain ascii\n" * 8_000).encode("utf-8")
    for data in (prefix + bad, prefix + bad + prefix, bad + prefix):
        assert _guard().valid_utf8(data) is _utf8(data)


# ---------------------------------------------------------------------------------------------
# 2. decode_block: None where the line-by-line reader must decide, entries that orjson agrees
#    with otherwise

_LINES = list(fleet(40_000, seed=7))
_BLOCK = b"".join(_LINES)
# A fleet line with a jsonPayload message, one with a textPayload, and the index of each.
_JSON_AT = next(i for i, line in enumerate(_LINES) if b'"jsonPayload":{' in line and i > 2)
_TEXT_AT = next(i for i, line in enumerate(_LINES) if b'"textPayload":"' in line and i > 2)


def _with(index: int, line: bytes) -> bytes:
    """The fleet block with line ``index`` replaced by ``line`` (its own line ending)."""
    return b"".join([*_LINES[:index], line, *_LINES[index + 1 :]])


def _edit(index: int, old: bytes, new: bytes) -> bytes:
    line = _LINES[index]
    assert old in line
    return _with(index, line.replace(old, new, 1))


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


_REFUSED: dict[str, Callable[[], bytes]] = {
    "a form feed line": lambda: _with(3, b"\x0c\n"),
    "a form feed after an object": lambda: _with(3, _LINES[3].rstrip(b"\n") + b" \x0c\n"),
    "a form feed before an object": lambda: _with(3, b"\x0c" + _LINES[3]),
    "a lone carriage return before an object on the first line": lambda: b"\r\x0c" + _BLOCK,
    "only blank lines": lambda: b"\n \n\t\r\n",
    "blank lines then a number": lambda: b"\n \n5\n" + _BLOCK,
    "two objects, space": lambda: _with(3, b'{"a":1} {"b":2}\n'),
    "two objects, adjacent": lambda: _with(3, b'{"a":1}{"b":2}\n'),
    "two entries on one line": lambda: _with(3, _LINES[3].rstrip(b"\n") + _LINES[4]),
    "two objects, carriage return": lambda: _with(3, b'{"a":1}\r{"b":2}\n'),
    "two objects, three spaces": lambda: _with(3, b'{"a":1} \t\r{"b":2}\n'),
    "a string between objects": lambda: _with(3, b'{"a":1}"x"{"b":2}\n'),
    "a number between objects": lambda: _with(3, b'{"a":1} 5\t{"b":2}\n'),
    "true between objects": lambda: _with(3, b'{"a":1} true {"b":2}\n'),
    "null between objects": lambda: _with(3, b'{"a":1}null{"b":2}\n'),
    "an array between objects": lambda: _with(3, b'{"a":1}[{}] {"b":2}\n'),
    "value across lines (comma)": lambda: _edit(_JSON_AT, b'},"labels"', b'},\n"labels"'),
    "value across lines (string)": lambda: _with(3, b'{"textPayload":"a}\n{b"}\n'),
    "invalid utf-8 in logName": lambda: _edit(3, b'"logName":"', b'"logName":"\xff'),
    "surrogate bytes in logName": lambda: _edit(3, b'"logName":"', b'"logName":"\xed\xa0\x80'),
    "overlong in logName": lambda: _edit(3, b'"logName":"', b'"logName":"\xc0\xaf'),
    "beyond U+10FFFF in logName": lambda: _edit(3, b'"logName":"', b'"logName":"\xf4\x90\x80\x80'),
    "truncated char in logName": lambda: _edit(3, b'"logName":"', b'"logName":"\xe2\x82'),
    "invalid utf-8 in insertId": lambda: _edit(3, b'"insertId":"', b'"insertId":"\xfe'),
    "bom at start": lambda: b"\xef\xbb\xbf" + _BLOCK,
    "top-level array line": lambda: _with(3, b"[1, 2]\n"),
    "top-level string line": lambda: _with(3, b'"{}"\n'),
    "top-level array at start": lambda: b"[1]\n" + _BLOCK,
    "resource is a string": lambda: _edit(3, b'"resource":{', b'"resource":"x","r":{'),
    "labels is a list": lambda: _edit(3, b'"labels":{', b'"labels":["x"],"l":{'),
    "resource labels is a list": lambda: _edit(3, b'"labels":{"job_id"', b'"labels":[],"x":{"j"'),
    "jsonPayload is a string": lambda: _edit(
        _JSON_AT, b'"jsonPayload":{', b'"jsonPayload":"x","j":{'
    ),
    "3000-deep in logName": lambda: _edit(3, b'"logName":', b'"logName":' + _deep(3000) + b',"n":'),
    "3000-deep in jsonPayload": lambda: _edit(
        _JSON_AT, b'"jsonPayload":{', b'"jsonPayload":{"x":' + _deep(3000) + b","
    ),
    "truncated last line": lambda: _BLOCK + _LINES[0][:40],
    "truncated middle line": lambda: _with(3, _LINES[3][:40] + b"\n"),
    # what msgspec skips with fewer checks than it builds with, in an undeclared field
    "raw tab in logName": lambda: _edit(3, b'"logName":"', b'"logName":"\t'),
    "raw NUL in logName": lambda: _edit(3, b'"logName":"', b'"logName":"\x00'),
    "bad escape in logName": lambda: _edit(3, b'"logName":"', b'"logName":"\\x'),
    "lone surrogate escape in logName": lambda: _edit(3, b'"logName":"', b'"logName":"\\ud800'),
    "NaN in jsonPayload": lambda: _edit(_JSON_AT, b'"jsonPayload":{', b'"jsonPayload":{"x":NaN,'),
    "Infinity in jsonPayload": lambda: _edit(
        _JSON_AT, b'"jsonPayload":{', b'"jsonPayload":{"x":-Infinity,'
    ),
    "leading zero in jsonPayload": lambda: _edit(
        _JSON_AT, b'"jsonPayload":{', b'"jsonPayload":{"x":01,'
    ),
    "trailing comma in logName": lambda: _edit(3, b'"logName":', b'"logName":[1,],"n":'),
    "vertical tab as whitespace": lambda: _edit(3, b'"logName":', b'"logName":\x0b'),
    # A LogEntry's labels, timestamp and textPayload are strings: the decoder checks that, and a
    # block with another type anywhere is read line by line (orjson keeps the last of a key
    # given twice; msgspec checks each).
    "a number for a timestamp": lambda: _with(3, b'{"timestamp":7,"textPayload":"t"}\n'),
    "a number for a job id": lambda: _edit(3, b'"job_id":"', b'"job_id":7,"x":"'),
    "an object for a trial label": lambda: _with(
        3, b'{"labels":{"ml.googleapis.com/trial_id":{}},"textPayload":"t"}\n'
    ),
    "a zero for a trial label": lambda: _with(3, b'{"labels":{"trial_id":0}}\n'),
    "a number, then a string, for a text": lambda: _with(
        3, b'{"textPayload":1,"textPayload":"t",' + _TAIL + b"\n"
    ),
}


@needs_hyperscan
@pytest.mark.parametrize("case", sorted(_REFUSED))
def test_decode_block_declines(case: str) -> None:
    block = _REFUSED[case]()
    assert block != _BLOCK
    assert decode_block(block) is None


def _view_entry(entry: Any) -> dict[str, Any]:
    """The fields of an entry the fast path reads, by their JSON path."""
    rlabels = entry.resource.labels if entry.resource is not None else None
    labels = entry.labels
    return {
        "timestamp": entry.time,
        "textPayload": entry.text_1,
        "jsonPayload.message": entry.jsonPayload.text if entry.jsonPayload else None,
        "resource.labels.job_id": rlabels.job_id if rlabels is not None else None,
        "resource.labels.task_name": rlabels.task if rlabels is not None else None,
        "labels.vm": labels.vm if labels is not None else None,
        "labels.trial_id": labels.trial if labels is not None else None,
        "labels.ml_trial_id": labels.trial_1 if labels is not None else None,
        "severity": entry.severity,
        "insertId": entry.insert_id,
    }


def _get(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _view_json(value: Any) -> dict[str, Any]:
    """The same fields of a line as the plain reader parses it."""
    assert isinstance(value, dict)
    return {
        "timestamp": value.get("timestamp"),
        "textPayload": value.get("textPayload"),
        "jsonPayload.message": _get(value, "jsonPayload", "message"),
        "resource.labels.job_id": _get(value, "resource", "labels", "job_id"),
        "resource.labels.task_name": _get(value, "resource", "labels", "task_name"),
        "labels.vm": _get(value, "labels", "compute.googleapis.com/resource_id"),
        "labels.trial_id": _get(value, "labels", "trial_id"),
        "labels.ml_trial_id": _get(value, "labels", "ml.googleapis.com/trial_id"),
        "severity": value.get("severity"),
        "insertId": value.get("insertId"),
    }


def _lines_of(block: bytes) -> list[bytes]:
    lines = block.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


def _assert_read_as_plain(block: bytes) -> None:
    entries = decode_block(block)
    assert entries is not None, "the block was not decoded at once"
    lines = _lines_of(block)
    assert len(entries) == len(lines)
    for number, (entry, line) in enumerate(zip(entries, lines, strict=True), 1):
        if not line.strip():
            assert entry is blockdecode.BLANK, f"line {number}"
            continue
        assert _view_entry(entry) == _view_json(load_json(line)), f"line {number}"


_TAIL = _LINES[3][_LINES[3].index(b'"logName"') :].rstrip(b"\n")
_ACCEPTED: dict[str, Callable[[], bytes]] = {
    "fleet block": lambda: _BLOCK,
    "crlf everywhere": lambda: _BLOCK.replace(b"\n", b"\r\n"),
    "one crlf line": lambda: _with(3, _LINES[3].rstrip(b"\n") + b"\r\n"),
    "one line": lambda: _LINES[3],
    "braces inside strings": lambda: _with(
        3, b'{"{":"}","textPayload":"{ } }{ {","x":["}"],"insertId":"}{",' + _TAIL + b"\n"
    ),
    "line ending in a string's brace": lambda: _with(
        3, _LINES[3].rstrip(b"\n")[:-1] + b',"z":"}"}\n'
    ),
    "message with } {": lambda: _edit(
        _JSON_AT, b'"message":"', b'"message":"done} {next} {\\"a\\":1} {'
    ),
    "textPayload with } {": lambda: _edit(_TEXT_AT, b'"textPayload":"', b'"textPayload":"} {'),
    "a message that is JSON": lambda: _edit(
        _JSON_AT, b'"message":"', b'"message":"{\\"step\\": 5, \\"a\\": [1] {}, \\"b\\": true {'
    ),
    "1e999 in jsonPayload": lambda: _edit(
        _JSON_AT, b'"jsonPayload":{', b'"jsonPayload":{"x":1e999,'
    ),
    "-1e400 deep in logName": lambda: _edit(3, b'"logName":', b'"logName":{"a":[-1e400]},"n":'),
    "escaped field names": lambda: _with(
        3,
        b'{"text\\u0050ayload":"t","sev\\u0065rity":"ERROR","labels":{'
        b'"compute.googleapis.com\\/resource_id":"7"},' + _TAIL + b"\n",
    ),
    "field given twice": lambda: _with(
        3,
        b'{"severity":"INFO","severity":"ERROR","textPayload":"x","textPayload":"t",'
        + _TAIL
        + b"\n",
    ),
    "non-ascii and escapes": lambda: _edit(
        _JSON_AT,
        b'"message":"',
        b'"message":"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\\u00e9\\ud83d\\ude00\\n\\t\x7f',
    ),
    "odd types in Any fields": lambda: _with(
        3,
        b'{"textPayload":null,"severity":[1,{"a":2}],"insertId":false,'
        b'"jsonPayload":{"message":{"m":1}},"labels":{"trial_id":null},'
        b'"resource":{"labels":null}}\n',
    ),
    "empty object": lambda: _with(3, b"{}\n"),
    # JSON's spaces around objects, and blank lines (counted as the plain reader counts them)
    "blank line": lambda: _with(3, b"\n"),
    "whitespace-only line": lambda: _with(3, b"   \t \n"),
    "blank last line": lambda: _BLOCK + b"\n",
    "blank last line without its line end": lambda: _BLOCK + b" \t",
    "blank first lines": lambda: b"\n \r\n" + _BLOCK,
    "blank lines in a row": lambda: _with(3, b"\n\n\r\n \n"),
    "one blank line in 50": lambda: b"".join(
        line + (b"\n" if number % 50 == 49 else b"") for number, line in enumerate(_LINES)
    ),
    "a lone carriage return ending a line": lambda: _with(3, _LINES[3].rstrip(b"\n") + b"\r\r\n"),
    "a space after each object": lambda: _BLOCK.replace(b"}\n", b"} \n"),
    "spaces and tabs after each object, crlf": lambda: _BLOCK.replace(b"}\n", b"} \t \r\n"),
    "spaces before each object": lambda: b" " + _BLOCK.replace(b"\n{", b"\n  \t{"),
    "a carriage return before an object": lambda: _with(3, b"\r" + _LINES[3]),
    "whitespace inside": lambda: _with(3, b'{ "textPayload" :\t"t" ,\r"severity": "ERROR" }\n'),
    "600-deep in logName": lambda: _edit(3, b'"logName":', b'"logName":' + _deep(600) + b',"n":'),
}


@needs_hyperscan
@pytest.mark.parametrize("case", sorted(_ACCEPTED))
def test_decode_block_reads_as_orjson(case: str) -> None:
    _assert_read_as_plain(_ACCEPTED[case]())


@needs_hyperscan
@pytest.mark.parametrize("case", ["fleet block", "one line", "message with } {"])
def test_decode_block_without_final_newline(case: str) -> None:
    block = _ACCEPTED[case]()
    assert block.endswith(b"\n")
    _assert_read_as_plain(block[:-1])


@needs_hyperscan
@pytest.mark.parametrize(
    ("case", "shape"),
    [
        ("fleet block", blockdecode.Shape.ONE_OBJECT_EACH),
        ("braces inside strings", blockdecode.Shape.MAYBE_TWO),
        ("a message that is JSON", blockdecode.Shape.ONE_OBJECT_EACH),
        ("message with } {", blockdecode.Shape.MAYBE_TWO),
        ("1e999 in jsonPayload", blockdecode.Shape.ONE_OBJECT_EACH),
        ("escaped field names", blockdecode.Shape.ONE_OBJECT_EACH),
    ],
)
def test_lines_are_counted_only_where_a_second_value_may_start(
    case: str, shape: blockdecode.Shape
) -> None:
    assert _guard().shape(_ACCEPTED[case]()) is shape


@needs_hyperscan
@pytest.mark.parametrize(
    ("case", "shape", "found"),
    [
        ("fleet block", blockdecode.Shape.ONE_OBJECT_EACH, []),
        ("blank line", blockdecode.Shape.ONE_OBJECT_EACH, [3]),
        ("blank lines in a row", blockdecode.Shape.NOT_OBJECTS, []),  # "\r\n", " \n" among
        ("one blank line in 50", blockdecode.Shape.ONE_OBJECT_EACH, list(range(50, 40_000, 51))),
        ("whitespace-only line", blockdecode.Shape.NOT_OBJECTS, []),
        ("blank last line", blockdecode.Shape.NOT_OBJECTS, []),
        ("blank first lines", blockdecode.Shape.NOT_OBJECTS, []),
    ],
)
def test_the_sinks_check_finds_empty_lines(
    case: str, shape: blockdecode.Shape, found: list[int]
) -> None:
    # Empty lines between objects (one in 500 in the bench's blank row) are found by the
    # sink's own check, each where it is; any other blank line is left to the looser one.
    block = _ACCEPTED[case]()
    empty: list[int] = []
    assert _guard().shape(block, empty=empty) is shape
    starts = [0, *(at + 1 for at, byte in enumerate(block) if byte == 0x0A)]
    # The line index of each: its line starts just before the offset noted.
    assert [starts.index(after - 1) for after in empty] == [i for i in found if i < len(starts)]
    if case == "one blank line in 50":
        assert empty and all(block[after - 2 : after] == b"\n\n" for after in empty)


@needs_hyperscan
@pytest.mark.parametrize(
    ("case", "spaced"),
    [
        ("fleet block", blockdecode.Shape.ONE_OBJECT_EACH),
        ("a space after each object", blockdecode.Shape.ONE_OBJECT_EACH),
        ("message with } {", blockdecode.Shape.MAYBE_TWO),
        ("crlf everywhere", blockdecode.Shape.ONE_OBJECT_EACH),
        ("spaces and tabs after each object, crlf", blockdecode.Shape.NOT_OBJECTS),
        ("whitespace-only line", blockdecode.Shape.NOT_OBJECTS),
        ("spaces before each object", blockdecode.Shape.NOT_OBJECTS),
    ],
)
def test_the_spaced_check_takes_one_space_after_each_object(
    case: str, spaced: blockdecode.Shape
) -> None:
    block = _ACCEPTED[case]()
    assert _guard().shape(block, spaced=True) is spaced
    if case == "a space after each object":
        assert _guard().shape(block) is blockdecode.Shape.NOT_OBJECTS
        assert _guard().shape(block.replace(b"} \n", b"}  \n", 1), spaced=True) is (
            blockdecode.Shape.NOT_OBJECTS
        )


_ROUTES = [
    "fleet block",
    "a space after each object",
    "fleet block",
    "blank line",
    "one blank line in 50",
    "spaces and tabs after each object, crlf",
    "a space after each object",
    "message with } {",
    "whitespace-only line",
    "fleet block",
]


@needs_hyperscan
@pytest.mark.parametrize("start", range(len(_ROUTES)))
def test_hints_read_each_block_as_it_reads_alone(start: int) -> None:
    # What one block showed (spaces, blank lines) decides which check the next one gets
    # first; whichever it is, each block reads as it does alone.
    hints = blockdecode.Hints()
    for case in _ROUTES[start:] + _ROUTES[:start]:
        block = _ACCEPTED[case]()
        alone = decode_block(block)
        routed = decode_block(block, hints=hints)
        assert alone is not None and routed is not None, case
        assert [_view_entry(e) if e is not blockdecode.BLANK else e for e in routed] == [
            _view_entry(e) if e is not blockdecode.BLANK else e for e in alone
        ], case


_VALUES = st.sampled_from(
    [
        *(b"{}", b'{"a":[1,{}]}', b'{"m":"\\"{"}', b'{"m":"e} {"}', b'[{"b":"} {"}]', b"[]"),
        *(b'"x"', b'"{"', b'"}"', b"5", b"-0.5e3", b"true", b"false", b"null"),
    ]
)
_SPACES = st.sampled_from([b"", b" ", b"\t", b"\r", b" \r\t", b"\x0c"])
_LINE = st.one_of(
    st.lists(st.tuples(_SPACES, _VALUES), min_size=1, max_size=3).map(
        lambda pairs: b"".join(space + value for space, value in pairs)
    ),
    _SPACES,  # a blank line (but for the form feed)
    st.tuples(_SPACES, _VALUES, _SPACES).map(b"".join),
)


@needs_hyperscan
@settings(max_examples=400, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=6), st.sampled_from([b"\n", b"\r\n"]), st.booleans())
def test_a_decoded_block_holds_one_value_per_line(
    lines: list[bytes], ending: bytes, last_ending: bool
) -> None:
    block = ending.join(lines) + (ending if last_ending else b"")
    entries = decode_block(block)
    if entries is None:
        return
    lines = _lines_of(block)  # as the plain reader cuts them (a last empty line is none)
    assert len(entries) == len(lines)
    for line, entry in zip(lines, entries, strict=True):
        if entry is blockdecode.BLANK:
            assert not line.strip()  # what the plain reader counts as a blank line
        else:
            load_json(line)  # one value: orjson refuses anything after it


# ---------------------------------------------------------------------------------------------
# 3. load_json: orjson, then the standard library for numbers beyond a float's range

_BIG = 123456789012345678901234567890
_VALID: list[tuple[bytes, Any]] = [
    (b'{"a":1}', {"a": 1}),
    (b' {"a" : [1, 2.5, "x", null, true, false]} ', {"a": [1, 2.5, "x", None, True, False]}),
    (b"1e999", math.inf),
    (b"-1e999", -math.inf),
    (b'{"a":{"b":[-1e400, 1]}}', {"a": {"b": [-math.inf, 1]}}),
    (b'{"x":1e999,"message":"Job failed."}', {"x": math.inf, "message": "Job failed."}),
    (b"18446744073709551615", 2**64 - 1),
    (b"-9223372036854775808", -(2**63)),
    (
        b"[1e999, " + b"[" * 200 + b"]" * 200 + b"]",
        [math.inf, orjson.loads(b"[" * 200 + b"]" * 200)],
    ),
    (b'"\\ud83d\\ude00"', "\U0001f600"),
    (b'[1e999, "\\ud83d\\ude00"]', [math.inf, "\U0001f600"]),
    (b'"\xc3\xa9\\u00e9\\t\\n\\u0000"', "éé\t\n\x00"),
    (b'"\x7f"', "\x7f"),
    (b"[]", []),
]


@pytest.mark.parametrize(("raw", "value"), _VALID, ids=[repr(raw)[:40] for raw, _ in _VALID])
def test_load_json_reads(raw: bytes, value: Any) -> None:
    assert load_json(raw) == value


def test_load_json_reads_big_integers() -> None:
    # orjson reads integers beyond 64 bits as floats; whichever type, the line is not refused.
    value = load_json(str(_BIG).encode())
    assert float(value) == float(_BIG)
    assert load_json(b"-" + str(_BIG).encode() + b"0") == pytest.approx(-_BIG * 10)


# orjson reads these alone; with a number beyond a float's range beside them, the second
# reading refuses them, because its surrogate check (orjson.dumps) also refuses integers
# beyond 64 bits and nesting deeper than orjson.dumps allows (about 254 levels).
_SECOND_READING_KEEPS = {
    "1e999 and an integer beyond 64 bits": b"[1e999, 18446744073709551616]",
    "1e999 and a 30-digit integer": b'{"x":1e999,"y":123456789012345678901234567890}',
    "1e999 and 300-deep nesting": b"[1e999, " + _deep(300) + b"]",
}


@pytest.mark.parametrize("case", sorted(_SECOND_READING_KEEPS))
def test_load_json_second_reading_keeps_what_orjson_reads(case: str) -> None:
    raw = _SECOND_READING_KEEPS[case]
    orjson.loads(raw.replace(b"1e999", b"1"))  # orjson alone reads the rest
    load_json(raw)


_INVALID: list[bytes] = [
    b"",
    b"   ",
    b'"\\ud800"',
    b'{"a":"\\udc00"}',
    b'["\\ud800", 1e999]',  # the second reading accepts the surrogate; it must be refused
    b'{"x":1e999,"m":"lone \\udfff"}',
    b"\xff",
    b'"\xff"',
    b'"\xed\xa0\x80"',
    b'"\xc0\xaf"',
    b'[1e999, "\xe2\x82"]',
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b'{"a":NaN}',
    b"[1e999, NaN]",
    b"[1e999, Infinity]",
    b'"a\tb"',
    b'"a\x00b"',
    b'"a\nb"',
    b'[1e999, "a\tb"]',
    b'{"a":1} {"b":2}',
    b'{"a":1}{"b":2}',
    b"[1e999] [1]",
    b'{"a":1,}',
    b"[1e999,]",
    b"01",
    b"[1e999, 01]",
    b'"\\x"',
    b'[1e999, "\\x"]',
    b"[" * 3000 + b"]" * 3000,
    b"[1e999," + b"[" * 3000 + b"]" * 3000 + b"]",
    b"\xef\xbb\xbf{}",
]


@pytest.mark.parametrize("raw", _INVALID, ids=[repr(raw)[:40] for raw in _INVALID])
def test_load_json_refuses(raw: bytes) -> None:
    with pytest.raises(InvalidJson):
        load_json(raw)


# ---------------------------------------------------------------------------------------------
# 4. Identity: the fast path (blocks decoded at once, or line by line without the guard) gives
#    the plain path's analysis


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


def _analysis(path: Path, book: RuleBook, *, fast: bool) -> tuple[object, list[InputStats]]:
    policy = load_policy()
    logs, stats = collect(open_sources([str(path)]), book, fast=fast, processes=1)
    diagnoses = tuple(diagnose_timeline(build_timeline(log), policy) for log in logs)
    return Analysis(tuple(stats), diagnoses).to_dict(), stats


def _fleet_with_1e999(tmp_path: Path) -> tuple[Path, int]:
    """A ~150 kB fleet file with ``"x":1e999`` in one line's jsonPayload; that line's number."""
    lines = list(fleet(150_000, seed=17))
    index = next(
        i for i, line in enumerate(lines) if i >= len(lines) // 2 and b'"jsonPayload":{' in line
    )
    lines[index] = lines[index].replace(b'"jsonPayload":{', b'"jsonPayload":{"x":1e999,', 1)
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(lines[index])  # the plain reader needs its second reading here
    path = tmp_path / "fleet.jsonl"
    path.write_bytes(b"".join(lines))
    return path, index + 1


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[Any] | None]]:
    """What every decode_block call of the fast path returned."""
    results: list[list[Any] | None] = []

    def spy(
        block: bytes, end: int | None = None, *, hints: blockdecode.Hints | None = None
    ) -> list[Any] | None:
        entries = decode_block(block, end, hints=hints)
        results.append(entries)
        return entries

    monkeypatch.setattr(fastjsonl, "decode_block", spy)
    yield results


@needs_hyperscan
def test_1e999_in_a_skipped_field_same_analysis(
    book: RuleBook, tmp_path: Path, decoded: list[list[Any] | None]
) -> None:
    path, _number = _fleet_with_1e999(tmp_path)
    fast, fast_stats = _analysis(path, book, fast=True)
    assert decoded and all(entries is not None for entries in decoded), "not decoded at once"
    plain, plain_stats = _analysis(path, book, fast=False)
    assert fast == plain
    lines = path.read_bytes().count(b"\n")
    for stats in (fast_stats, plain_stats):
        (one,) = stats
        assert (one.lines, one.used, one.skipped) == (lines, lines, 0)
        assert not one.skip_reasons


@needs_hyperscan
def test_1e999_and_a_big_integer_in_a_skipped_field_same_analysis(
    book: RuleBook, tmp_path: Path, decoded: list[list[Any] | None]
) -> None:
    path, number = _fleet_with_1e999(tmp_path)
    lines = path.read_bytes().split(b"\n")
    lines[number - 1] = lines[number - 1].replace(
        b'"x":1e999,', b'"x":1e999,"y":18446744073709551616,'
    )
    path.write_bytes(b"\n".join(lines))
    fast, _ = _analysis(path, book, fast=True)
    assert decoded and all(entries is not None for entries in decoded)
    plain, _ = _analysis(path, book, fast=False)
    assert fast == plain


def test_without_the_guard_same_analysis(
    book: RuleBook,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    decoded: list[list[Any] | None],
) -> None:
    path, _number = _fleet_with_1e999(tmp_path)
    # Damage too, so that line-by-line reading has skip reasons to agree on.
    data = path.read_bytes().split(b"\n")
    data[5] = b""
    data[7] = data[7][:40]
    data[9] = data[9].replace(b'"logName":"', b'"logName":"\xff', 1)
    path.write_bytes(b"\n".join(data))
    monkeypatch.setattr(blockdecode, "_GUARD", None)
    assert not blockdecode.available()
    fast, fast_stats = _analysis(path, book, fast=True)
    assert decoded and all(entries is None for entries in decoded), "a block decoded at once"
    plain, plain_stats = _analysis(path, book, fast=False)
    assert fast == plain
    assert fast_stats[0].used == plain_stats[0].used
    assert fast_stats[0].skip_reasons == plain_stats[0].skip_reasons
    # The line with an invalid UTF-8 byte is read with it replaced, and counted so.
    assert fast_stats[0].skipped == 2
    assert fast_stats[0].invalid_utf8 == plain_stats[0].invalid_utf8 == 1
