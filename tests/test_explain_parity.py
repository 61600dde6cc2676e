"""`explain` knows what `diagnose` knows (issue 13, point 6): every rule with a category gets a
meaning, what the platform does next and advice; a pasted message with its traceback tail gets
the exception; the console link gives the job id; exit codes are decoded as diagnose does."""

from __future__ import annotations

import pytest

from analyzer.rulebook import RuleBook
from analyzer.rulebook.events import EventKind
from analyzer.rulebook.model import Rule
from analyzer.verdict.advice import _advice_path, _load
from analyzer.verdict.explain import explain
from analyzer.verdict.policy import load_policy

BOOK = RuleBook.load()
POLICY = load_policy()
WITH_CATEGORY = [r for r in BOOK.rules if r.category is not None]
EXAMPLES = [
    pytest.param(rule, example.text, id=f"{rule.id}:{index}")
    for rule in WITH_CATEGORY
    for index, example in enumerate(rule.match_examples)
]


@pytest.mark.parametrize(("rule", "text"), EXAMPLES)
def test_every_categorised_example_is_explained_like_a_cause(rule: Rule, text: str) -> None:
    result = explain(text, BOOK, POLICY)
    assert result.match is not None and result.match.category is not None
    assert result.next_step and "lifecycle message" not in result.next_step
    assert result.advice, f"no advice for {rule.id}"
    for line in result.advice:
        assert "?" not in line.replace("?project", "") and "None" not in line, line
    assert result.permanent is not None and result.max_retries is not None


def test_every_detail_a_rule_or_predict_names_has_its_advice() -> None:
    table = _load(_advice_path())
    derived = {
        "killed-no-traceback",
        "no-container-output",
        "output-not-in-input",
        "start-error",
    }
    details = {r.detail for r in BOOK.rules if r.kind is EventKind.DETAIL} | derived
    missing = [d for d in details if f"user_code_exception.{d}" not in table]
    assert missing == []


def test_a_pasted_message_with_its_tail_gets_the_exception_and_the_job() -> None:
    message = (
        "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: "
        'Error. \\nTraceback (most recent call last):\\n  File "/root/.local/lib/python3.10/'
        "site-packages/trainer/task.py\", line 12, in main\\nKeyError: 'label'\\n\\nTo find "
        "out more about why your job exited please check the logs: https://console.cloud."
        "google.com/logs/viewer?project=1&resource=ml_job%2Fjob_id%2F8501620632646057984"
    )
    result = explain(message, BOOK, POLICY)
    assert result.cause is not None and result.cause.exception is not None
    assert (result.cause.exception.type, result.cause.exception.message) == ("KeyError", "'label'")
    assert result.job_id == "8501620632646057984"
    assert result.cause.exit_meaning and "Python exception" in result.cause.exit_meaning
    assert any("KeyError" in line for line in result.advice)


@pytest.mark.parametrize(
    ("message", "signal", "detail"),
    [
        (
            "The replica master 0 ran out-of-memory and exited with a non-zero status of"
            " 9(SIGKILL)",
            "SIGKILL",
            "host-oom",
        ),
        (
            "The replica workerpool0-0 exited with a non-zero status of 139. Termination reason: "
            "Error.",
            "SIGSEGV",
            "output-not-in-input",
        ),
        (
            "The replica workerpool0-0 exited with a non-zero status of 128. Termination reason: "
            "StartError. \\n Termination log message: failed to create containerd task",
            None,
            "start-error",
        ),
    ],
)
def test_exit_codes_and_details_as_diagnose_decodes_them(
    message: str, signal: str | None, detail: str | None
) -> None:
    result = explain(message, BOOK, POLICY)
    assert result.cause is not None
    assert result.cause.signal == signal
    assert result.cause.detail == detail
    if signal == "SIGSEGV":  # transient: retried, and the advice says so first
        assert result.permanent is False and "transient" in result.advice[0]


def test_not_a_cause_is_said_of_lifecycle_messages_only() -> None:
    running = explain("Job is running.", BOOK, POLICY)
    assert running.next_step and "lifecycle message" in running.next_step
    state = explain("JobState.JOB_STATE_FAILED", BOOK, POLICY)
    assert state.next_step and "lifecycle message" not in state.next_step
    refused = explain(
        "ERROR: (gcloud.ai.custom-jobs.create) RESOURCE_EXHAUSTED: The following quota "
        "metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_cpus",
        BOOK,
        POLICY,
    )
    assert refused.match is not None and refused.match.category is not None


@pytest.mark.parametrize(
    ("message", "field", "value"),
    [
        ("Resources are insufficient in region: us-central１", "region", "us-central1"),
        ("Resources are insufficient in region：\u200e ｕｓ-east4", "region", "us-east4"),
        (
            "The replica ｍａｓｔｅｒ-replica-0 exited with a non-zero status of １.",
            "replica",
            "master-replica-0",
        ),
    ],
)
def test_values_cut_from_damaged_text_are_normalised(message: str, field: str, value: str) -> None:
    """Issue 13, point 7: explain, diagnose, classify and the advice see the same value."""
    from analyzer.api import analyze_sources
    from analyzer.ingest.sources import MemorySource

    (match, *_) = BOOK.match(message)
    assert match.field(field) == value
    result = explain(message, BOOK, POLICY)
    assert result.cause is not None and getattr(result.cause, field) == value

    (diagnosis,) = analyze_sources([MemorySource(message, "<paste>")]).diagnoses
    assert diagnosis.cause is not None and getattr(diagnosis.cause, field) == value
    assert any(value in line for line in diagnosis.advice) or field == "replica"
