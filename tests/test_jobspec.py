"""--job-spec: machine types in the advice, scheduling in the policy, recorded state compared."""

from __future__ import annotations

import json
from pathlib import Path

from analyzer.api import analyze
from analyzer.verdict.jobspec import larger_machine, parse_job_spec

ROOT = Path(__file__).resolve().parents[1]


def _describe(tmp_path: Path, **extra: object) -> Path:
    data = {
        "name": "projects/482913370215/locations/us-central1/customJobs/JOB",
        "state": "JOB_STATE_FAILED",
        "error": {"code": 8, "message": "Replicas low on memory"},
        "jobSpec": {
            "workerPoolSpecs": [
                {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1"}
            ],
            **extra,
        },
    }
    path = tmp_path / "job.json"
    path.write_text(json.dumps(data).replace("customJobs/JOB", "customJobs/"), encoding="utf-8")
    return path


def test_oom_advice_names_the_machine_and_a_larger_one(tmp_path: Path) -> None:
    (job,) = analyze(
        [ROOT / "sample_logs/oom.stream-logs.txt"], job_spec_path=_describe(tmp_path)
    ).diagnoses
    text = " ".join(job.advice)
    assert "n1-standard-4 (15 GB" in text and "n1-standard-8 (30 GB)" in text
    assert "40%" in text
    assert job.to_dict()["job_spec"] == {
        "state": "JOB_STATE_FAILED",
        "error_code": 8,
        "agrees": True,
    }


def test_spot_scheduling_changes_the_prediction(tmp_path: Path) -> None:
    sample = ROOT / "sample_logs/truncated-stockout.jsonl"
    (plain,) = analyze([sample]).diagnoses
    (spot,) = analyze(
        [sample], job_spec_path=_describe(tmp_path, scheduling={"strategy": "SPOT"})
    ).diagnoses
    assert plain.attempts == 4 and spot.attempts == 7


def test_disagreement_is_reported(tmp_path: Path) -> None:
    path = _describe(tmp_path)
    data = json.loads(path.read_text())
    data["state"] = "JOB_STATE_SUCCEEDED"
    path.write_text(json.dumps(data))
    (job,) = analyze([ROOT / "sample_logs/oom.stream-logs.txt"], job_spec_path=path).diagnoses
    assert job.job_spec is not None and not job.job_spec.agrees
    assert any("record says" in note for note in job.notes)


def test_parse_and_machine_family() -> None:
    spec = parse_job_spec(
        {"workerPoolSpecs": [{}, {"machineSpec": {"machineType": "a2-highgpu-1g"}}]}
    )
    assert spec.job_id is None and spec.pool("workerpool1-0") is not None
    assert spec.pool("workerpool1-0").machine_type == "a2-highgpu-1g"  # type: ignore[union-attr]
    bigger = larger_machine("a2-highgpu-1g")
    assert bigger is not None and bigger.name == "a2-highgpu-2g"
    highmem = larger_machine("e2-standard-32")
    assert highmem is None or highmem.family == "e2"
