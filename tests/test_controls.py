"""Log text is untrusted: no report lets its escape sequences, ``\\r`` or bidi overrides reach a
terminal or a page unmarked (OSC 52 clipboard writes, window titles, screen clears, overwrites,
reordered words)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analyzer.api import analyze
from analyzer.cli.app import app
from analyzer.cli.report_command import render_fleet
from analyzer.pipeline.analysis import DiagnosisList
from analyzer.report.controls import marked_html, visible

ROOT = Path(__file__).resolve().parents[1]
# What a hostile line carries: a clipboard write, a window title, a screen clear, a one-byte
# CSI (C1), a bell, a bidi override that shows "exe.png" for "gnp.exe", then an overwrite.
HOSTILE = (
    "KeyError: 'label \u202egnp.exe\u202c \x1b]52;c;ZXZpbA==\x07 \x1b]0;pwned\x07"
    " \x1b[2J \x9b31m \x7f\r all is well'"
)
# Raw control characters and bidi controls; a report may hold tabs and line ends.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def hostile_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = (ROOT / "sample_logs" / "user-code-exit1.jsonl").read_text(encoding="utf-8")
    text = source.replace("KeyError: 'label'", json.dumps(HOSTILE)[1:-1])
    assert text != source
    path = tmp_path_factory.mktemp("hostile") / "hostile.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text, tabs\tand\nlines", "plain text, tabs\tand\nlines"),
        ("\x1b]52;c;ZXZpbA==\x07", "\\u001b]52;c;ZXZpbA==\\u0007"),
        ("ok\rfake", "ok\\rfake"),
        ("\u202egnp.exe", "\\u202egnp.exe"),
        ("\u2066isolate\u2069 \u200f", "\\u2066isolate\\u2069 \\u200f"),
        ("\x9b2J \x00 \x7f", "\\u009b2J \\u0000 \\u007f"),
        ("עברית ok", "עברית ok"),
    ],
)
def test_visible_writes_each_control_character_as_its_escape(text: str, shown: str) -> None:
    assert visible(text) == shown


def test_marked_html_marks_bidi_overrides() -> None:
    html = marked_html("a <b> \u202egnp.exe")
    assert html.startswith('a &lt;b&gt; <mark class="jd-control"')
    assert "U+202E" in html and "\u202e" not in html


@pytest.mark.parametrize("output", ["text", "markdown"])
def test_diagnose_shows_the_controls_of_log_text(hostile_log: Path, output: str) -> None:
    result = CliRunner().invoke(app, ["diagnose", "--format", output, str(hostile_log)])
    assert result.exit_code == 0, result.output
    assert "KeyError" in result.stdout
    assert not RAW.search(result.stdout), RAW.findall(result.stdout)
    shown = _unescaped_markdown(result.stdout) if output == "markdown" else result.stdout
    assert "\\u001b]52;c;ZXZpbA==" in shown and "\\u202egnp.exe" in shown


def _unescaped_markdown(text: str) -> str:
    """Markdown's escapes of brackets taken off (report.markdown escapes them in log text)."""
    return text.replace("\\[", "[").replace("\\]", "]")


def test_the_json_report_escapes_them_too(hostile_log: Path) -> None:
    result = CliRunner().invoke(app, ["diagnose", "--format", "json", str(hostile_log)])
    assert "\x1b" not in result.stdout and "\\u001b]52;c;" in result.stdout


@pytest.mark.parametrize("output", ["html", "markdown"])
def test_the_fleet_report_marks_them(hostile_log: Path, output: str) -> None:
    text = render_fleet(analyze([hostile_log]), output)
    assert not RAW.search(text), RAW.findall(text)


def test_the_notebook_view_marks_them(hostile_log: Path) -> None:
    html = DiagnosisList(analyze([hostile_log]).diagnoses)._repr_html_()
    assert "KeyError" in html and not RAW.search(html), RAW.findall(html)
    assert 'title="control character U+202E"' in html


def test_a_file_name_with_controls_is_shown_escaped_on_stderr(tmp_path: Path) -> None:
    named = tmp_path / "quiet\x1b]0;pwned\x07.log"
    named.write_text("plain training output\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["diagnose", str(named)])
    # A text with no word of a job's logs is refused as no export (issue 14), by its name.
    assert "not a log export" in result.stderr
    assert not RAW.search(result.stderr) and "\\u001b]0;pwned" in result.stderr


SECRET = "ya29.a0AfB_leaked-by-the-job-0123456789"


@pytest.fixture(scope="module")
def leaking_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = (ROOT / "sample_logs" / "user-code-exit1.jsonl").read_text(encoding="utf-8")
    leak = f"KeyError: 'label' (headers: Authorization: Bearer {SECRET})"
    text = source.replace("KeyError: 'label'", leak)
    path = tmp_path_factory.mktemp("leak") / "leak.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("output", ["text", "markdown"])
def test_a_token_the_job_printed_is_not_in_the_reports(leaking_log: Path, output: str) -> None:
    result = CliRunner().invoke(app, ["diagnose", "--format", output, str(leaking_log)])
    shown = _unescaped_markdown(result.stdout) if output == "markdown" else result.stdout
    assert "KeyError" in shown and "Authorization: [redacted]" in shown
    assert SECRET not in result.stdout and "a0AfB" not in result.stdout


def test_nor_in_the_html_report_and_notebook(leaking_log: Path) -> None:
    analysis = analyze([leaking_log])
    for html in (render_fleet(analysis, "html"), DiagnosisList(analysis.diagnoses)._repr_html_()):
        assert SECRET not in html


def test_the_json_report_redacts_too_unless_told_not_to(leaking_log: Path) -> None:
    # One redaction for every format (issue 31, point 2); --no-redact gives the text as logged.
    from analyzer.report.redact import set_redaction

    result = CliRunner().invoke(app, ["diagnose", "--format", "json", str(leaking_log)])
    assert SECRET not in result.stdout and "[redacted]" in result.stdout
    try:
        raw = CliRunner().invoke(app, ["--no-redact", "diagnose", "-f", "json", str(leaking_log)])
    finally:
        set_redaction(True)
    assert SECRET in raw.stdout
