"""parse_timestamp: the sink-form shortcut gives exactly what the general parser gives."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from analyzer.ingest.records import _parse_any_timestamp, parse_timestamp

SINK_FORM = "2024-02-29T23:59:59.123456789Z"


# The general parser alone, without the sink-form shortcut.
general = _parse_any_timestamp


def outcome(parse: object, value: str) -> object:
    try:
        return parse(value)  # type: ignore[operator]
    except ValueError:
        return "ValueError"


@given(
    st.lists(
        st.tuples(st.integers(0, len(SINK_FORM) - 1), st.sampled_from(list("0123456789T:-.Zz +٣"))),
        max_size=3,
    )
)
def test_damaged_sink_times_parse_as_the_general_path_does(edits: list[tuple[int, str]]) -> None:
    chars = list(SINK_FORM)
    for index, char in edits:
        chars[index] = char
    value = "".join(chars)
    assert outcome(parse_timestamp, value) == outcome(general, value)


@given(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)), st.integers(0, 999)
)
def test_sink_times_keep_microseconds(moment: datetime, nanos: int) -> None:
    value = f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%S.")
    value += f"{moment.microsecond:06d}{nanos:03d}Z"
    assert parse_timestamp(value) == general(value) == moment.replace(tzinfo=UTC)


@given(st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)))
def test_bigquery_timestamps_name_the_same_moment(moment: datetime) -> None:
    # What `bq extract` writes of a sink table's TIMESTAMP column, trailing zeros trimmed.
    fraction = f"{moment.microsecond:06d}".rstrip("0")
    value = f"{moment.year:04d}" + moment.strftime("-%m-%d %H:%M:%S")
    value += f".{fraction} UTC" if fraction else " UTC"
    assert parse_timestamp(value) == moment.replace(tzinfo=UTC)
