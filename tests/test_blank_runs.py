"""Blank lines cost what their bytes do (issue 31, point 7).

Two million blank lines after an export took 17 s (a quiet host) where the export alone took
0.3 s: the fast scan sent each one through the JSON parser, whose refusal is slow. Runs of empty
lines are now counted at once (:func:`~analyzer.classify._fastscan.jsonl.JsonlScanner.feed_block`)
and blank lines of text skipped before any pattern. What must hold whatever the runs: the fast
scan reads exactly what the plain reader does (every line counted, each blank one skipped as
``blank line``), in one process and over byte ranges cut anywhere.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.ingest.jsonl import BLANK_LINE
from analyzer.rulebook import RuleBook
from analyzer.simulate import simulate, write
from tests.test_fast_readers import _analysis, small_ranges  # noqa: F401


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


def _lines(fmt: str) -> list[str]:
    out = io.StringIO()
    write(list(simulate("oom", seed=3)), fmt, out, seed=3)
    return out.getvalue().splitlines(keepends=True)


def _padded(lines: list[str], runs: list[tuple[int, int, str]]) -> str:
    """``lines`` with, before line ``at % len(lines)``, ``count`` blank lines of ``blank``."""
    padded = list(lines)
    for at, count, blank in sorted(runs, key=lambda run: -(run[0] % len(lines))):
        padded[at % len(lines) : at % len(lines)] = [blank] * count
    return "".join(padded)


RUNS = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=10_000),
        st.integers(min_value=1, max_value=400),
        st.sampled_from(["\n", " \n", "\r\n", "\t \n"]),
    ),
    max_size=5,
)


@pytest.mark.parametrize("fmt", ["jsonl", "stream-logs"])
@pytest.mark.usefixtures("small_ranges")
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(runs=RUNS, tail=st.integers(min_value=0, max_value=3000))
def test_blank_runs_read_alike_fast_and_plain(
    fmt: str, runs: list[tuple[int, int, str]], tail: int, book: RuleBook, tmp_path: Path
) -> None:
    lines = _lines(fmt)
    path = tmp_path / f"padded.{fmt}"
    path.write_text(_padded(lines, runs) + "\n" * tail, newline="")
    plain = _analysis(path, book, fast=False)
    assert _analysis(path, book, fast=True) == plain
    assert _analysis(path, book, fast=True, processes=3) == plain
    (stats,) = plain["inputs"]  # type: ignore[index]
    blanks = sum(count for _, count, _ in runs) + tail
    assert stats["lines"] == len(lines) + blanks
    assert stats["skip_reasons"].get(BLANK_LINE, 0) >= blanks
