"""A rule folder past the documented limits is refused at once, in one line, exit 3 (issue 31,
point 9): hundreds of thousands of rules would take minutes to parse and compile before any
log is read."""

from __future__ import annotations

from pathlib import Path

from analyzer.rulebook.loader import MAX_RULE_BYTES, MAX_RULES
from tests.clirun import run

SAMPLE = Path(__file__).resolve().parents[1] / "sample_logs" / "success.jsonl"


def _refused(folder: Path, said: str) -> None:
    code, out, err = run("diagnose", "--rules", str(folder), str(SAMPLE))
    assert code == 3 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and said in lines[0] and str(folder) in lines[0], err


def test_a_folder_of_too_many_bytes(tmp_path: Path) -> None:
    (tmp_path / "big.yaml").write_text("# " + "x" * (MAX_RULE_BYTES + 1) + "\n[]\n")
    _refused(tmp_path, f"more than {MAX_RULE_BYTES >> 20} MiB")


def test_a_folder_of_too_many_rules(tmp_path: Path) -> None:
    rules = "".join(
        f'- id: acme.r{i}\n  category: internal_error\n  pattern: "acme failure {i}"\n'
        for i in range(MAX_RULES + 1)
    )
    (tmp_path / "many.yaml").write_text(rules)
    _refused(tmp_path, f"more than {MAX_RULES} rules")


def test_a_folder_at_the_limit_loads(tmp_path: Path) -> None:
    rules = "".join(
        f'- id: acme.r{i}\n  category: internal_error\n  pattern: "acme failure {i}"\n'
        for i in range(3)
    )
    (tmp_path / "few.yaml").write_text(rules)
    code, _, err = run("diagnose", "--rules", str(tmp_path), str(SAMPLE))
    assert code == 0, err
