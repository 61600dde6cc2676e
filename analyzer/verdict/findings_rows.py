"""The advice rows: which advice texts a job's findings call for (``rules/advice/rows.yaml``).

A row is a condition over a job's findings and state, the text keys it says (the sentences
of ``rules/advice.yaml``, in every language) and the platform fact it applies::

    - when: {state: [RUNNING, PENDING, QUEUED], finding: interrupted-wait}
      say: [none.interrupted-wait]
      fact: platform.md section 10

``when`` holds ``state`` / ``not_state`` (JobState names without ``JOB_STATE_``),
``finding`` (kinds that must all be there), ``absent`` (kinds that must not be) and
``KIND.FIELD: value`` (that finding is there and its field has the value, or one of a list
of values). Rows are read in order: the first row without ``also: true`` that holds gives
the job's advice; then every ``also`` row that holds adds its texts. Rows are checked when
they are read: a bad one is a one-line error ``file:line: what is wrong`` (exit 3).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from analyzer.core.errors import PolicyError
from analyzer.rulebook.derived import STATE_NAMES
from analyzer.verdict.findings import FIELDS, FieldValue, FindingKind, Findings

if TYPE_CHECKING:
    # (PyYAML is imported only when the rows are read, not on a cached run.)
    from analyzer.rulebook.yamlnodes import Node

_ROW_KEYS = frozenset({"when", "say", "also", "fact"})
_WHEN_KEYS = frozenset({"state", "not_state", "finding", "absent"})
_FACT = re.compile(r"platform\.md section (?:[1-9]|10)\b.*")
# The states a row may name: JobState's (analyzer.rulebook.derived's table, without the prefix).
_STATES = frozenset(STATE_NAMES)


@dataclass(frozen=True, slots=True)
class FieldTest:
    """``KIND.FIELD: value``: the finding of ``kind`` is there and its field is one of
    ``values``."""

    kind: FindingKind
    name: str
    values: tuple[FieldValue, ...]


@dataclass(frozen=True, slots=True)
class AdviceRow:
    """One row: when it holds, what it says, which platform fact it applies, where it is."""

    states: frozenset[str]
    not_states: frozenset[str]
    present: frozenset[FindingKind]
    absent: frozenset[FindingKind]
    tests: tuple[FieldTest, ...]
    say: tuple[str, ...]
    also: bool
    fact: str
    line: int

    def holds(self, findings: Findings, state: str) -> bool:
        """Whether this row's condition holds for ``findings`` and ``state`` (a short
        JobState name)."""
        if self.states and state not in self.states:
            return False
        if state in self.not_states:
            return False
        kinds = findings.kinds()
        if not self.present <= kinds or self.absent & kinds:
            return False
        return all(_passes(test, findings) for test in self.tests)


def _passes(test: FieldTest, findings: Findings) -> bool:
    found = findings.get(test.kind)
    return found is not None and found.field(test.name) in test.values


@dataclass(frozen=True, slots=True)
class AdviceRows:
    """The rows of one file, in order."""

    rows: tuple[AdviceRow, ...]

    def keys(self, findings: Findings, state: str) -> list[str]:
        """The text keys ``findings`` call for: the first plain row that holds, then every
        ``also`` row that holds (each key once)."""
        return list(dict.fromkeys(k for row in self.chosen(findings, state) for k in row.say))

    def chosen(self, findings: Findings, state: str) -> list[AdviceRow]:
        """The rows that speak for ``findings``: the first plain row that holds, then every
        ``also`` row that holds (which platform facts applied)."""
        first = next((r for r in self.rows if not r.also and r.holds(findings, state)), None)
        also = [r for r in self.rows if r.also and r.holds(findings, state)]
        return ([first] if first is not None else []) + also


def read_rows(path: Path, texts: Collection[str]) -> AdviceRows:
    """The rows of ``path``, each checked: its keys, finding kinds and fields, states, the
    platform fact it names, and that every text key it says is in ``texts``."""
    from analyzer.rulebook.model import Problem
    from analyzer.rulebook.yamlnodes import parse

    problems: list[Problem] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{path}:1: cannot read the advice rows ({exc})") from exc
    root = parse(text, str(path), problems)
    if problems:
        raise PolicyError(str(problems[0]))
    if root is None or not root.is_list:
        raise PolicyError(f"{path}:1: the advice rows must be a list of rows (- when: ...)")
    return AdviceRows(tuple(_row(node, str(path), texts) for node in root.items()))


def row_error(path: str, line: int, message: str) -> PolicyError:
    """A row that cannot be read: one ``file:line: message`` line (exit 3)."""
    return PolicyError(f"{path}:{line}: {message}")


def row_fields(node: Node, path: str, keys: Collection[str], what: str) -> dict[str, Node]:
    """The keys of a row (``what``: "row", "note row") that is a mapping of only ``keys``;
    else a one-line ``file:line`` error."""
    if not node.is_mapping:
        raise row_error(
            path, node.location.line, f"a {what} is a mapping of {', '.join(sorted(keys))}"
        )
    fields = node.mapping()
    for key in fields:
        if key not in keys:
            raise row_error(
                path,
                node.key_location(key).line,
                f"unknown key '{key}' in a {what}; use {', '.join(sorted(keys))}",
            )
    return fields


def _row(node: Node, path: str, texts: Collection[str]) -> AdviceRow:
    line = node.location.line
    fields = row_fields(node, path, _ROW_KEYS, "row")
    fact = str(_scalar(fields.get("fact")))
    if not _FACT.fullmatch(fact):
        raise row_error(
            path, line, "a row names the fact it applies: fact: 'platform.md section N ...'"
        )
    say = fields.get("say")
    if say is None or not say.is_list:
        raise row_error(path, line, "a row says a list of text keys: say: [key, ...]")
    keys: list[str] = []
    for item in say.items():
        key = str(_scalar(item))
        if key not in texts:
            raise row_error(
                path,
                item.location.line,
                f"unknown advice text '{key}': add it to rules/advice.yaml or fix the name",
            )
        keys.append(key)
    also = _scalar(fields.get("also"))
    if also not in (None, True, False):
        raise row_error(path, line, "also: is true or false")
    when = fields.get("when")
    if when is None or not when.is_mapping:
        raise row_error(path, line, "a row has a condition: when: {...} ({} holds always)")
    return _condition(when, path, tuple(keys), bool(also), fact, line)


def _condition(
    when: Node, path: str, say: tuple[str, ...], also: bool, fact: str, line: int
) -> AdviceRow:
    values: dict[str, set[str]] = {k: set() for k in _WHEN_KEYS}
    tests: list[FieldTest] = []
    for key, value in when.mapping().items():
        at = when.key_location(key).line
        if key in _WHEN_KEYS:
            values[key] = _names(value, key, path, at)
        elif "." in key:
            tests.append(_field_test(key, value, path, at))
        else:
            raise row_error(
                path,
                at,
                f"unknown condition '{key}'; use state, not_state, finding, absent or KIND.FIELD",
            )
    return AdviceRow(
        states=frozenset(values["state"]),
        not_states=frozenset(values["not_state"]),
        present=frozenset(FindingKind(k) for k in values["finding"]),
        absent=frozenset(FindingKind(k) for k in values["absent"]),
        tests=tuple(tests),
        say=say,
        also=also,
        fact=fact,
        line=line,
    )


def _names(value: Node, key: str, path: str, line: int) -> set[str]:
    items = value.items() if value.is_list else [value]
    names = {str(_scalar(item)) for item in items}
    known: Collection[str] = (
        _STATES if key in ("state", "not_state") else {k.value for k in FindingKind}
    )
    for name in names:
        if name not in known:
            raise row_error(
                path, line, f"unknown {key} '{name}'; use one of {', '.join(sorted(known))}"
            )
    return names


def _field_test(key: str, value: Node, path: str, line: int) -> FieldTest:
    kind_name, _, name = key.partition(".")
    try:
        kind = FindingKind(kind_name)
    except ValueError:
        raise row_error(path, line, f"unknown finding '{kind_name}' in '{key}'") from None
    if name not in FIELDS[kind]:
        choices = ", ".join(sorted(FIELDS[kind])) or "none"
        raise row_error(
            path, line, f"finding {kind_name} has no field '{name}' (fields: {choices})"
        )
    items = value.items() if value.is_list else [value]
    return FieldTest(kind, name, tuple(_scalar(item) for item in items))


def _scalar(node: Node | None) -> FieldValue:
    if node is None or isinstance(node.value, list | dict):
        return None
    value = node.value
    return value if isinstance(value, str | int | bool) or value is None else str(value)
