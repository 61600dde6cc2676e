"""Every shape of log users have (issue 14): each diagnoses like the sink export it came from.

The shapes the simulator writes (gcloud's YAML, the Logs Explorer's JSON and CSV downloads and
summary lines, a PowerShell UTF-16 redirect) are compared, scenario by scenario, with the
diagnosis of the same entries as sink JSONL. The shapes it cannot write (gcloud preambles,
the legacy trial column, console copies, a project-wide sink, other payload keys, encodings,
a whitespace head) are built here from its output or the fixtures in ``fixtures/shapes``.
"""

from __future__ import annotations

import codecs
import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from analyzer.api import analyze, analyze_sources
from analyzer.classify._fastscan import blockdecode
from analyzer.classify.collector import collect
from analyzer.cli.app import app
from analyzer.core.errors import InputError
from analyzer.ingest import MemorySource, open_sources
from analyzer.ingest.records import entry_fields
from analyzer.pipeline.analysis import Analysis
from analyzer.rulebook import RuleBook
from analyzer.simulate import SCENARIOS, encoding, expected
from analyzer.verdict.diagnosis import Diagnosis
from analyzer.verdict.jobspec import load_job_spec, parse_job_spec
from tests import corpus

ROOT = Path(__file__).resolve().parents[1]
SHAPES = ROOT / "tests" / "fixtures" / "shapes"
TRIALS = ROOT / "tests" / "fixtures" / "real_shapes" / "hp-tuning-trials.jsonl"
NEW_FORMATS = (
    "yaml",
    "explorer-json",
    "explorer-csv",
    "summary-lines",
    "utf16",
    "web-page",
    "api-response",
)
# Formats whose lines carry no job id: one job per file only.
TEXT = {"summary-lines", "utf16", "stream-logs", "web-page"}
SINK_FORMATS = {
    "yaml": "gcloud-yaml",
    "explorer-json": "gcloud-json",
    "explorer-csv": "logs-explorer-csv",
    "summary-lines": "logs-explorer-summary",
    "utf16": "stream-logs",
    "web-page": "stream-logs",
    "api-response": "logging-api-response",
}


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


# The simulator's text is a pure function of its arguments: made once per run, not per case.
@functools.cache
def _written(scenario: str, fmt: str, seed: int = 1) -> bytes:
    return corpus.written(scenario, fmt, seed).encode(encoding(fmt))


def _verdicts(analysis: Analysis, *, with_ids: bool = True) -> list[tuple[Any, ...]]:
    def one(d: Diagnosis) -> tuple[Any, ...]:
        cause = d.cause
        return (
            d.job_id if with_ids else None,
            d.trial,
            d.state.value,
            d.observed_final,
            d.attempts,
            d.retries,
            (cause.category.value, cause.exit_code, cause.replica) if cause else None,
            {worker: n for worker, n in d.worker_restarts.items() if n},
        )

    return sorted((one(d) for d in analysis.diagnoses), key=repr)


def _analysis(data: bytes | str, name: str) -> Analysis:
    return analyze_sources([MemorySource(data, name)])


CASES = [
    (name, fmt)
    for name in SCENARIOS
    for fmt in NEW_FORMATS
    if not (fmt in TEXT and len(expected(name)) > 1)
]


@functools.cache
def _sink_analysis(scenario: str) -> Analysis:
    """The sink export's analysis, the reference of each shape of ``scenario`` (up to seven)."""
    return _analysis(_written(scenario, "jsonl"), f"{scenario}.jsonl")


@pytest.mark.parametrize(("scenario", "fmt"), CASES)
def test_each_shape_diagnoses_like_its_sink_export(scenario: str, fmt: str) -> None:
    sink = _sink_analysis(scenario)
    shape = _analysis(_written(scenario, fmt), f"{scenario}.{fmt}")
    (stats,) = shape.inputs
    assert stats.format == SINK_FORMATS[fmt]
    assert stats.lines == stats.used + stats.skipped
    ids = fmt not in TEXT
    assert _verdicts(shape, with_ids=ids) == _verdicts(sink, with_ids=ids)


def test_the_csv_download_has_the_real_layout() -> None:
    # Quoted keys inside field paths, the spreadsheet's text mark, a multi-line cell.
    text = _written("user-code-exit1", "explorer-csv").decode()
    header = text.split("\n", 1)[0]
    assert '"\'labels.""compute.googleapis.com/resource_id"""' in header
    assert header.startswith("insertId,jsonPayload.attrs.tag,")
    assert ",'2024-" in text  # timestamps carry the text mark
    assert "\"'The replica workerpool0-0 exited with a non-zero status of 1." in text
    stats = _analysis(text, "dl.csv").inputs[0]
    assert stats.lines > stats.records  # a traceback cell spans lines, all counted
    assert stats.lines == stats.used + stats.skipped and stats.skipped == 0


# One sample file of each simulated shape, kept in fixtures/shapes (JOBDOCTOR_UPDATE_GOLDEN=1
# writes them again from the simulator).
SAMPLES = {
    "oom.gcloud-logging-read.yaml": ("oom", "yaml"),
    "stockout-exhausted.explorer-download.json": ("stockout-exhausted", "explorer-json"),
    "user-code-exit1.explorer-download.csv": ("user-code-exit1", "explorer-csv"),
    "worker-restarts-exhausted.explorer-summary.txt": (
        "worker-restarts-exhausted",
        "summary-lines",
    ),
    "vm-maintenance-restart.powershell-utf16.txt": ("vm-maintenance-restart", "utf16"),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_shape_samples(name: str) -> None:
    scenario, fmt = SAMPLES[name]
    path = SHAPES / name
    data = _written(scenario, fmt, seed=0)
    if os.environ.get("JOBDOCTOR_UPDATE_GOLDEN"):
        path.write_bytes(data)
    assert path.read_bytes() == data, "regenerate with JOBDOCTOR_UPDATE_GOLDEN=1"
    (want,) = expected(scenario, seed=0)
    (got,) = analyze([path]).diagnoses
    assert (got.state.value, got.observed_final, got.attempts) == (
        want.state,
        want.observed_final,
        want.attempts,
    )
    assert (got.cause.category.value if got.cause else None) == want.category


# --- a project-wide sink ---------------------------------------------------------------------

FOREIGN = [
    # A VM's syslog line that reads like the service's.
    {
        "insertId": "gce1",
        "resource": {"type": "gce_instance", "labels": {"instance_id": "1", "zone": "z"}},
        "severity": "ERROR",
        "textPayload": "Job failed.",
        "timestamp": "2024-04-15T05:30:00.000000000Z",
    },
    {
        "insertId": "gce2",
        "resource": {"type": "gce_instance", "labels": {"instance_id": "1"}},
        "jsonPayload": {"message": "Waiting for job to be provisioned."},
        "labels": {"compute.googleapis.com/resource_id": "1"},
        "timestamp": "2024-04-15T05:31:00.000000000Z",
    },
    {
        "insertId": "k8s1",
        "resource": {
            "type": "k8s_container",
            "labels": {"job_id": "7", "task_name": "workerpool0-0"},
        },
        "textPayload": "The replica workerpool0-0 exited with a non-zero status of 1.",
        "timestamp": "2024-04-15T05:32:00.000000000Z",
    },
    # An audit log entry of the job itself.
    {
        "insertId": "audit1",
        "protoPayload": {"methodName": "CreateCustomJob", "status": {"message": "Job failed."}},
        "resource": {"type": "audited_resource", "labels": {"service": "aiplatform"}},
        "timestamp": "2024-04-15T05:33:00.000000000Z",
    },
]


def test_a_project_wide_sink_makes_no_phantom_job(book: RuleBook, tmp_path: Path) -> None:
    lines = _written("project-wide", "jsonl").decode().splitlines(keepends=True)
    clean = tmp_path / "clean.jsonl"
    clean.write_text("".join(lines), encoding="utf-8")
    foreign = [orjson.dumps(entry).decode() + "\n" for entry in FOREIGN]
    mixed = tmp_path / "mixed.jsonl"
    # Foreign lines at the start, in the middle and at the end, many of them: blocks of the
    # fast path hold them beside the jobs' lines.
    middle = len(lines) // 2
    mixed.write_text(
        "".join(foreign * 50 + lines[:middle] + foreign + lines[middle:] + foreign),
        encoding="utf-8",
    )
    want = _verdicts(analyze([clean]))
    assert _verdicts(analyze([mixed])) == want
    if blockdecode.available():
        # The fast path reads such a block at once all the same, its foreign lines decided
        # from the decoded struct as the one mapping decides them, none read again.
        entries = blockdecode.decode_block(mixed.read_bytes())
        assert entries is not None
        skipped = [e.reason for e in entries if isinstance(e, blockdecode.Skipped)]
        assert len(skipped) == len(FOREIGN) * 52
        assert set(skipped) == {entry_fields(entry) for entry in FOREIGN}
    fast = collect(open_sources([str(mixed)]), book, fast=True)
    plain = collect(open_sources([str(mixed)]), book, fast=False)
    assert fast == plain
    (stats,) = fast[1]
    assert stats.skip_reasons["other resource type: gce_instance"] == 2 * 52
    assert stats.skip_reasons["other resource type: k8s_container"] == 52
    assert stats.skip_reasons["other resource type: audited_resource"] == 0
    assert stats.skip_reasons["audit log entry (protoPayload)"] == 52


def test_a_cloudml_job_or_no_resource_belongs_to_jobs() -> None:
    entry = {
        "textPayload": "Job failed.",
        "timestamp": "2024-04-15T05:30:00Z",
        "labels": {"ml.googleapis.com/job_id": "legacy_1", "task_name": "service"},
    }
    legacy = {**entry, "resource": {"type": "cloudml_job", "labels": {"job_id": "legacy_2"}}}
    data = "".join(json.dumps(e) + "\n" for e in (entry, legacy))
    analysis = _analysis(data, "x.jsonl")
    assert sorted(d.job_id for d in analysis.diagnoses) == ["legacy_1", "legacy_2"]


# --- payload keys ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "text"),
    [
        ({"msg": "started", "level": "info"}, "started"),
        ({"log": "a line", "stream": "stderr"}, "a line"),
        ({"text": "hello"}, "hello"),
        ({"event": "checkpoint saved", "step": 3}, "checkpoint saved"),
        ({"step": 3, "loss": 0.5}, '{"step":3,"loss":0.5}'),
        ({"message": 7, "msg": "the msg"}, "the msg"),
    ],
)
def test_payload_keys_give_the_text(
    payload: dict[str, Any], text: str, book: RuleBook, tmp_path: Path
) -> None:
    entry = {
        "jsonPayload": payload,
        "resource": {"type": "ml_job", "labels": {"job_id": "1", "task_name": "workerpool0-0"}},
        "timestamp": "2024-04-15T05:30:00.000000000Z",
    }
    source = MemorySource(json.dumps(entry) + "\n", "p.jsonl")
    (record,) = list(source.records())
    assert record.text == text and record.task == "workerpool0-0"
    # The fast path hands the same line to the same mapping.
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(entry) + "\n", encoding="utf-8")
    assert collect(open_sources([str(path)]), book, fast=True) == collect(
        open_sources([str(path)]), book, fast=False
    )


# --- text shapes ---------------------------------------------------------------------------------

PREAMBLE = """$ gcloud ai custom-jobs create --region=us-central1 --display-name=train \\
    --config=config.yaml
Using endpoint [https://us-central1-aiplatform.googleapis.com/]
CustomJob [projects/482913370215/locations/us-central1/customJobs/8501620632646057984] is submitted successfully.

Your job is still active. You may view the status of your job with the command

  $ gcloud ai custom-jobs describe projects/482913370215/locations/us-central1/customJobs/8501620632646057984

or continue streaming the logs with the command

  $ gcloud ai custom-jobs stream-logs projects/482913370215/locations/us-central1/customJobs/8501620632646057984
"""  # noqa: E501
LEGACY_PREAMBLE = """Job [census_20240508_164011] submitted successfully.
Your job is still active. You may view the status of your job with the command

  $ gcloud ai-platform jobs describe census_20240508_164011

or continue streaming the logs with the command

  $ gcloud ai-platform jobs stream-logs census_20240508_164011
jobId: census_20240508_164011
state: QUEUED
"""


@pytest.mark.parametrize(
    ("preamble", "job_id"),
    [(PREAMBLE, "8501620632646057984"), (LEGACY_PREAMBLE, "census_20240508_164011")],
)
@pytest.mark.parametrize("spaced", [False, True])
def test_a_stream_logs_paste_with_gcloud_lines_around_it(
    preamble: str, job_id: str, spaced: bool
) -> None:
    rows = _written("worker-restarts-exhausted", "stream-logs").decode()
    want = _verdicts(_analysis(rows, "rows.txt"), with_ids=False)
    pasted = preamble + rows + "\nYour job is still active.\n"
    if spaced:  # tabs turned into spaces, as pasting does
        pasted = pasted.replace("\t", "    ")
    analysis = _analysis(pasted, "paste.txt")
    (stats,) = analysis.inputs
    assert stats.format == "stream-logs"
    assert stats.lines == stats.used + stats.skipped
    assert _verdicts(analysis, with_ids=False) == want
    assert want[0][4] >= 1 and want[0][7]  # attempts and restarts did not vanish
    # gcloud's own lines are kept as records: they name the job.
    assert [d.job_id for d in analysis.diagnoses] == [job_id]


def test_legacy_trial_column_keeps_trials_apart() -> None:
    rows = []
    for line in TRIALS.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        text = entry.get("textPayload") or entry["jsonPayload"]["message"]
        stamp = entry["timestamp"][:19].replace("T", " ") + " +0000"
        task = entry["resource"]["labels"]["task_name"]
        trial = entry["labels"]["ml.googleapis.com/trial_id"]
        for part in text.splitlines():
            rows.append(f"{entry['severity']}\t{stamp}\t{task}\t{trial}\t{part}\n")
    analysis = _analysis("".join(rows), "tuning.txt")
    want = [(None, *v[1:]) for v in _verdicts(analyze([TRIALS]))]
    assert _verdicts(analysis, with_ids=False) == want
    assert sorted(d.trial for d in analysis.diagnoses) == ["1", "2"]


def test_a_console_copy_with_the_time_of_day() -> None:
    analysis = analyze([SHAPES / "console-clock.txt"])
    (job,) = analysis.diagnoses
    assert (job.state.value, job.observed_final) == ("JOB_STATE_SUCCEEDED", True)
    records = list(MemorySource((SHAPES / "console-clock.txt").read_bytes()).records())
    assert records[-1].text == "Job completed successfully."


def test_summary_lines_as_the_page_shows_them() -> None:
    text = (
        "Showing logs for last 1 hour\r\n"
        "ERROR 2024-03-01 11:00:00.000 CET [resource.labels.taskName: workerpool0-0] boom\r\n"
        "Traceback (most recent call last):\r\n"
        "INFO 2024-03-01T10:00:01Z OK done  \r\n"
        "INFO 2024-03-01T10:00:02.5+00:00 [resource.labels.taskName: service, "
        'labels."ml.googleapis.com/trial_id": 3] Job failed.\r\n'
    )
    source = MemorySource(text)
    records = list(source.records())
    assert source.stats.format == "logs-explorer-summary"
    assert [(str(r.timestamp), r.task, r.trial, r.text) for r in records] == [
        (
            "2024-03-01 10:00:00+00:00",
            "workerpool0-0",
            None,
            "boom\nTraceback (most recent call last):",
        ),
        ("2024-03-01 10:00:01+00:00", None, None, "OK done  "),
        ("2024-03-01 10:00:02.500000+00:00", "service", "3", "Job failed."),
    ]
    stats = source.stats
    assert (stats.lines, stats.used, stats.skipped) == (5, 4, 1)


TRACEBACK = "Traceback (most recent call last):\n" + '  File "x.py", line 1, in f\n' * 40


@pytest.mark.parametrize(
    ("entry", "form"),
    [
        ("2022-09-21 14:41:46.017 CEST\n\nworkerpool0-0\n" + TRACEBACK, "logs-explorer"),
        (
            "ERROR 2024-03-01T10:00:00Z [resource.labels.taskName: workerpool0-0] " + TRACEBACK,
            "logs-explorer-summary",
        ),
    ],
)
def test_entries_of_many_lines_are_recognised(entry: str, form: str) -> None:
    # Most lines are a traceback's: they belong to the entry above them.
    assert MemorySource("Logs of my job\n" + entry * 3).stats.format == form


def test_a_text_quoting_a_line_of_a_format_is_still_plain_text() -> None:
    text = "".join(f"note {n}: nothing to see\n" for n in range(10))
    text += "INFO\t2024-05-08 16:47:59 +0000\tservice\tJob failed.\n"
    assert MemorySource(text).stats.format == "plain-text"


def test_yaml_documents_with_aliases_are_refused_not_expanded() -> None:
    # gcloud writes no anchors; a payload of nested aliases would render exponentially large.
    bomb = "".join(f"  l{n}: &l{n} [*l{n - 1}, *l{n - 1}, *l{n - 1}]\n" for n in range(1, 30))
    text = (
        "insertId: a\nresource:\n  type: ml_job\ntimestamp: '2024-01-01T00:00:00Z'\n"
        "jsonPayload:\n  l0: &l0 [x]\n" + bomb + "---\ninsertId: b\nresource:\n  type: ml_job\n"
        "  labels:\n    job_id: '1'\n    task_name: service\ntextPayload: Job failed.\n"
        "timestamp: '2024-01-01T00:00:01Z'\n"
    )
    source = MemorySource(text, "bomb.yaml")
    records = list(source.records())
    assert source.stats.format == "gcloud-yaml"
    assert [r.text for r in records] == ["Job failed."]
    assert source.stats.skip_reasons == {"invalid YAML": 35}


# --- nothing recognised --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("notes.txt", "Remember to rotate the keys.\nLunch at noon.\n"),
        ("events.jsonl", '{"event_type": 1}\n{"event_type": 2}\n'),
    ],
)
def test_an_unrecognised_input_is_one_line_and_exit_2(
    name: str, content: str, tmp_path: Path
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    result = CliRunner().invoke(app, ["diagnose", str(path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert str(path) in line and "not a log export" in line and "gcloud logging read" in line


def test_csv_rows_without_their_header_say_what_is_missing(tmp_path: Path) -> None:
    """Rows of a CSV download pasted without the header (tests/real/gh-tensorflow-models-
    9832-L): no column can be told by its value, so the run says the header is missing rather
    than reading the rows as plain text that holds "no job"."""
    header, rows = _written("oom", "explorer-csv").decode().split("\n", 1)
    path = tmp_path / "rows.csv"
    path.write_text(rows, encoding="utf-8")
    result = CliRunner().invoke(app, ["diagnose", str(path)])
    assert result.exit_code == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert str(path) in line and "without their header row" in line
    path.write_text(header + "\n" + rows, encoding="utf-8")
    assert _verdicts(analyze([path])) == _verdicts(_analysis(_written("oom", "jsonl"), "oom"))


# --- encodings and blank heads -------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["jsonl", "yaml", "explorer-csv", "stream-logs"])
@pytest.mark.parametrize("codec", ["utf-8-sig", "utf-16-le", "utf-16-be", "utf-16"])
def test_byte_order_marks_and_utf16(fmt: str, codec: str, tmp_path: Path) -> None:
    text = _written("oom", fmt).decode()
    want = _verdicts(_analysis(text, f"oom.{fmt}"))
    data = text.encode(codec)
    if codec in ("utf-16-le", "utf-16-be"):
        bom = codecs.BOM_UTF16_LE if codec == "utf-16-le" else codecs.BOM_UTF16_BE
        data = bom + data
    path = tmp_path / f"oom.{fmt}"
    path.write_bytes(data)
    analysis = analyze([path])  # a file: the sink JSONL in UTF-16 must not take the fast path
    assert _verdicts(analysis) == want
    (stats,) = analysis.inputs
    assert stats.lines == stats.used + stats.skipped and not stats.invalid_utf8


def test_invalid_utf8_is_replaced_and_counted() -> None:
    rows = _written("oom", "stream-logs").replace(b"Running", b"Runn\xffing", 1)
    analysis = _analysis(rows, "bad.txt")
    (stats,) = analysis.inputs
    assert stats.invalid_utf8 == 1 and stats.to_dict()["invalid_utf8"] == 1
    assert _verdicts(analysis) == _verdicts(_analysis(_written("oom", "stream-logs"), "ok.txt"))


@pytest.mark.parametrize("blank", [b" " * 70_000, b"\n" * 70_000, b"\r\n \t" * 30_000])
def test_a_whitespace_head_loses_no_record(blank: bytes, tmp_path: Path) -> None:
    export = _written("user-code-exit1", "jsonl")
    want = _analysis(export, "x.jsonl")
    path = tmp_path / "head.jsonl"
    path.write_bytes(blank + export)
    got = analyze([path])
    assert _verdicts(got) == _verdicts(want)
    (stats,) = got.inputs
    assert stats.format == "cloud-logging-jsonl"
    assert stats.records == want.inputs[0].records
    assert stats.lines == stats.used + stats.skipped
    # stdin too (a stream: its head is kept and replayed).
    done = subprocess.run(
        [sys.executable, "-m", "analyzer.cli", "diagnose", "--format", "json", "-"],
        input=blank + export,
        capture_output=True,
        check=True,
        cwd=ROOT,
    )
    (piped,) = json.loads(done.stdout)["inputs"]
    assert piped["records"] == stats.records and piped["format"] == "cloud-logging-jsonl"


def test_binary_after_a_whitespace_head_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "odd.txt"
    path.write_bytes(b" \n" * 100_000 + b"abc" + b"\x00" * 4096 + b"def\n")
    with pytest.raises(InputError, match=r"odd\.txt: binary data \(NUL byte\) at line 100001,"):
        open_sources([str(path)])


def test_a_few_nul_bytes_are_a_damaged_line_not_a_binary_file(tmp_path: Path) -> None:
    # A crashed log writer leaves NUL bytes where its last block was: the line holding them
    # is skipped (counted, with its reason) and every other line is read.
    export = _written("user-code-exit1", "jsonl")
    want = _analysis(export, "x.jsonl")
    lines = export.split(b"\n")
    lines.insert(1, b'{"textPayload":"half a line' + b"\x00" * 3)
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(b"\n".join(lines))
    got = analyze([path])
    assert _verdicts(got) == _verdicts(want)
    (stats,) = got.inputs
    assert stats.records == want.inputs[0].records
    assert stats.lines == stats.used + stats.skipped == want.inputs[0].lines + 1
    assert stats.skipped == want.inputs[0].skipped + 1


# --- the job's describe output -------------------------------------------------------------------


def test_job_spec_in_describes_yaml(tmp_path: Path) -> None:
    spec = load_job_spec(SHAPES / "describe.yaml")
    assert spec.job_id == "8501620632646057984" and spec.state == "JOB_STATE_FAILED"
    assert (spec.error_code, spec.strategy) == (8, "SPOT")
    assert spec.pools[0].machine_type == "n1-standard-4" and spec.pools[0].replica_count == 1
    # The same job as JSON reads the same.
    import yaml

    lines = (SHAPES / "describe.yaml").read_text(encoding="utf-8").splitlines()[1:]
    as_json = tmp_path / "describe.json"
    as_json.write_text(json.dumps(yaml.safe_load("\n".join(lines)), default=str))
    assert load_job_spec(as_json) == spec == parse_job_spec(json.loads(as_json.read_text()))


def test_a_broken_yaml_job_spec_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "describe.yaml"
    path.write_text("name: projects/p/locations/l/customJobs/1\nstate: [unclosed\n")
    with pytest.raises(InputError, match=r"describe\.yaml: not a job spec \(invalid YAML at line"):
        load_job_spec(path)


def test_a_yaml_paste_cut_inside_its_last_document_is_the_job_alone() -> None:
    """gcloud's YAML cut in the middle of its last document (a paste, a full terminal): the
    cut entry has its text but no resource and no time; it makes no second job, and no
    "no Vertex AI job message" notice about the input that holds the job."""
    whole = _written("user-code-exit1", "yaml").decode()
    cut = whole + (
        "---\ninsertId: abc\njsonPayload:\n  message: 'step 3 loss 0.2'\nlabels:\n"
        "  ml.googleapis.com/job_id/log_area: root\nlogName: projects/acme-ml-prod/logs/ml.goo"
    )
    analysis = _analysis(cut, "cut.yaml")
    assert _verdicts(analysis) == _verdicts(_analysis(whole, "whole.yaml"))
    assert not [n for n in analysis.notices if "no Vertex AI job message" in n]
    (stats,) = analysis.inputs
    assert stats.lines == stats.used + stats.skipped
