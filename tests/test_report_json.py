"""render_json writes with orjson: byte for byte what the standard library writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.ingest.records import InputStats
from analyzer.pipeline.analysis import Analysis
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


_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "ingest"
_EVERY_FORMAT = [
    *SAMPLES,
    *sorted(p for p in _FIXTURES.iterdir() if p.is_file()),
]


@pytest.mark.parametrize("path", _EVERY_FORMAT, ids=lambda p: p.name)
def test_every_input_accounts_for_every_line_in_the_json(path: Path) -> None:
    # From outside, with the JSON alone: every physical line was used or skipped, in every
    # format, the multi-line ones (stream-logs, Logs Explorer copies, gcloud arrays) included.
    (entry,) = json.loads(render_json(analyze([path])))["inputs"]
    assert list(entry)[2:6] == ["lines", "records", "used", "skipped"]
    assert entry["lines"] == entry["used"] + entry["skipped"], entry
    assert entry["skipped"] == sum(entry["skip_reasons"].values())
    assert entry["used"] >= entry["records"] > 0 or entry["format"] == "empty"
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        import gzip

        raw = gzip.decompress(raw)
    assert entry["lines"] == raw.count(b"\n") + (not raw.endswith(b"\n") and bool(raw))
