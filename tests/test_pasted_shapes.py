"""Shapes that users paste and that were not read (issue 27, point 7): a Logs Viewer entry
copied as a JavaScript object (keys without quotes, single quotes, cut at the end); a Google
API's error body without its ``error`` wrapper; the job's error message whose line breaks the
SDK's protobuf text escaped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analyzer.api import analyze_sources
from analyzer.ingest import FileSource, Format
from analyzer.ingest.loose import loose_object
from analyzer.ingest.sdklines import decoded_message
from tests.expectations import check

JOB = "8501620632646057984"
LINK = (
    "To find out more about why your job exited please check the logs: https://console.cloud."
    f"google.com/logs/viewer?project=1&resource=ml_job%2Fjob_id%2F{JOB}&advancedFilter=x"
)
TAIL = (
    'Traceback (most recent call last):\\n  File "/root/trainer/task.py", line 12, in'
    " <module>\\n    import pandas\\nModuleNotFoundError: No module named \\'pandas\\'"
)
REPLICA = "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error."

SHAPES: dict[str, tuple[str, dict[str, Any]]] = {
    # One line, as a browser's console copies the entry, cut inside logName.
    "js-object-one-line": (
        f"{{ insertId: \"1x2y3z4\", jsonPayload: {{ message: '{REPLICA} \\n{TAIL}\\n\\n{LINK}',"
        " attrs: { tag: 'service' } }, resource: { type: 'ml_job', labels: { job_id:"
        f" '{JOB}', task_name: 'service' }} }}, timestamp: '2024-03-01T10:00:00.123Z',"
        " severity: 'ERROR', logName: 'projects/p/logs/ml.googleapis.com%2F8501",
        {
            "category": "user_code_exception",
            "replica": "workerpool0-0",
            "exit_code": 1,
            "job_id": JOB,
            "exception": {"type": "ModuleNotFoundError", "message": "pandas"},
        },
    ),
    # Pretty-printed, trailing commas, a quoted label key, cut inside the labels.
    "js-object-pretty-cut": (
        '{\n  insertId: "abc123",\n  resource: {\n    type: "ml_job",\n    labels: {\n'
        f'      job_id: "{JOB}",\n      task_name: "service",\n    }},\n  }},\n'
        '  textPayload: "Replicas low on memory: workerpool0. Specify a machine with larger'
        ' memory and try again.",\n  timestamp: "2024-03-01T10:00:00.123456789Z",\n'
        "  severity: \"ERROR\",\n  labels: {\n    'ml.googleapis.com/endpoint': '',\n",
        {"category": "oom", "job_id": JOB},
    ),
    # Two entries, the second cut inside its message: the first read whole, the second as far
    # as it goes.
    "js-objects-two": (
        "{ textPayload: 'Job is running.', resource: { type: 'ml_job', labels: { job_id:"
        f" '{JOB}', task_name: 'service' }} }}, timestamp: '2024-03-01T09:00:00Z' }}\n"
        f"{{ textPayload: 'Resources are insufficient in region: us-central1', resource: {{ type:"
        f" 'ml_job', labels: {{ job_id: '{JOB}', task_name: 'service' }} }}, timestamp:"
        " '2024-03-01T10:00:00Z', severity: 'ERR",
        {"category": "stockout", "job_id": JOB},
    ),
    "api-status-pretty": (
        '{\n  "code": 429,\n  "message": "The following quota metrics exceed quota limits:'
        ' aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus",\n  "status":'
        ' "RESOURCE_EXHAUSTED"\n}\n',
        {"category": "quota", "refused_at_creation": True},
    ),
    # No status: HTTP 429 is RESOURCE_EXHAUSTED alone.
    "api-status-one-line": (
        '{"code": 429, "message": "The following quota metrics exceed quota limits:'
        ' aiplatform.googleapis.com/custom_model_training_cpus"}\n',
        {"category": "quota", "refused_at_creation": True},
    ),
    # Another refusal: the job was never created, no category of the contract.
    "api-status-invalid": (
        '{"code": 400, "message": "Accelerator \\"NVIDIA_TESLA_K80\\" is not supported for'
        ' machine type \\"n1-standard-4\\"", "status": "INVALID_ARGUMENT"}\n',
        {"category": "none", "refused_at_creation": True},
    ),
    # The SDK's "Job failed with:" and the job's error message in protobuf text, escaped.
    "escaped-message": (
        f"CustomJob projects/1/locations/us-central1/customJobs/{JOB} current state:\n"
        "JOB_STATE_FAILED\nRuntimeError: Job failed with:\ncode: 3\n"
        f'message: "{REPLICA} \\n{TAIL}\\n\\n{LINK}"\n',
        {
            "category": "user_code_exception",
            "replica": "workerpool0-0",
            "exit_code": 1,
            "state": "JOB_STATE_FAILED",
            "job_id": JOB,
            "exception": {"type": "ModuleNotFoundError", "message": "pandas"},
        },
    ),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_shape_is_read(tmp_path: Path, name: str) -> None:
    text, expect = SHAPES[name]
    path = tmp_path / f"{name}.txt"
    path.write_text(text, encoding="utf-8")
    source = FileSource(str(path))
    assert source.stats.format == Format.GCLOUD_JSON or name == "escaped-message"
    analysis = analyze_sources([source])
    assert analysis.diagnoses, "read, not refused"
    check(analysis, expect, text)


def test_the_escaped_message_is_printed_with_its_line_breaks(tmp_path: Path) -> None:
    text, _ = SHAPES["escaped-message"]
    path = tmp_path / "esc.txt"
    path.write_text(text, encoding="utf-8")
    (diagnosis,) = analyze_sources([FileSource(str(path))]).diagnoses
    assert diagnosis.cause is not None
    message = diagnosis.cause.message
    assert "\\n" not in message and '\\"' not in message
    assert message == REPLICA


def test_a_ci_runners_prefix_is_not_part_of_the_sdks_two_line_messages(tmp_path: Path) -> None:
    """A notebook run by Cloud Build prints every line after its steps' prefixes, nested ones
    one after the other (tests/real/gh-vertex-ai-samples-1218-V): the state and the error code
    on the second line of the SDK's messages are read through them."""
    prefix = "Step #5: Step #4: "
    lines = [
        f"CustomJob projects/1/locations/us-central1/customJobs/{JOB} current state:",
        "JobState.JOB_STATE_FAILED",
        "RuntimeError: Job failed with:",
        "code: 3",
        f'message: "{REPLICA} "',
    ]
    text = "".join(f"{prefix}{line}\n" for line in lines)
    path = tmp_path / "ci.txt"
    path.write_text(text, encoding="utf-8")
    analysis = analyze_sources([FileSource(str(path))])
    expect = {
        "category": "user_code_exception",
        "replica": "workerpool0-0",
        "exit_code": 1,
        "state": "JOB_STATE_FAILED",
        "job_id": JOB,
    }
    check(analysis, expect, text)
    (diagnosis,) = analysis.diagnoses
    assert "error code 3" in " ".join(diagnosis.notes)


def test_protobuf_escapes_are_read() -> None:
    line = r'message: "a \"quoted\" word\nnext line\tx \'y\' caf\303\251 \x41"'
    assert decoded_message(line) == 'message: "a "quoted" word\nnext line\tx \'y\' café A"'
    assert decoded_message('message: "CANCELED"') is None  # nothing escaped: left as it is
    assert decoded_message("message: not quoted \\n") is None


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        ("{ a: 1, b: 'x', c: \"y\", }", {"a": 1, "b": "x", "c": "y"}),
        ("{ a: { b: [1, 2.5, true, null] } }", {"a": {"b": [1, 2.5, True, None]}}),
        ('{\n a:  "x"  \n b: {\n  c: 3\n }\n}', {"a": "x", "b": {"c": 3}}),  # no commas
        ("{ labels: {…}, type: 'ml_job' }", {"labels": {}, "type": "ml_job"}),
        (
            "{ 'compute.googleapis.com/resource_id': '42' }",
            {"compute.googleapis.com/resource_id": "42"},
        ),
        ("{ a: 'it\\'s \\u00e9', b: 'cut he", {"a": "it's é", "b": "cut he"}),
        ("{ a: { b: 'x' }, c: [1, 2", {"a": {"b": "x"}, "c": [1, 2]}),
        ("{ a: 1, b", {"a": 1}),
    ],
)
def test_a_loose_object_is_read_as_far_as_it_goes(text: str, entry: dict[str, Any]) -> None:
    assert loose_object(text) == entry


@pytest.mark.parametrize("text", ["not an object", "{}", "{ 3: x }", "[1, 2]", "{ a b }"])
def test_what_is_no_object_is_not_read(text: str) -> None:
    assert loose_object(text) is None
