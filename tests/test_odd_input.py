"""Odd input never makes an internal error (exit 70): timestamps at the ends of what a datetime
holds, a full disk under the report. (The logging endpoint's odd answers: test_live_answers.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analyzer.api import analyze, diagnose
from analyzer.cli.app import app
from analyzer.cli.report_command import render_fleet
from analyzer.report.chart import failure_buckets, time_ticks

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_logs" / "user-code-exit1.jsonl"
FIRST = "0001-01-01T00:00:00Z"
LAST = "9999-12-31T23:59:58Z"


def _retimed(tmp_path: Path, name: str, when: Callable[[int, int], str | None]) -> Path:
    """The sample with line ``i``'s timestamps set to ``when(i, count)`` (None: kept)."""
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    out = []
    for index, line in enumerate(lines):
        stamp = when(index, len(lines))
        entry = json.loads(line)
        if stamp is not None:
            entry["timestamp"] = entry["receiveTimestamp"] = stamp
        out.append(json.dumps(entry))
    path = tmp_path / name
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


EDGES: dict[str, Callable[[int, int], str | None]] = {
    "all-year-1": lambda i, n: FIRST,
    "all-year-9999": lambda i, n: LAST,
    "year-1-then-2024": lambda i, n: FIRST if i < 5 else None,
    "year-1-2024-and-9999": lambda i, n: FIRST if i < 5 else (LAST if i > 200 else None),
}


@pytest.mark.parametrize("edge", sorted(EDGES))
def test_the_html_report_and_the_notebook_chart_take_years_1_and_9999(
    tmp_path: Path, edge: str
) -> None:
    path = _retimed(tmp_path, f"{edge}.jsonl", EDGES[edge])
    result = CliRunner().invoke(app, ["report", "--format", "html", str(path)])
    assert result.exit_code == 0, result.stderr
    assert "<svg" in result.stdout
    html = diagnose(path)._repr_html_()
    assert "<svg" in html
    assert render_fleet(analyze([path]), "markdown")


def test_ticks_and_buckets_at_the_last_instant_stay_inside_it() -> None:
    from datetime import UTC, datetime

    last = datetime.max.replace(tzinfo=UTC)
    first = datetime.min.replace(tzinfo=UTC)
    assert all(first <= t <= last for t in time_ticks(first, last))
    buckets = failure_buckets([(first, "oom"), (last, "oom")])
    assert sum(sum(b.counts.values()) for b in buckets) == 2
    assert buckets[-1].end == last


def test_a_death_at_the_last_instant_is_diagnosed(tmp_path: Path) -> None:
    path = _retimed(tmp_path, "last.jsonl", lambda i, n: "9999-12-31T23:59:59.999999Z")
    assert analyze([path]).diagnoses


def test_a_worker_start_without_a_timestamp_beside_timed_ones(tmp_path: Path) -> None:
    lines = (ROOT / "sample_logs" / "worker-restarts-exhausted.jsonl").read_text().splitlines()
    entries = [json.loads(line) for line in lines]
    from analyzer.classify.collector import classify_sources
    from analyzer.ingest import MemorySource
    from analyzer.rulebook import RuleBook
    from analyzer.rulebook.events import EventKind

    events = classify_sources([MemorySource("\n".join(lines))], RuleBook.load())
    started = [e.origin.line for e in events if e.kind is EventKind.WORKER_STARTED]
    assert len(started) > 1
    for key in ("timestamp", "receiveTimestamp"):
        entries[started[1] - 1].pop(key, None)
    path = tmp_path / "untimed-start.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries) + "\n", encoding="utf-8")
    assert analyze([path]).diagnoses


FULL = Path("/dev/full")
COMMANDS = [
    ["diagnose", str(SAMPLE)],
    ["diagnose", "--format", "json", str(SAMPLE)],
    ["diagnose", "--format", "markdown", str(SAMPLE)],
    ["report", "--format", "html", str(SAMPLE)],
    ["classify", str(SAMPLE)],
    ["explain", "OOMKilled"],
]


@pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:3]))
def test_a_full_disk_under_stdout_is_one_line_and_exit_2(args: list[str]) -> None:
    # Small outputs stay in the buffer until the last flush: that one must not be lost either.
    with FULL.open("wb") as full:
        done = subprocess.run(
            [sys.executable, "-c", "from analyzer.cli.console import main; main()", *args],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "JOBDOCTOR_DEBUG": ""},
            timeout=120,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr == "jobdoctor: cannot write the output: no space left on device\n"


@pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this system")
def test_a_full_disk_under_the_report_file_is_exit_2() -> None:
    result = CliRunner().invoke(app, ["report", "--format", "html", "-o", str(FULL), str(SAMPLE)])
    assert result.exit_code == 2 and "no space left on device" in result.stderr.lower()


@pytest.mark.parametrize("head", [b"\n" * (70 << 10), b" " * (3 << 20) + b"\n"], ids=["lf", "sp"])
@pytest.mark.parametrize("via", ["file", "stdin"])
def test_a_bom_then_a_long_whitespace_head_loses_nothing(
    tmp_path: Path, head: bytes, via: str
) -> None:
    # Found by the corruption campaign: the blank head was only looked past without a BOM.
    data = b"\xef\xbb\xbf" + head + (ROOT / "sample_logs" / "success.jsonl").read_bytes()
    path = tmp_path / "bom-head.jsonl"
    path.write_bytes(data)
    args = ["diagnose", "--format", "json", str(path) if via == "file" else "-"]
    result = CliRunner().invoke(app, args, input=data if via == "stdin" else None)
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    (entry,) = report["inputs"]
    assert entry["records"] == 180 and entry["lines"] == entry["used"] + entry["skipped"]
    assert [job["state"] for job in report["jobs"]] == ["JOB_STATE_SUCCEEDED"]


@pytest.mark.parametrize(
    ("first", "fmt"),
    [
        ("x" * 100_000, "plain-text"),  # a minified blob longer than the sniffed head
        ("ERROR\t2024-03-01 10:00:00 +0000\tworkerpool0-0\t" + "y" * 100_000, "stream-logs"),
    ],
)
def test_a_first_line_longer_than_the_head(tmp_path: Path, first: str, fmt: str) -> None:
    # With no whole line in the head, the text had been taken for stream-logs, and the job's
    # messages after the long line were skipped as "not a stream-logs line".
    path = tmp_path / "long-first.txt"
    rest = (
        "Job failed.\n"
        if fmt == "plain-text"
        else "INFO\t2024-03-01 10:00:01 +0000\tservice\tJob failed.\n"
    )
    path.write_text(first + "\n" + rest)
    analysis = analyze([path])
    (stats,) = analysis.inputs
    assert stats.format == fmt
    assert stats.lines == stats.used + stats.skipped == 2
    assert [d.state.value for d in analysis.diagnoses] == ["JOB_STATE_FAILED"]
