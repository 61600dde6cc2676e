"""The pipeline's stages import only what is below them: the later stages load no reading
machinery (issue 19, point 6), and the stage types import neither the API nor the reports."""

from __future__ import annotations

import subprocess
import sys

import pytest

# What a stage must not load: the fast scan, the process pool and their native libraries.
READING_MACHINERY = (
    "msgspec",
    "hyperscan",
    "analyzer.classify._fastscan",
    "analyzer.core.processes",
)


def _loaded(module: str) -> set[str]:
    """The modules a fresh interpreter has loaded after importing ``module``."""
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    return set(found.stdout.split())


@pytest.mark.parametrize(
    "module",
    [
        "analyzer.classify.joblog",
        "analyzer.timeline.attempts",
        "analyzer.verdict.predict",
        "analyzer.verdict.diagnosis",
        "analyzer.pipeline.analysis",
        "analyzer.verdict.explain",
        "analyzer.report.text",
        "analyzer.report.html",
    ],
)
def test_later_stages_load_no_reading_machinery(module: str) -> None:
    loaded = _loaded(module)
    assert not loaded & set(READING_MACHINERY), sorted(loaded & set(READING_MACHINERY))


@pytest.mark.parametrize(
    "module",
    ["analyzer.classify.joblog", "analyzer.pipeline.analysis", "analyzer.verdict.diagnosis"],
)
def test_stage_types_import_neither_the_api_nor_the_reports(module: str) -> None:
    loaded = _loaded(module)
    above = {"analyzer.api", "analyzer.classify.collector", "analyzer.cli.app"} | {
        name for name in loaded if name.startswith("analyzer.report")
    }
    assert not loaded & above, sorted(loaded & above)


def test_the_reading_stage_does_load_the_fast_scan() -> None:
    # The check above would pass vacuously if the names were wrong.
    assert {"analyzer.classify._fastscan", "msgspec"} <= _loaded("analyzer.classify.collector")
