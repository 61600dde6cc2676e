"""The rule book: every rule's own examples, plus the behaviour they cannot show."""

from __future__ import annotations

from pathlib import Path

import pytest

from analyzer.core.errors import RuleError
from analyzer.rulebook import RuleBook, builtin_rules_dir, check_rules, normalize
from analyzer.rulebook.events import Category, EventKind
from analyzer.rulebook.model import MatchExample, NoMatchExample, Rule
from analyzer.rulebook.windows import uncovered

BOOK = RuleBook.load()


def _match_cases() -> list[object]:
    return [
        pytest.param(rule, example, id=f"{rule.id}:{example.location.line}")
        for rule in BOOK.rules
        for example in rule.match_examples
    ]


def _no_match_cases() -> list[object]:
    return [
        pytest.param(rule, example, id=f"{rule.id}:{example.location.line}")
        for rule in BOOK.rules
        for example in rule.no_match_examples
    ]


@pytest.mark.parametrize(("rule", "example"), _match_cases())
def test_match_example(rule: Rule, example: MatchExample) -> None:
    matches = [m for m in BOOK.match(example.text) if m.rule == rule.id]
    assert matches, f"{example.location}: no match"
    assert BOOK.may_match_texts([example.text]) == [0]
    if example.fields:
        assert [dict(m.fields) for m in matches] == [dict(f) for f in example.fields]
    if example.lang:
        assert matches[0].lang == example.lang
    assert all(m.kind is rule.kind and m.category is rule.category for m in matches)


@pytest.mark.parametrize(("rule", "example"), _no_match_cases())
def test_no_match_example(rule: Rule, example: NoMatchExample) -> None:
    assert not [m for m in BOOK.match(example.text) if m.rule == rule.id]


def test_builtin_rules_check_clean() -> None:
    assert [str(p) for p in check_rules([])] == []


def test_builtin_rules_dir_is_the_repository_folder() -> None:
    assert (builtin_rules_dir() / "placeholders.yaml").is_file()


@pytest.mark.parametrize("rule", BOOK.rules, ids=lambda r: r.id)
def test_every_language_has_a_damaged_example(rule: Rule) -> None:
    damaged_langs: set[str] = set()
    for example in rule.match_examples:
        if example.text == normalize(example.text):
            continue  # clean text: shows the template, not the tolerance
        damaged_langs.update(m.lang for m in BOOK.match(example.text) if m.rule == rule.id)
    assert set(rule.languages) <= damaged_langs


EXPECTED = {
    "vertex.user-code-exception": (EventKind.ERROR, Category.USER_CODE_EXCEPTION),
    "vertex.user-code-exception-tail": (EventKind.ERROR, Category.USER_CODE_EXCEPTION),
    "vertex.oom": (EventKind.ERROR, Category.OOM),
    "vertex.disk-low": (EventKind.JOB_ERROR, None),
    "describe.error-message": (EventKind.JOB_ERROR, None),
    "pipeline.dag-failed": (EventKind.JOB_ERROR, None),
    "vertex.stockout": (EventKind.ERROR, Category.STOCKOUT),
    "vertex.internal-error": (EventKind.ERROR, Category.INTERNAL_ERROR),
    "vertex.quota": (EventKind.ERROR, Category.QUOTA),
    "vertex.detail.cuda-oom": (EventKind.DETAIL, Category.USER_CODE_EXCEPTION),
    "python.detail.missing-module": (EventKind.DETAIL, Category.USER_CODE_EXCEPTION),
    "distributed.detail.nccl-error": (EventKind.DETAIL, Category.USER_CODE_EXCEPTION),
    "distributed.detail.rendezvous-timeout": (EventKind.DETAIL, Category.USER_CODE_EXCEPTION),
    "distributed.detail.collective-timeout": (EventKind.DETAIL, Category.USER_CODE_EXCEPTION),
    "distributed.detail.deadline-exceeded": (EventKind.DETAIL, Category.USER_CODE_EXCEPTION),
    "distributed.detail.barrier-timeout": (EventKind.DETAIL, Category.USER_CODE_EXCEPTION),
    "storage.detail.permission-denied": (EventKind.DETAIL, Category.USER_CODE_EXCEPTION),
    "storage.detail.file-not-found": (EventKind.DETAIL, Category.USER_CODE_EXCEPTION),
    "system.detail.shm-exhausted": (EventKind.DETAIL, Category.USER_CODE_EXCEPTION),
    "system.detail.disk-full": (EventKind.DETAIL, Category.USER_CODE_EXCEPTION),
    "python.traceback": (EventKind.TRACEBACK, None),
    "python.frame": (EventKind.FRAME, None),
    "python.exception": (EventKind.EXCEPTION, None),
    "progress.checkpoint": (EventKind.CHECKPOINT, None),
    "vertex.attempt-started": (EventKind.ATTEMPT_STARTED, None),
    "vertex.job-provisioning": (EventKind.JOB_PROVISIONING, None),
    "vertex.job-preparing": (EventKind.JOB_PREPARING, None),
    "vertex.job-running": (EventKind.JOB_RUNNING, None),
    "vertex.teardown": (EventKind.TEARDOWN, None),
    "vertex.job-failed": (EventKind.JOB_FAILED, None),
    "vertex.job-succeeded": (EventKind.JOB_SUCCEEDED, None),
    "legacy.task-succeeded": (EventKind.JOB_SUCCEEDED, None),
    "legacy.quota": (EventKind.ERROR, Category.QUOTA),
    "sdk.job-state": (EventKind.JOB_STATE, None),
    "sdk.run-completed": (EventKind.JOB_STATE, None),
    "sdk.job-error": (EventKind.JOB_ERROR, None),
    "api.creation-refused": (EventKind.CREATION_REFUSED, None),
    "job.named": (EventKind.JOB_NAMED, None),
    "sdk.other-job-named": (EventKind.JOB_NAMED, None),
    "container.detail.start-error": (EventKind.DETAIL, Category.USER_CODE_EXCEPTION),
    "vertex.retries-exhausted": (EventKind.RETRIES_EXHAUSTED, None),
    "legacy.job-queued": (EventKind.JOB_QUEUED, None),
    "legacy.job-validated": (EventKind.JOB_QUEUED, None),
    "runner.worker-started": (EventKind.WORKER_STARTED, None),
    "runner.worker-exited": (EventKind.WORKER_EXITED, None),
    "legacy.module-completed": (EventKind.WORKER_EXITED, None),
    "legacy.command-failed": (EventKind.WORKER_EXITED, None),
    "legacy.clean-up-finished": (EventKind.TEARDOWN, None),
}


def test_shipped_rule_ids_and_kinds() -> None:
    assert {r.id: (r.kind, r.category) for r in BOOK.rules} == EXPECTED


def test_several_replicas_and_a_detail_in_text_order() -> None:
    text = (
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "The replica worker 0 exited with a non-zero status of 1. Termination reason: Error. "
        "The replica worker 4 exited with a non-zero status of 1. Termination reason: Error."
    )
    got = [(m.rule, m.field("replica")) for m in BOOK.match(text)]
    assert got == [
        ("python.exception", None),  # the text starts with an exception line
        ("vertex.detail.cuda-oom", None),
        ("vertex.user-code-exception", "worker 0"),
        ("vertex.user-code-exception", "worker 4"),
    ]
    assert BOOK.match(text)[1].detail == "cuda-oom"


def test_values_keep_their_original_text() -> None:
    (match,) = BOOK.match("The replica Worker 3 exited with a non-zero status of １. ")
    assert match.fields == {"replica": "Worker 3", "exit_code": 1}


@pytest.mark.parametrize(
    "line",
    [
        "Epoch 3/10 - loss: 0.2345 - accuracy: 0.9123",
        " 31%|███       | 5974/19120 [31:21<59:25,  3.69it/s]",
        "",
    ],
)
def test_noise_matches_nothing_and_is_prefiltered(line: str) -> None:
    assert BOOK.match(line) == ()
    assert BOOK.may_match_texts([line]) == []


def test_prefilter_selects_a_non_ascii_text_in_a_block() -> None:
    text = "הרפליקה workerpool0-0 הסתיימה עם סטטוס שאינו אפס של 1"
    assert BOOK.may_match_texts(["step 1 loss 0.5", text, "שלום"]) == [1]


def test_user_rule_replaces_builtin_with_notice(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(
        "- id: vertex.job-failed\n"
        "  event: job_failed\n"
        "  whole: true\n"
        "  templates: {en: 'Job failed.'}\n",
        encoding="utf-8",
    )
    book = RuleBook.load([tmp_path])
    assert len(book.rules) == len(BOOK.rules)
    assert book.rule("vertex.job-failed").location.path == str(tmp_path / "mine.yaml")
    assert len(book.notices) == 1
    assert "replaces the built-in rule" in book.notices[0]


def test_runaway_pattern_times_out_and_is_counted(tmp_path: Path) -> None:
    (tmp_path / "slow.yaml").write_text(
        "- id: user.slow\n"
        "  category: user_code_exception\n"
        "  pattern: '(a|aa)+(b|bb)+c$'\n"
        "  literals: [aaaa]\n",
        encoding="utf-8",
    )
    book = RuleBook.load([tmp_path], builtin=False)
    assert book.match("a" * 30 + "b" * 30) == ()
    assert book.timeouts["user.slow"] == 1


def test_policy_and_advice_files_are_not_rules(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text("max_worker_restarts: 5\n", encoding="utf-8")
    (tmp_path / "advice.yaml").write_text("oom:\n  en: [x]\n", encoding="utf-8")
    assert RuleBook.load([tmp_path], builtin=False).rules == ()


def test_load_reports_every_problem_with_location(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "- id: user.a\n  category: oops\n  templates: {en: x}\n"
        "- id: user.b\n  event: nope\n  templates: {en: y}\n",
        encoding="utf-8",
    )
    with pytest.raises(RuleError) as info:
        RuleBook.load([tmp_path])
    problems = info.value.problems
    assert len(problems) == 2
    assert problems[0].startswith(f"{tmp_path / 'bad.yaml'}:2:13: unknown category 'oops'")
    assert problems[1].startswith(f"{tmp_path / 'bad.yaml'}:5:10: unknown event 'nope'")


@pytest.mark.parametrize(
    ("pattern", "literals", "gaps"),
    [
        ("timeout|NCCL error", ["nccl"], ["timeout"]),
        ("NCCL error|nccl(?:Internal|System)Error", ["nccl"], []),
        # One letter's cases, and a caseless pattern: the word is there in lower case.
        ("[Pp]ermission denied", ["permission"], []),
        ("(?i)saving checkpoint", ["checkpoint"], []),
        # An optional word is no word every match holds.
        ("saved (?:model )?checkpoint", ["model"], ["saved (?:model )?checkpoint"]),
        # A "|" in a set or escaped splits nothing.
        (r"a[|]b\|c|d", ["a"], ["d"]),
        # Syntax only the regex package reads: nothing proven, no warning.
        (r"\p{Lu}+ failed", ["failed"], None),
    ],
)
def test_literal_gaps_are_proven_on_the_pattern(
    pattern: str, literals: list[str], gaps: list[str] | None
) -> None:
    assert uncovered(pattern, literals) == gaps
