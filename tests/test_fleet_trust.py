"""The fleet view a platform team can trust (issue 33), over sample_logs/ and a simulated fleet:

1. totals count what the logs show, predictions apart and marked;
2. failed and recovered jobs apart, and ``groupby`` on the frames gives the report's figures;
3. recurring failures grouped by signature;
4. jobs without an id labelled one way everywhere, chosen with ``--job``;
5. the table keeps every column at 80 columns (a real terminal, through tmux), ``report`` on a
   terminal prints Markdown, ``diagnose -`` on a terminal says how to end a paste.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

from analyzer.api import analyze
from analyzer.classify.tracebacks import ExceptionInfo, Frame
from analyzer.cli.app import app
from analyzer.cli.report_command import render_fleet
from analyzer.frames import jobs_frame, signatures_frame
from analyzer.ingest.records import Origin
from analyzer.pipeline.analysis import Analysis
from analyzer.report.facts import job_label, verdict_line
from analyzer.report.fleet import FleetSummary, fleet_document, summarize_analysis
from analyzer.report.html import render_html
from analyzer.report.overview import summary_line
from analyzer.report.signatures import cause_signature, normalise
from analyzer.report.table import TABLE_HEADER, WIDE_HEADER, fold, table_lines
from analyzer.rulebook.events import Category
from analyzer.simulate import SCENARIOS, simulate, write
from analyzer.verdict.diagnosis import Cause, Diagnosis, JobState
from tests.terminal import run_in_terminal

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
runner = CliRunner()
SEEDS = (0, 1, 2)
# A scenario's jobs, one per seed, share the failure that ends them: one signature each
# (project-wide interleaves jobs of several kinds).
ONE_KIND = sorted(set(SCENARIOS) - {"project-wide"})


@pytest.fixture(scope="module")
def samples() -> Analysis:
    return analyze([SAMPLES])


@pytest.fixture(scope="module")
def simulated_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every scenario of the simulator with three seeds: a fleet of 75 jobs."""
    root = tmp_path_factory.mktemp("fleet")
    for name in SCENARIOS:
        for seed in SEEDS:
            with (root / f"{name}-{seed}.jsonl").open("w", encoding="utf-8") as out:
                write(simulate(name, seed), "jsonl", out, seed=seed)
    return root


@pytest.fixture(scope="module")
def simulated(simulated_dir: Path) -> Analysis:
    return analyze([simulated_dir])


@pytest.fixture(params=["samples", "simulated"])
def fleet(request: pytest.FixtureRequest) -> Analysis:
    analysis = request.getfixturevalue(request.param)
    assert isinstance(analysis, Analysis)
    return analysis


def cli(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def seen_retries(diagnosis: Diagnosis) -> int:
    """The retries the logs show, counted off the attempts they hold."""
    if diagnosis.observed_final:
        return diagnosis.retries
    return max(0, len(diagnosis.attempt_log) - 1)


# 1. Observed and predicted apart.


def test_every_total_counts_what_the_logs_show_and_predictions_apart(fleet: Analysis) -> None:
    summary = summarize_analysis(fleet)
    seen = sum(seen_retries(d) for d in fleet.diagnoses)
    final = sum(d.retries for d in fleet.diagnoses)
    predicted = final - seen
    assert predicted > 0  # truncated-stockout: 2 attempts in the logs, 4 predicted
    assert (summary.retries, summary.retries_predicted) == (seen, predicted)
    said = f"{seen} ({predicted} more predicted)"
    assert f"{seen} retries ({predicted} more predicted)" in summary_line(fleet.diagnoses)
    assert f"- retries spent: {said}" in render_fleet(fleet, "markdown")
    assert f"retries spent ({predicted} more predicted)" in render_html(summary)
    rows = list(csv.DictReader(io.StringIO(render_fleet(fleet, "csv"))))
    assert sum(int(r["retries"]) for r in rows) == seen
    assert sum(int(r["retries_predicted"]) for r in rows) == predicted
    totals = fleet_document(summary)["totals"]
    assert isinstance(totals, dict)
    assert (totals["retries"], totals["retries_predicted"]) == (seen, predicted)
    frame = jobs_frame(fleet.diagnoses)
    assert (frame["retries"].sum(), frame["retries_predicted"].sum()) == (seen, predicted)
    assert (frame["attempts"] + frame["attempts_predicted"]).sum() == sum(
        d.attempts for d in fleet.diagnoses
    )


def test_a_predicted_count_is_marked_wherever_it_is_printed() -> None:
    one = analyze([SAMPLES / "truncated-stockout.jsonl"])
    (diagnosis,) = one.diagnoses
    assert (diagnosis.attempts, len(diagnosis.attempt_log), diagnosis.observed_final) == (
        4,
        2,
        False,
    )
    assert "2 attempts, 1 retry (2 more of each predicted)" in verdict_line(diagnosis)
    (row,) = [str(t) for t in table_lines(one.diagnoses, None)][1:]
    assert re.search(r"FAILED\?\s+2\+2\?\s+1\+2\?\s", row), row
    _, text, _ = cli("diagnose", str(SAMPLES / "truncated-stockout.jsonl"))
    assert "2 attempts, 1 retry (2 more of each predicted)" in text
    html = render_html(summarize_analysis(one))
    assert "<td class='num'>2+2?</td><td class='num'>1+2?</td>" in html
    assert "| 1+2? |" in render_fleet(one, "markdown")


# 2. Failed and recovered apart; groupby gives the report's figures.


def _grouped(frame: pd.DataFrame, outcome: str) -> dict[str, tuple[int, timedelta, float]]:
    rows = frame[frame["outcome"] == outcome]
    grouped = rows.groupby("category", observed=True).agg(
        jobs=("job", "size"), lost=("time_lost", "sum"), hours=("machine_hours", "sum")
    )
    return {
        str(category): (int(r.jobs), r.lost.to_pytimedelta(), round(float(r.hours), 3))
        for category, r in grouped.iterrows()
    }


def _counted(counts: object) -> dict[str, tuple[int, timedelta, float]]:
    assert isinstance(counts, tuple)
    return {c.category: (c.jobs, c.time_lost, round(c.machine_hours, 3)) for c in counts}


def test_causes_count_failed_jobs_recovered_ones_apart(fleet: Analysis) -> None:
    summary = summarize_analysis(fleet)
    frame = jobs_frame(fleet.diagnoses)
    failed = sum(d.state is JobState.FAILED for d in fleet.diagnoses)
    recovered = sum(d.state is JobState.SUCCEEDED and d.cause is not None for d in fleet.diagnoses)
    assert failed and recovered
    assert summary.outcomes["failed"] == failed and summary.outcomes["recovered"] == recovered
    assert sum(c.jobs for c in summary.by_category) + summary.failed_unexplained == failed
    assert sum(c.jobs for c in summary.recovered) == recovered
    # What the notebook's groupby says is what the report says.
    assert _grouped(frame, "failed") == _counted(summary.by_category)
    assert _grouped(frame, "recovered") == _counted(summary.recovered)
    assert frame["outcome"].value_counts()[lambda c: c > 0].to_dict() == dict(summary.outcomes)
    # And the JSON fleet's job rows, for a dashboard.
    document = json.loads(render_fleet(fleet, "json"))["fleet"]
    jobs = pd.DataFrame(document["jobs"])
    by_outcome = jobs.groupby("outcome").size().to_dict()
    assert by_outcome == document["totals"]["outcomes"]
    failed_rows = jobs[jobs["outcome"] == "failed"].groupby("category").size().to_dict()
    assert failed_rows == {c["category"]: c["jobs"] for c in document["by_category"]}
    markdown = render_fleet(fleet, "markdown")
    assert f"## Failed jobs by cause ({failed} failed)" in markdown
    assert f"## Recovered from ({recovered} jobs succeeded after a failure)" in markdown
    assert "| `vertex.stockout: stockout, us-central1` |" in markdown


def test_the_samples_causes_add_up_to_the_failed_jobs(samples: Analysis) -> None:
    summary = summarize_analysis(samples)
    # 13 jobs show a user-code exception; 2 of them got past it and succeeded.
    assert {c.category: c.jobs for c in summary.by_category}["user_code_exception"] == 11
    assert {c.category: c.jobs for c in summary.recovered} == {
        "user_code_exception": 2,
        "worker_restarts_exhausted": 1,
    }
    assert sum(c.jobs for c in summary.by_category) == summary.failed == 17


# 3. Recurring failures.


def test_each_scenarios_failure_is_one_signature_across_seeds(simulated: Analysis) -> None:
    summary = summarize_analysis(simulated)
    by_job = {j.job: j for j in summary.jobs}
    groups = {r.signature: set(r.jobs) for r in summary.signatures}
    for name in ONE_KIND:
        jobs = [
            d
            for d in simulated.diagnoses
            if d.cause is not None and Path(by_job[job_label(d)].path or "").name.startswith(name)
        ]
        if not jobs:
            continue
        signatures = {cause_signature(d.cause) for d in jobs if d.cause is not None}
        assert len(signatures) == 1, (name, signatures)
        (signature,) = signatures
        # Every seed's job is in that signature's group.
        assert {job_label(d) for d in jobs} <= groups[signature], name
        assert len(jobs) == len(SEEDS), name


def _signature_rows(summary: FleetSummary) -> list[dict[str, object]]:
    rows = fleet_document(summary)["signatures"]
    assert isinstance(rows, list)
    return rows


def test_recurring_failures_in_every_format_most_costly_first(fleet: Analysis) -> None:
    summary = summarize_analysis(fleet)
    lost = [r.time_lost for r in summary.signatures]
    assert lost == sorted(lost, reverse=True) and len(lost) > 5
    # Every failed attempt (a cancellation is no failure), under one signature each.
    failures = {c.value for c in Category if c is not Category.CANCELLED} | {"failed"}
    failed_attempts = sum(a.outcome in failures for d in fleet.diagnoses for a in d.attempt_log)
    assert sum(r.attempts for r in summary.signatures) == failed_attempts
    rows = _signature_rows(summary)
    wanted = {"signature", "exception", "message", "frame", "category", "jobs", "attempts"}
    wanted |= {"first_seen", "last_seen", "time_lost_s", "machine_hours", "job_ids"}
    assert all(wanted <= set(row) for row in rows)
    assert [row["signature"] for row in rows] == [r.signature.text for r in summary.signatures]
    frame = signatures_frame(fleet.diagnoses)
    assert list(frame["signature"]) == [row["signature"] for row in rows]
    assert list(frame["jobs"]) == [row["jobs"] for row in rows]
    assert frame["time_lost_s"].tolist() == [row["time_lost_s"] for row in rows]
    markdown = render_fleet(fleet, "markdown")
    section = markdown.split("## Recurring failures", 1)[1].split("\n## ", 1)[0]
    assert section.count("\n| ") - 1 == len(rows)
    html = render_html(summary)
    assert (
        "<h2>Recurring failures</h2>" in html
        and 'href="#job-' in html.split("<h2>Recurring failures</h2>", 1)[1].split("<h2>", 1)[0]
    )
    signatures_csv = list(
        csv.DictReader(io.StringIO(render_fleet(fleet, "csv", group_by="signature")))
    )
    assert [r["signature"] for r in signatures_csv] == [row["signature"] for row in rows]


def test_the_table_groups_by_signature(samples: Analysis) -> None:
    code, out, _ = cli("diagnose", "--format", "table", "--group-by", "signature", str(SAMPLES))
    assert code == 0
    summary = summarize_analysis(samples)
    headings = [line for line in out.splitlines() if re.search(r"\(\d+ jobs?, \d+ failed", line)]
    assert [h.rsplit(" (", 1)[0] for h in headings] == [
        r.signature.text for r in summary.signatures
    ]
    assert "KeyError: 'label' at " in out and "(2 jobs, 2 failed attempts" in out
    code, _, err = cli("diagnose", "--group-by", "signature", str(SAMPLES))
    assert code == 2 and "--format table" in err


# Variable parts: numbers, gs:// paths under a bucket, hex, ids, sizes, times (two values of
# one kind differ "only in a number or a path").
_WORD = st.text("ghijklmnopqrstuvwxyz", min_size=1, max_size=8)
_KINDS = (
    st.integers(min_value=0, max_value=10**12).map(str),
    st.floats(min_value=0, max_value=1e6, allow_nan=False).map(lambda f: f"{f:.3f}"),
    st.lists(st.text("abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1), min_size=1).map(
        lambda parts: "gs://acme-data/" + "/".join(parts)
    ),
    st.lists(st.text("abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1), min_size=1).map(
        lambda parts: "/data/" + "/".join(parts)
    ),
    st.integers(min_value=0, max_value=2**63).map(hex),
    st.uuids().map(str),
    st.integers(min_value=1, max_value=4096).map(lambda n: f"{n}.00 GiB"),
    st.datetimes().map(lambda t: t.isoformat() + "Z"),
)
_TWO_VALUES = st.sampled_from(_KINDS).flatmap(lambda kind: st.tuples(kind, kind))


def _cause(kind: str, message: str, line: int, function: str = "train") -> Cause:
    frame = Frame("/root/.local/lib/python3.10/site-packages/trainer/task.py", line, function)
    return Cause(
        category=Category.USER_CODE_EXCEPTION,
        rule="vertex.user-code-exception",
        lang="en",
        replica="workerpool0-0",
        exit_code=1,
        region=None,
        message="The replica workerpool0-0 exited with a non-zero status of 1.",
        evidence=(Origin("job.jsonl", line),),
        attempt=1,
        exception=ExceptionInfo(kind, message, frame, (frame,)),
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_WORD, min_size=1, max_size=4),
    st.lists(_WORD, min_size=1, max_size=4),
    _TWO_VALUES,
    st.integers(min_value=1, max_value=5000),
    st.integers(min_value=1, max_value=5000),
)
def test_a_number_or_a_path_apart_is_one_signature(
    head: list[str], tail: list[str], values: tuple[str, str], line: int, moved: int
) -> None:
    one, other = values

    def message(value: str) -> str:
        return f"{' '.join(head)} {value} {' '.join(tail)}"

    # The same exception, at the same frame moved by some lines, with another variable part.
    first = cause_signature(_cause("ValueError", message(one), line))
    second = cause_signature(_cause("ValueError", message(other), moved))
    assert first == second
    assert normalise(normalise(message(one))) == normalise(message(one))


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["ValueError", "KeyError", "RuntimeError", "torch.cuda.OutOfMemoryError"]),
    st.sampled_from(["TypeError", "OSError", "IndexError"]),
    st.lists(_WORD, min_size=1, max_size=6).map(" ".join),
    st.sampled_from(["train", "forward"]),
)
def test_different_exceptions_at_one_frame_are_two_signatures(
    one: str, other: str, message: str, function: str
) -> None:
    first = cause_signature(_cause(one, message, 10, function))
    second = cause_signature(_cause(other, message, 10, function))
    assert first != second and first.text != second.text
    # And one exception at two functions is two.
    elsewhere = cause_signature(_cause(one, message, 10, function + "_step"))
    assert elsewhere != first


def test_a_failure_without_a_traceback_is_its_rule_and_fields(samples: Analysis) -> None:
    summary = summarize_analysis(samples)
    texts = [r.signature.text for r in summary.signatures]
    assert "vertex.stockout: stockout, us-central1" in texts
    stockout = next(r for r in summary.signatures if r.signature.category == "stockout")
    assert (len(stockout.jobs), stockout.attempts) == (3, 10)
    assert stockout.signature.exception is None and stockout.signature.region == "us-central1"


# 4. Jobs without an id.


def test_a_job_without_an_id_has_one_label_everywhere(samples: Analysis, tmp_path: Path) -> None:
    unnamed = [d for d in samples.diagnoses if d.job_id is None]
    assert len(unnamed) == 2
    labels = {job_label(d) for d in unnamed}
    assert len(labels) == 2
    for label in labels:
        assert re.fullmatch(r"\(no id\) .+\.(txt):\d+", label), label
    _, text, _ = cli("diagnose", str(SAMPLES))
    _, table, _ = cli("diagnose", "-f", "table", str(SAMPLES))
    _, markdown, _ = cli("diagnose", "-f", "markdown", str(SAMPLES))
    report = render_fleet(samples, "markdown")
    html = render_html(summarize_analysis(samples))
    frame = jobs_frame(samples.diagnoses)
    for label in labels:
        assert f"job {label}  FAILED" in text
        assert table.count(label) == 1
        assert label in markdown and label in report and label in html
    assert frame["job"].notna().all() and len(frame.groupby("job")) == len(frame)
    assert set(frame.loc[frame["job_id"].isna(), "job"]) == labels


def test_a_job_without_an_id_is_chosen_by_its_label(samples: Analysis) -> None:
    label = next(job_label(d) for d in samples.diagnoses if d.job_id is None)
    code, out, err = cli("diagnose", "--job", label, "-f", "json", str(SAMPLES))
    assert code == 0, err
    (job,) = json.loads(out)["jobs"]
    assert job["job_id"] is None
    code, _, err = cli("diagnose", "--job", "(no id) nowhere.txt:1", str(SAMPLES))
    assert code == 2 and "(no id) nowhere.txt:1" in err and err.count("\n") == 1


# 5. At 80 columns, and on a terminal.


def _recorded(analysis: Analysis, width: int) -> list[str]:
    console = Console(
        width=width, record=True, force_terminal=True, color_system=None, file=io.StringIO()
    )
    for line in table_lines(analysis.diagnoses, width):
        console.print(line, soft_wrap=True)
    return console.export_text().splitlines()


@pytest.mark.parametrize("width", [40, 72, 80, 100, 120, 160])
def test_the_table_keeps_every_column_at_any_width(fleet: Analysis, width: int) -> None:
    lines = _recorded(fleet, width)
    # Down to 70 columns it fits; narrower, rows run past rather than lose a column.
    assert max(map(cell_len, lines)) <= max(width, 70)
    head = lines[0].split()
    assert head[:2] == ["JOB", "STATE"] and head[-1] == "CAUSE"
    assert len([h for h in head if h in {"ATTEMPTS", "ATT", "RETRIES", "RETR"}]) == 2
    assert "RESTARTS" in head or "RSTRT" in head
    # Every job id is in its row, whole.
    text = "\n".join(lines)
    assert all(d.job_id in text for d in fleet.diagnoses if d.job_id)


def test_fold_breaks_at_words_then_inside_long_names() -> None:
    assert fold("recovered from user_code_exception", 16) == [
        "recovered from",
        "user_code_",
        "exception",
    ]
    assert fold("recovered from worker_restarts_exhausted", 20) == [
        "recovered from",
        "worker_restarts_",
        "exhausted",
    ]
    assert fold("2024-05-08 17:06:03", 10) == ["2024-05-08", "17:06:03"]


def test_wide_adds_columns_and_folds_nothing(samples: Analysis) -> None:
    code, out, _ = cli("diagnose", "-f", "wide", str(SAMPLES))
    lines = out.splitlines()
    assert code == 0 and len(lines) == 1 + len(samples.diagnoses)
    for name in WIDE_HEADER:
        assert name in lines[0]
    assert len(WIDE_HEADER) > len(TABLE_HEADER)
    assert "vertex.stockout: stockout, us-central1" in out


TMUX = shutil.which("tmux")


@pytest.fixture
def tmux() -> Iterator[tuple[str, str]]:
    """A private tmux server (its own socket) with one 80x24 window; killed at the end."""
    if TMUX is None:
        pytest.skip("tmux is not installed (apt-get install -y tmux)")
    socket = f"jobdoctor-{uuid.uuid4().hex[:8]}"
    yield TMUX, socket
    subprocess.run([TMUX, "-L", socket, "kill-server"], capture_output=True, check=False)


def _start(tmux: tuple[str, str], command: str) -> None:
    binary, socket = tmux
    shell = f"cd {ROOT} && PYTHONPATH={ROOT} {sys.executable} -m analyzer.cli.app {command}"
    shell += "; echo __EXIT=$?; sleep 60"
    subprocess.run(
        [binary, "-L", socket, "new-session", "-d", "-x", "80", "-y", "24", shell], check=True
    )


def _screen(tmux: tuple[str, str], until: str, timeout: float = 60) -> str:
    binary, socket = tmux
    deadline = time.monotonic() + timeout
    while True:
        shown = subprocess.run(
            [binary, "-L", socket, "capture-pane", "-p", "-J", "-S", "-5000"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        if until in shown or time.monotonic() > deadline:
            return shown
        time.sleep(0.2)


def test_an_80_by_24_terminal_shows_every_column(tmux: tuple[str, str], samples: Analysis) -> None:
    _start(tmux, "diagnose -f table sample_logs/")
    shown = _screen(tmux, "__EXIT=")
    assert "__EXIT=0" in shown, shown
    lines = [line for line in shown.splitlines() if line.strip()][:-1]
    assert max(map(cell_len, lines)) <= 80
    assert lines[0].split() == ["JOB", "STATE", "ATT", "RETR", "RSTRT", "LAST", "SEEN", "CAUSE"]
    table = "\n".join(lines)
    for diagnosis in samples.diagnoses:
        if diagnosis.job_id:
            assert re.search(rf"^{diagnosis.job_id} +[A-Z]+\??\s+\d", table, re.M), diagnosis
    assert table.count("recovered from") == 3
    assert not re.search(r"recove$|^\s*red from", table, re.M)


def test_diagnose_stdin_on_a_terminal_says_how_to_end_and_ends_at_the_first_ctrl_d(
    tmux: tuple[str, str],
) -> None:
    binary, socket = tmux
    _start(tmux, "diagnose -")
    assert "paste the log, then Ctrl-D" in _screen(tmux, "Ctrl-D")
    line = (
        "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error."
    )
    subprocess.run([binary, "-L", socket, "send-keys", "-l", line], check=True)
    subprocess.run([binary, "-L", socket, "send-keys", "Enter"], check=True)
    time.sleep(0.3)
    subprocess.run([binary, "-L", socket, "send-keys", "C-d"], check=True)
    shown = _screen(tmux, "__EXIT=", timeout=30)
    assert "__EXIT=0" in shown and "user_code_exception" in shown, shown


@pytest.mark.skipif(sys.platform == "win32", reason="no pseudo-terminals here")
def test_report_on_a_terminal_without_out_prints_markdown() -> None:
    done = run_in_terminal(["report", str(SAMPLES)], 80, env={"NO_COLOR": "1"})
    assert done.code == 0, done.stderr
    assert done.text.startswith("# jobdoctor fleet report")
    assert "## Recurring failures" in done.text and "--out" in done.stderr


def test_a_cancellation_is_no_recurring_failure(tmp_path: Path) -> None:
    from tests.test_fleet_costs import CANCEL_RULE, CANCELLED, QUOTA

    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "cancel.yaml").write_text(CANCEL_RULE)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "cancelled.stream-logs.txt").write_text(CANCELLED)
    (logs / "quota.stream-logs.txt").write_text(QUOTA)
    summary = summarize_analysis(analyze([logs], rules_dirs=[rules]))
    assert {j.outcome for j in summary.jobs} == {"cancelled", "failed"}
    (group,) = summary.signatures
    assert group.signature.category == "quota"
    assert group.jobs == tuple(j.job for j in summary.jobs if j.outcome == "failed")


@given(st.text(max_size=400))
def test_normalising_is_idempotent(message: str) -> None:
    once = normalise(message)
    assert normalise(once) == once and len(once) <= 200
