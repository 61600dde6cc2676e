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
import regex
import yaml

from analyzer.api import Analysis, analyze
from analyzer.diagnosis import Diagnosis
from analyzer.tracebacks import ExceptionInfo, parse_text

REAL = Path(__file__).resolve().parent / "real"
_KEYS = {
    "category",
    "replica",
    "exit_code",
    "state",
    "attempts",
    "exception",
    "job_id",
    "refused_at_creation",
    "jobs",
}
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


def _state(value: str) -> str:
    return value if value.startswith("JOB_STATE_") else f"JOB_STATE_{value}"


def _with_cause(analysis: Analysis) -> list[Diagnosis]:
    return [d for d in analysis.diagnoses if d.cause is not None]


def _exception_seen(analysis: Analysis, text: str) -> ExceptionInfo | None:
    """The exception jobdoctor reports for the failure, else the one it parses in the text
    (an excerpt with a worker's traceback and no platform message has no cause)."""
    for diagnosis in _with_cause(analysis):
        assert diagnosis.cause is not None
        if diagnosis.cause.exception is not None:
            return diagnosis.cause.exception
    for diagnosis in analysis.diagnoses:
        for note in diagnosis.notes:
            shown = regex.match(r"the input shows (\S+?): (.*) but no platform message", note)
            if shown:
                return ExceptionInfo(shown.group(1), shown.group(2), None)
    return parse_text(text)


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
        assert set(excerpt.expect) <= _KEYS, (excerpt.name, set(excerpt.expect) - _KEYS)


# Shapes the readers of issue 14 bring (a time-of-day console copy, a Logs Explorer CSV, the
# old Logs Viewer's entry dump, gcloud's submit output, space-separated legacy stream-logs):
# strict, so that each is taken off this list when it passes.
_READER_GAPS = {
    "csdn-jiangjingxuan-chatbot-cloudml-S",
    "gh-gcp-community-926-L",
    "gh-rstudio-cloudml-142-S",
    "gh-sinaungoding-tf-od-cloud-S",
    "gh-tensorflow-models-9832-L",
    "gh-tensorflow-tensorflow-18984-L",
    "gh-training-data-analyst-cv-vertex-create-S",
    "gh-training-data-analyst-mobile-gaming-create-S",
    "gh-wwoo-tf-face-readme-S",
}


def _marked(excerpt: Excerpt) -> Any:
    if excerpt.name in _READER_GAPS:
        return pytest.param(excerpt, marks=pytest.mark.xfail(strict=True, reason="reader"))
    return excerpt


@pytest.mark.parametrize("excerpt", [_marked(e) for e in EXCERPTS], ids=lambda e: e.name)
def test_real_excerpt(excerpt: Excerpt) -> None:
    analysis = analyze([excerpt.text_path])
    expect = excerpt.expect
    text = excerpt.text_path.read_text(encoding="utf-8", errors="replace")

    # Every line is accounted for, whatever the shape.
    for stats in analysis.inputs:
        assert stats.lines == stats.used + stats.skipped, stats

    causes = _with_cause(analysis)
    category = expect.get("category")
    if category in (None, "none"):
        # Nothing the text does not show: no platform failure message, no cause.
        assert causes == [], [d.cause.category for d in causes if d.cause]
    else:
        assert [d.cause.category.value for d in causes if d.cause][:1] == [category]
        cause = causes[0].cause
        assert cause is not None
        if "replica" in expect:
            assert cause.replica == expect["replica"]
        if "exit_code" in expect:
            assert cause.exit_code == expect["exit_code"]
    if "state" in expect:
        assert _state(str(expect["state"])) in [d.state.value for d in analysis.diagnoses]
    if "attempts" in expect:
        assert [d.attempts for d in analysis.diagnoses][:1] == [expect["attempts"]]
    if "job_id" in expect:
        assert str(expect["job_id"]) in [d.job_id for d in analysis.diagnoses]
    if "jobs" in expect:
        assert len(analysis.diagnoses) == expect["jobs"]
    if expect.get("refused_at_creation"):
        assert analysis.diagnoses, "a refusal is still reported"
        refused = analysis.diagnoses[0]
        assert refused.attempts == 0 and refused.retries == 0
        assert any("never created" in note for note in refused.notes)
        # A quota refusal is a quota cause; others (INVALID_ARGUMENT) name no category.
        assert refused.cause is None or refused.cause.detail == "refused-at-creation"
    if "exception" in expect:
        # The exception behind the job's own exit (not the SDK's or gcloud's).
        seen = _exception_seen(analysis, text)
        assert seen is not None, "the exception in the text was not found"
        assert seen.type == expect["exception"]["type"]
        assert str(expect["exception"].get("message", "")) in seen.message

    for diagnosis in analysis.diagnoses:
        # A paste is not the container's stream: it may never be called empty.
        assert diagnosis.cause is None or diagnosis.cause.detail != "no-container-output"
        for line in diagnosis.advice:
            assert "?" not in line.replace("?project=", ""), line
            assert "None" not in line, line
