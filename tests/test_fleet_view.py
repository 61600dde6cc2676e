"""Many jobs at a glance, and the terminal at 80 and 200 columns.

The layout is checked through rich's recorded console at fixed widths and once through a
real pseudo-terminal (the width comes from the terminal, as a user's does).
"""

from __future__ import annotations

import io
import json
import re
import sys
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

from analyzer.api import analyze
from analyzer.cli.app import app
from analyzer.pipeline.analysis import Analysis
from analyzer.report.facts import evidence_events, first_line
from analyzer.report.overview import fleet_order
from analyzer.report.text import render_table, render_text, shorten_middle
from tests.terminal import run_in_terminal

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
runner = CliRunner()
LABELS = {"cause", "evidence", "exception", "exit", "cascade", "lost work", "job spec"}
LABELS |= {"attempts", "workers", "advice", "note"}


@pytest.fixture(scope="module")
def fleet() -> Analysis:
    return analyze([SAMPLES])


def cli(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def recorded(analysis: Analysis, width: int, render: object = render_text) -> list[str]:
    console = Console(
        width=width, record=True, force_terminal=True, color_system=None, file=io.StringIO()
    )
    assert callable(render)
    render(analysis, console)
    return console.export_text().splitlines()


RANK = ["FAILED", "RUNNING", "SUCCEEDED"]


def test_the_text_report_starts_with_a_summary_and_a_table_failures_first(
    fleet: Analysis,
) -> None:
    code, out, _ = cli("diagnose", str(SAMPLES))
    jobs = json.loads(cli("diagnose", "--format", "json", str(SAMPLES))[1])["jobs"]
    lines = out.splitlines()
    states = [j["state"].removeprefix("JOB_STATE_") for j in jobs]
    counts = {s: states.count(s) for s in RANK}
    retries = sum(j["retries"] for j in jobs)
    predicted = sum(j["retries"] for j in jobs if not j["observed_final"]) - sum(
        max(0, len(j["attempt_log"]) - 1) for j in jobs if not j["observed_final"]
    )
    assert code == 0 and predicted > 0
    # What the logs show, and what is only predicted said apart (issue 33.1).
    assert lines[0].startswith(
        f"{len(jobs)} jobs: {counts['FAILED']} failed, {counts['RUNNING']} running, "
        f"{counts['SUCCEEDED']} succeeded (3 after a failure); {retries - predicted} retries"
        f" ({predicted} more predicted)"
    )
    assert lines[2].split() == [
        "JOB", "STATE", "ATTEMPTS", "RETRIES", "RESTARTS", "LAST", "SEEN", "(UTC)", "CAUSE"
    ]  # fmt: skip
    rows = lines[3 : 3 + len(jobs)]
    assert lines[3 + len(jobs)] == ""
    # Failures first, the most recent first within a state.
    cells = [re.split(r"\s{2,}", r) for r in rows]
    shown = [(c[1].rstrip("?"), c[5]) for c in cells]
    expected = sorted(shown, key=lambda s: (RANK.index(s[0]), [-ord(c) for c in s[1]]))
    assert shown == expected
    # And again at the end, where a terminal's reader is after the details scrolled by.
    footer = [line for line in lines[3 + len(jobs) :] if line.startswith(f"{len(jobs)} jobs: ")]
    assert footer and footer[0].startswith(lines[0])
    # The details follow in the table's order, each job under the label of its row.
    verdicts = [line for line in lines if line.startswith("job ")]
    labels = [c[0] for c in cells]
    assert [v.removeprefix("job ").split("  ")[0] for v in verdicts] == labels
    assert sum(label.startswith("(no id) ") for label in labels) == 2


def test_fleet_order_is_failures_first_then_most_recent(fleet: Analysis) -> None:
    ordered = fleet_order(fleet.diagnoses)
    rank = {"JOB_STATE_FAILED": 0, "JOB_STATE_RUNNING": 1, "JOB_STATE_SUCCEEDED": 2}
    keys = [(rank[d.state.value], -(d.last_seen or datetime.min).timestamp()) for d in ordered]
    assert keys == sorted(keys)
    assert sorted(map(id, ordered)) == sorted(map(id, fleet.diagnoses))


def test_table_format_is_the_table_alone() -> None:
    code, out, _ = cli("diagnose", "--format", "table", str(SAMPLES))
    jobs = json.loads(cli("diagnose", "--format", "json", str(SAMPLES))[1])["jobs"]
    lines = out.splitlines()
    assert code == 0 and len(lines) == 1 + len(jobs)
    assert lines[0].startswith("JOB ") and not any(line.startswith("job ") for line in lines)


def test_jsonl_is_the_contracts_job_objects_one_a_line() -> None:
    _, document, _ = cli("diagnose", "--format", "json", str(SAMPLES))
    code, out, _ = cli("diagnose", "--format", "jsonl", str(SAMPLES))
    assert code == 0
    assert [json.loads(line) for line in out.splitlines()] == json.loads(document)["jobs"]


def test_yaml_is_the_contracts_document() -> None:
    _, document, _ = cli("diagnose", "--format", "json", str(SAMPLES))
    code, out, _ = cli("diagnose", "--format", "yaml", str(SAMPLES))
    assert code == 0 and out.startswith("schema: jobdoctor.diagnosis/1\n")
    assert yaml.safe_load(out) == json.loads(document)


@pytest.mark.parametrize("flag", ["-q", "--quiet"])
def test_quiet_prints_only_the_verdict_lines(flag: str) -> None:
    jobs = json.loads(cli("diagnose", "--format", "json", str(SAMPLES))[1])["jobs"]
    code, out, _ = cli("diagnose", flag, str(SAMPLES))
    lines = out.splitlines()
    assert code == 0 and len(lines) == len(jobs)
    assert all(line.startswith("job ") for line in lines)
    assert "FAILED" in lines[0] and "SUCCEEDED" in lines[-1]


def test_one_job_has_no_table() -> None:
    _, out, _ = cli("diagnose", str(SAMPLES / "user-code-exit1.jsonl"))
    assert out.startswith("job 1597253863006895240  FAILED (observed)")
    assert "ATTEMPTS" not in out


# -- the terminal at 80 and 200 columns --


def label_of(line: str) -> str | None:
    """The label of a detail line (None for a continuation), or raise if it is mixed up."""
    assert line.startswith("  "), line
    head = line[2:12]
    assert line[12:13] != " " or not line[2:12].strip() or line[12:].strip() == "", line
    return head.strip() or None


@pytest.mark.parametrize("width", [80, 200])
def test_every_line_fits_and_labels_keep_their_column(fleet: Analysis, width: int) -> None:
    lines = recorded(fleet, width)
    assert max(cell_len(line) for line in lines) <= width
    in_details = False
    for line in lines:
        if line.startswith("job "):
            in_details = True
            continue
        if line.startswith("read ") or re.match(r"\d+ jobs: ", line):
            break  # the footer
        if not in_details or not line.strip():
            continue
        if line.startswith("    ") and not line.startswith("            "):
            continue  # a verdict's continuation (hanging indent of 4)
        if line.startswith("  ") and not line.startswith("   ") and not line[2:3].isspace():
            label = label_of(line)
            assert label in LABELS, line
            # The content starts in the content column, never under the label.
            assert line[12:13] != " ", line


@pytest.mark.parametrize("width", [80, 200])
def test_lines_fold_at_word_boundaries(fleet: Analysis, width: int) -> None:
    wide = recorded(fleet, 100_000)
    words = {w.strip("(),") for line in wide for w in line.split()}
    # Only a word longer than a line's room (a long URL) may be folded inside.
    too_long = [w for w in words if cell_len(w) > width - 14]
    lines = recorded(fleet, width)
    # The details: the table above them folds long names after _ - / . (tested apart).
    details = lines[next(i for i, line in enumerate(lines) if line.startswith("job ")) :]
    for line in details:
        for word in (w.strip("(),") for w in line.split()):
            # A folded word would leave pieces that are not words of the unfolded report;
            # the ellipsis of a shortened text is the other exception.
            folded = any(word in long for long in too_long)
            assert word in words or "…" in word or folded, (word, line)


def test_the_table_keeps_every_column_and_folds_its_cells(fleet: Analysis) -> None:
    narrow = recorded(fleet, 80, render_table)
    wide = recorded(fleet, 200, render_table)
    # Every column at 80 (numeric headers shortened), every one at its full name at 200.
    assert narrow[0].split() == ["JOB", "STATE", "ATT", "RETR", "RSTRT", "LAST", "SEEN", "CAUSE"]
    assert "RETRIES" in wide[0] and len(wide) == 1 + len(fleet.diagnoses)
    assert max(map(cell_len, narrow)) <= 80
    # Folded, no word is cut: every piece of a line is a word of the one-line table, or a
    # piece of a long name broken after its _, -, / or . (never "recov" | "ered").
    words = {w for line in wide for w in line.split()}
    for line in narrow[2:]:
        # The times shortened to MM-DD HH:MM keep a row on one line.
        line = re.sub(r"\b\d\d-\d\d \d\d:\d\d\b", "", line)
        for piece in line.split():
            assert piece in words or any(
                w.startswith(piece) or w.endswith(piece) or f"{piece}" in w for w in words
            ), (piece, line)
            if piece not in words:
                assert piece[-1] in "_-/." or any(w.endswith(piece) for w in words), piece
    assert not any(re.search(r"\brecov\b|\bered\b", line) for line in narrow)
    # "recovered from" stays whole on a line, and its category follows under it.
    row = next(i for i, line in enumerate(narrow) if "recovered from" in line)
    assert narrow[row].rstrip().endswith("recovered from")
    assert narrow[row + 1].split()[-1] in {"user_code_exception", "worker_restarts_"}


def test_evidence_is_shortened_keeping_its_start_and_end(fleet: Analysis) -> None:
    diagnosis = next(d for d in fleet.diagnoses if d.job_id == "1813751185596970289")
    texts = [first_line(e.text, 1 << 20) for _, e in evidence_events(diagnosis) if e]
    long_text = max(texts, key=len)
    one = Analysis(fleet.inputs, (diagnosis,))
    lines = recorded(one, 80)
    cut = next(line for line in lines if "…" in line and "Forbidden" in line)
    # Beside its origin, or on its own row under it when the path leaves too little room.
    shown = cut.split("  workerpool0-0  ", 1)[-1].strip()
    head, tail = shown.split("…")
    assert long_text.startswith(head) and long_text.endswith(tail) and len(tail) > 5
    assert cell_len(cut) <= 80


# Texts without an ellipsis of their own, so that the one added can be found.
@given(
    st.text(st.characters(blacklist_characters="…"), max_size=300),
    st.integers(min_value=2, max_value=200),
)
def test_shorten_middle_keeps_both_ends_within_the_limit(text: str, limit: int) -> None:
    flat = " ".join(text.split())
    short = shorten_middle(text, limit)
    assert cell_len(short) <= max(limit, 0)
    if cell_len(flat) <= limit:
        assert short == flat
    else:
        head, _, tail = short.partition("…")
        assert flat.startswith(head) and flat.endswith(tail)


@pytest.mark.skipif(sys.platform == "win32", reason="no pseudo-terminals here")
@pytest.mark.parametrize("width", [80, 200])
def test_a_real_terminal_folds_to_its_width(width: int) -> None:
    done = run_in_terminal(
        ["diagnose", str(SAMPLES / "cuda-oom.jsonl.gz")], width, env={"NO_COLOR": "1"}
    )
    lines = [line for line in done.text.split("\n") if line]
    assert done.code == 0, done.stderr
    assert max(cell_len(line) for line in lines) <= width
    # NO_COLOR: no colour codes, though bold may stay.
    assert not re.search(r"\x1b\[(?:[0-9;]*;)?(?:3[0-9]|4[0-9]|9[0-7])[;m]", done.raw)
    assert "\x1b[1m" in done.raw
    if width == 80:
        assert any(line.startswith("            ") for line in lines)  # a hanging indent


def test_color_always_and_never() -> None:
    sample = str(SAMPLES / "user-code-exit1.jsonl")
    _, coloured, _ = cli("diagnose", "--color", "always", sample)
    _, plain, _ = cli("diagnose", "--color", "never", sample)
    assert "\x1b[" in coloured and "\x1b[" not in plain
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain


def test_a_label_too_long_for_its_column_gets_its_own_line() -> None:
    from analyzer.report.text import _Layout

    console = Console(width=80, record=True, color_system=None, file=io.StringIO())
    layout = _Layout(console, wrap=True)
    layout.labelled("preemptions", "three, on attempts 1 and 2")
    layout.labelled("cause", "the replica exited")
    assert console.export_text().splitlines() == [
        "  preemptions",
        "            three, on attempts 1 and 2",
        "  cause     the replica exited",
    ]


def test_markdown_of_many_jobs_starts_with_the_summary_and_table() -> None:
    code, out, _ = cli("diagnose", "--format", "markdown", str(SAMPLES / "project-wide.jsonl"))
    lines = out.splitlines()
    assert code == 0 and lines[2].startswith("**5 jobs: 3 failed, 2 succeeded (1 after a failure);")
    rows = [line for line in lines if line.startswith("| ") and line.count("|") == 8]
    assert rows[0].startswith("| JOB | STATE |") and len(rows) == 6
    # The details follow the table's order.
    headings = [line.split()[2].rstrip(":") for line in lines if line.startswith("## job ")]
    assert headings == [row.split("|")[1].strip() for row in rows[1:]]
