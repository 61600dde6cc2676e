"""User rule folders: the five-minute rule of docs/rules.md works as written, replaces by id, and
arrives through --rules or JOBDOCTOR_RULES."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analyzer.cli.app import app
from analyzer.rulebook import check_rules

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def readme_rule() -> str:
    page = (ROOT / "docs" / "rules.md").read_text()
    section = page[page.index("## Write a rule in five minutes") :]
    found = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert found, "docs/rules.md lost its rule example"
    return found.group(1)


@pytest.fixture
def my_rules(tmp_path: Path) -> Path:
    folder = tmp_path / "my-rules"
    folder.mkdir()
    (folder / "preemption.yaml").write_text(readme_rule())
    return folder


def test_readme_rule_passes_rules_check(my_rules: Path) -> None:
    assert [p for p in check_rules([my_rules], builtin=True) if p.severity == "error"] == []
    result = runner.invoke(app, ["rules", "check", str(my_rules)])
    assert result.exit_code == 0, result.stdout + result.stderr


def test_readme_rule_is_used_by_explain_and_diagnose(
    my_rules: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    message = "Instance was preempted in region: us-east1."
    assert runner.invoke(app, ["explain", message]).exit_code == 1
    result = runner.invoke(app, ["explain", "--format", "json", "--rules", str(my_rules), message])
    data = json.loads(result.stdout)
    assert (data["rule"], data["category"], data["fields"]["region"]) == (
        "acme.spot-preempted",
        "stockout",
        "us-east1",
    )
    monkeypatch.setenv("JOBDOCTOR_RULES", str(my_rules))
    assert runner.invoke(app, ["explain", message]).exit_code == 0


def test_a_user_rule_replaces_a_builtin_one_with_a_notice(tmp_path: Path) -> None:
    folder = tmp_path / "override"
    folder.mkdir()
    (folder / "internal.yaml").write_text(
        "- id: vertex.internal-error\n"
        "  category: internal_error\n"
        "  templates:\n"
        '    en: "Something internal broke."\n'
        "  examples:\n"
        "    match:\n"
        '      - "Something internal broke."\n'
        "    no_match:\n"
        '      - "Internal error occurred for the current attempt."\n'
    )
    sample = ROOT / "sample_logs" / "success.jsonl"
    result = runner.invoke(app, ["diagnose", "--rules", str(folder), str(sample)])
    assert result.exit_code == 0
    assert "vertex.internal-error" in result.stderr
    explained = runner.invoke(
        app, ["explain", "--rules", str(folder), "Internal error occurred for the current attempt."]
    )
    assert explained.exit_code == 1


def test_a_runaway_user_pattern_is_reported_not_a_hang(tmp_path: Path) -> None:
    folder = tmp_path / "slow"
    folder.mkdir()
    (folder / "slow.yaml").write_text(
        "- id: acme.slow\n"
        "  category: internal_error\n"
        "  pattern: '(a|aa)+$'\n"
        "  literals: [a]\n"
        "  examples:\n"
        "    match:\n"
        '      - "aaaa"\n'
    )
    entry = json.dumps(
        {
            "textPayload": "a" * 60 + "!",
            "resource": {"labels": {"job_id": "1", "task_name": "service"}},
            "timestamp": "2024-01-01T00:00:00Z",
        }
    )
    log = tmp_path / "slow.jsonl"
    log.write_text((entry + "\n") * 2)
    result = runner.invoke(app, ["diagnose", "--rules", str(folder), str(log)])
    assert result.exit_code == 0
    assert "rule acme.slow timed out on 2 message(s)" in result.stderr


def test_docs_list_every_built_in_rule() -> None:
    from analyzer.rulebook import RuleBook

    docs = (ROOT / "docs" / "rules.md").read_text()
    missing = [r.id for r in RuleBook.load().rules if f"`{r.id}`" not in docs]
    assert missing == [], f"docs/rules.md does not list {missing}"


_SCRATCH_RULE = """\
- id: team.scratch-full
  description: Our scratch volume filled up.
  category: user_code_exception
  templates:
    en:
      - "Disk quota of the scratch volume exceeded"
  examples:
    match:
      - text: "Disk quota of the scratch volume exceeded"
"""


def test_a_user_error_rule_alone_is_said_to_be_the_users_rule(tmp_path: Path) -> None:
    """A cause only a user's rule names (no service message of a replica's exit) is not
    described as the service's message, nor given the advice of a replica's exit."""
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "scratch.yaml").write_text(_SCRATCH_RULE)
    paste = tmp_path / "paste.txt"
    paste.write_text("epoch 3\nDisk quota of the scratch volume exceeded\nbye\n")
    result = runner.invoke(
        app, ["diagnose", "--format", "json", "--rules", str(folder), str(paste)]
    )
    job = json.loads(result.stdout)["jobs"][0]
    assert (job["cause"]["rule"], job["cause"]["detail"]) == ("team.scratch-full", "user-rule")
    advice = " ".join(job["advice"])
    assert "Your rule team.scratch-full" in advice
    assert "service's message" not in advice and "status unknown" not in advice


def test_a_user_error_rule_beside_the_services_exit_keeps_the_replicas_advice(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "scratch.yaml").write_text(_SCRATCH_RULE)
    paste = tmp_path / "paste.txt"
    paste.write_text(
        "Disk quota of the scratch volume exceeded\n"
        "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error.\n"
    )
    result = runner.invoke(
        app, ["diagnose", "--format", "json", "--rules", str(folder), str(paste)]
    )
    job = json.loads(result.stdout)["jobs"][0]
    cause = job["cause"]
    # The service's message is the cause; the user's line is its evidence, and is output the
    # input holds (not "only the service's message").
    assert (cause["rule"], cause["replica"], cause["exit_code"]) == (
        "vertex.user-code-exception",
        "workerpool0-0",
        1,
    )
    assert [e["line"] for e in cause["evidence"]] == [2, 1]
    assert cause["detail"] is None
    assert "Your rule" not in " ".join(job["advice"])
