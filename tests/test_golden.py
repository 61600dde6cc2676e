"""Golden outputs over sample_logs/: the JSON report of every sample, and the verdicts its
scenario implies (tests/golden/expected.json, written by the simulator).

Regenerate the JSON goldens after an intended change with ``JOBDOCTOR_UPDATE_GOLDEN=1 pytest``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from analyzer.api import analyze
from analyzer.report import render_json

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
GOLDEN = ROOT / "tests" / "golden"
EXPECTED: dict[str, list[dict[str, Any]]] = json.loads((GOLDEN / "expected.json").read_text())


def report(name: str) -> dict[str, Any]:
    """The JSON report of one sample, with the path as a user in the repository gives it."""
    cwd = Path.cwd()
    os.chdir(ROOT)
    try:
        data: dict[str, Any] = json.loads(render_json(analyze([f"sample_logs/{name}"])))
    finally:
        os.chdir(cwd)
    return data


def test_every_sample_has_expectations() -> None:
    assert sorted(p.name for p in SAMPLES.iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_matches_its_golden_json(name: str) -> None:
    actual = report(name)
    golden = GOLDEN / f"{name}.json"
    if os.environ.get("JOBDOCTOR_UPDATE_GOLDEN"):
        golden.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n")
    assert golden.exists(), f"no golden for {name}: run with JOBDOCTOR_UPDATE_GOLDEN=1"
    assert actual == json.loads(golden.read_text())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_verdict_is_what_its_scenario_implies(name: str) -> None:
    jobs = {job["job_id"]: job for job in report(name)["jobs"]}
    assert len(jobs) == len(EXPECTED[name])
    for want in EXPECTED[name]:
        job = jobs[want["job_id"]]
        cause = job["cause"]["category"] if job["cause"] else None
        restarts = {w: n for w, n in job["worker_restarts"].items() if n}
        assert (
            job["state"],
            job["observed_final"],
            job["attempts"],
            job["retries"],
            cause,
            restarts,
        ) == (
            want["state"],
            want["observed_final"],
            want["attempts"],
            want["retries"],
            want["category"],
            want["worker_restarts"],
        ), name


def test_every_input_line_is_accounted_for() -> None:
    for name in EXPECTED:
        for stats in report(name)["inputs"]:
            assert stats["skipped"] == sum(stats["skip_reasons"].values())
            assert stats["records"] > 0
