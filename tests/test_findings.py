"""The findings model (analyzer.verdict.findings), the advice rows (rules/advice/rows.yaml) and what
they decide: an interrupted wait (issue 27, point 4), where a state was read (point 5), the
VM a worker runs on (point 9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.core.errors import PolicyError
from analyzer.verdict.advice import _advice_path, _load, _rows, _rows_path
from analyzer.verdict.diagnosis import Diagnosis, JobState
from analyzer.verdict.findings import FIELDS, FindingKind, Provenance, finding
from analyzer.verdict.findings_rows import read_rows

_RESOURCE = "projects/123456/locations/us-central1/customJobs/7788990011223344556"
_SDK_WAIT = [
    "Creating CustomJob",
    f"CustomJob created. Resource name: {_RESOURCE}",
    "To use this CustomJob in another session:",
    f"custom_job = aiplatform.CustomJob.get('{_RESOURCE}')",
    f"CustomJob {_RESOURCE} current state:",
    "JobState.JOB_STATE_PENDING",
    f"CustomJob {_RESOURCE} current state:",
    "JobState.JOB_STATE_RUNNING",
]
_SITE = "/usr/local/lib/python3.10/site-packages/google/cloud/aiplatform"
_INTERRUPTED = [
    "Traceback (most recent call last):",
    '  File "/home/me/launch.py", line 20, in <module>',
    "    job.run(sync=True)",
    f'  File "{_SITE}/jobs.py", line 1850, in _run',
    "    self._block_until_complete()",
    f'  File "{_SITE}/jobs.py", line 250, in _block_until_complete',
    "    time.sleep(wait)",
    "KeyboardInterrupt",
]


def _diagnose(tmp_path: Path, lines: list[str], name: str = "paste.txt") -> list[Diagnosis]:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return list(analyze([str(path)]).diagnoses)


# --- Point 4: an interrupted wait is not a failed job ---


def test_an_interrupted_wait_reports_the_last_state_and_the_commands(tmp_path: Path) -> None:
    (job,) = _diagnose(tmp_path, _SDK_WAIT + _INTERRUPTED)
    assert job.state is JobState.RUNNING and not job.observed_final
    assert job.state_source == "sdk"
    assert job.cause is None
    advice = " ".join(job.advice)
    assert "stopped your notebook or script, not the job" in advice
    job_id = "7788990011223344556"
    assert f"gcloud ai custom-jobs describe {job_id} --region us-central1" in advice
    assert f"gcloud ai custom-jobs cancel {job_id} --region us-central1" in advice
    assert "fix it" not in advice and "resubmit" not in advice.lower()
    assert any("the wait was interrupted, not the job" in n for n in job.notes)
    assert not any("no platform message saying it ended the job" in n for n in job.notes)


def test_a_keyboard_interrupt_in_the_users_own_code_is_no_interrupted_wait(
    tmp_path: Path,
) -> None:
    # The user's own loop interrupted, no SDK frame and no SDK state line: not a wait.
    (job,) = _diagnose(
        tmp_path,
        [
            "INFO\t2024-03-20 18:21:07 +0000\tworkerpool0-0\tepoch 1",
            "Traceback (most recent call last):",
            '  File "/home/me/train.py", line 20, in <module>',
            "    time.sleep(1)",
            "KeyboardInterrupt",
        ],
    )
    assert job.findings is not None and not job.findings.has(FindingKind.INTERRUPTED_WAIT)


def test_a_final_state_seen_before_the_interruption_is_kept(tmp_path: Path) -> None:
    lines = [*_SDK_WAIT, f"CustomJob {_RESOURCE} current state:", "JobState.JOB_STATE_SUCCEEDED"]
    (job,) = _diagnose(tmp_path, lines + _INTERRUPTED)
    assert job.state is JobState.SUCCEEDED and job.observed_final
    assert job.findings is not None and not job.findings.has(FindingKind.INTERRUPTED_WAIT)
    assert job.advice == ()


# --- Point 5: where a state was read ---


def test_state_source_is_in_the_json_job(tmp_path: Path) -> None:
    from analyzer.report import render_json

    path = tmp_path / "paste.txt"
    path.write_text("\n".join(_SDK_WAIT + _INTERRUPTED) + "\n", encoding="utf-8")
    (job,) = json.loads(render_json(analyze([str(path)])))["jobs"]
    assert job["state_source"] == "sdk"


@pytest.mark.parametrize(
    ("lines", "state", "source"),
    [
        (
            [
                "INFO\t2024-03-20 18:21:07 +0000\tservice\tWaiting for job to be provisioned.",
                "INFO\t2024-03-20 18:25:07 +0000\tservice\tJob is running.",
                "INFO\t2024-03-20 18:40:40 +0000\tservice\tJob completed successfully.",
            ],
            JobState.SUCCEEDED,
            "service",
        ),
        (
            [
                "INFO\t2024-03-20 18:21:07 +0000\tworkerpool0-0\tRunning task with arguments:"
                " --cluster=x --task=y --job=z",
                "INFO\t2024-03-20 18:40:07 +0000\tworkerpool0-0\tTask completed. Exit code (0)."
                " Exit reason (SUCCEEDED)",
            ],
            JobState.SUCCEEDED,
            "runner",
        ),
        (
            ["state: JOB_STATE_FAILED", "error:", "  code: 3"],
            JobState.FAILED,
            "record",
        ),
        (
            [
                "INFO\t2024-03-20 18:21:07 +0000\tservice\tWaiting for job to be provisioned.",
                "INFO\t2024-03-20 18:25:07 +0000\tservice\tJob is running.",
                "ERROR\t2024-03-20 18:30:00 +0000\tservice\tResources are insufficient in region:"
                " us-central1",
                "INFO\t2024-03-20 18:30:40 +0000\tservice\tJob failed.",
            ],
            JobState.FAILED,
            "predicted",
        ),
    ],
    ids=["service", "runner", "record", "predicted"],
)
def test_the_state_says_where_it_was_read(
    tmp_path: Path, lines: list[str], state: JobState, source: str
) -> None:
    (job,) = _diagnose(tmp_path, lines)
    assert (job.state, job.state_source) == (state, source)


def test_provenance_is_ranked_and_only_three_kinds_tell_a_state() -> None:
    assert Provenance.RECORD < Provenance.SERVICE < Provenance.SDK < Provenance.RUNNER
    assert Provenance.RUNNER < Provenance.USER
    assert [p.source for p in Provenance if p.tells_state] == ["record", "service", "sdk"]


def test_a_state_only_the_sdk_shows_says_so(tmp_path: Path) -> None:
    (job,) = _diagnose(tmp_path, _SDK_WAIT)
    assert any("read from the SDK's state line alone" in n for n in job.notes)
    (with_service,) = _diagnose(
        tmp_path,
        [*_SDK_WAIT, "Job is running."],
        "with-service.txt",
    )
    assert with_service.state_source == "service"
    assert not any("SDK's state line alone" in n for n in with_service.notes)


# --- Point 9: the VM is the resource_id label ---


def _entry(task: str, text: str, second: int, vm: str | None) -> str:
    labels = {"compute.googleapis.com/resource_id": vm} if vm else {}
    return json.dumps(
        {
            "jsonPayload": {"message": text},
            "labels": labels,
            "resource": {
                "type": "ml_job",
                "labels": {"job_id": "42", "task_name": task},
            },
            "severity": "INFO",
            "timestamp": f"2024-03-20T18:{20 + second // 60:02d}:{second % 60:02d}Z",
        }
    )


@pytest.mark.parametrize(("vm", "moves"), [("4242424242", 0), (None, 1)])
def test_a_changed_host_is_a_vm_move_only_without_resource_id(
    tmp_path: Path, vm: str | None, moves: int
) -> None:
    lines = [
        _entry("workerpool0-0", "Updating master address to local address host-a", 0, vm),
        _entry("workerpool0-0", "Running task with arguments: --task=x", 1, vm),
        _entry("workerpool0-0", "epoch 1", 30, vm),
        _entry("workerpool0-0", "Updating master address to local address host-b", 60, vm),
        _entry("workerpool0-0", "Running task with arguments: --task=x", 61, vm),
    ]
    (job,) = _diagnose(tmp_path, lines, "entries.jsonl")
    (worker,) = [w for a in job.timeline.attempts for w in a.workers]
    assert len(worker.starts) == 2
    assert worker.maintenance_restarts == moves


# --- The rows: data, checked when read ---


def test_every_row_names_a_platform_fact_and_known_texts() -> None:
    rows = _rows()
    texts = _load(_advice_path())
    assert len(rows.rows) > 30
    for row in rows.rows:
        assert row.fact.startswith("platform.md section ")
        assert all(key in texts for key in row.say)


def test_every_finding_kind_has_its_fields() -> None:
    assert set(FIELDS) == set(FindingKind)
    with pytest.raises(ValueError, match="no field"):
        finding(FindingKind.REFUSED, Provenance.SDK, status="X", colour="blue")


_GOOD = "- when: {state: RUNNING}\n  say: [none.running]\n  fact: 'platform.md section 8'\n"
_FACT = "  fact: 'platform.md section 8'\n"


def _row(when: str, say: str = "none.running", rest: str = _FACT) -> str:
    return f"{_GOOD}- when: {when}\n  say: [{say}]\n{rest}"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (_row("{state: RUNING}"), 4, "unknown state 'RUNING'"),
        (_row("{finding: cuase}"), 4, "unknown finding 'cuase'"),
        (_row("{cause.colour: red}"), 4, "finding cause has no field 'colour'"),
        (_row("{}", say="none.runing"), 5, "unknown advice text 'none.runing'"),
        (_row("{}", rest=""), 4, "names the fact it applies"),
        (_row("{}", rest=_FACT + "  then: y\n"), 7, "unknown key 'then'"),
        (
            "- when: {state: RUNNING, state: FAILED}\n  say: []\n" + _FACT,
            1,
            "duplicate key 'state'",
        ),
    ],
    ids=["state", "finding", "field", "text", "fact", "key", "duplicate"],
)
def test_a_bad_row_is_a_one_line_error_with_its_line(
    tmp_path: Path, text: str, line: int, message: str
) -> None:
    path = tmp_path / "rows.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PolicyError) as raised:
        read_rows(path, frozenset(_load(_advice_path())))
    error = str(raised.value)
    assert "\n" not in error
    assert error.startswith(f"{path}:{line}:"), error
    assert message in error, error


def test_the_shipped_rows_sit_beside_the_texts() -> None:
    assert _rows_path(_advice_path()).is_file()
