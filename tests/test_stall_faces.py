"""A stalled job everywhere a verdict goes (issue 30, point 3): text, table, JSON, YAML,
JSONL, Markdown, HTML and its chart, the job frame, the fleet report, ``--fail-on stalled``.

The hung jobs are the simulator's (tests/stalled.py): a straggler, workerpool1-2 silent for
50 minutes while three workers train on, and a rank stuck in an all-reduce that the others'
NCCL watchdog reports; the stall is the pipeline's own reading of them. Beside them, the
healthy sample that is still running and one that failed.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
import yaml
from rich.cells import cell_len
from rich.console import Console

from analyzer.api import analyze
from analyzer.cli.commands import FailOn, _fails
from analyzer.pipeline.analysis import Analysis
from analyzer.report.changes import describe_changes
from analyzer.report.chart import MarkKind, timeline_marks, timeline_svg
from analyzer.report.facts import verdict_line
from analyzer.report.fleet import (
    CSV_COLUMNS,
    fleet_document,
    render_csv,
    render_markdown_fleet,
    summarize_analysis,
)
from analyzer.report.frames import jobs_frame
from analyzer.report.html import diagnosis_html, render_html
from analyzer.report.json import render_json, render_jsonl, render_yaml
from analyzer.report.markdown import render_markdown
from analyzer.report.overview import fleet_order, summary_line
from analyzer.report.text import render_table, render_text, render_verdicts
from analyzer.verdict.diagnosis import Diagnosis
from tests.stalled import SILENT, STRAGGLER, WAITING, job_id_of, job_record, scenario_file

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hangs")


@pytest.fixture(scope="module")
def straggler(inputs: Path) -> Path:
    return scenario_file(STRAGGLER, inputs)


@pytest.fixture(scope="module")
def job_id(straggler: Path) -> str:
    return job_id_of(straggler)


@pytest.fixture(scope="module")
def one(straggler: Path, inputs: Path) -> Analysis:
    """The straggler with its record: two A100s a worker, a timeout of three days."""
    record = job_record(straggler, inputs, accelerators=2, timeout_s=3 * 86400)
    return analyze([straggler], job_spec_path=record)


@pytest.fixture(scope="module")
def fleet(straggler: Path) -> Analysis:
    """The stalled straggler among a healthy running job and a failed one (each read on its
    own: read together, the straggler's later lines would be the healthy job's input end)."""
    hung = analyze([straggler])
    others = analyze([SAMPLES / "still-running.jsonl", SAMPLES / "user-code-exit1.jsonl"])
    return Analysis((*hung.inputs, *others.inputs), (*others.diagnoses, *hung.diagnoses))


def _stalled(analysis: Analysis) -> Diagnosis:
    return next(d for d in analysis.diagnoses if d.stalled is not None)


def _recorded(analysis: Analysis, width: int, render: object = render_text) -> list[str]:
    console = Console(
        width=width, record=True, force_terminal=True, color_system=None, file=io.StringIO()
    )
    assert callable(render)
    render(analysis, console)
    return console.export_text().splitlines()


def _plain(analysis: Analysis, render: object = render_text) -> str:
    out = io.StringIO()
    assert callable(render)
    render(analysis, Console(file=out, width=100, color_system=None), wrap=False)
    return out.getvalue()


# -- the verdict and the text report --


def test_the_verdict_says_since_when_and_who(one: Analysis, job_id: str) -> None:
    diagnosis = _stalled(one)
    line = f"job {job_id}: RUNNING, stalled since 07:41 ({SILENT} silent 50 min; the others"
    line += " still write), 1 attempt, 0 retries"
    # Every report's verdict line says what the verdict itself says.
    assert verdict_line(diagnosis) == line == str(diagnosis)
    assert (
        _plain(one, render_verdicts).split()
        == (
            f"job {job_id} RUNNING, stalled since 07:41 ({SILENT} silent 50 min; the others still"
            " write) 1 attempt, 0 retries"
        ).split()
    )
    # The same kind of job that is not hung reads as any job still running.
    healthy = verdict_line(analyze([SAMPLES / "still-running.jsonl"]).diagnoses[0])
    assert "stalled" not in healthy and "RUNNING (predicted)" in healthy


def test_the_text_report_has_a_stall_section(one: Analysis) -> None:
    stall = _stalled(one).stalled
    assert stall is not None and stall.cost_to_timeout is not None
    lines = _plain(one).splitlines()
    labelled = {line[2:12].strip(): line[12:] for line in lines if line[2:12].strip()}
    assert labelled["stalled"] == (
        "since 2024-05-02 07:41:32 UTC (some workers silent while the others still write); the"
        " input ends 2024-05-02 08:32:01 UTC"
    )
    # Its last line matched no rule: it is known as a time.
    assert labelled["silent"] == (
        f"{SILENT} for 50 min (its rhythm allows 30 min), last line 2024-05-02 07:41:32"
    )
    assert labelled["waiting"] == f"{', '.join(WAITING)} (still writing)"
    assert labelled["timeout"] == (
        "2024-05-05 06:08:00 UTC, by the job spec's scheduling.timeout: the platform bills"
        " every VM until then"
    )
    assert labelled["cost"] == (
        "278.4 machine-hours and 556.8 accelerator-hours (NVIDIA_TESLA_A100) in the 69.6 h"
        " left to the timeout"
    )
    assert "evidence" not in labelled  # no line a rule read shows this hang


@pytest.mark.parametrize("width", [80, 200])
def test_the_stall_section_folds_to_the_terminal(fleet: Analysis, width: int) -> None:
    lines = _recorded(fleet, width)
    assert max(cell_len(line) for line in lines) <= width
    heads = {line[2:12].strip() for line in lines if line.startswith("  ") and line[2] != " "}
    assert {"stalled", "silent", "waiting", "timeout", "cost"} <= heads


def test_the_collective_the_others_wait_in(inputs: Path) -> None:
    path = scenario_file("rank-stuck-collective", inputs)
    analysis = analyze([path])
    diagnosis = _stalled(analysis)
    assert "(workerpool1-2 silent 30 min; the others wait in an all-reduce that timed out)" in (
        verdict_line(diagnosis)
    )
    lines = _plain(analysis).splitlines()
    assert "workerpool1-1 (in an all-reduce)" in next(ln for ln in lines if "waiting" in ln)
    # The watchdog's lines are the evidence, each with its worker and text.
    evidence = [ln for ln in lines if "[Rank " in ln and "Watchdog caught" in ln]
    assert len(evidence) == 3 and all("ProcessGroupNCCL" in ln for ln in evidence)


# -- the table and the fleet's order --


def test_the_table_marks_the_stalled_job(fleet: Analysis, job_id: str) -> None:
    narrow = _recorded(fleet, 80, render_table)
    wide = _recorded(fleet, 200, render_table)
    assert max(map(cell_len, narrow)) <= 80
    row = next(line for line in wide if line.startswith(job_id))
    assert row.split()[1] == "STALLED"
    # The healthy running job keeps its predicted state; the stalled one comes first of them.
    states = [line.split()[1] for line in wide[1:]]
    assert states == ["FAILED", "STALLED", "RUNNING?"]
    assert [d.job_id for d in fleet_order(fleet.diagnoses)][1] == job_id


def test_the_summary_counts_the_stalled_and_their_burn(fleet: Analysis) -> None:
    assert summary_line(fleet.diagnoses).startswith(
        "3 jobs: 1 failed, 2 running (1 stalled); 0 retries"
    )
    text = _plain(fleet).splitlines()
    assert text[1] == (
        "1 stalled job: the platform bills it until its timeout, 662.4 machine-hours more"
        " unless it is cancelled"
    )


# -- the machine formats --


def test_json_yaml_and_jsonl_carry_the_stall(fleet: Analysis, job_id: str) -> None:
    stall = _stalled(fleet).stalled
    assert stall is not None
    want = json.loads(json.dumps(stall.to_dict()))
    by_job = {j["job_id"]: j for j in json.loads(render_json(fleet))["jobs"]}
    assert by_job[job_id]["stalled"] == want
    assert {j["stalled"] is None for i, j in by_job.items() if i != job_id} == {True}
    from_yaml = {j["job_id"]: j for j in yaml.safe_load(render_yaml(fleet))["jobs"]}
    assert from_yaml[job_id]["stalled"] == want
    lines = [json.loads(line) for line in render_jsonl(fleet).splitlines()]
    assert next(j for j in lines if j["job_id"] == job_id)["stalled"] == want
    assert want["kind"] == "straggler" and want["workers"][0]["replica"] == SILENT
    assert want["since"] == "2024-05-02T07:41:32.987850Z"
    assert want["timeout_source"] == "default"


# -- Markdown and HTML --


def _hostile(analysis: Analysis, waiting: str) -> Analysis:
    """``analysis``'s stalled job with a worker name from the logs that means something in
    the report's own language (a Markdown link, an HTML tag)."""
    diagnosis = _stalled(analysis)
    assert diagnosis.stalled is not None
    named = replace(diagnosis, stalled=replace(diagnosis.stalled, waiting=(waiting,)))
    return Analysis(analysis.inputs, (named,))


def test_markdown_has_the_stall_escaped(one: Analysis) -> None:
    text = render_markdown(one)
    assert "- **stalled**: since 2024-05-02 07:41:32 UTC" in text
    assert f"- **silent**: {SILENT} for 50 min" in text
    assert "- **cost**: 278.4 machine-hours and 556.8 accelerator-hours" in text
    hostile = render_markdown(_hostile(one, "[x](http://evil)|<b>"))
    assert "\\[x\\](http://evil)\\|&lt;b>" in hostile
    assert not re.search(r"(?<!\\)\]\(", hostile)  # no link: every ] before ( is escaped


class _Texts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.texts.append(data.strip())


def test_html_card_marks_the_stall_and_escapes_it(one: Analysis) -> None:
    parsed = _Texts()
    parsed.feed(diagnosis_html(_stalled(one)))
    assert "STALLED" in parsed.texts
    assert "since 2024-05-02 07:41:32 UTC (some workers silent while the others still" in (
        " ".join(parsed.texts)
    )
    assert any(t.startswith(f"{SILENT} for 50 min") for t in parsed.texts)
    card = diagnosis_html(_stalled(_hostile(one, "<script>alert(1)</script>")))
    assert "<script>" not in card and "&lt;script&gt;alert(1)&lt;/script&gt;" in card


def test_the_chart_draws_the_silence_on_the_worker_s_row(one: Analysis) -> None:
    diagnosis = _stalled(one)
    stall = diagnosis.stalled
    assert stall is not None
    marks = timeline_marks(diagnosis)
    (silent,) = [m for m in marks if m.kind is MarkKind.SILENT]
    bar = next(m for m in marks if m.kind is MarkKind.WORKER and m.lane == SILENT)
    assert (silent.row, silent.start, silent.end) == (bar.row, bar.end, stall.input_end)
    assert silent.start == stall.workers[0].last_line
    svg = timeline_svg(diagnosis)
    (silent_rect,) = re.findall(
        r'<rect class="jd-silent" x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', svg
    )
    bars = re.findall(
        r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)" height="8"[^>]*><title>([^<]*)', svg
    )
    (worker_bar,) = [(x, w) for x, w, title in bars if title.startswith(f"{SILENT}: seen")]
    start, end = float(silent_rect[0]), float(silent_rect[0]) + float(silent_rect[1])
    # From where the worker's bar ends (its last line) to where the others' end: the
    # input's end, the chart's latest instant.
    assert start == pytest.approx(float(worker_bar[0]) + float(worker_bar[1]), abs=0.2)
    assert end == pytest.approx(max(float(x) + float(w) for x, w, _ in bars), abs=0.2)
    assert end - start > 100
    assert "silent (stalled)" in svg and f"{SILENT}: silent from its last line" in svg
    # A job not stalled has no such mark.
    healthy = analyze([SAMPLES / "still-running.jsonl"]).diagnoses[0]
    assert not [m for m in timeline_marks(healthy) if m.kind is MarkKind.SILENT]


# -- the job frame --


def test_the_job_frame_has_stalled_since(fleet: Analysis, job_id: str) -> None:
    frame = jobs_frame(fleet.diagnoses)
    assert frame["stalled_since"].dtype == frame["first_seen"].dtype  # UTC timestamps
    stall = _stalled(fleet).stalled
    assert stall is not None and stall.cost_to_timeout is not None
    row = frame[frame.job_id == job_id].iloc[0]
    assert row.stalled_since == pd.Timestamp(stall.since)
    assert row.stall_timeout_at == pd.Timestamp(stall.timeout_at)
    assert row.stall_machine_hours == pytest.approx(stall.cost_to_timeout.machine_hours)
    others = frame[frame.job_id != job_id]
    assert others.stalled_since.isna().all() and others.stall_machine_hours.isna().all()
    assert list(frame[frame.stalled_since.notna()].job_id) == [job_id]


# -- the fleet report --


def test_the_fleet_report_has_a_stalled_section(fleet: Analysis, job_id: str) -> None:
    summary = summarize_analysis(fleet)
    markdown = render_markdown_fleet(summary)
    section = markdown.split("## Stalled jobs (1)", 1)[1].split("\n## ", 1)[0]
    assert "1 stalled job: the platform bills it until its timeout, 662.4 machine-hours" in section
    row = next(line for line in section.splitlines() if line.startswith(f"| {job_id}"))
    assert row == (
        f"| {job_id} | 2024-05-02 07:41:32 | {SILENT} (50 min) | 2024-05-09 06:08:00 (default)"
        " | 662.4 h | - |"
    )
    document = fleet_document(summary)
    totals = document["totals"]
    assert isinstance(totals, dict)
    assert totals["stalled"] == 1 and totals["stall_machine_hours"] == pytest.approx(
        662.4, abs=0.01
    )
    listed = document["stalled"]
    assert isinstance(listed, list) and len(listed) == 1
    assert listed[0]["job_id"] == job_id and listed[0]["workers"][0]["replica"] == SILENT
    rows = list(csv.DictReader(io.StringIO(render_csv(summary))))
    assert list(rows[0]) == list(CSV_COLUMNS)
    by_job = {r["job_id"]: r for r in rows}
    assert by_job[job_id]["stalled_since"] == "2024-05-02T07:41:32.987850Z"
    assert float(by_job[job_id]["stall_machine_hours"]) == pytest.approx(662.4, abs=0.01)
    assert {r["stalled_since"] for i, r in by_job.items() if i != job_id} == {""}


def test_the_html_fleet_report_lists_the_stalled_jobs(fleet: Analysis, job_id: str) -> None:
    page = render_html(summarize_analysis(fleet), generated=datetime(2024, 5, 3, tzinfo=UTC))
    section = page.split("<h2>Stalled jobs (1)</h2>", 1)[1].split("<h2>", 1)[0]
    parsed = _Texts()
    parsed.feed(section)
    assert job_id in parsed.texts and f"{SILENT} (50 min)" in parsed.texts
    link = next(a for tag, a in parsed.tags if tag == "a")
    assert f'id="{str(link["href"])[1:]}"' in page  # linked to the job's card
    # The jobs table marks it too; a fleet without a stalled job has no such section.
    assert page.count(">STALLED</span>") == 2
    calm = analyze([SAMPLES / "still-running.jsonl"])
    assert "Stalled jobs" not in render_html(summarize_analysis(calm))
    assert "Stalled jobs" not in render_markdown_fleet(summarize_analysis(calm))


# -- --fail-on stalled --


def test_fail_on_stalled(fleet: Analysis) -> None:
    assert _fails(fleet, FailOn.stalled)
    calm = Analysis(fleet.inputs, tuple(d for d in fleet.diagnoses if d.stalled is None))
    assert not _fails(calm, FailOn.stalled)
    assert _fails(calm, FailOn.not_succeeded)  # the healthy running job is not stalled


# -- what --follow says when a stall begins, grows and ends --


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _written(path: Path, entries: list[dict[str, object]]) -> Diagnosis:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    (diagnosis,) = analyze([path]).diagnoses
    return diagnosis


def test_follow_announces_a_stall_and_its_end(
    straggler: Path, inputs: Path, tmp_path: Path
) -> None:
    entries = _lines(straggler)
    (stuck,) = analyze([straggler]).diagnoses
    # Twenty minutes into the silence, within the 30 minutes its rhythm allows: no stall yet.
    early = [e for e in entries if str(e["timestamp"]) < "2024-05-02T08:01:32"]
    calm = _written(tmp_path / "early.jsonl", early)
    assert calm.stalled is None
    assert describe_changes(calm, stuck) == [
        f"stalled since 07:41 ({SILENT} silent 50 min; the others still write)"
    ]
    assert describe_changes(stuck, stuck) == []
    # The silent worker writes again (its last line, once more, when the input ends).
    last = max((e for e in entries if _task(e) == SILENT), key=lambda e: str(e["timestamp"]))
    end = max(str(e["timestamp"]) for e in entries)
    again = {**last, "insertId": "again", "timestamp": end}
    writing = _written(tmp_path / "again.jsonl", [*entries, again])
    assert writing.stalled is None
    assert describe_changes(stuck, writing) == [f"stall over: {SILENT} writes again"]
    # A job's end ends its stall too, whatever the workers did.
    (ended,) = analyze([scenario_file("watchdog-kills", inputs)]).diagnoses
    changes = describe_changes(stuck, ended)
    assert "stall over: the job ended (FAILED)" in changes
    assert changes[-1] == "final: FAILED after 1 attempt(s), 0 retries"


def _task(entry: dict[str, object]) -> str:
    resource = entry["resource"]
    assert isinstance(resource, dict)
    return str(resource["labels"].get("task_name"))


def test_follow_names_a_worker_that_falls_silent_too(fleet: Analysis) -> None:
    stuck = _stalled(fleet)
    stall = stuck.stalled
    assert stall is not None
    # As a later poll would see it: the first of those still writing silent too.
    other = replace(stall.workers[0], replica=WAITING[0])
    worse = replace(stuck, stalled=replace(stall, workers=(*stall.workers, other)))
    assert describe_changes(stuck, worse) == [f"{WAITING[0]} silent too (50 min)"]


def test_a_job_past_its_timeout_when_the_input_ends_is_not_stalled() -> None:
    # Read with the other samples, the healthy running job's workers are silent for eleven
    # days when the input ends: past its 7-day default timeout, when the platform stopped it
    # (platform.md section 2). It is no hang to cancel, and the table does not mark it.
    analysis = analyze([SAMPLES])
    (running,) = [d for d in analysis.diagnoses if d.job_id == "5379732798221824285"]
    assert running.stalled is None
    assert "STALLED" not in _plain(analysis, render_table)


# -- the commands, end to end --


def test_the_commands_on_a_hung_job(straggler: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from analyzer.cli.app import app

    runner = CliRunner()
    hung = runner.invoke(app, ["diagnose", "-q", "--fail-on", "stalled", str(straggler)])
    assert hung.exit_code == 1 and "RUNNING, stalled since 07:41" in hung.stdout
    healthy = SAMPLES / "still-running.jsonl"
    assert runner.invoke(app, ["diagnose", "--fail-on", "stalled", str(healthy)]).exit_code == 0
    table = runner.invoke(app, ["diagnose", "--format", "table", str(straggler)])
    assert [line.split()[1] for line in table.stdout.splitlines()[1:]] == ["STALLED"]
    for form, mark in (("markdown", "## Stalled jobs (1)"), ("html", "<h2>Stalled jobs (1)</h2>")):
        out = tmp_path / f"report.{form}"
        done = runner.invoke(app, ["report", str(straggler), "--format", form, "--out", str(out)])
        assert done.exit_code == 0, done.stderr
        assert mark in out.read_text(encoding="utf-8")
    document = json.loads(runner.invoke(app, ["report", str(straggler), "--format", "json"]).stdout)
    assert document["fleet"]["stalled"][0]["kind"] == "straggler"
