"""Rules that cannot run safely are refused, or stopped: YAML aliases ("billion laughs"), a FIFO
or a device in a rules folder, an oversized file, and a catastrophic pattern (refused by
``rules check``, and disabled after its time budget in a run)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.rulebook import RULE_BUDGET_SECONDS, RuleBook

ROOT = Path(__file__).resolve().parents[1]
# 272 bytes in the issue: nine references a level; building a tree of it took 38 s and 1.3 GB.
LAUGHS = "\n".join(
    ['lol0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"lol{n}: &l{n} [{','.join([f'*l{n - 1}'] * 9)}]" for n in range(1, 9)]
)
# A job's first message, so that the text is taken as a job's log, then the lines the slow rule
# keeps timing out on.
_RUNAWAY_HEAD = "Waiting for job to be provisioned.\n"
SLOW_RULE = (
    "- id: user.slow\n"
    "  category: user_code_exception\n"
    "  pattern: '(a|aa)+(b|bb)+c$'\n"
    "  literals: [aaaa]\n"
)


def _jobdoctor(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    # A subprocess with a timeout: what hung (a FIFO) fails the test instead of hanging it.
    return subprocess.run(
        [sys.executable, "-c", "from analyzer.cli.console import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "JOBDOCTOR_CACHE_DIR": "off"},
    )


def _children_cpu_s() -> float:
    """CPU seconds used so far by this process's children that ended."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _folder(tmp_path: Path, name: str, text: str) -> Path:
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("command", ["check", "diagnose"])
def test_a_billion_laughs_is_refused_at_its_first_anchor(tmp_path: Path, command: str) -> None:
    folder = _folder(tmp_path, "laughs.yaml", LAUGHS + "\n")
    args = (
        ["rules", "check", str(folder)]
        if command == "check"
        else ["diagnose", "--rules", str(folder), str(ROOT / "sample_logs" / "success.jsonl")]
    )
    # CPU seconds of the run (a loaded machine stretches only the wall clock): building the
    # tree took 38 s; refusing it, a start-up's worth.
    before = _children_cpu_s()
    done = _jobdoctor(*args)
    assert _children_cpu_s() - before < 15
    assert done.returncode == 3, done.stderr
    where = f"{folder / 'laughs.yaml'}:1:7: YAML anchor &l0"
    assert f"{where}: anchors and aliases are not allowed" in done.stdout + done.stderr


def test_an_alias_alone_is_refused_too(tmp_path: Path) -> None:
    folder = _folder(
        tmp_path,
        "alias.yaml",
        "- id: user.a\n  category: user_code_exception\n  templates: {en: 'A.'}\n"
        "- id: user.b\n  category: *missing\n",
    )
    done = _jobdoctor("rules", "check", str(folder))
    assert done.returncode == 3 and "laughs" not in done.stdout
    assert f"{folder / 'alias.yaml'}:5:" in done.stdout and "alias" in done.stdout


def test_a_fifo_in_a_rules_folder_is_refused_not_waited_on(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "good.yaml", "[]\n")
    os.mkfifo(folder / "pipe.yaml")
    for args in (["rules", "check", str(folder)], ["explain", "--rules", str(folder), "x"]):
        done = _jobdoctor(*args)
        assert done.returncode == 3, done.stderr
        assert f"{folder / 'pipe.yaml'}:1:1: not read: a FIFO, not a regular file" in (
            done.stdout + done.stderr
        )


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero here")
def test_a_link_to_a_device_in_a_rules_folder_is_refused(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "good.yaml", "[]\n")
    (folder / "zero.yaml").symlink_to("/dev/zero")
    done = _jobdoctor("rules", "check", str(folder))
    assert done.returncode == 3
    assert "zero.yaml:1:1: not read: a device or socket, not a regular file" in done.stdout


def test_an_oversized_rule_file_is_refused(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "huge.yaml", "# padding\n" * 200_000)
    done = _jobdoctor("rules", "check", str(folder))
    assert done.returncode == 3 and "huge.yaml:1:1: not read: larger than 1 MiB" in done.stdout


def test_rules_check_exits_3_for_a_pattern_measured_as_catastrophic(tmp_path: Path) -> None:
    folder = _folder(
        tmp_path,
        "slow.yaml",
        "- id: user.ambiguous\n  pattern: '(?:a|a)+!'\n  literals: [aa]\n"
        "  category: user_code_exception\n  examples: {match: ['aa!']}\n",
    )
    done = _jobdoctor("rules", "check", str(folder))
    assert done.returncode == 3, done.stdout
    assert "slow.yaml:2:12: pattern ran over 0.5 s" in done.stdout


def test_a_rule_that_keeps_timing_out_is_disabled_for_the_rest_of_the_run(
    tmp_path: Path,
) -> None:
    folder = _folder(tmp_path, "slow.yaml", SLOW_RULE)
    log = tmp_path / "runaway.log"
    log.write_text(_RUNAWAY_HEAD + ("a" * 30 + "b" * 30 + "\n") * 1500, encoding="utf-8")
    book = RuleBook.load([folder])
    analysis = analyze([log], rules_dirs=[folder])
    # Each line would time out after 50 ms: 75 s for the file. The budget stops it after 20
    # timeouts (1 s), whatever the machine's load: the run says how many there were.
    assert book.timeout_limit == 20 and book.timeout_limit * book.timeout == RULE_BUDGET_SECONDS
    said = [n for n in analysis.notices if "user.slow" in n]
    assert len(said) == 1 and "disabled for the rest of the run" in said[0], analysis.notices
    assert f"timed out on {book.timeout_limit} message(s)" in said[0]
    assert analysis.disabled_rules == ("user.slow",)


def test_the_report_says_which_rule_was_disabled(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "slow.yaml", SLOW_RULE)
    log = tmp_path / "runaway.log"
    log.write_text(_RUNAWAY_HEAD + ("a" * 30 + "b" * 30 + "\n") * 100, encoding="utf-8")
    done = _jobdoctor("diagnose", "--format", "json", "--rules", str(folder), str(log))
    assert done.returncode == 0, done.stderr
    notices = json.loads(done.stdout)["notices"]
    assert [n for n in notices if "user.slow" in n and "disabled" in n]
    assert done.stderr.count("user.slow") == 1


def test_each_run_has_its_own_budget(tmp_path: Path) -> None:
    book = RuleBook.load([_folder(tmp_path, "slow.yaml", SLOW_RULE)], builtin=False)
    for _ in range(book.timeout_limit + 3):
        book.match("a" * 30 + "b" * 30)
    assert book.disabled == ("user.slow",) and book.timeouts["user.slow"] == book.timeout_limit
    book.new_run()
    assert book.disabled == () and not book.timeouts


@pytest.mark.parametrize("output", ["text", "markdown"])
def test_the_text_and_markdown_reports_say_it_too(tmp_path: Path, output: str) -> None:
    folder = _folder(tmp_path, "slow.yaml", SLOW_RULE)
    log = tmp_path / "runaway.log"
    log.write_text(_RUNAWAY_HEAD + ("a" * 30 + "b" * 30 + "\n") * 40, encoding="utf-8")
    done = _jobdoctor("diagnose", "--format", output, "--rules", str(folder), str(log))
    assert done.returncode == 0, done.stderr
    assert "user.slow" in done.stdout and "disabled for the rest of the run" in done.stdout


def test_a_policy_file_with_aliases_is_refused_too(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("max_worker_restarts: &five 5\nmax_attempts: {default: *five}\n")
    done = _jobdoctor("explain", "--policy", str(policy), "OOMKilled")
    assert done.returncode == 3
    assert f"{policy}:1: YAML anchor &five: anchors and aliases are not allowed" in done.stderr
