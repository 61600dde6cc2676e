"""The note rows: which notes a job's findings call for (``rules/advice/notes.yaml``).

A note row names the finding it speaks of (``of``), a condition over the job's findings and
state (``when``, the advice rows' language: :mod:`analyzer.verdict.findings_rows`), the note
it says (a key of the text table ``rules/advice/note_texts.yaml``, whose ``{field}``
placeholders are filled from that finding's fields) and the platform fact it applies::

    - of: echoes
      when: {}
      note: echoes
      fact: platform.md section 9 (...)

For each finding of a kind, the first row of that kind whose condition holds (its field
tests read that finding) says the finding's note; a finding no row holds for says nothing.
The notes come in the order of each kind's first row, and of the findings of one kind in the
order found. Rows are checked when they are read: a bad one is a one-line error
``file:line: what is wrong`` (exit 3), as is a placeholder the finding has no field for.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from analyzer.core.errors import PolicyError
from analyzer.verdict import findings_rows
from analyzer.verdict.findings import (
    FIELDS,
    FieldValue,
    Finding,
    FindingKind,
    Findings,
    Provenance,
    collect,
    finding,
)
from analyzer.verdict.findings_rows import AdviceRow
from analyzer.verdict.findings_rows import row_error as _fail

if TYPE_CHECKING:
    from analyzer.rulebook.yamlnodes import Node

_ROW_KEYS = frozenset({"of", "when", "note", "fact", "example"})
_EXAMPLE_KEYS = frozenset({"fields", "state", "with"})


@dataclass(frozen=True, slots=True)
class Example:
    """A row's example: a finding's fields, the job's state, the kinds found beside it."""

    fields: tuple[tuple[str, FieldValue], ...]
    state: str
    beside: tuple[FindingKind, ...]

    def findings(self, of: FindingKind) -> Findings:
        """The example's findings: one of ``of`` with the fields, and one of each other kind
        (with no fields). (Its fields were checked against the kind's when the row was read.)"""
        return collect(
            Finding(of, Provenance.SERVICE, self.fields),
            *(finding(kind, Provenance.SERVICE) for kind in self.beside),
        )


@dataclass(frozen=True, slots=True)
class NoteRow:
    """One row: the finding it speaks of, when it holds, the note's text, where it is."""

    of: FindingKind
    when: AdviceRow
    note: str
    text: str
    line: int
    # The row's example: the fields of a finding of ``of``, the state and the other kinds
    # found beside it, for which this row says the note (tests/test_note_rows.py).
    example: Example

    def holds(self, one: Finding, findings: Findings, state: str) -> bool:
        """Whether this row holds for the finding ``one`` among ``findings``: its field
        tests of ``one``'s kind read ``one`` itself."""
        view = Findings((*(f for f in findings.items if f.kind is not one.kind), one))
        return self.when.holds(view, state)

    def say(self, one: Finding) -> str:
        return self.text.format(**dict(one.fields))


@dataclass(frozen=True, slots=True)
class NoteRows:
    """The note rows of one file, in order."""

    rows: tuple[NoteRow, ...]

    def notes(self, findings: Findings, state: str) -> list[str]:
        """The notes ``findings`` call for (``state``: a short JobState name)."""
        kinds = list(dict.fromkeys(row.of for row in self.rows))
        said: list[str] = []
        for kind in kinds:
            rows = [row for row in self.rows if row.of is kind]
            for one in findings.every(kind):
                row = next((r for r in rows if r.holds(one, findings, state)), None)
                if row is not None:
                    said.append(row.say(one))
        return said


def note_rows_path(advice: Path) -> Path:
    """The note rows beside the advice texts: ``advice/notes.yaml``."""
    return advice.with_name("advice") / "notes.yaml"


def note_texts_path(rows: Path) -> Path:
    """The note texts beside the note rows: ``note_texts.yaml``."""
    return rows.with_name("note_texts.yaml")


def read_texts(path: Path) -> dict[str, str]:
    """The note texts of ``path``: a mapping of keys to one English text each."""
    root = _parse(path, "the note texts")
    if root is None or not root.is_mapping:
        raise PolicyError(f"{path}:1: the note texts map each key to its text")
    texts: dict[str, str] = {}
    for key, node in root.mapping().items():
        if not isinstance(node.value, str):
            raise PolicyError(f"{path}:{root.key_location(key).line}: note '{key}' is one text")
        texts[key] = node.value
    return texts


def read_note_rows(path: Path, texts: dict[str, str]) -> NoteRows:
    """The rows of ``path``, each checked: its keys, the finding it speaks of, its
    condition, the platform fact it names, its note (a key of ``texts``) and that each
    placeholder of the note's text is a field of that finding."""
    root = _parse(path, "the note rows")
    if root is None or not root.is_list:
        raise PolicyError(f"{path}:1: the note rows must be a list of rows (- of: ...)")
    return NoteRows(tuple(_row(node, str(path), texts) for node in root.items()))


def _parse(path: Path, what: str) -> Node | None:
    from analyzer.rulebook.model import Problem
    from analyzer.rulebook.yamlnodes import parse

    problems: list[Problem] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{path}:1: cannot read {what} ({exc})") from exc
    root = parse(text, str(path), problems)
    if problems:
        raise PolicyError(str(problems[0]))
    return root


def _row(node: Node, path: str, texts: dict[str, str]) -> NoteRow:
    line = node.location.line
    fields = findings_rows.row_fields(node, path, _ROW_KEYS, "note row")
    of = _kind(fields.get("of"), path, node.key_location("of").line)
    fact = str(findings_rows._scalar(fields.get("fact")))
    if not findings_rows._FACT.fullmatch(fact):
        raise _fail(
            path, line, "a row names the fact it applies: fact: 'platform.md section N ...'"
        )
    when = fields.get("when")
    if when is None or not when.is_mapping:
        raise _fail(path, line, "a note row has a condition: when: {...} ({} holds always)")
    condition = findings_rows._condition(when, path, (), False, fact, line)
    at = node.key_location("note").line
    note = str(findings_rows._scalar(fields.get("note")))
    if note not in texts:
        raise _fail(path, at, f"unknown note '{note}': add it to note_texts.yaml or fix the name")
    for _, name, _, _ in string.Formatter().parse(texts[note]):
        if name is not None and name not in FIELDS[of]:
            choices = ", ".join(sorted(FIELDS[of])) or "none"
            raise _fail(
                path, at, f"note '{note}' says {{{name}}}: {of.value} has no such field ({choices})"
            )
    example = _example(fields.get("example"), of, path, node.key_location("example").line)
    return NoteRow(of, condition, note, texts[note], line, example)


def _example(node: Node | None, of: FindingKind, path: str, line: int) -> Example:
    """A row's example: ``{fields: {FIELD: value}, state: STATE, with: [KIND, ...]}``."""
    if node is None or not node.is_mapping:
        raise _fail(path, line, "a note row carries an example: example: {fields: {...}}")
    parts = node.mapping()
    for key in parts:
        if key not in _EXAMPLE_KEYS:
            raise _fail(path, line, f"unknown key '{key}' in an example; use fields, state, with")
    values = parts.get("fields")
    found = values.mapping() if values is not None and values.is_mapping else {}
    for name in found:
        if name not in FIELDS[of]:
            raise _fail(path, line, f"the example's finding {of.value} has no field '{name}'")
    beside = parts.get("with")
    kinds = [str(findings_rows._scalar(k)) for k in beside.items()] if beside is not None else []
    known = {k.value for k in FindingKind}
    for kind in kinds:
        if kind not in known:
            raise _fail(path, line, f"unknown finding '{kind}' in the example's with:")
    return Example(
        tuple(sorted((name, findings_rows._scalar(value)) for name, value in found.items())),
        str(findings_rows._scalar(parts.get("state")) or "FAILED"),
        tuple(FindingKind(k) for k in kinds),
    )


def _kind(node: Node | None, path: str, line: int) -> FindingKind:
    name = str(findings_rows._scalar(node))
    try:
        return FindingKind(name)
    except ValueError:
        known = ", ".join(sorted(k.value for k in FindingKind))
        raise _fail(path, line, f"unknown finding '{name}' in of:; use one of {known}") from None
