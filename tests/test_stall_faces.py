"""A stalled job everywhere a verdict goes (issue 30, point 3): text, table, JSON, YAML,
JSONL, Markdown, HTML and its chart, the job frame, the fleet report, ``--fail-on stalled``.

The job is a real export cut into a straggler (tests/stalled.py): three workers write on
while workerpool1-1 is silent for 19 minutes; its diagnosis carries the stall that input
shows. Beside it, the healthy sample that is still running and one that failed.
"""

from __future__ import annotations

import csv
import io
import json
import re
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
from analyzer.report.text import render_table, render_text
from analyzer.verdict.diagnosis import Diagnosis
from tests.stalled import JOB_ID, SILENT, stalled, straggler_input

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"


@pytest.fixture(scope="module")
def straggler(tmp_path_factory: pytest.TempPathFactory) -> tuple[Analysis, Path]:
    path = straggler_input(tmp_path_factory.mktemp("straggler"))
    return analyze([str(path)]), path


@pytest.fixture(scope="module")
def one(straggler: tuple[Analysis, Path]) -> Analysis:
    """The straggler alone, stalled, with a job spec's accelerators (two a worker)."""
    analysis, path = straggler
    (diagnosis,) = analysis.diagnoses
    return Analysis(analysis.inputs, (stalled(diagnosis, path, accelerators=2),))


@pytest.fixture(scope="module")
def fleet(straggler: tuple[Analysis, Path]) -> Analysis:
    """The stalled straggler among a healthy running job and a failed one."""
    analysis, path = straggler
    others = analyze([SAMPLES / "still-running.jsonl", SAMPLES / "user-code-exit1.jsonl"])
    (diagnosis,) = analysis.diagnoses
    jobs = (*others.diagnoses, stalled(diagnosis, path))
    return Analysis((*analysis.inputs, *others.inputs), jobs)


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


def test_the_verdict_says_since_when_and_who(one: Analysis) -> None:
    diagnosis = _stalled(one)
    assert verdict_line(diagnosis) == (
        f"job {JOB_ID}: RUNNING, stalled since 14:00 ({SILENT} silent 19 min; the others still"
        " write), 1 attempt, 0 retries - no failure message"
    )
    # Without the stall, the same job reads as any job still running.
    healthy = verdict_line(analyze([SAMPLES / "still-running.jsonl"]).diagnoses[0])
    assert "stalled" not in healthy and "RUNNING (predicted)" in healthy


def test_the_text_report_has_a_stall_section(one: Analysis) -> None:
    stall = _stalled(one).stalled
    assert stall is not None
    lines = _plain(one).splitlines()
    labelled = {line[2:12].strip(): line[12:] for line in lines if line[2:12].strip()}
    assert labelled["stalled"].startswith("since 2024-04-20 14:00:32 UTC (some workers silent")
    assert "the input ends 2024-04-20 14:19:43 UTC" in labelled["stalled"]
    assert labelled["silent"] == (
        f"{SILENT} for 19 min (its rhythm allows 5 min), last line 2024-04-20 14:00:32 at"
        f" {stall.workers[0].last_origin}"
    )
    assert labelled["waiting"] == "workerpool0-0, workerpool1-0, workerpool1-2 (still writing)"
    assert labelled["timeout"] == (
        "2024-04-27 13:48:36 UTC, by the platform's default scheduling.timeout of 7 days: the"
        " platform bills every VM until then"
    )
    cost = stall.cost_to_timeout
    assert cost is not None and cost.accelerator_hours is not None
    assert labelled["cost"] == (
        f"{cost.machine_hours:,.1f} machine-hours and {cost.accelerator_hours:,.1f}"
        f" accelerator-hours (NVIDIA_TESLA_V100) in the {cost.hours_left:,.1f} h left to the"
        " timeout"
    )
    # The silent worker's last line matched no rule: its "silent" line cites it, once.
    assert sum(str(stall.workers[0].last_origin) in line for line in lines) == 1


@pytest.mark.parametrize("width", [80, 200])
def test_the_stall_section_folds_to_the_terminal(fleet: Analysis, width: int) -> None:
    lines = _recorded(fleet, width)
    assert max(cell_len(line) for line in lines) <= width
    heads = {line[2:12].strip() for line in lines if line.startswith("  ") and line[2] != " "}
    assert {"stalled", "silent", "waiting", "timeout", "cost"} <= heads


def test_the_collective_the_others_wait_in(straggler: tuple[Analysis, Path]) -> None:
    analysis, path = straggler
    diagnosis = stalled(analysis.diagnoses[0], path, collective="ALLREDUCE")
    assert f"({SILENT} silent 19 min; the others wait in an all-reduce)" in verdict_line(diagnosis)
    text = _plain(Analysis(analysis.inputs, (diagnosis,)))
    assert "workerpool1-2 (in an all-reduce)" in text
    rendezvous = stalled(analysis.diagnoses[0], path, collective="rendezvous")
    assert "wait in a rendezvous)" in verdict_line(rendezvous)


# -- the table and the fleet's order --


def test_the_table_marks_the_stalled_job(fleet: Analysis) -> None:
    narrow = _recorded(fleet, 80, render_table)
    wide = _recorded(fleet, 200, render_table)
    assert max(map(cell_len, narrow)) <= 80
    row = next(line for line in wide if line.startswith(JOB_ID))
    assert row.split()[1] == "STALLED"
    # The healthy running job keeps its predicted state; the stalled one comes first of them.
    states = [line.split()[1] for line in wide[1:]]
    assert states == ["FAILED", "STALLED", "RUNNING?"]
    assert [d.job_id for d in fleet_order(fleet.diagnoses)][1] == JOB_ID


def test_the_summary_counts_the_stalled_and_their_burn(fleet: Analysis) -> None:
    assert summary_line(fleet.diagnoses).startswith(
        "3 jobs: 1 failed, 2 running (1 stalled); 0 retries"
    )
    cost = _stalled(fleet).stalled.cost_to_timeout  # type: ignore[union-attr]
    assert cost is not None
    text = _plain(fleet).splitlines()
    assert text[1] == (
        f"1 stalled job: the platform bills it until its timeout, {cost.machine_hours:,.1f}"
        " machine-hours more unless it is cancelled"
    )


# -- the machine formats --


def test_json_yaml_and_jsonl_carry_the_stall(fleet: Analysis) -> None:
    stall = _stalled(fleet).stalled
    assert stall is not None
    want = json.loads(json.dumps(stall.to_dict()))
    by_job = {j["job_id"]: j for j in json.loads(render_json(fleet))["jobs"]}
    assert by_job[JOB_ID]["stalled"] == want
    assert {j["stalled"] is None for i, j in by_job.items() if i != JOB_ID} == {True}
    from_yaml = {j["job_id"]: j for j in yaml.safe_load(render_yaml(fleet))["jobs"]}
    assert from_yaml[JOB_ID]["stalled"] == want
    lines = [json.loads(line) for line in render_jsonl(fleet).splitlines()]
    assert next(j for j in lines if j["job_id"] == JOB_ID)["stalled"] == want
    assert want["kind"] == "straggler" and want["workers"][0]["replica"] == SILENT
    assert want["since"] == "2024-04-20T14:00:32.118149Z"
    assert want["timeout_source"] == "default"


# -- Markdown and HTML --


def test_markdown_has_the_stall_escaped(straggler: tuple[Analysis, Path]) -> None:
    analysis, path = straggler
    diagnosis = stalled(analysis.diagnoses[0], path)
    # A worker name from the logs that would be a link and a table cell in Markdown.
    stall = diagnosis.stalled
    assert stall is not None
    from dataclasses import replace

    hostile = replace(stall, waiting=("[x](http://evil)|<b>",))
    text = render_markdown(Analysis(analysis.inputs, (replace(diagnosis, stalled=hostile),)))
    assert "- **stalled**: since 2024-04-20 14:00:32 UTC" in text
    assert f"- **silent**: {SILENT} for 19 min" in text
    assert "\\[x\\](http://evil)\\|&lt;b>" in text
    assert not re.search(r"(?<!\\)\]\(", text)  # no link: every ] before ( is escaped


class _Texts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.texts.append(data)


def test_html_card_marks_the_stall_and_escapes_it(straggler: tuple[Analysis, Path]) -> None:
    analysis, path = straggler
    diagnosis = stalled(analysis.diagnoses[0], path)
    stall = diagnosis.stalled
    assert stall is not None
    from dataclasses import replace

    hostile = replace(diagnosis, stalled=replace(stall, waiting=("<script>alert(1)</script>",)))
    card = diagnosis_html(hostile)
    assert "<script>" not in card and "&lt;script&gt;alert(1)&lt;/script&gt;" in card
    parsed = _Texts()
    parsed.feed(card)
    assert "STALLED" in parsed.texts
    texts = [t.strip() for t in parsed.texts]
    assert any(t.startswith("since 2024-04-20 14:00:32 UTC") for t in texts)
    assert any(t.startswith(f"{SILENT} for 19 min") for t in texts)


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


def test_the_job_frame_has_stalled_since(fleet: Analysis) -> None:
    frame = jobs_frame(fleet.diagnoses)
    assert frame["stalled_since"].dtype == frame["first_seen"].dtype  # UTC timestamps
    stall = _stalled(fleet).stalled
    assert stall is not None
    row = frame[frame.job_id == JOB_ID].iloc[0]
    assert row.stalled_since == pd.Timestamp(stall.since)
    assert row.stall_timeout_at == pd.Timestamp(stall.timeout_at)
    assert stall.cost_to_timeout is not None
    assert row.stall_machine_hours == pytest.approx(stall.cost_to_timeout.machine_hours)
    others = frame[frame.job_id != JOB_ID]
    assert others.stalled_since.isna().all() and others.stall_machine_hours.isna().all()
    assert list(frame[frame.stalled_since.notna()].job_id) == [JOB_ID]


# -- the fleet report --


def test_the_fleet_report_has_a_stalled_section(fleet: Analysis) -> None:
    summary = summarize_analysis(fleet)
    stall = _stalled(fleet).stalled
    assert stall is not None and stall.cost_to_timeout is not None
    machine = stall.cost_to_timeout.machine_hours
    markdown = render_markdown_fleet(summary)
    section = markdown.split("## Stalled jobs (1)", 1)[1].split("\n## ", 1)[0]
    assert f"1 stalled job: the platform bills it until its timeout, {machine:,.1f}" in section
    row = next(line for line in section.splitlines() if line.startswith(f"| {JOB_ID}"))
    assert f"| 2024-04-20 14:00:32 | {SILENT} (19 min) | 2024-04-27 13:48:36 (default) |" in row
    assert f"| {machine:.1f} h | - |" in row
    document = fleet_document(summary)
    assert document["totals"]["stalled"] == 1  # type: ignore[index]
    assert document["totals"]["stall_machine_hours"] == pytest.approx(machine)  # type: ignore[index]
    (listed,) = document["stalled"]  # type: ignore[misc]
    assert listed["job_id"] == JOB_ID and listed["workers"][0]["replica"] == SILENT
    rows = list(csv.DictReader(io.StringIO(render_csv(summary))))
    assert list(rows[0]) == list(CSV_COLUMNS)
    by_job = {r["job_id"]: r for r in rows}
    assert by_job[JOB_ID]["stalled_since"] == "2024-04-20T14:00:32.118149Z"
    assert float(by_job[JOB_ID]["stall_machine_hours"]) == pytest.approx(machine)
    assert {r["stalled_since"] for i, r in by_job.items() if i != JOB_ID} == {""}


def test_the_html_fleet_report_lists_the_stalled_jobs(fleet: Analysis) -> None:
    page = render_html(summarize_analysis(fleet), generated=datetime(2024, 4, 21, tzinfo=UTC))
    section = page.split("<h2>Stalled jobs (1)</h2>", 1)[1].split("<h2>", 1)[0]
    parsed = _Texts()
    parsed.feed(section)
    assert JOB_ID in parsed.texts and f"{SILENT} (19 min)" in parsed.texts
    link = next(a for tag, a in parsed.tags if tag == "a")
    assert f'id="{link["href"][1:]}"' in page  # linked to the job's card
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


def test_follow_announces_a_stall_and_its_end(
    straggler: tuple[Analysis, Path], tmp_path: Path
) -> None:
    analysis, path = straggler
    (running,) = analysis.diagnoses
    stuck = stalled(running, path)
    assert describe_changes(running, stuck) == [
        f"stalled since 14:00 ({SILENT} silent 19 min; the others still write)"
    ]
    assert describe_changes(stuck, stuck) == []
    # The same job cut at the same time with every line kept: workerpool1-1 wrote on.
    whole = tmp_path / "whole.jsonl"
    kept = [e for e in _sample_entries() if e["timestamp"][:19] < "2024-04-20T14:20:00"]
    whole.write_text("".join(json.dumps(e) + "\n" for e in kept), encoding="utf-8")
    (writing,) = analyze([str(whole)]).diagnoses
    assert describe_changes(stuck, writing) == [f"stall over: {SILENT} writes again"]
    # The job's end ends the stall too, whatever the workers did.
    (ended,) = analyze([SAMPLES / "multi-replica-worker-failure.jsonl.gz"]).diagnoses
    changes = describe_changes(stuck, ended)
    assert "stall over: the job ended (FAILED)" in changes
    assert changes[-1] == "final: FAILED after 1 attempt(s), 0 retries"


def test_follow_names_a_worker_that_falls_silent_too(straggler: tuple[Analysis, Path]) -> None:
    analysis, path = straggler
    stuck = stalled(analysis.diagnoses[0], path)
    stall = stuck.stalled
    assert stall is not None
    from dataclasses import replace

    other = replace(stall.workers[0], replica="workerpool1-2")
    worse = replace(stuck, stalled=replace(stall, workers=(*stall.workers, other)))
    assert describe_changes(stuck, worse) == ["workerpool1-2 silent too (19 min)"]


def _sample_entries() -> list[dict[str, object]]:
    import gzip

    with gzip.open(SAMPLES / "multi-replica-worker-failure.jsonl.gz", "rt") as stream:
        return [json.loads(line) for line in stream]
