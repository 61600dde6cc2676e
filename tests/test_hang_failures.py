"""A hang that ends the job (issue 30): the watchdog's timeout kills a rank, the service
reports its exit, and the job fails. The failure's cause names the hang's detail
(rules/hangs.yaml), and a rank that failed first is still the root (the timeout its echo).

The container lines are PyTorch's and JAX's own, as public issues show them (each test names
its issue); the service's lines are the platform's (platform.md sections 3 and 4).
"""

from __future__ import annotations

import json
from pathlib import Path

from analyzer.api import analyze
from analyzer.verdict.diagnosis import Diagnosis

JOB = "5163410930187075584"

# NVIDIA/nccl#1111 and hiyouga/LlamaFactory#7396: the watchdog's lines on the rank that timed
# out, then the abort the watchdog throws (torch 2.x), then torchrun's summary.
_WATCHDOG = (
    "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, "
    "NumelOut=466119168, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.",
    "[rank0]:[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception "
    "(either an error or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: "
    "1582, last completed NCCL work: 1579.",
    "[rank0]:[E321 02:07:08.465224069 ProcessGroupNCCL.cpp:621] [Rank 0] Some NCCL operations "
    "have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU "
    "operations might run on corrupted/incomplete data.",
    "[rank0]:[E321 02:07:08.465230069 ProcessGroupNCCL.cpp:627] [Rank 0] To avoid data "
    "inconsistency, we are taking the entire process down.",
    "terminate called after throwing an instance of 'c10::DistBackendError'",
    "  what():  [PG 1 Rank 0] Process group watchdog thread terminated with exception: [Rank 0] "
    "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, "
    "NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran for 600060 milliseconds "
    "before timing out.",
)


def _entry(task: str, text: str, second: int, severity: str = "INFO") -> str:
    minute, sec = divmod(second, 60)
    hour, minute = divmod(minute, 60)
    return json.dumps(
        {
            "resource": {"type": "ml_job", "labels": {"job_id": JOB, "task_name": task}},
            "severity": severity,
            "textPayload": text,
            "timestamp": f"2025-03-21T{1 + hour:02d}:{minute:02d}:{sec:02d}.000000Z",
        }
    )


def _started(task: str, second: int) -> list[str]:
    return [
        _entry(task, "Updating master address to local address cmle-training-host", second),
        _entry(task, "Running task with arguments: --epochs=3", second + 1),
    ]


def _exit(task: str, status: int, second: int) -> str:
    message = (
        f"The replica {task} exited with a non-zero status of {status}. Termination reason: Error."
    )
    return _entry("service", message, second, "ERROR")


def _diagnose(tmp_path: Path, lines: list[str]) -> Diagnosis:
    path = tmp_path / "job.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (diagnosis,) = analyze([path]).diagnoses
    return diagnosis


def _job(*worker: str) -> list[str]:
    return [
        _entry("service", "Job is running.", 30),
        *_started("workerpool0-0", 10),
        *_started("workerpool0-1", 12),
        _entry("workerpool0-0", "epoch 1 step 100 loss 2.31", 600),
        _entry("workerpool0-1", "epoch 1 step 100 loss 2.29", 601),
        *worker,
    ]


def _dies_at_start(exception: str, at: int) -> list[str]:
    """A one-worker job whose worker dies ``at`` seconds in with ``exception`` (a traceback's
    last line), then fails."""
    return [
        _entry("service", "Job is running.", 30),
        *_started("workerpool0-0", 10),
        _entry("workerpool0-0", "Traceback (most recent call last):", at, "ERROR"),
        _entry("workerpool0-0", exception, at, "ERROR"),
        _exit("workerpool0-0", 1, at + 5),
        _entry("service", "Job failed.", at + 60),
    ]


def test_a_watchdog_timeout_that_kills_the_job_is_a_failure_with_that_detail(
    tmp_path: Path,
) -> None:
    at = 3000
    lines = _job(
        *(_entry("workerpool0-1", text, at, "ERROR") for text in _WATCHDOG),
        _exit("workerpool0-1", 1, at + 40),
        _entry("service", "Job failed.", at + 90),
    )
    diagnosis = _diagnose(tmp_path, lines)
    assert diagnosis.state.value == "JOB_STATE_FAILED"
    cause = diagnosis.cause
    assert cause is not None
    assert (cause.category.value, cause.replica) == ("user_code_exception", "workerpool0-1")
    # "Some NCCL operations have failed or timed out" and the DistBackendError only echo the
    # timeout: the cause names the timeout.
    assert cause.detail == "collective-timeout"
    assert cause.cascade == ()
    assert any("TORCH_NCCL_ASYNC_ERROR_HANDLING" in line for line in diagnosis.advice)
    assert diagnosis.stalled is None  # a job that ended is never stalled


def test_the_rank_that_failed_first_is_the_root_and_the_timeout_its_echo(tmp_path: Path) -> None:
    crash = 2400
    timeout = crash + 610
    lines = _job(
        _entry("workerpool0-0", "Traceback (most recent call last):", crash, "ERROR"),
        _entry(
            "workerpool0-0",
            '  File "/root/.local/lib/python3.10/site-packages/trainer/task.py", line 88, in step',
            crash,
            "ERROR",
        ),
        _entry(
            "workerpool0-0",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
            crash,
            "ERROR",
        ),
        # A worker's exit restarts it (platform.md section 2); its runner says so, while
        # the service reports only the exit that ends the job: the timed-out rank's.
        _entry(
            "workerpool0-0",
            "Task completed. Exit code (1). Exit reason (SUBPROCESS_EXCEPTION)",
            crash + 5,
        ),
        *(_entry("workerpool0-1", text, timeout, "ERROR") for text in _WATCHDOG),
        _exit("workerpool0-1", 1, timeout + 40),
        _entry("service", "Job failed.", timeout + 90),
    )
    cause = _diagnose(tmp_path, lines).cause
    assert cause is not None
    assert cause.replica == "workerpool0-0"
    assert [(c.replica, c.detail) for c in cause.cascade] == [
        ("workerpool0-1", "collective-timeout")
    ]


def test_a_store_that_timed_out_at_start_up_is_a_rendezvous_timeout(tmp_path: Path) -> None:
    # OpenRLHF/OpenRLHF#1040: the master's TCPStore waited for clients that never came.
    lines = _dies_at_start(
        "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. "
        "1/3 clients joined.",
        1830,
    )
    diagnosis = _diagnose(tmp_path, lines)
    assert diagnosis.cause is not None and diagnosis.cause.detail == "rendezvous-timeout"
    assert any("in parallel" in line for line in diagnosis.advice)


def test_a_coordination_barrier_that_timed_out_is_a_barrier_timeout(tmp_path: Path) -> None:
    # ayaka14732/llama-2-jax#20: jax.distributed.initialize's connect barrier.
    lines = _dies_at_start(
        "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. "
        "Barrier_id: PjRT_Client_Connect. Timed out task names:",
        330,
    )
    diagnosis = _diagnose(tmp_path, lines)
    assert diagnosis.cause is not None and diagnosis.cause.detail == "barrier-timeout"
    assert any("PjRT_Client_Connect" in line for line in diagnosis.advice)


def test_the_abort_in_one_entry_still_names_the_timeout(tmp_path: Path) -> None:
    # The abort's two lines in one entry: "c10::DistBackendError" comes before the watchdog's
    # words, and names no more than the echo of the timeout the same text shows.
    at = 3000
    lines = _job(
        _entry("workerpool0-1", "\n".join(_WATCHDOG[4:]), at, "ERROR"),
        _exit("workerpool0-1", 1, at + 40),
        _entry("service", "Job failed.", at + 90),
    )
    cause = _diagnose(tmp_path, lines).cause
    assert cause is not None and cause.detail == "collective-timeout"
