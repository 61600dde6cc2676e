"""The minutes each worker wrote in (analyzer.classify.minutes): the same record whatever the
order of the lines and the cuts of the input, and the same from the fast scan as from the plain
reader, in every format and across processes."""

from __future__ import annotations

import io
import random
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.classify.collector import collect
from analyzer.classify.minutes import WINDOW, MinuteMap, minute_of, minute_of_key, minute_start
from analyzer.ingest import open_sources
from analyzer.rulebook import RuleBook
from analyzer.simulate import fleet, simulate, write

SAMPLES = sorted(Path(__file__).resolve().parent.parent.joinpath("sample_logs").iterdir())


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


def _map(minutes: list[int]) -> MinuteMap:
    found = MinuteMap()
    for minute in minutes:
        found.add(minute)
    return found


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 3 * WINDOW), max_size=60),
    st.randoms(use_true_random=False),
    st.integers(0, 60),
)
def test_any_order_and_any_cut_give_one_map(
    minutes: list[int], rng: random.Random, cut: int
) -> None:
    # The minutes within WINDOW of the latest, whatever the order and however merged.
    expected = sorted({m for m in minutes if minutes and m > max(minutes) - WINDOW})
    shuffled = list(minutes)
    rng.shuffle(shuffled)
    whole = _map(shuffled)
    assert whole.minutes() == expected
    left, right = _map(shuffled[:cut]), _map(shuffled[cut:])
    right.merge(left)
    assert right == whole
    left = _map(shuffled[:cut])
    left.merge(_map(shuffled[cut:]))
    assert left == whole


def test_a_stray_old_line_keeps_the_map_small() -> None:
    found = _map([0, 60_000_000, 60_000_001])
    assert found.minutes() == [60_000_000, 60_000_001]
    assert found.bits.bit_length() <= WINDOW


def test_lines_years_apart_never_build_a_huge_map() -> None:
    # Year 2024 and year 9999 are 4.2 billion minutes apart: shifting the map by that made an
    # int of as many bits (520 MB) before the mask cut it, 0.1 s a line.
    years = [datetime(year, 1, 1, tzinfo=UTC) for year in (2024, 9999, 1970, 9999)]
    tracemalloc.start()
    try:
        found = _map([minute_of(when) for when in years])
        other = _map([minute_of(years[0])])
        other.merge(found)
        found.merge(_map([minute_of(years[0])]))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert found == other and found.minutes() == [minute_of(years[1])]


def test_minutes_since() -> None:
    found = _map([10, 12, 20, 21])
    assert found.minutes(since=12) == [12, 20, 21]
    assert found.minutes(since=22) == []


def test_a_key_and_a_time_give_one_minute() -> None:
    when = datetime(2024, 3, 11, 8, 0, 59, 999999, tzinfo=UTC)
    assert minute_of_key("2024-03-11T08:00:59.999999000Z") == minute_of(when)
    assert minute_start(minute_of(when)) == when.replace(second=0, microsecond=0)
    assert minute_of(when + timedelta(microseconds=1)) == minute_of(when) + 1
    assert minute_of_key("2024-13-11T08:00:59Z") is None


def _spans(paths: list[str], book: RuleBook, *, fast: bool, processes: int = 1) -> object:
    logs, _ = collect(open_sources(paths), book, fast=fast, processes=processes)
    return [(log.job_id, dict(log.vm_spans)) for log in logs]


def _same_spans(paths: list[str], book: RuleBook, processes: int = 1) -> None:
    plain = _spans(paths, book, fast=False)
    assert _spans(paths, book, fast=True, processes=processes) == plain
    # Every worker span of a timed input has its minutes, the last one's among them.
    for _, spans in plain:  # type: ignore[attr-defined]
        for task_spans in spans.values():
            for span in task_spans:
                assert span.minutes is not None
                assert span.minutes.top == minute_of(span.last)
                assert minute_of(span.first) in span.minutes.minutes()


@pytest.mark.parametrize(
    "sample", [p for p in SAMPLES if not p.name.endswith(".txt")], ids=lambda p: p.name
)
def test_samples_fast_minutes_are_plain(sample: Path, book: RuleBook) -> None:
    _same_spans([str(sample)], book)


@pytest.mark.parametrize("fmt", ["jsonl", "gcloud-json", "yaml", "stream-logs"])
def test_a_fleet_fast_minutes_are_plain(fmt: str, book: RuleBook, tmp_path: Path) -> None:
    entries = [orjson.loads(line) for line in fleet(600_000, seed=7)]
    out = io.StringIO()
    write(entries, fmt, out, seed=7)
    path = tmp_path / f"fleet.{fmt}"
    path.write_text(out.getvalue(), encoding="utf-8")
    _same_spans([str(path)], book)


def test_ranges_across_processes_merge_to_the_same_minutes(book: RuleBook, tmp_path: Path) -> None:
    import analyzer.classify._fastscan.parallel as parallel

    path = tmp_path / "fleet.jsonl"
    with path.open("wb") as stream:
        stream.writelines(fleet(1_500_000, seed=11))
    smallest = parallel.MIN_RANGE_BYTES
    parallel.MIN_RANGE_BYTES = 128 << 10
    try:
        _same_spans([str(path)], book, processes=2)
    finally:
        parallel.MIN_RANGE_BYTES = smallest


def test_a_scenario_in_gcloud_order(book: RuleBook, tmp_path: Path) -> None:
    # gcloud logging read prints newest first: the minutes come in backwards.
    out = io.StringIO()
    write(simulate("success", 3), "gcloud-json", out, seed=3)
    path = tmp_path / "job.json"
    path.write_text(out.getvalue(), encoding="utf-8")
    _same_spans([str(path)], book)
