"""Every scenario, written in every export format, diagnoses as its scenario implies.

Text exports (stream-logs, Logs Explorer copies) carry no job id on their lines, so a
project-wide file of several interleaved jobs cannot be split from them: that case is left out.
"""

from __future__ import annotations

import pytest

from analyzer.api import analyze_sources
from analyzer.ingest import MemorySource
from analyzer.simulate import FORMATS, SCENARIOS, encoding, expected
from tests import corpus

TEXT_FORMATS = {"stream-logs", "logs-explorer", "summary-lines", "utf16", "web-page"}
CASES = [
    (name, fmt)
    for name in SCENARIOS
    for fmt in FORMATS
    if not (fmt in TEXT_FORMATS and len(expected(name)) > 1)
]


@pytest.mark.parametrize(("scenario", "fmt"), CASES)
def test_scenario_in_format(scenario: str, fmt: str) -> None:
    data = corpus.written(scenario, fmt, seed=1).encode(encoding(fmt))
    analysis = analyze_sources([MemorySource(data, f"{scenario}.{fmt}")])
    got = sorted(
        [
            (
                d.state.value,
                d.observed_final,
                d.attempts,
                d.cause.category.value if d.cause else None,
                {w: n for w, n in d.worker_restarts.items() if n},
            )
            for d in analysis.diagnoses
        ],
        key=repr,
    )
    want = sorted(
        [
            (e.state, e.observed_final, e.attempts, e.category, dict(e.worker_restarts))
            for e in expected(scenario, seed=1)
        ],
        key=repr,
    )
    assert got == want
    (stats,) = analysis.inputs
    assert stats.lines == stats.used + stats.skipped
