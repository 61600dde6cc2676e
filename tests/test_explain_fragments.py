"""``jobdoctor explain`` on the fragments people paste (issue 27, point 8): the exit status
alone, the shell's and Kubernetes' words for a kill, the first sentence of a platform message,
a paraphrase of the replica message, an NCCL watchdog timeout. Each is read with its meaning;
a message no rule knows names the nearest rules and what to paste instead, exit 1."""

from __future__ import annotations

import json
from typing import Any

import pytest

from analyzer.rulebook import RuleBook
from analyzer.rulebook.book import builtin_rules_dir
from analyzer.rulebook.check import check_rules
from analyzer.verdict.explain import explain
from analyzer.verdict.fragments import PASTE_INSTEAD, fragment_book
from analyzer.verdict.policy import load_policy
from tests.clirun import run

# fragment -> (category, detail, exit code, whether the platform retries the job)
UCE = "user_code_exception"
FRAGMENTS: dict[str, tuple[str, str | None, int | None, bool]] = {
    "exited with a non-zero status of 137": (UCE, "killed-no-traceback", 137, False),
    "exit code 137": (UCE, "killed-no-traceback", 137, False),
    "Killed": (UCE, "killed-no-traceback", 137, False),
    "OOMKilled": (UCE, "oom-killed", 137, False),
    "Bus error (core dumped)": (UCE, "bus-error", 135, False),
    # SIGSEGV is a transient exit code: the job is retried (platform.md section 2).
    "Segmentation fault (core dumped)": (UCE, "segfault", 139, True),
    "Replicas low on memory: workerpool0.": ("oom", "host-oom", None, False),
    "Replica exited with a non-zero status code 1": (UCE, None, 1, False),
    "Watchdog caught collective operation timeout": (UCE, "collective-timeout", None, False),
}  # fmt: skip


def _explained(message: str, *args: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = run("explain", message, "--format", "json", *args)
    return code, json.loads(out)


@pytest.mark.parametrize("fragment", sorted(FRAGMENTS))
def test_a_fragment_is_read_with_its_meaning(fragment: str) -> None:
    category, detail, exit_code, retried = FRAGMENTS[fragment]
    code, found = _explained(fragment)
    assert code == 0
    assert found["matched"] is True
    assert found["category"] == category
    assert found["cause_detail"] == detail
    if exit_code is not None:
        assert found["fields"]["exit_code"] == exit_code or found["exit_meaning"]
        assert found["exit_meaning"]
    assert found["permanent"] is (not retried)
    assert found["advice"]


def test_a_kill_is_not_called_a_proven_oom() -> None:
    # 137 alone does not prove an OOM (platform.md section 7): the advice says so.
    _, found = _explained("exit code 137")
    assert "unproven" in " ".join(found["advice"]) + found["exit_meaning"]
    _, oom = _explained("OOMKilled")
    assert "out of memory" in " ".join(oom["advice"])


def test_the_text_form_says_the_meaning() -> None:
    code, out, _ = run("explain", "Segmentation fault (core dumped)", "--color", "never")
    assert code == 0
    assert "139" in out and "retries the whole job" in out


@pytest.mark.parametrize(
    ("message", "near"),
    [
        ("the quota of my project is exhausted", "vertex.quota"),
        ("my job stayed in the queue for hours, Job is queued", "legacy.job-queued"),
    ],
)
def test_an_unknown_message_names_the_nearest_rules(message: str, near: str) -> None:
    code, found = _explained(message)
    assert code == 1
    assert found["matched"] is False
    assert near in found["nearest_rules"]
    assert found["paste_instead"] == PASTE_INSTEAD


def test_nothing_near_is_named_for_unrelated_text() -> None:
    code, found = _explained("lorem ipsum dolor sit amet")
    assert code == 1
    assert found["nearest_rules"] == []
    assert found["paste_instead"]


def test_fragments_are_for_explain_only() -> None:
    # diagnose's rule book does not read them: a bare "exit code 1" in a job's own output is
    # no verdict on the job.
    book = RuleBook.load()
    assert not book.match("exit code 1")
    assert not book.match("Killed")
    assert explain("exit code 1", book, load_policy()).matched


def test_the_fragment_rules_are_valid_and_their_examples_hold() -> None:
    problems = check_rules([builtin_rules_dir() / "fragments"], builtin=False)
    assert not [str(p) for p in problems if p.severity == "error"]
    assert any(rule.id.startswith("fragment.") for rule in fragment_book().rules)
