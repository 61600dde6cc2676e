"""Hypothesis: reading never crashes and accounts for every physical line.

Whatever the bytes, either sniffing refuses them up front as binary
(InputError) or reading them yields records with ``lines == used + skipped``
and ``lines`` equal to the number of physical lines.
"""

from __future__ import annotations

import gzip
import json
import os
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from analyzer.core.errors import InputError
from analyzer.ingest import MemorySource, gcloud_json, stream_logs

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"
SAMPLES = sorted(p.read_bytes() for p in FIXTURES.glob("*.*") if p.stat().st_size)


def physical_lines(data: bytes) -> int:
    # A leading BOM is not a line of its own.
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def check(data: bytes) -> None:
    try:
        source = MemorySource(data)
    except InputError as error:
        # Refused in one line: binary, gzip, or the Logging API's answer without entries
        # ({}, an error body: ingest.sniff).
        assert any(word in str(error) for word in ("binary data", "gzip", "Logging API"))
        return
    records = list(source.records())
    stats = source.stats
    assert stats.lines == stats.used + stats.skipped
    assert stats.records == len(records)
    assert stats.skipped == sum(stats.skip_reasons.values())
    if not data.startswith(b"\x1f\x8b"):
        assert stats.lines == physical_lines(data)
    for record in records:
        assert 1 <= record.origin.line <= max(stats.lines, 1)
        assert record.timestamp is None or record.timestamp.utcoffset() is not None


SETTINGS = settings(
    max_examples=int(os.environ.get("INGEST_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@SETTINGS
@given(st.binary(max_size=400))
@example(b"PAR1")  # Parquet's magic alone, found by this test in CI: refused up front
@example(b"PAR1 not a footer\nPAR1")
def test_random_bytes(data: bytes) -> None:
    check(data)


@SETTINGS
@given(st.text(alphabet=st.sampled_from(list('[]{}",:\\ \n\tab1\r')), max_size=200))
def test_json_shaped_noise(text: str) -> None:
    check(text.encode())
    check(("[" + text).encode())
    check(("{" + text).encode())


@SETTINGS
@given(
    sample=st.sampled_from(SAMPLES),
    cut=st.integers(min_value=0),
    start=st.integers(min_value=0),
    noise=st.binary(max_size=20),
)
def test_damaged_valid_inputs(sample: bytes, cut: int, start: int, noise: bytes) -> None:
    # Truncated, with a hole, or with garbage spliced in: still every line accounted.
    end = cut % (len(sample) + 1)
    begin = start % (end + 1)
    check(sample[:end])
    check(sample[:begin] + noise + sample[begin:end])
    check(sample[:begin] + sample[end:])


@SETTINGS
@given(sample=st.sampled_from(SAMPLES), cut=st.integers(min_value=1))
def test_truncated_gzip(sample: bytes, cut: int) -> None:
    packed = gzip.compress(sample)
    check(packed[: cut % len(packed) + 1])


entries = st.fixed_dictionaries(
    {"textPayload": st.text(max_size=30), "severity": st.sampled_from(["INFO", "ERROR"])},
    optional={"resource": st.just({"labels": {"job_id": "1", "task_name": "service"}})},
)


@SETTINGS
@given(st.lists(entries, max_size=8), st.sampled_from([None, 0, 2]))
def test_valid_gcloud_arrays_give_every_entry(
    items: list[dict[str, object]], indent: int | None
) -> None:
    data = json.dumps(items, indent=indent).encode()
    source = MemorySource(data)
    records = list(source.records())
    assert [r.text for r in records] == [item["textPayload"] for item in items]
    assert source.stats.skipped == 0
    assert source.stats.lines == source.stats.used == physical_lines(data)


@SETTINGS
@given(st.lists(entries, min_size=1, max_size=8))
def test_valid_jsonl_gives_every_entry(items: list[dict[str, object]]) -> None:
    data = b"".join(json.dumps(item).encode() + b"\n" for item in items)
    source = MemorySource(data)
    records = list(source.records())
    assert [r.text for r in records] == [item["textPayload"] for item in items]
    assert source.stats.lines == source.stats.used == len(items)


def _read_both_ways(data: bytes) -> tuple[object, object]:
    """What the gcloud reader makes of ``data``: with whole elements read at once, and with
    every byte through the scanner."""

    def read() -> object:
        try:
            source = MemorySource(data)
        except InputError as error:
            return str(error)
        records = [
            (r.origin.line, r.origin.entry, r.text, r.timestamp, r.job_id) for r in source.records()
        ]
        stats = source.stats
        return records, stats.lines, stats.used, stats.skipped, dict(stats.skip_reasons)

    fast = read()
    originals = gcloud_json._indented_element, gcloud_json._next_element
    gcloud_json._indented_element = gcloud_json._next_element = lambda chunk, position: None
    try:
        slow = read()
    finally:
        gcloud_json._indented_element, gcloud_json._next_element = originals
    return fast, slow


nested = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='a}{\n\\" ', max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)


@SETTINGS
@given(
    st.lists(
        st.fixed_dictionaries(
            {"textPayload": st.text(max_size=20)},
            optional={
                "jsonPayload": nested,
                "labels": st.dictionaries(st.text(max_size=4), nested),
            },
        ),
        max_size=6,
    ),
    st.sampled_from([1, 2, 4, "\t", None, "one per line"]),
    st.integers(min_value=0),
    st.binary(max_size=12),
)
def test_gcloud_elements_at_once_read_as_byte_by_byte(
    items: list[dict[str, object]], indent: int | str | None, cut: int, noise: bytes
) -> None:
    # Arrays indented, compact or one element a line, whole and damaged: the at-once reading
    # never changes an answer.
    if indent == "one per line":
        data = ("[" + ",\n".join(json.dumps(item) for item in items) + "]").encode()
    else:
        data = json.dumps(items, indent=indent).encode()
    at = cut % (len(data) + 1)
    for variant in (data, data[:at], data[:at] + noise + data[at:], data[:at] + data[at + 7 :]):
        fast, slow = _read_both_ways(variant)
        assert fast == slow


_DIGIT = st.sampled_from("0123456789") | st.sampled_from("\u0663\u0669\uff11")  # some non-ASCII


@SETTINGS
@given(
    st.lists(_DIGIT, min_size=18, max_size=18),
    st.sampled_from("+-"),
    st.integers(min_value=0, max_value=14),
    st.integers(min_value=0, max_value=33),
)
def test_stream_logs_time_is_strptimes_answer(
    digits: list[str], sign: str, month: int, day: int
) -> None:
    # The fast reading of a stream-logs time agrees with strptime, its definition, everywhere.
    d = "".join(digits)
    value = f"{d[0:4]}-{month:02d}-{day:02d} {d[4:6]}:{d[6:8]}:{d[8:10]} {sign}{d[10:14]}"
    try:
        expected = datetime.strptime(value, "%Y-%m-%d %H:%M:%S %z").astimezone(UTC)
    except ValueError:
        expected = None
    assert stream_logs.parse_time(value) == expected
