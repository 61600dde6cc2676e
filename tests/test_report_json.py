"""render_json writes with orjson: byte for byte what the standard library writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzer.api import Analysis, analyze
from analyzer.records import InputStats
from analyzer.report import render_json

SAMPLES = sorted(Path(__file__).resolve().parent.parent.joinpath("sample_logs").iterdir())


def _standard(analysis: Analysis) -> str:
    return json.dumps(analysis.to_dict(), indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_same_bytes_as_the_standard_library(sample: Path) -> None:
    analysis = analyze([sample])
    assert render_json(analysis) == _standard(analysis)


def test_a_lone_surrogate_falls_back_to_the_standard_library() -> None:
    analysis = Analysis((InputStats(path="odd-\ud800-name.jsonl"),), ())
    assert render_json(analysis) == _standard(analysis)
