"""Shapes the simulator does not write: legacy AI Platform jobs (named job ids, master-replica-0,
`The replica master 0 ...`, `9(SIGKILL)`), and a quota failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.api import analyze

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "real_shapes"


@pytest.mark.parametrize(
    ("name", "job", "category", "replica", "exit_code"),
    [
        (
            "legacy-ai-platform.jsonl",
            "census_training_20190801",
            "user_code_exception",
            "master 0",
            1,
        ),
        ("legacy-oom.jsonl", "oom_legacy", "oom", "master 0", 9),
        ("quota.jsonl", "7771112223334445556", "quota", None, None),
    ],
)
def test_real_shape(
    name: str, job: str, category: str, replica: str | None, exit_code: int | None
) -> None:
    (diagnosis,) = analyze([FIXTURES / name]).diagnoses
    assert diagnosis.job_id == job
    assert (diagnosis.state.value, diagnosis.observed_final, diagnosis.attempts) == (
        "JOB_STATE_FAILED",
        True,
        1,
    )
    cause = diagnosis.cause
    assert cause is not None
    assert (cause.category.value, cause.replica, cause.exit_code) == (category, replica, exit_code)


def test_legacy_exception_and_worker_are_found() -> None:
    (diagnosis,) = analyze([FIXTURES / "legacy-ai-platform.jsonl"]).diagnoses
    assert diagnosis.cause is not None and diagnosis.cause.exception is not None
    assert diagnosis.cause.exception.type == "KeyError"
    assert [w.task for w in diagnosis.timeline.attempts[0].workers] == ["master-replica-0"]


def test_legacy_sigkill_is_decoded() -> None:
    (diagnosis,) = analyze([FIXTURES / "legacy-oom.jsonl"]).diagnoses
    assert diagnosis.cause is not None and diagnosis.cause.signal == "SIGKILL"


def test_tuning_trials_are_diagnosed_apart_on_both_paths() -> None:
    from analyzer.classify.collector import collect
    from analyzer.ingest import open_sources
    from analyzer.rulebook import RuleBook

    path = FIXTURES / "hp-tuning-trials.jsonl"
    trials = {d.trial: d for d in analyze([path]).diagnoses}
    assert set(trials) == {"1", "2"}
    assert trials["1"].state.value == "JOB_STATE_FAILED" and trials["1"].attempts == 1
    assert trials["1"].cause is not None and trials["1"].cause.exception is not None
    assert trials["2"].state.value == "JOB_STATE_SUCCEEDED" and trials["2"].cause is None
    assert all(d.job_id == "5550001112223334445" for d in trials.values())
    assert trials["1"].to_dict()["trial"] == "1"
    book = RuleBook.load()
    fast = collect(open_sources([str(path)]), book, fast=True)
    plain = collect(open_sources([str(path)]), book, fast=False)
    assert fast == plain
