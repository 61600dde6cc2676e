"""The notebook API: lists of paths and the CLI's options, short ``str``/``repr`` for a plain
REPL, ``dir(analyzer)``, and the notebook views executed in a real Jupyter kernel (nbclient)."""

from __future__ import annotations

import glob
import itertools
import re
from pathlib import Path

import pandas as pd
import pytest

import analyzer
from analyzer import diagnose, diagnose_frame
from analyzer.report.chart import label_extent, place_labels, timeline_svg
from analyzer.report.html import diagnosis_repr_html

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"


def test_dir_lists_the_lazy_names() -> None:
    names = dir(analyzer)
    assert {"diagnose", "diagnose_frame", "read_logs", "Diagnosis", "DiagnosisList"} <= set(names)


def test_a_list_of_paths_from_glob_is_accepted() -> None:
    paths = sorted(glob.glob(str(SAMPLES / "*.jsonl")))
    frame = diagnose_frame(paths)
    one_by_one = diagnose_frame(*paths)
    pd.testing.assert_frame_equal(frame, one_by_one)
    assert len(diagnose(paths)) == len(frame) > 5


def test_the_clis_options_are_accepted(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(
        '{"name": "projects/p/locations/us-central1/customJobs/1597253863006895240",'
        ' "state": "JOB_STATE_FAILED", "error": {"code": 3},'
        ' "jobSpec": {"workerPoolSpecs": [{"machineSpec": {"machineType": "a2-highgpu-1g",'
        ' "acceleratorType": "NVIDIA_TESLA_A100", "acceleratorCount": 1}, "replicaCount": "1"}]}}'
    )
    sample = SAMPLES / "user-code-exit1.jsonl"
    (job,) = diagnose(sample, job_spec=spec, rules_dirs=[], policy_path=None)
    assert job.job_spec is not None and job.job_spec.agrees
    frame = diagnose_frame([sample], job_spec=spec)
    assert frame.loc[0, "accelerator_hours"] == pytest.approx(frame.loc[0, "machine_hours"])


def test_the_frame_says_which_job_and_uses_categoricals() -> None:
    frame = diagnose_frame(SAMPLES)
    assert {"trial", "path"} <= set(frame.columns)
    assert isinstance(frame["state"].dtype, pd.CategoricalDtype)
    assert isinstance(frame["category"].dtype, pd.CategoricalDtype)
    assert "JOB_STATE_CANCELLED" in frame["state"].cat.categories  # zero counts listed too
    assert frame["path"].str.startswith(str(SAMPLES)).all()


def test_str_is_the_verdict_and_repr_is_short() -> None:
    (job,) = diagnose(SAMPLES / "user-code-exit1.jsonl")
    assert str(job) == (
        "job 1597253863006895240: FAILED (observed), 1 attempt, 0 retries"
        " - user_code_exception, workerpool0-0, exit 1"
    )
    assert repr(job) == (
        "<Diagnosis job 1597253863006895240: FAILED (observed), 1 attempt, user_code_exception>"
    )
    for every in diagnose(SAMPLES):
        assert len(repr(every)) < 200
    assert str(diagnose(SAMPLES / "success.jsonl")).startswith("job 8566909446933600196: ")


def test_the_badge_never_clips_the_job_id() -> None:
    (job,) = diagnose(SAMPLES / "user-code-exit1.jsonl")
    html = diagnosis_repr_html(job)
    heading = re.search(r"<h3>(.*?)</h3>", html)
    assert heading is not None
    # The id is its own element that may wrap, beside a badge that does not shrink.
    assert "<span class='jd-id'>job 1597253863006895240</span>" in heading[1]
    assert "flex:none" in html and "overflow-wrap:anywhere" in html


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.iterdir()))
def test_chart_time_labels_never_collide(sample: str) -> None:
    for job in diagnose(SAMPLES / sample):
        svg = timeline_svg(job)
        labels = re.findall(
            r'<text class="jd-tick" x="([\d.]+)" y="[\d.]+" text-anchor="(\w+)"[^>]*>([^<]+)<',
            svg,
        )
        spans = sorted(label_extent(float(x), text, anchor) for x, anchor, text in labels)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), spans
        assert all(lo >= 0 and hi <= 960 for lo, hi in spans)


def test_dense_labels_are_thinned_not_overprinted() -> None:
    points = [(100.0 + 30 * i, "03-14 16:00") for i in range(20)]
    placed = place_labels(points, 0, 500)
    spans = [label_extent(x, t, a) for x, t, a in placed]
    assert 1 < len(placed) < len(points)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))
    assert all(lo >= 0 and hi <= 500 for lo, hi in spans)


NOTEBOOK_CELLS = [
    "import glob\nimport analyzer\nfrom analyzer import diagnose, diagnose_frame",
    "sorted(n for n in dir(analyzer) if not n.startswith('_'))",
    "jobs = diagnose(sorted(glob.glob(SAMPLES + '/*.jsonl')))\njobs",
    "jobs[0]",
    "print(jobs[0])",
    "frame = diagnose_frame(glob.glob(SAMPLES + '/*.jsonl'))\n"
    "frame[['job_id', 'state', 'category', 'time_lost', 'path']].head()",
    "frame['state'].value_counts()",
]


def test_the_notebook_views_run_in_a_real_kernel() -> None:
    nbformat = pytest.importorskip("nbformat", reason="nbformat is in the test extra")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is in the test extra")
    pytest.importorskip("ipykernel", reason="ipykernel is in the test extra")
    setup = f"SAMPLES = {str(SAMPLES)!r}"
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell(setup)] + [
        nbformat.v4.new_code_cell(source) for source in NOTEBOOK_CELLS
    ]
    nbclient.NotebookClient(book, timeout=120, kernel_name="python3").execute()
    outputs = [cell.outputs for cell in book.cells]
    assert not any(o.get("output_type") == "error" for out in outputs for o in out)
    names = outputs[2][0]["data"]["text/plain"]
    assert "'diagnose_frame'" in names and "'read_logs'" in names
    listing = outputs[3][0]["data"]
    assert "<table" in listing["text/html"] and "<svg" in listing["text/html"]
    assert re.search(r"\d+ jobs: \d+ failed", listing["text/html"])
    assert "<Diagnosis job " in listing["text/plain"]
    card = outputs[4][0]["data"]
    assert "jd-job" in card["text/html"] and len(card["text/plain"]) < 200
    printed = outputs[5][0]["text"]
    assert printed.startswith("job ") and printed.count("\n") == 1
    table = outputs[6][0]["data"]
    assert "time_lost" in table["text/html"]
    counts = outputs[7][0]["data"]["text/plain"]
    assert "JOB_STATE_FAILED" in counts and "JOB_STATE_CANCELLED" in counts


LEGACY = (
    "INFO\t2020-01-01 12:00:00 +0000\tservice\t\tValidating job requirements...\n"
    "INFO\t2020-01-01 12:00:02 +0000\tservice\t\tJob census_20200101_120000 is queued.\n"
    "INFO\t2020-01-01 12:00:30 +0000\tmaster-replica-0\t\tRunning task with arguments: --job={}\n"
    "ERROR\t2020-01-01 12:05:00 +0000\tservice\t\tThe replica master 0 exited with a non-zero"
    " status of 1. Termination reason: Error.\n"
    "INFO\t2020-01-01 12:05:10 +0000\tservice\t\tJob failed.\n"
)


def test_a_legacy_jobs_name_is_its_id(tmp_path: Path) -> None:
    # AI Platform stream-logs carry no job id; the user's job name is in "Job NAME is queued."
    path = tmp_path / "legacy.stream-logs.txt"
    path.write_text(LEGACY)
    (job,) = diagnose(path)
    assert job.job_id == "census_20200101_120000"
    assert diagnose_frame(path)["job_id"].tolist() == ["census_20200101_120000"]
