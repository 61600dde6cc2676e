"""Broken rule files: each fixture states the problems it must produce.

A case is a file or a folder in ``tests/fixtures/rules_bad``; each of its YAML
files lists its expected problems in comment lines
``# expect: LINE:COL: SEVERITY MESSAGE-START``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from analyzer.core.errors import RuleError
from analyzer.rulebook import RuleBook, check_rules

FIXTURES = Path(__file__).parent / "fixtures" / "rules_bad"
_EXPECT = re.compile(r"# expect: (\d+):(\d+): (error|warning) (.+)")


def _case_dir(case: Path, tmp_path: Path) -> Path:
    if case.is_dir():
        return case
    folder = tmp_path / case.stem
    folder.mkdir()
    shutil.copy(case, folder / case.name)
    return folder


def _expected(folder: Path) -> list[tuple[str, int, int, str, str]]:
    expected = []
    for path in sorted(folder.glob("*.yaml")):
        for line in path.read_text(encoding="utf-8").splitlines():
            found = _EXPECT.match(line)
            if found:
                row, col, severity, message = found.groups()
                expected.append((path.name, int(row), int(col), severity, message))
    return expected


CASES = sorted(FIXTURES.iterdir())


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_broken_rules_are_reported_where_they_are(case: Path, tmp_path: Path) -> None:
    folder = _case_dir(case, tmp_path)
    expected = _expected(folder)
    assert expected, f"{case} states no expected problem"
    problems = check_rules([folder])
    got = [(Path(p.path).name, p.line, p.col, p.severity, p.message) for p in problems]
    for name, line, col, severity, start in expected:
        assert any(g[:4] == (name, line, col, severity) and g[4].startswith(start) for g in got), (
            f"expected {name}:{line}:{col}: {severity} {start}\ngot: {got}"
        )
    # Nothing else is wrong in a fixture: one broken thing per case.
    assert len(got) == len(expected), got


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_load_raises_with_the_same_errors(case: Path, tmp_path: Path) -> None:
    folder = _case_dir(case, tmp_path)
    errors = [e for e in _expected(folder) if e[3] == "error"]
    # Failing examples and patterns measured as catastrophic are found by `rules check`, not
    # at load time (a run spends its time budget on such a rule instead, then disables it).
    load_errors = [e for e in errors if "example" not in e[4] and "ran over" not in e[4]]
    if not load_errors:
        RuleBook.load([folder])
        return
    with pytest.raises(RuleError) as info:
        RuleBook.load([folder])
    for name, line, col, _, start in load_errors:
        prefix = f"{folder / name}:{line}:{col}: {start}"
        assert any(p.startswith(prefix) for p in info.value.problems), info.value.problems
