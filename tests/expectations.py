"""Checking a diagnosis against what an input shows (tests/real and tests/fixtures/evidence).

``expect`` keys (all optional: a key is given only when the text shows it): ``category``
(``none`` for a job without failure), ``replica``, ``exit_code``, ``state``, ``states`` (every
job's, in order), ``observed_final``, ``attempts``, ``exception`` {type, message}, ``job_id``,
``jobs``, ``refused_at_creation``, ``worker_restarts``, ``outcomes`` (the attempt log's),
``notes_contain``, ``advice_contains``, ``verdict_contains`` (the first job's verdict line),
``lost_work_seconds`` (the first job's; null when the input cannot show it), ``cut_line``
(the input's last line, which it ends inside: a paste or a copy cut short), ``stalled`` (the
first job's stall kind, as ``stalled.kind`` in the JSON: ``collective_timeout``, ...; null when
the input shows no hang or an end: issue 30).
Beyond them, every diagnosis keeps the rules of evidence.
"""

from __future__ import annotations

from typing import Any

import regex

from analyzer.classify.tracebacks import ExceptionInfo, parse_text
from analyzer.pipeline.analysis import Analysis
from analyzer.verdict.diagnosis import Diagnosis

KEYS = {
    "category",
    "replica",
    "exit_code",
    "state",
    "states",
    "observed_final",
    "attempts",
    "exception",
    "job_id",
    "jobs",
    "refused_at_creation",
    "worker_restarts",
    "outcomes",
    "notes_contain",
    "advice_contains",
    "verdict_contains",
    "lost_work_seconds",
    "cut_line",
    "stalled",
}


def _state(value: str) -> str:
    return value if value.startswith("JOB_STATE_") else f"JOB_STATE_{value}"


def _with_cause(analysis: Analysis) -> list[Diagnosis]:
    return [d for d in analysis.diagnoses if d.cause is not None]


def _exception_seen(analysis: Analysis, text: str) -> ExceptionInfo | None:
    """The exception jobdoctor reports for the failure, else the one it tells of in a note
    (a traceback with no platform message), else the one it parses in the text."""
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


def check(analysis: Analysis, expect: dict[str, Any], text: str) -> None:
    """Assert that ``analysis`` says what ``expect`` says the input shows, and no more."""
    assert set(expect) <= KEYS, set(expect) - KEYS
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
    first = analysis.diagnoses[0] if analysis.diagnoses else None
    if "state" in expect:
        assert _state(str(expect["state"])) in [d.state.value for d in analysis.diagnoses]
    if "states" in expect:
        assert [d.state.value for d in analysis.diagnoses] == [_state(s) for s in expect["states"]]
    if "observed_final" in expect:
        assert first is not None and first.observed_final is expect["observed_final"]
    if "attempts" in expect:
        assert [d.attempts for d in analysis.diagnoses][:1] == [expect["attempts"]]
    if "job_id" in expect:
        assert str(expect["job_id"]) in [d.job_id for d in analysis.diagnoses]
    if "jobs" in expect:
        assert len(analysis.diagnoses) == expect["jobs"]
    if "worker_restarts" in expect:
        assert first is not None and dict(first.worker_restarts) == expect["worker_restarts"]
    if "outcomes" in expect:
        assert first is not None
        assert [a.outcome for a in first.attempt_log] == expect["outcomes"]
    if "notes_contain" in expect:
        notes = [n for d in analysis.diagnoses for n in d.notes]
        assert any(expect["notes_contain"] in n for n in notes), notes
    if "advice_contains" in expect:
        advice = [line for d in analysis.diagnoses for line in d.advice]
        assert any(expect["advice_contains"] in line for line in advice), advice
    if "verdict_contains" in expect:
        assert first is not None and expect["verdict_contains"] in str(first), str(first)
    if "lost_work_seconds" in expect:
        assert first is not None
        lost = first.lost_work.total_seconds() if first.lost_work is not None else None
        assert lost == expect["lost_work_seconds"], lost
    if "stalled" in expect:
        assert first is not None
        kind = first.stalled.kind.value if first.stalled is not None else None
        assert kind == expect["stalled"], kind
    if "cut_line" in expect:
        assert [s.cut_line for s in analysis.inputs][:1] == [expect["cut_line"]]
    if expect.get("refused_at_creation"):
        assert first is not None, "a refusal is still reported"
        assert first.attempts == 0 and first.retries == 0
        assert any("never created" in note for note in first.notes)
        # A quota refusal is a quota cause; others (INVALID_ARGUMENT) name no category.
        assert first.cause is None or first.cause.detail == "refused-at-creation"
    if "exception" in expect:
        # The exception behind the job's own exit (not the SDK's or gcloud's).
        seen = _exception_seen(analysis, text)
        assert seen is not None, "the exception in the text was not found"
        assert seen.type == expect["exception"]["type"]
        assert str(expect["exception"].get("message", "")) in seen.message

    for diagnosis in analysis.diagnoses:
        # A cause always comes with what to do (an advice key the table lacks gave none).
        assert diagnosis.cause is None or diagnosis.advice, diagnosis.cause
        for line in diagnosis.advice:
            assert "?" not in line.replace("?project=", ""), line
            assert "None" not in line, line
