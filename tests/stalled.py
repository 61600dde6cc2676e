"""Hung jobs for the tests of how every report shows a stall: the simulator's hang scenarios
(``analyzer.simulate``: ``straggler``, ``rank-stuck-collective``, ...) written as a sink's JSON
lines, and the job's record (``gcloud ai custom-jobs describe --format=json``) that gives
their accelerators and ``scheduling.timeout``. The stall is the pipeline's own reading of them
(:mod:`analyzer.verdict.hangs`), never set by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

from analyzer.simulate import simulate, write

# The straggler: workerpool1-2 silent for 50 minutes while the three others train on.
STRAGGLER = "straggler"
SILENT = "workerpool1-2"
WAITING = ("workerpool0-0", "workerpool1-0", "workerpool1-1")


def scenario_file(name: str, directory: Path, seed: int = 0) -> Path:
    """The scenario ``name`` as JSON lines in ``directory``."""
    path = directory / f"{name}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        write(simulate(name, seed), "jsonl", out)
    return path


def job_id_of(path: Path) -> str:
    """The job id of the first line of ``path`` (a scenario of one job)."""
    with path.open(encoding="utf-8") as lines:
        entry = json.loads(next(lines))
    return str(entry["resource"]["labels"]["job_id"])


def job_record(path: Path, directory: Path, *, accelerators: int, timeout_s: int) -> Path:
    """A describe output for the job of ``path``: four workers (one chief, three in pool 1),
    ``accelerators`` A100s each, ``scheduling.timeout`` of ``timeout_s`` seconds."""

    def pool(replicas: int) -> dict[str, object]:
        return {
            "machineSpec": {
                "machineType": "a2-highgpu-1g",
                "acceleratorType": "NVIDIA_TESLA_A100",
                "acceleratorCount": accelerators,
            },
            "replicaCount": str(replicas),
        }

    job_id = job_id_of(path)
    record = {
        "name": f"projects/123456789012/locations/us-central1/customJobs/{job_id}",
        "state": "JOB_STATE_RUNNING",
        "jobSpec": {
            "workerPoolSpecs": [pool(1), pool(3)],
            "scheduling": {"timeout": f"{timeout_s}s"},
        },
    }
    spec = directory / f"{job_id}.json"
    spec.write_text(json.dumps(record), encoding="utf-8")
    return spec
