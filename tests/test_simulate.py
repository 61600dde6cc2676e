"""The simulator: deterministic, realistic entries, well-formed writers, streaming fleet."""

from __future__ import annotations

import io
import itertools
import json
import re
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from analyzer.core.errors import InputError
from analyzer.ingest.records import Origin, parse_timestamp, record_from_entry
from analyzer.simulate import SCENARIOS, expected, fleet, simulate, write
from analyzer.simulate.regenerate import main as regenerate

NAMES = sorted(SCENARIOS)

# platform.md section 4, byte for byte.
LIFECYCLE = (
    "Waiting for job to be provisioned.",
    "Vertex AI is provisioning job running framework. First time usage might take couple of "
    "minutes, and subsequent runs can be much faster.",
    "Vertex AI is setting up this job.",
    "Waiting for training program to start.",
    "Job is preparing.",
    "Job is running.",
    "Tearing down training program.",
    "Finished tearing down training program.",
    "Job completed successfully.",
    "Job failed.",
    "Job will not be retried, max error retry attempts reached.",
)
# platform.md section 3, the wordings real logs show.
ERRORS = (
    re.compile(
        r"The replica (workerpool\d+-\d+) exited with a non-zero status of (\d+)\. "
        r"Termination reason: Error\. \n(Traceback \(most recent call last\):\n"
        r"(.*\n)+)?\nTo find out more about why your job exited please check the logs: "
        r"https://console\.cloud\.google\.com/logs/viewer\?project=\d+&resource=ml_job%2Fjob_id"
        r"%2F(\d+)&advancedFilter=\S+\Z"
    ),
    re.compile(
        r"Replicas low on memory: workerpool\d+\. Specify a machine with larger memory "
        r"and try again\.\Z"
    ),
    re.compile(r"Resources are insufficient in region: us-central1\Z"),
    re.compile(r"Internal error occurred for the current attempt\.\Z"),
)
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z\Z")
RUNNER_START = "Running task with arguments: --cluster="


def entries(name: str, seed: int = 0) -> list[dict[str, Any]]:
    return list(simulate(name, seed))


def text_of(entry: dict[str, Any]) -> str:
    if "jsonPayload" in entry:
        message: str = entry["jsonPayload"]["message"]
        return message
    payload: str = entry["textPayload"]
    return payload


def task_of(entry: dict[str, Any]) -> str:
    task: str = entry["resource"]["labels"]["task_name"]
    return task


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_per_seed(name: str) -> None:
    assert entries(name, 3) == entries(name, 3)
    assert entries(name, 3) != entries(name, 4)
    assert expected(name, 3) == expected(name, 3)


@pytest.mark.parametrize("name", NAMES)
def test_entries_are_log_entries_in_time_order(name: str) -> None:
    found = entries(name)
    assert found
    times = [parse_timestamp(e["timestamp"]) for e in found]
    assert times == sorted(times)
    job_ids = {v.job_id for v in expected(name)}
    for index, entry in enumerate(found):
        labels = entry["resource"]["labels"]
        assert entry["resource"]["type"] == "ml_job"
        assert labels["job_id"] in job_ids
        assert labels["project_id"]
        assert entry["logName"] == (
            f"projects/{labels['project_id']}/logs/ml.googleapis.com%2F{labels['job_id']}"
        )
        assert STAMP.match(entry["timestamp"]) and STAMP.match(entry["receiveTimestamp"])
        lag = (parse_timestamp(entry["receiveTimestamp"]) - times[index]).total_seconds()
        assert 0.99 <= lag <= 2.01
        assert re.fullmatch(r"[a-z0-9]{6,20}", entry["insertId"])
        if labels["task_name"] == "service":
            assert isinstance(entry["textPayload"], str) and "jsonPayload" not in entry
        else:
            assert entry["jsonPayload"]["attrs"]["tag"] == labels["task_name"]
            assert entry["labels"]["compute.googleapis.com/resource_id"].isdigit()
            assert entry["jsonPayload"].get("levelname") == entry.get("severity")
        record = record_from_entry(entry, Origin("sim", index + 1))
        assert record.job_id == labels["job_id"] and record.task == labels["task_name"]
    assert len({e["insertId"] for e in found}) == len(found)


@pytest.mark.parametrize("name", NAMES)
def test_service_messages_use_the_exact_platform_strings(name: str) -> None:
    for entry in entries(name):
        if task_of(entry) != "service":
            continue
        text = text_of(entry)
        if text in LIFECYCLE:
            assert entry["severity"] == "INFO"
        else:
            assert any(p.match(text) for p in ERRORS), text
            assert entry["severity"] == "ERROR"


@pytest.mark.parametrize("name", NAMES)
def test_attempts_follow_the_lifecycle_order(name: str) -> None:
    for verdict in expected(name):
        service = [
            text_of(e)
            for e in entries(name)
            if task_of(e) == "service" and e["resource"]["labels"]["job_id"] == verdict.job_id
        ]
        starts = [i for i, t in enumerate(service) if t == LIFECYCLE[0]]
        assert service[0] == LIFECYCLE[0]
        if verdict.observed_final:
            assert len(starts) == verdict.attempts
            assert service.count("Job failed.") == verdict.attempts - (
                verdict.state == "JOB_STATE_SUCCEEDED"
            )
            last = (
                "Job completed successfully."
                if verdict.state == "JOB_STATE_SUCCEEDED"
                else (LIFECYCLE[-1] if verdict.category == "internal_error" else "Job failed.")
            )
            assert service[-1] == last
        assert verdict.retries == verdict.attempts - 1
        for begin, end in itertools.pairwise([*starts, len(service)]):
            lifecycle = [t for t in service[begin:end] if t in LIFECYCLE[:6]]
            assert lifecycle == sorted(lifecycle, key=LIFECYCLE.index)


@pytest.mark.parametrize("name", NAMES)
def test_runner_start_lines_match_the_expected_restarts(name: str) -> None:
    for verdict in expected(name):
        attempt = 0
        starts: Counter[tuple[int, str]] = Counter()
        for entry in entries(name):
            if entry["resource"]["labels"]["job_id"] != verdict.job_id:
                continue
            if text_of(entry) == LIFECYCLE[0]:
                attempt += 1
            elif text_of(entry).startswith(RUNNER_START):
                starts[attempt, task_of(entry)] += 1
        restarts: Counter[str] = Counter()
        for (_, task), count in starts.items():
            restarts[task] += count - 1
        assert {t: n for t, n in restarts.items() if n} == dict(verdict.worker_restarts)


def test_vm_maintenance_changes_resource_id_not_hostname() -> None:
    worker = [e for e in entries("vm-maintenance-restart") if task_of(e) != "service"]
    vms = list(dict.fromkeys(e["labels"]["compute.googleapis.com/resource_id"] for e in worker))
    nodes = {e["labels"]["compute.googleapis.com/resource_name"] for e in worker}
    hosts = {
        re.findall(r"cmle-training-workerpool0-\w+-0", text_of(e))[0]
        for e in worker
        if text_of(e).startswith(RUNNER_START)
    }
    assert len(vms) == 3 and len(nodes) == 3 and len(hosts) == 1
    assert expected("vm-maintenance-restart")[0].state == "JOB_STATE_SUCCEEDED"


def test_user_code_failure_shape() -> None:
    found = entries("user-code-exit1")
    texts = [text_of(e) for e in found]
    error = next(i for i, t in enumerate(texts) if t.startswith("The replica workerpool0-0"))
    verdict = expected("user-code-exit1")[0]
    assert texts[error].startswith(
        "The replica workerpool0-0 exited with a non-zero status of 1. "
        "Termination reason: Error. \n"
    )
    assert verdict.job_id is not None and verdict.job_id in texts[error]
    exit_line = texts.index("Task completed. Exit code (1). Exit reason (SUBPROCESS_EXCEPTION)")
    assert found[exit_line - 1]["severity"] == "ERROR"  # "Command [...] returned non-zero"
    assert texts[exit_line - 2] == "KeyError: 'label'"
    assert texts[error].count("\n") > 10  # the whole traceback, as real logs show it
    assert any(task_of(e) == "workerpool0-0" for e in found[error + 1 :])  # logs after the error
    assert texts[-2:] == ["Finished tearing down training program.", "Job failed."]
    # The restart comes about 17 s after the exit.
    restart = next(i for i in range(exit_line, len(texts)) if texts[i].startswith(RUNNER_START))
    gap = parse_timestamp(found[restart]["timestamp"]) - parse_timestamp(
        found[exit_line]["timestamp"]
    )
    assert 16 <= gap.total_seconds() <= 19


def test_successful_job_has_harmless_stderr_noise() -> None:
    found = entries("success")
    errors = [text_of(e) for e in found if e.get("severity") == "ERROR"]
    assert "ModuleNotFoundError: No module named 'pythonjsonlogger'" in errors
    assert any("it/s" in t for t in errors)  # progress bars on stderr
    assert any("severity" not in e for e in found)  # lines with no severity


def test_project_wide_interleaves_several_jobs() -> None:
    found = entries("project-wide")
    verdicts = expected("project-wide")
    assert len({v.job_id for v in verdicts}) == len(verdicts) >= 4
    switches = sum(
        1
        for a, b in itertools.pairwise(found)
        if a["resource"]["labels"]["job_id"] != b["resource"]["labels"]["job_id"]
    )
    assert switches > 2 * len(verdicts)
    assert {v.state for v in verdicts} == {"JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED"}


def test_truncated_scenarios_end_early() -> None:
    texts = [text_of(e) for e in entries("truncated-stockout")]
    assert texts.count("Waiting for job to be provisioned.") == 2
    assert texts[-1].startswith("Resources are insufficient in region")
    verdict = expected("truncated-stockout")[0]
    assert (verdict.state, verdict.observed_final, verdict.retries) == (
        "JOB_STATE_FAILED",
        False,
        3,
    )


def test_multi_replica_job() -> None:
    tasks = {task_of(e) for e in entries("multi-replica-worker-failure")}
    assert tasks == {"service", "workerpool0-0", "workerpool1-0", "workerpool1-1", "workerpool1-2"}


def written(name: str, fmt: str, seed: int = 0) -> str:
    out = io.StringIO()
    write(simulate(name, seed), fmt, out, seed=seed)
    return out.getvalue()


@pytest.mark.parametrize("name", ["user-code-exit1", "project-wide"])
def test_jsonl_is_a_sink_file(name: str) -> None:
    lines = written(name, "jsonl").splitlines()
    parsed = [json.loads(line) for line in lines]
    assert all(
        line == json.dumps(e, separators=(",", ":"), ensure_ascii=False)
        for line, e in zip(lines, parsed, strict=True)
    )
    original = entries(name)
    ids = Counter(e["insertId"] for e in parsed)
    assert set(ids) == {e["insertId"] for e in original}
    assert 1 <= sum(n - 1 for n in ids.values()) <= 2
    times = [parse_timestamp(e["timestamp"]) for e in parsed]
    assert times != sorted(times)  # reordered a little ...
    hours = [t.replace(minute=0, second=0, microsecond=0) for t in times]
    assert hours == sorted(hours)  # ... but never across the hour


def test_gcloud_json_is_an_array_newest_first() -> None:
    text = written("vm-maintenance-restart", "gcloud-json")
    assert text.startswith('[\n  {\n    "insertId": ')
    parsed = json.loads(text)
    times = [parse_timestamp(e["timestamp"]) for e in parsed]
    assert times == sorted(times, reverse=True)
    assert len(parsed) == len(entries("vm-maintenance-restart"))


def test_stream_logs_columns() -> None:
    text = written("user-code-exit1", "stream-logs")
    first, *rows = text.splitlines()
    assert first == "Using endpoint [https://us-central1-aiplatform.googleapis.com/]"
    expected_rows = sum(len(text_of(e).splitlines() or [""]) for e in entries("user-code-exit1"))
    assert len(rows) == expected_rows
    for row in rows:
        severity, stamp, task, _message = row.split("\t", 3)
        assert severity in {"DEFAULT", "INFO", "ERROR", "WARNING"}
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000", stamp)
        assert task == "service" or task.startswith("workerpool")
    # A multi-line service error: one printed line per message line, same time and task.
    error = [r for r in rows if r.split("\t")[2] == "service" and r.startswith("ERROR")]
    assert len(error) > 3 and len({r.split("\t")[1] for r in error}) == 1


def test_logs_explorer_copy() -> None:
    text = written("oom", "logs-explorer")
    stamp = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC\Z")
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if stamp.match(line)]
    assert starts[0] == 0 and len(starts) == len(entries("oom"))
    for i in starts:
        assert lines[i + 1] == "" and re.fullmatch(r"service|workerpool\d+-\d+", lines[i + 2])


def test_unknown_names_suggest_the_nearest() -> None:
    with pytest.raises(InputError, match="Did you mean 'oom'"):
        list(simulate("ooom"))
    with pytest.raises(InputError, match="Did you mean 'jsonl'"):
        write([], "json-l", io.StringIO())


def test_fleet_streams_to_the_target_size() -> None:
    tracemalloc.start()
    try:
        total = 0
        for line in fleet(5_000_000, seed=1):
            total += len(line)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 5_000_000 <= total < 5_000_000 + 10_000
    assert peak < 5_000_000  # nothing like the output's size is kept
    lines = list(itertools.islice(fleet(300_000, seed=2), 400))
    assert all(line.endswith(b"\n") for line in lines)
    jobs = {json.loads(line)["resource"]["labels"]["job_id"] for line in lines}
    assert len(jobs) >= 2


def test_sample_logs_are_up_to_date(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    folder = root / "sample_logs"
    assert regenerate(["--root", str(root), "--check"]) == 0
    assert sum(p.stat().st_size for p in folder.iterdir()) < 2_000_000
