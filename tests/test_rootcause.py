"""Root cause in depth over sample_logs/: detail, exception, frame, cascade, lost work."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from analyzer.api import analyze
from analyzer.classify.tracebacks import Frame, parse_service_message, parse_text, user_frame

ROOT = Path(__file__).resolve().parents[1]

# sample -> (detail, exception type, frame function, signal, cascade replicas)
EXPECTED: dict[str, tuple[Any, ...]] = {
    "cuda-oom.jsonl.gz": ("cuda-oom", "torch.cuda.OutOfMemoryError", "forward", None, []),
    "bare-137.jsonl.gz": ("killed-no-traceback", None, None, "SIGKILL", []),
    "nccl-cascade.jsonl.gz": (None, "RuntimeError", "__iter__", None, ["workerpool0-0"]),
    "missing-module.jsonl.gz": ("missing-module", "ModuleNotFoundError", "<module>", None, []),
    "permission-denied.jsonl.gz": (
        "permission-denied",
        "google.api_core.exceptions.Forbidden",
        "train",
        None,
        [],
    ),
    "no-container-output.jsonl.gz": ("no-container-output", None, None, None, []),
    "file-not-found.jsonl.gz": ("file-not-found", "FileNotFoundError", "__iter__", None, []),
    "shm-sigbus.jsonl.gz": ("shm-exhausted", None, None, "SIGBUS", []),
    "oom.stream-logs.txt": ("host-oom", None, None, None, []),
    "user-code-exit1.jsonl": (None, "KeyError", "_decode", None, []),
}


def _job(name: str) -> Any:
    (diagnosis,) = analyze([ROOT / "sample_logs" / name]).diagnoses
    return diagnosis


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_root_cause_in_depth(name: str) -> None:
    detail, exc_type, function, signal, cascade = EXPECTED[name]
    cause = _job(name).cause
    assert cause is not None
    assert cause.detail == detail
    assert (cause.exception.type if cause.exception else None) == exc_type
    frame = cause.exception.frame if cause.exception else None
    assert (frame.function if frame else None) == function
    assert cause.signal == signal
    assert [c.replica for c in cause.cascade] == cascade


def test_cascade_root_is_the_first_failing_replica() -> None:
    cause = _job("nccl-cascade.jsonl.gz").cause
    assert cause is not None and cause.replica == "workerpool1-0"
    assert cause.cascade[0].detail == "nccl-error"


def test_sitecustomize_traceback_of_a_successful_job_is_not_an_exception() -> None:
    assert _job("success.jsonl").cause is None


def test_lost_work_is_summed_over_restarts() -> None:
    job = _job("long-checkpointed.jsonl.gz")
    assert job.lost_work is not None
    # Two VM moves, each losing the work since the last checkpoint (a few minutes apart).
    assert 0 < job.lost_work.total_seconds() < 2 * 30 * 60
    assert job.to_dict()["lost_work_seconds"] == job.attempt_log[0].to_dict()["lost_work_seconds"]


def test_advice_names_the_finer_cause_in_every_language() -> None:
    from analyzer.verdict.advice import advice_for
    from analyzer.verdict.policy import load_policy

    job = _job("cuda-oom.jsonl.gz")
    for lang in ("en", "ja", "he"):
        advice = advice_for(job.cause, job.state, load_policy(), lang)
        assert advice and "{" not in " ".join(advice)
    assert "GPU" in job.advice[0]


def test_user_frame_skips_libraries_but_keeps_an_installed_trainer() -> None:
    frames = [
        Frame("/opt/python/3.10/lib/python3.10/runpy.py", 86, "_run_code"),
        Frame("/root/.local/lib/python3.10/site-packages/trainer/task.py", 12, "main"),
        Frame("/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", 1501, "call"),
    ]
    assert user_frame(frames) == frames[1]


def test_parse_text_reads_the_service_traceback_tail() -> None:
    text = (
        "The replica workerpool0-0 exited with a non-zero status of 1. "
        "Termination reason: Error. \n"
        "Traceback (most recent call last):\n  [...]\n"
        '  File "/app/train.py", line 7, in main\n    x = y[1]\nIndexError: list index out of range'
        "\n\nTo find out more about why your job exited please check the logs: https://x"
    )
    found = parse_text(text)
    assert found is not None
    assert found.to_dict() == {
        "type": "IndexError",
        "message": "list index out of range",
        "frame": {"file": "/app/train.py", "line": 7, "function": "main"},
    }


_LINK = "To find out more about why your job exited please check the logs: https://x"


@pytest.mark.parametrize(
    ("outer", "inner", "expected"),
    [
        # autograph's error in a dataset map (the frames outside are TensorFlow's and a
        # generated file's: tests/real/gh-jchavezar-vertex-ai-samples-pypackage-xai-S).
        (
            "tensorflow.python.autograph.pyct.error_utils.MultilineMessageKeyError",
            "KeyError: 'channelGrouping'",
            ("KeyError", "'channelGrouping'", "/app/trainer/train.py", 69),
        ),
        # Keras' fit: the same ValueError outside and inside.
        (
            "ValueError",
            "ValueError: Input 0 of layer dense is incompatible with the layer",
            (
                "ValueError",
                "Input 0 of layer dense is incompatible with the layer",
                "/app/trainer/train.py",
                69,
            ),
        ),
    ],
)
def test_an_error_in_user_code_is_the_one_its_message_names(
    outer: str, inner: str, expected: tuple[str, str, str, int]
) -> None:
    """TensorFlow's "in user code:" errors carry the user's frames and the original exception
    in their message, indented: that is the failure, not the generated file outside."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.7/site-packages/tensorflow/python/autograph/impl/api.py",'
        " line 439, in converted_call\n"
        "    result = converted_f(*effective_args, **kwargs)\n"
        '  File "/tmp/__autograph_generated_fileha7zbz36.py", line 6, in <lambda>\n'
        "    tf__lam = (lambda x, y: x[name])\n"
        f"{outer}: in user code:\n\n"
        '    File "/app/trainer/train.py", line 69, in None  *\n'
        "        lambda x, y: x[name])\n\n"
        f"    {inner}\n\n\n{_LINK}"
    )
    found = parse_text(text)
    assert found is not None and found.frame is not None
    assert (found.type, found.message, found.frame.file, found.frame.line) == expected


def test_an_error_in_user_code_is_read_from_a_process_own_lines() -> None:
    """The same error as a container's lines, one a record: TensorFlow's starred frame is a
    frame (rule python.frame), and the exception after it ends the traceback the user's code
    raised; a function TensorFlow names None is no function's name."""
    from analyzer.api import analyze_sources
    from analyzer.ingest import MemorySource

    lines = [
        "Traceback (most recent call last):",
        '  File "/tmp/__autograph_generated_fileha7zbz36.py", line 6, in <lambda>',
        "tensorflow.python.autograph.pyct.error_utils.MultilineMessageKeyError: in user code:",
        "",
        '    File "/app/trainer/train.py", line 69, in None  *',
        "        lambda x, y: x[name])",
        "",
        "    KeyError: 'channelGrouping'",
        "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error.",
    ]
    analysis = analyze_sources([MemorySource("\n".join(lines) + "\n", "tf.txt")])
    (diagnosis,) = analysis.diagnoses
    assert diagnosis.cause is not None and diagnosis.cause.exception is not None
    found = diagnosis.cause.exception
    assert (found.type, found.message) == ("KeyError", "'channelGrouping'")
    assert found.frame == Frame("/app/trainer/train.py", 69, "<unnamed>")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The message's top cut (the replica sentence and the header): frames, the source
        # line, the exception, the service's sentence.
        (
            '  File "/app/train.py", line 7, in main\n    x = y[1]\n'
            f"IndexError: list index out of range\n\n{_LINK}",
            ("IndexError", "list index out of range", "main"),
        ),
        # Only a source line and its caret before the exception (gh-sinaungoding-tf-od-cloud-S).
        (
            "import matplotlibnmatplotlib.use('Agg')\n        ^\n"
            f"SyntaxError: invalid syntax\n\n{_LINK}",
            ("SyntaxError", "invalid syntax", None),
        ),
        # Escaped line breaks (a JSON body, the SDK's message: "...").
        (
            '  File \\"/app/t.py\\", line 3, in f\\n    g()\\nValueError: bad\\n\\n' + _LINK,
            ("ValueError", "bad", "f"),
        ),
        # The header kept: parse_text's answer.
        (
            "Traceback (most recent call last):\n"
            f'  File "/app/t.py", line 3, in f\nKeyError: 1\n\n{_LINK}',
            ("KeyError", "1", "f"),
        ),
        # Nothing guessed: no service sentence after it; an exception line alone; an exception
        # line that is not the tail's last line; a cut header-kept traceback.
        ('  File "/app/t.py", line 3, in f\nKeyError: 1\n', None),
        (f"KeyError: 1\n\n{_LINK}", None),
        (f'  File "/app/t.py", line 3, in f\nKeyError: 1\n  more output\n{_LINK}', None),
        (f'Traceback (most recent call last):\n  File "/app/t.py", line 3, in f\n{_LINK}', None),
    ],
)
def test_parse_service_message_reads_a_tail_whose_top_is_cut(
    text: str, expected: tuple[str, str, str | None] | None
) -> None:
    found = parse_service_message(text)
    if expected is None:
        assert found is None
        return
    assert found is not None
    function = found.frame.function if found.frame else None
    assert (found.type, found.message, function) == expected
