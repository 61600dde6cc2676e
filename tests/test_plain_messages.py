"""A program's one error message printed over several lines of a paste without times: one
record, so that the rules read it whole (tests/real/gh-arr-coc-0-1-grpc-quota-V: the quota
metric on the gRPC details' continuation line was lost). Any other line is still a record of
its own: a traceback's frames, a timed log's lines, a describe's YAML.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from analyzer.api import analyze
from analyzer.ingest import MemorySource
from analyzer.ingest.plain import read_plain_text

GRPC = (
    "ERROR: grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with:\n"
    "\tstatus = StatusCode.RESOURCE_EXHAUSTED\n"
    '\tdetails = "The following quota metrics exceed quota limits:\n'
    '\t           aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"\n'
    '\tdebug_error_string = "UNKNOWN:Error received from peer"\n'
)
GRPC_ONE_LINE = (
    "ERROR: grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with:"
    ' status = StatusCode.RESOURCE_EXHAUSTED details = "The following quota metrics exceed'
    ' quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"'
    ' debug_error_string = "UNKNOWN:Error received from peer"'
)
SDK = (
    "google.api_core.exceptions.ResourceExhausted: 429 The following quota metrics exceed quota"
    " limits:\n    aiplatform.googleapis.com/custom_model_training_cpus\n"
)

# Each paste, and the texts of its records (in order).
CASES: dict[str, tuple[str, list[str]]] = {
    "grpc repr": (GRPC, [GRPC_ONE_LINE]),
    "grpc repr closed, then a line": (
        GRPC.replace("\tdebug", "    debug") + ">\nJob failed.\n",
        [GRPC_ONE_LINE + " >", "Job failed."],
    ),
    "exception message on indented lines": (
        SDK,
        [
            "google.api_core.exceptions.ResourceExhausted: 429 The following quota metrics"
            " exceed quota limits: aiplatform.googleapis.com/custom_model_training_cpus"
        ],
    ),
    "a traceback's frames": (
        'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
        "    main()\nValueError: bad value:\n"
        '  File "x.py"\n',
        [
            "Traceback (most recent call last):",
            '  File "train.py", line 3, in <module>',
            "    main()",
            "ValueError: bad value:",
            '  File "x.py"',
        ],
    ),
    "a describe's YAML": (
        "error:\n  code: 8\n  message: 'Replicas low on disk: workerpool0.'\n",
        ["error:", "  code: 8", "  message: 'Replicas low on disk: workerpool0.'"],
    ),
    "a timed line after the head": (
        "RuntimeError: failed with:\n2024-01-01 10:00:00 Job failed.\n",
        ["RuntimeError: failed with:", "Job failed."],
    ),
    "a blank line ends it": (
        "RuntimeError: failed with:\n\n  later text\n",
        ["RuntimeError: failed with:", "  later text"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_message_over_lines_is_one_record(name: str) -> None:
    text, expected = CASES[name]
    source = MemorySource(text, "paste.txt")
    assert source.stats.format == "plain-text"
    stats = source.stats
    records = list(read_plain_text(io.BytesIO(text.encode()), stats))
    assert [record.text for record in records] == expected
    assert stats.lines == stats.used + stats.skipped == text.count("\n")
    assert stats.records == len(records)


def test_a_message_is_joined_over_a_bounded_number_of_lines() -> None:
    text = "RuntimeError: failed with:\n" + "  more\n" * 100
    records = list(MemorySource(text, "paste.txt").records())
    assert len(records) == 100 - 40 + 1


def test_the_quota_metric_on_a_continuation_line_is_in_the_advice(tmp_path: Path) -> None:
    path = tmp_path / "grpc.txt"
    path.write_text(GRPC)
    (diagnosis,) = analyze([str(path)]).diagnoses
    assert diagnosis.cause is not None and diagnosis.cause.category.value == "quota"
    assert any("custom_model_training_nvidia_t4_gpus" in line for line in diagnosis.advice)
