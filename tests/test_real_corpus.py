"""Real excerpts users published (tests/real/, see its README): jobdoctor against the world.

Each excerpt's YAML says where the text came from and what the text itself shows; this test
checks exactly that, and the rules every diagnosis must keep whatever the text: nothing is
claimed that the text does not show (no cause without a platform message, no "the container
wrote nothing" about a paste), every input line is accounted for, no advice holds a
placeholder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from analyzer.api import analyze
from tests.expectations import KEYS, check

REAL = Path(__file__).resolve().parent / "real"
_ERAS = {"cloud-ml-engine", "ai-platform", "vertex"}


@dataclass(frozen=True)
class Excerpt:
    name: str
    meta: dict[str, Any]

    @property
    def text_path(self) -> Path:
        return REAL / str(self.meta["text"])

    @property
    def expect(self) -> dict[str, Any]:
        return dict(self.meta.get("expect") or {})


def _excerpts() -> list[Excerpt]:
    found = []
    for path in sorted(REAL.glob("*.yaml")):
        found.append(Excerpt(path.stem, yaml.safe_load(path.read_text(encoding="utf-8"))))
    return found


EXCERPTS = _excerpts()


def test_the_corpus_is_large_and_cited() -> None:
    assert len(EXCERPTS) >= 60
    eras = {e.meta.get("era") for e in EXCERPTS}
    assert eras >= _ERAS, eras
    for excerpt in EXCERPTS:
        meta = excerpt.meta
        assert str(meta.get("source", "")).startswith("https://"), excerpt.name
        assert meta.get("date"), excerpt.name
        assert meta.get("shape"), excerpt.name
        assert excerpt.text_path.is_file(), excerpt.name
        assert set(excerpt.expect) <= KEYS, (excerpt.name, set(excerpt.expect) - KEYS)


# What is not read as the excerpt shows yet: Logs Explorer CSV rows copied without their
# header. Strict, so that each leaves this list when it passes.
_READER_GAPS = {
    "gh-tensorflow-models-9832-L",
}


def _marked(excerpt: Excerpt) -> Any:
    if excerpt.name in _READER_GAPS:
        return pytest.param(excerpt, marks=pytest.mark.xfail(strict=True, reason="reader"))
    # An excerpt jobdoctor misreads keeps its true expectation and says, in its own YAML
    # (`xfail:`), what jobdoctor does wrong; strict, so the key goes when the misread is fixed.
    misread = excerpt.meta.get("xfail")
    if misread:
        return pytest.param(excerpt, marks=pytest.mark.xfail(strict=True, reason=str(misread)))
    return excerpt


@pytest.mark.parametrize("excerpt", [_marked(e) for e in EXCERPTS], ids=lambda e: e.name)
def test_real_excerpt(excerpt: Excerpt) -> None:
    analysis = analyze([excerpt.text_path])
    text = excerpt.text_path.read_text(encoding="utf-8", errors="replace")
    check(analysis, excerpt.expect, text)
    for diagnosis in analysis.diagnoses:
        # A paste is not the container's stream: it may never be called empty.
        assert diagnosis.cause is None or diagnosis.cause.detail != "no-container-output"


def test_the_trials_of_a_pasted_tuning_job_carry_its_name() -> None:
    """Legacy stream-logs of a tuning job: the trials (trial column) are the job's whose name
    gcloud printed above the rows, not jobs without an id."""
    excerpt = next(e for e in EXCERPTS if e.name == "gh-apress-ml-dl-gcp-superconductors-S")
    diagnoses = analyze([excerpt.text_path]).diagnoses
    assert {d.trial for d in diagnoses} == {None, "1", "2", "3", "4"}
    assert {d.job_id for d in diagnoses} == {"superconductor_190715_121616"}
