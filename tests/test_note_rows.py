"""The note rows (rules/advice/notes.yaml, analyzer.verdict.notes_rows): each row's example
says that row's note, each fact the notes are found from has a row, a bad row is a one-line
``file:line`` error, and a job's notes come from the rows (issue 27, point 6)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.core.errors import PolicyError
from analyzer.verdict import predict
from analyzer.verdict.advice import _advice_path, builtin_note_rows
from analyzer.verdict.findings import FindingKind, Provenance, collect, finding
from analyzer.verdict.notes_rows import (
    NoteRow,
    note_rows_path,
    note_texts_path,
    read_note_rows,
    read_texts,
)

_ROWS = builtin_note_rows().rows


def _label(row: NoteRow) -> str:
    return f"line {row.line}: {row.note}"


@pytest.mark.parametrize("row", _ROWS, ids=_label)
def test_each_rows_example_says_that_rows_note(row: NoteRow) -> None:
    findings = row.example.findings(row.of)
    (one,) = findings.every(row.of)
    said = builtin_note_rows().notes(findings, row.example.state)
    # The row is the first of its kind that holds for its example (no earlier row shadows
    # it), and its text is filled in whole: no placeholder or missing value left.
    first = next(r for r in _ROWS if r.of is row.of and r.holds(one, findings, row.example.state))
    assert first is row
    assert row.say(one) in said
    assert not re.search(r"\{\w*\}|\bNone\b", row.say(one))


def test_every_fact_the_notes_are_found_from_has_a_row() -> None:
    # The kinds each finder of predict._NOTE_FACTS returns, named in its body.
    source = Path(predict.__file__).read_text(encoding="utf-8")
    kinds = {
        FindingKind[name]
        for name in re.findall(r"FindingKind\.(\w+),\s*Provenance", source)
        if name != "CAUSE"
    }
    assert {FindingKind.ECHOES, FindingKind.OPEN_TRACEBACK, FindingKind.CAUSE_DETAIL} <= kinds
    assert kinds <= {row.of for row in _ROWS}
    # The SDK's state line alone: a finding of the advice's, also said as a note.
    assert FindingKind.SDK_STATE_ONLY in {row.of for row in _ROWS}


def test_an_exception_beside_an_interrupted_wait_says_only_the_wait() -> None:
    exception = finding(
        FindingKind.UNEXPLAINED_EXCEPTION, Provenance.USER, type="KeyboardInterrupt", message=""
    )
    wait = finding(FindingKind.INTERRUPTED_WAIT, Provenance.SDK)
    rows = builtin_note_rows()
    assert rows.notes(collect(exception), "UNSPECIFIED") == [
        "the input shows KeyboardInterrupt:  but no platform message saying it ended the job"
    ]
    assert rows.notes(collect(exception, wait), "UNSPECIFIED") == []


def test_notes_of_several_findings_of_a_kind_come_in_the_order_found() -> None:
    first = finding(FindingKind.NEWEST_FIRST, Provenance.SERVICE, path="b.txt")
    second = finding(FindingKind.NEWEST_FIRST, Provenance.SERVICE, path="a.txt")
    echoes = finding(FindingKind.ECHOES, Provenance.USER, count=2)
    notes = builtin_note_rows().notes(collect(echoes, first, second), "FAILED")
    assert [n.split(" ", 1)[0] for n in notes] == ["b.txt", "a.txt", "2"]


def test_a_real_jobs_notes_come_from_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "job.txt"
    path.write_text(
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 3, in <module>\n'
        "    model.fit(x)\n"
        "ValueError: bad shape\n",
        encoding="utf-8",
    )
    (job,) = analyze([path]).diagnoses
    said = "the input shows ValueError: bad shape but no platform message saying it ended the job"
    assert said in job.notes


_GOOD = """\
- of: echoes
  when: {}
  note: echoes
  fact: 'platform.md section 9 (echoes)'
  example: {fields: {count: 1}}
"""


def _read(tmp_path: Path, rows: str) -> None:
    path = tmp_path / "notes.yaml"
    path.write_text(rows, encoding="utf-8")
    read_note_rows(path, read_texts(note_texts_path(note_rows_path(_advice_path()))))


def test_a_good_row_reads(tmp_path: Path) -> None:
    _read(tmp_path, _GOOD)


@pytest.mark.parametrize(
    ("bad", "line", "says"),
    [
        (_GOOD.replace("note: echoes", "note: echos"), 3, "unknown note 'echos'"),
        (_GOOD.replace("of: echoes", "of: echo"), 1, "unknown finding 'echo'"),
        (_GOOD.replace("  when: {}", "  when: {}\n  say: [x]"), 3, "unknown key 'say'"),
        (_GOOD.replace("platform.md section 9 (echoes)", "a guess"), 1, "names the fact"),
        (_GOOD.replace("{count: 1}", "{total: 1}"), 5, "no field 'total'"),
        (_GOOD.replace("  example: {fields: {count: 1}}\n", ""), 1, "carries an example"),
        (_GOOD.replace("when: {}", "when: {echoes.total: 1}"), 2, "has no field 'total'"),
        (_GOOD.replace("note: echoes", "note: other-jobs"), 3, None),
    ],
)
def test_a_bad_row_is_a_one_line_file_line_error(
    tmp_path: Path, bad: str, line: int, says: str | None
) -> None:
    if says is None:
        # other-jobs's text says {count}, a field of echoes too: that row is good.
        _read(tmp_path, bad)
        return
    with pytest.raises(PolicyError) as raised:
        _read(tmp_path, bad)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'notes.yaml'}:{line}: ")
    assert says in message


def test_a_placeholder_the_finding_lacks_is_a_file_line_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError) as raised:
        _read(tmp_path, _GOOD.replace("note: echoes", "note: newest-first"))
    assert str(raised.value).startswith(f"{tmp_path / 'notes.yaml'}:3: note 'newest-first'")
    assert "{path}" in str(raised.value)


def test_the_constants_tests_look_for_are_the_tables_texts() -> None:
    texts = read_texts(note_texts_path(note_rows_path(_advice_path())))
    assert texts["in-progress"] == predict.IN_PROGRESS_NOTE
    assert texts["taskless"] == predict.TASKLESS_NOTE
