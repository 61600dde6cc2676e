"""The scenarios: one function per outcome, each writing a job plan from a seed.

Every scenario follows the retry policy of ``platform.md`` section 2 and uses
the exact service messages of sections 3 and 4. Where the policy leaves a
choice open, the scenario's docstring says what it assumes, and its
:class:`~analyzer.simulate.plan.Expected` records the verdict that follows.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from analyzer.rulebook.events import Category
from analyzer.simulate import noise
from analyzer.simulate.entries import (
    HOUR,
    MINUTE,
    SECOND,
    JobIdentity,
    new_job_id,
    ns_from_datetime,
)
from analyzer.simulate.plan import Ending, Expected, JobBuilder, JobPlan

PROJECT_ID = "acme-ml-prod"
PROJECT_NUMBER = "482913370215"
BUCKET = "acme-ml-prod-vertex"
REGION = "us-central1"
CHIEF = "workerpool0-0"
# The restart of a worker that exited non-zero, seen in a real failed job.
RESTART_DELAY = 17 * SECOND

# Exact strings of platform.md sections 3 and 4 that the scenarios write.
STOCKOUT = f"Resources are insufficient in region: {REGION}"
INTERNAL = "Internal error occurred for the current attempt."
OOM = "Replicas low on memory: workerpool0. Specify a machine with larger memory and try again."
NO_MORE_RETRIES = "Job will not be retried, max error retry attempts reached."
PROVISIONING = (
    "Vertex AI is provisioning job running framework. First time usage might take couple of "
    "minutes, and subsequent runs can be much faster."
)


@dataclass(frozen=True, slots=True)
class Context:
    """What a scenario function gets: randomness, identity, start time, chatter density."""

    rng: random.Random
    job: JobIdentity
    t0: int
    seed: str
    scale: float = 1.0  # 1.0 keeps sample files to a few hundred lines

    def rate(self, lines: int, minutes: float) -> float:
        """Chatter lines per minute so that ``minutes`` of training give about ``lines``."""
        return self.scale * lines / max(minutes, 1.0)

    def builder(self, tasks: tuple[str, ...] = (CHIEF,), *, runner: bool = True) -> JobBuilder:
        """A plan builder for this job."""
        return JobBuilder(self.rng, self.job, tasks, runner=runner)

    def expected(
        self,
        state: str,
        attempts: int,
        category: Category | None = None,
        restarts: Mapping[str, int] | None = None,
        *,
        observed: bool = True,
        stalled: str | None = None,
        silent: tuple[str, ...] = (),
    ) -> Expected:
        """The verdict, with ``retries = attempts - 1``."""
        return Expected(
            state=state,
            observed_final=observed,
            attempts=attempts,
            retries=attempts - 1,
            category=None if category is None else category.value,
            worker_restarts=dict(restarts or {}),
            job_id=self.job.job_id,
            stalled=stalled,
            silent=silent,
        )

    def args(self) -> tuple[str, ...]:
        """The trainer's arguments."""
        run = self.rng.randint(1000, 9999)
        return ("--epochs=20", "--batch-size=64", f"--model-dir=gs://{BUCKET}/models/run-{run}")


def exit_message(
    job: JobIdentity,
    replica: str,
    code: int,
    traceback: tuple[str, ...] = (),
    *,
    elide: bool = False,
) -> str:
    """The service's replica-exit error as real logs show it.

    Trailing space after ``Error.``, then the worker's traceback (whole, or its
    tail after ``[...]`` when ``elide``), a blank line and the console link.
    """
    text = f"The replica {replica} exited with a non-zero status of {code}. "
    text += "Termination reason: Error. "
    if traceback:
        lines = [traceback[0], "  [...]", *traceback[-3:]] if elide else list(traceback)
        text += "\n" + "\n".join(lines)
    link = "To find out more about why your job exited please check the logs: "
    return f"{text}\n\n{link}{job.console_link}"


def success(ctx: Context) -> JobPlan:
    """The chief trains and exits 0; a harmless sitecustomize traceback on stderr."""
    b = ctx.builder()
    t = b.provision(ctx.t0)
    b.say(t + b.seconds(-8, 30), "Job is running.")
    minutes = ctx.rng.uniform(25, 70)
    end = t + int(minutes * MINUTE)
    b.run(CHIEF, t, end, Ending.SUCCEEDED)
    b.succeed(end + b.seconds(10, 40))
    return b.build(
        ctx.expected("JOB_STATE_SUCCEEDED", 1),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=ctx.rate(120, minutes),
        seed=ctx.seed,
    )


def _moved_twice(
    ctx: Context, leg: tuple[float, float], last: tuple[float, float], chatter: int
) -> JobPlan:
    """Two VM-maintenance moves (new resource_id, same hostname), then success.

    The moved process has no last words; the new one starts minutes later with the runner's
    start lines and restores the last checkpoint. ``leg`` and ``last`` bound the minutes of
    each run; moves count as worker restarts (2) but not against the restart budget.
    """
    b = ctx.builder()
    t = b.provision(ctx.t0)
    b.say(t + b.seconds(-8, 30), "Job is running.")
    start, minutes = t, 0.0
    for _ in range(2):
        length = ctx.rng.uniform(*leg)
        minutes += length
        moved = start + int(length * MINUTE)
        b.run(CHIEF, start, moved, Ending.KILLED)
        b.move(CHIEF)
        start = moved + b.seconds(120, 300)
    length = ctx.rng.uniform(*last)
    minutes += length
    end = start + int(length * MINUTE)
    b.run(CHIEF, start, end, Ending.SUCCEEDED)
    b.succeed(end + b.seconds(10, 40))
    return b.build(
        ctx.expected("JOB_STATE_SUCCEEDED", 1, restarts={CHIEF: 2}),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=ctx.rate(chatter, minutes),
        seed=ctx.seed,
    )


def vm_maintenance(ctx: Context) -> JobPlan:
    """Two VM-maintenance moves within about three hours, then success."""
    return _moved_twice(ctx, leg=(40, 80), last=(30, 60), chatter=120)


def user_code_exit1(ctx: Context) -> JobPlan:
    """Exit 1 with a traceback; restarted 17 s later; the service's error; job failed.

    A user code exception is permanent: no retry. The restarted process is
    still installing its package when the error arrives and logs past it.
    """
    b = ctx.builder()
    t = b.provision(ctx.t0)
    b.say(t + b.seconds(-8, 30), "Job is running.")
    minutes = ctx.rng.uniform(8, 30)
    crash = t + int(minutes * MINUTE)
    traceback = noise.python_traceback("KeyError: 'label'")
    b.run(CHIEF, t, crash, Ending.EXCEPTION, exit_code=1, traceback=traceback)
    restart = crash + RESTART_DELAY
    error = b.say(crash + b.seconds(22, 40), exit_message(ctx.job, CHIEF, 1, traceback), "ERROR")
    # The restarted process keeps installing its package well after the error.
    b.run(CHIEF, restart, error + b.seconds(35, 55), Ending.KILLED)
    b.fail(error, None)
    return b.build(
        ctx.expected("JOB_STATE_FAILED", 1, Category.USER_CODE_EXCEPTION, {CHIEF: 1}),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=ctx.rate(150, minutes),
        seed=ctx.seed,
    )


def transient_sigsegv(ctx: Context) -> JobPlan:
    """A custom container dies of SIGSEGV (139, transient): the job is retried and succeeds.

    Custom containers have no runner, so no start/exit lines on the worker.
    """
    b = ctx.builder(runner=False)
    t = b.provision(ctx.t0)
    b.say(t + b.seconds(-8, 30), "Job is running.")
    first = ctx.rng.uniform(10, 35)
    crash = t + int(first * MINUTE)
    b.run(CHIEF, t, crash, Ending.SEGFAULT, exit_code=139)
    failed = b.fail(crash + b.seconds(20, 45), exit_message(ctx.job, CHIEF, 139))
    t = b.provision(failed + b.seconds(30, 90))
    b.say(t + b.seconds(-8, 30), "Job is running.")
    second = ctx.rng.uniform(30, 60)
    end = t + int(second * MINUTE)
    b.run(CHIEF, t, end, Ending.SUCCEEDED)
    b.succeed(end + b.seconds(10, 40))
    return b.build(
        ctx.expected("JOB_STATE_SUCCEEDED", 2, Category.USER_CODE_EXCEPTION),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=ctx.rate(120, first + second),
        seed=ctx.seed,
    )


def oom(ctx: Context) -> JobPlan:
    """The host runs out of memory (current wording, no exit code): failed, no retry."""
    b = ctx.builder()
    t = b.provision(ctx.t0)
    b.say(t + b.seconds(-8, 30), "Job is running.")
    minutes = ctx.rng.uniform(6, 25)
    killed = t + int(minutes * MINUTE)
    b.run(CHIEF, t, killed, Ending.KILLED)
    b.fail(killed + b.seconds(10, 40), OOM)
    return b.build(
        ctx.expected("JOB_STATE_FAILED", 1, Category.OOM),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=ctx.rate(120, minutes),
        seed=ctx.seed,
    )


def _stockout_attempts(b: JobBuilder, t: int, count: int) -> list[int]:
    """``count`` attempts that each fail for capacity; returns the errors' times."""
    errors = []
    for _ in range(count):
        b.say(t, "Waiting for job to be provisioned.")
        t = b.say(t + b.seconds(4, 15), PROVISIONING)
        # No VM ever starts: no teardown, the attempt just fails.
        error = b.say(t + b.seconds(120, 720), STOCKOUT, "ERROR")
        errors.append(error)
        t = b.say(error + b.seconds(1, 5), "Job failed.") + b.seconds(40, 120)
    return errors


def stockout_exhausted(ctx: Context) -> JobPlan:
    """No capacity on any of the 4 attempts (3 retries): failed."""
    b = ctx.builder()
    _stockout_attempts(b, ctx.t0, 4)
    return b.build(
        ctx.expected("JOB_STATE_FAILED", 4, Category.STOCKOUT),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=1.0,
        seed=ctx.seed,
    )


def truncated_stockout(ctx: Context) -> JobPlan:
    """Stockout on attempts 1 and 2, then the export ends right after the second error.

    Replaying the policy (the last failure repeats) predicts FAILED after 3 retries.
    """
    b = ctx.builder()
    cutoff = _stockout_attempts(b, ctx.t0, 4)[1]
    return b.build(
        ctx.expected("JOB_STATE_FAILED", 4, Category.STOCKOUT, observed=False),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=1.0,
        cutoff=cutoff,
        seed=ctx.seed,
    )


def internal_error_exhausted(ctx: Context) -> JobPlan:
    """Internal error on 3 attempts (the most internal errors allow), then no more retries."""
    b = ctx.builder()
    t, minutes = ctx.t0, 0.0
    for attempt in range(3):
        start = b.provision(t)
        b.say(start + b.seconds(25, 60), "Job is running.")
        length = ctx.rng.uniform(5, 20)
        minutes += length
        stop = start + int(length * MINUTE)
        b.run(CHIEF, start, stop, Ending.KILLED)
        failed = b.fail(stop + b.seconds(2, 10), INTERNAL)
        if attempt == 2:
            b.say(failed + b.seconds(0.2, 1.5), NO_MORE_RETRIES)
        t = failed + b.seconds(30, 90)
    return b.build(
        ctx.expected("JOB_STATE_FAILED", 3, Category.INTERNAL_ERROR),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=ctx.rate(120, minutes),
        seed=ctx.seed,
    )


def worker_restarts_exhausted(ctx: Context) -> JobPlan:
    """The chief fails 6 times in attempt 1 (5 restarts used up): the job is retried, succeeds.

    The failure is non-permanent (an I/O error on the mounted bucket, exit 1
    reported only by the runner): the service writes no replica-exit error,
    only teardown and ``Job failed.`` after the sixth exit. Assumed from
    section 2: "up to 5 restarts per worker; if the worker fails again after
    5 restarts, the whole job is retried".
    """
    b = ctx.builder()
    t = b.provision(ctx.t0)
    b.say(t + b.seconds(-8, 30), "Job is running.")
    traceback = noise.python_traceback(
        "OSError: [Errno 107] Transport endpoint is not connected: "
        f"'/gcs/{BUCKET}/data/train-00017-of-00064.tfrecord'",
        depth=3,
    )
    minutes = 0.0
    for _ in range(6):
        length = ctx.rng.uniform(2, 6)
        minutes += length
        crash = t + int(length * MINUTE)
        b.run(CHIEF, t, crash, Ending.EXCEPTION, exit_code=1, traceback=traceback)
        t = crash + RESTART_DELAY
    failed = b.fail(crash + b.seconds(5, 15), None)
    t = b.provision(failed + b.seconds(30, 90))
    b.say(t + b.seconds(-8, 30), "Job is running.")
    length = ctx.rng.uniform(20, 40)
    minutes += length
    end = t + int(length * MINUTE)
    b.run(CHIEF, t, end, Ending.SUCCEEDED)
    b.succeed(end + b.seconds(10, 40))
    return b.build(
        ctx.expected("JOB_STATE_SUCCEEDED", 2, Category.WORKER_RESTARTS_EXHAUSTED, {CHIEF: 5}),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=ctx.rate(120, minutes),
        seed=ctx.seed,
    )


def multi_replica_failure(ctx: Context) -> JobPlan:
    """Chief ``workerpool0-0`` and workers ``workerpool1-0..2``; ``workerpool1-1`` raises.

    The failed worker restarts 17 s later, then the service's error names it
    and the whole job is torn down (permanent user code exception).
    """
    tasks = (CHIEF, "workerpool1-0", "workerpool1-1", "workerpool1-2")
    b = ctx.builder(tasks)
    t = b.provision(ctx.t0)
    starts = {task: t + b.seconds(0, 40) for task in tasks}
    b.say(max(starts.values()) + b.seconds(20, 50), "Job is running.")
    minutes = ctx.rng.uniform(15, 40)
    crash = t + int(minutes * MINUTE)
    bad = "workerpool1-1"
    traceback = noise.python_traceback(
        "ValueError: Expected input batch_size (48) to match target batch_size (64).", depth=5
    )
    error = crash + b.seconds(25, 45)
    stop = error + b.seconds(5, 15)
    for task in tasks:
        if task == bad:
            b.run(task, starts[task], crash, Ending.EXCEPTION, exit_code=1, traceback=traceback)
            b.run(task, crash + RESTART_DELAY, stop, Ending.KILLED)
        else:
            b.run(task, starts[task], stop + b.seconds(0, 3), Ending.KILLED)
    b.say(error, exit_message(ctx.job, bad, 1, traceback, elide=True), "ERROR")
    b.fail(error, None)
    return b.build(
        ctx.expected("JOB_STATE_FAILED", 1, Category.USER_CODE_EXCEPTION, {bad: 1}),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=ctx.rate(60, minutes),
        seed=ctx.seed,
    )


def still_running(ctx: Context) -> JobPlan:
    """The export ends 40 minutes into a healthy run: predicted RUNNING."""
    b = ctx.builder()
    t = b.provision(ctx.t0)
    b.say(t + b.seconds(-8, 30), "Job is running.")
    b.run(CHIEF, t, t + 3 * HOUR, Ending.OPEN)
    cutoff = t + 40 * MINUTE
    return b.build(
        ctx.expected("JOB_STATE_RUNNING", 1, observed=False),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=ctx.rate(120, 40),
        cutoff=cutoff,
        seed=ctx.seed,
    )


def _failing_chief(
    ctx: Context,
    last_words: tuple[str, ...],
    code: int,
    *,
    minutes: tuple[float, float],
    restart: bool = True,
    tail: bool = True,
) -> JobPlan:
    """The chief prints ``last_words`` and exits ``code``; permanent: the job fails.

    With ``restart`` the platform restarts it 17 s later (still installing when the error
    arrives); with ``tail`` the service's error carries the traceback's tail.
    """
    b = ctx.builder()
    t = b.provision(ctx.t0)
    b.say(t + b.seconds(-8, 30), "Job is running.")
    length = ctx.rng.uniform(*minutes)
    crash = t + int(length * MINUTE)
    # No last words: killed from outside (the runner dies with it and reports nothing).
    ending = Ending.EXCEPTION if last_words else Ending.KILLED
    b.run(CHIEF, t, crash, ending, exit_code=code, traceback=last_words)
    error = crash + b.seconds(22, 40)
    shown = last_words if tail and last_words and last_words[0].startswith("Traceback") else ()
    b.say(error, exit_message(ctx.job, CHIEF, code, shown, elide=True), "ERROR")
    if restart:
        b.run(CHIEF, crash + RESTART_DELAY, error + b.seconds(35, 55), Ending.KILLED)
    b.fail(error, None)
    return b.build(
        ctx.expected(
            "JOB_STATE_FAILED", 1, Category.USER_CODE_EXCEPTION, {CHIEF: 1} if restart else {}
        ),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=ctx.rate(60, length),
        seed=ctx.seed,
    )


def cuda_oom(ctx: Context) -> JobPlan:
    """PyTorch runs out of GPU memory (a user-code exception, exit 1; not a host OOM)."""
    return _failing_chief(
        ctx,
        noise.python_traceback(
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; "
            "15.77 GiB total capacity; 13.12 GiB already allocated; 1.02 GiB free)",
            depth=5,
        ),
        1,
        minutes=(5, 15),
    )


def bare_kill(ctx: Context) -> JobPlan:
    """The chief is killed (137) with no last words and no memory message: OOM unproven."""
    return _failing_chief(ctx, (), 137, minutes=(10, 25), restart=False)


def missing_module(ctx: Context) -> JobPlan:
    """The trainer imports a package its image lacks: ModuleNotFoundError at start-up."""
    return _failing_chief(
        ctx,
        noise.python_traceback("ModuleNotFoundError: No module named 'transformers'", depth=0),
        1,
        minutes=(2, 3),
    )


def permission_denied(ctx: Context) -> JobPlan:
    """The service account cannot read the training data: 403 from Cloud Storage."""
    return _failing_chief(
        ctx,
        noise.python_traceback(
            f"google.api_core.exceptions.Forbidden: 403 GET https://storage.googleapis.com/storage/"
            f"v1/b/{BUCKET}-data/o/train.csv?alt=media: trainer@{PROJECT_ID}.iam.gserviceaccount"
            ".com does not have storage.objects.get access to the Google Cloud Storage object. "
            "Permission 'storage.objects.get' denied on resource (or it may not exist).",
            depth=2,
        ),
        1,
        minutes=(2, 4),
    )


def file_not_found(ctx: Context) -> JobPlan:
    """The data path is wrong: FileNotFoundError on the mounted bucket."""
    return _failing_chief(
        ctx,
        noise.python_traceback(
            "FileNotFoundError: [Errno 2] No such file or directory: "
            f"'/gcs/{BUCKET}/data/train-00000-of-00064.tfrecord'",
            depth=3,
        ),
        1,
        minutes=(2, 4),
    )


def shm_sigbus(ctx: Context) -> JobPlan:
    """Data-loader workers exhaust /dev/shm: bus error, the process dies with 135 (SIGBUS)."""
    return _failing_chief(
        ctx,
        (
            "ERROR: Unexpected bus error encountered in worker. This might be caused by "
            "insufficient shared memory (shm).",
        ),
        135,
        minutes=(8, 20),
        restart=False,
    )


def no_container_output(ctx: Context) -> JobPlan:
    """Exit 1 with not one container line in the logs (no roles/logging.logWriter)."""
    b = ctx.builder()
    t = b.provision(ctx.t0)
    b.say(t + b.seconds(-8, 30), "Job is running.")
    error = b.say(t + b.seconds(60, 240), exit_message(ctx.job, CHIEF, 1), "ERROR")
    b.fail(error, None)
    return b.build(
        ctx.expected("JOB_STATE_FAILED", 1, Category.USER_CODE_EXCEPTION),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=1.0,
        seed=ctx.seed,
    )


def nccl_cascade(ctx: Context) -> JobPlan:
    """``workerpool1-0`` raises first; ten minutes later the chief's NCCL collective fails.

    The service names the chief (the last to fail); the initiating failure is the worker's.
    """
    worker = "workerpool1-0"
    tasks = (CHIEF, worker)
    b = ctx.builder(tasks)
    t = b.provision(ctx.t0)
    starts = {task: t + b.seconds(0, 40) for task in tasks}
    b.say(max(starts.values()) + b.seconds(20, 50), "Job is running.")
    minutes = ctx.rng.uniform(15, 30)
    crash = t + int(minutes * MINUTE)
    worker_tb = noise.python_traceback(
        "RuntimeError: DataLoader worker (pid 812) exited unexpectedly with exit code 1.", depth=3
    )
    b.run(worker, starts[worker], crash, Ending.EXCEPTION, exit_code=1, traceback=worker_tb)
    timeout = crash + 10 * MINUTE + b.seconds(0, 20)
    chief_tb = (
        "[rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, "
        "NumelIn=544997376, NumelOut=544997376, Timeout(ms)=600000) ran for 600061 "
        "milliseconds before timing out.",
        *noise.python_traceback(
            "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
            "NCCLUtils.hpp:275, remote process exited or there was a network error, NCCL "
            "version 2.18.1",
            depth=2,
        ),
    )
    b.run(CHIEF, starts[CHIEF], timeout, Ending.EXCEPTION, exit_code=1, traceback=chief_tb)
    error = timeout + b.seconds(22, 40)
    b.run(worker, crash + RESTART_DELAY, error + b.seconds(5, 15), Ending.KILLED)
    b.say(error, exit_message(ctx.job, CHIEF, 1, chief_tb[1:], elide=True), "ERROR")
    b.fail(error, None)
    return b.build(
        ctx.expected("JOB_STATE_FAILED", 1, Category.USER_CODE_EXCEPTION, {worker: 1}),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=ctx.rate(60, minutes),
        seed=ctx.seed,
    )


def long_checkpointed(ctx: Context) -> JobPlan:
    """A 5.5-hour run that checkpoints every few minutes, moved twice by VM maintenance.

    Each move throws away the work since the last checkpoint (the lost-work figure).
    """
    return _moved_twice(ctx, leg=(100, 130), last=(80, 100), chatter=200)


# --- Hangs (issue 30), and quiet phases that are none ---

POOL = ("workerpool1-0", "workerpool1-1", "workerpool1-2")


def watchdog(rank: int, minutes: int = 30) -> str:
    """PyTorch's ProcessGroupNCCL watchdog line (``ProcessGroupNCCL.cpp``), as real logs show
    it: the collective and its timeout named."""
    return (
        f"[rank{rank}]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank {rank}] "
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, "
        f"NumelIn=544997376, NumelOut=544997376, Timeout(ms)={minutes * 60_000}) ran for "
        f"{minutes * 60_000 + 61} milliseconds before timing out."
    )


def _distributed(ctx: Context, tasks: tuple[str, ...]) -> tuple[JobBuilder, dict[str, int], int]:
    """A multi-worker job's builder, each worker's start and when training began."""
    b = ctx.builder(tasks)
    t = b.provision(ctx.t0)
    starts = {task: t + b.seconds(0, 40) for task in tasks}
    b.say(max(starts.values()) + b.seconds(20, 50), "Job is running.")
    return b, starts, t


def _running(
    ctx: Context, b: JobBuilder, cutoff: int | None, stalled: str | None = None, **kw: Any
) -> JobPlan:
    return b.build(
        ctx.expected("JOB_STATE_RUNNING", 1, observed=False, stalled=stalled, **kw),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=ctx.rate(2, 1),
        cutoff=cutoff,
        seed=ctx.seed,
    )


def rank_stuck_collective(ctx: Context) -> JobPlan:
    """``workerpool1-2`` stops inside an all-reduce after 1-2 hours of training; the others
    wait in it and 30 minutes later their NCCL watchdog logs the timeout, but (without
    TORCH_NCCL_ASYNC_ERROR_HANDLING) does not end them: the job hangs, RUNNING, and the
    export ends 15 minutes after the watchdog's lines."""
    tasks = (CHIEF, *POOL)
    b, starts, t = _distributed(ctx, tasks)
    hang = t + int(ctx.rng.uniform(60, 120) * MINUTE)
    timeout = hang + 30 * MINUTE + b.seconds(0, 20)
    for rank, task in enumerate(tasks):
        if task == POOL[-1]:
            b.run(
                task,
                starts[task],
                timeout + 3 * HOUR,
                Ending.OPEN,
                quiet=(hang, timeout + 3 * HOUR),
            )
        else:
            # The others finish the step they were in, then wait in the collective.
            quiet = (hang + b.seconds(5, 50), timeout)
            b.run(
                task, starts[task], timeout, Ending.OPEN, quiet=quiet, last_words=(watchdog(rank),)
            )
    return _running(ctx, b, timeout + 15 * MINUTE, "collective_timeout", silent=(POOL[-1],))


def straggler(ctx: Context) -> JobPlan:
    """``workerpool1-2`` hangs (a stuck read of its data shard) after 1-2 hours while the
    chief and the other workers go on (asynchronous training, no collective between them):
    the export ends 50 minutes into its silence, the others still writing."""
    tasks = (CHIEF, *POOL)
    b, starts, t = _distributed(ctx, tasks)
    hang = t + int(ctx.rng.uniform(60, 120) * MINUTE)
    cutoff = hang + 50 * MINUTE
    for task in tasks:
        quiet = (hang, cutoff + HOUR) if task == POOL[-1] else None
        b.run(task, starts[task], cutoff + HOUR, Ending.OPEN, quiet=quiet)
    return _running(ctx, b, cutoff, "straggler", silent=(POOL[-1],))


def silent_after_checkpoint(ctx: Context) -> JobPlan:
    """The chief and a worker train 1-2 hours, save a checkpoint, then neither writes again
    (a deadlock after the save) and nothing ends the job; in a project's sink, another job's
    lines go on for hours after (the scenario's second job)."""
    tasks = (CHIEF, POOL[0])
    b, starts, t = _distributed(ctx, tasks)
    hang = t + int(ctx.rng.uniform(60, 120) * MINUTE)
    for task in tasks:
        b.run(task, starts[task], hang + 6 * HOUR, Ending.OPEN, quiet=(hang, hang + 6 * HOUR))
    return _running(ctx, b, None, "all_silent", silent=tasks)


def long_success(ctx: Context) -> JobPlan:
    """Another job of the project: one worker trains 4-5 hours and succeeds."""
    b = ctx.builder()
    t = b.provision(ctx.t0)
    b.say(t + b.seconds(-8, 30), "Job is running.")
    end = t + int(ctx.rng.uniform(240, 300) * MINUTE)
    b.run(CHIEF, t, end, Ending.SUCCEEDED)
    b.succeed(end + b.seconds(20, 60))
    return b.build(
        ctx.expected("JOB_STATE_SUCCEEDED", 1),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=ctx.rate(1, 1),
        seed=ctx.seed,
    )


def watchdog_kills(ctx: Context) -> JobPlan:
    """``workerpool1-1`` stops inside an all-reduce; ten minutes later the chief's NCCL
    watchdog times out and, as PyTorch does by default, ends its process: the service names
    the chief's exit, the job fails. A failure with that cause, not a stall."""
    tasks = (CHIEF, POOL[0], POOL[1])
    b, starts, t = _distributed(ctx, tasks)
    hang = t + int(ctx.rng.uniform(30, 60) * MINUTE)
    timeout = hang + 10 * MINUTE + b.seconds(0, 20)
    chief_tb = (
        watchdog(0, 10),
        *noise.python_traceback(
            "torch.distributed.DistBackendError: [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE) ran for 600061 milliseconds",
            depth=2,
        ),
    )
    b.run(CHIEF, starts[CHIEF], timeout, Ending.EXCEPTION, exit_code=1, traceback=chief_tb)
    error = timeout + b.seconds(22, 40)
    for task in (POOL[0], POOL[1]):
        b.run(
            task, starts[task], error + b.seconds(5, 15), Ending.KILLED, quiet=(hang, error + HOUR)
        )
    b.say(error, exit_message(ctx.job, CHIEF, 1, chief_tb[1:], elide=True), "ERROR")
    b.fail(error, None)
    return b.build(
        ctx.expected("JOB_STATE_FAILED", 1, Category.USER_CODE_EXCEPTION),
        bucket=BUCKET,
        args=ctx.args(),
        chatter_per_minute=ctx.rate(2, 1),
        seed=ctx.seed,
    )


def long_evaluation(ctx: Context) -> JobPlan:
    """The chief trains an hour, then evaluates for 40 minutes without a line, then trains on;
    the export ends 20 minutes after: the quiet phase resumed, no stall."""
    b = ctx.builder()
    t = b.provision(ctx.t0)
    b.say(t + b.seconds(-8, 30), "Job is running.")
    evaluation = t + int(ctx.rng.uniform(55, 70) * MINUTE)
    resumed = evaluation + 40 * MINUTE
    b.run(CHIEF, t, resumed + 3 * HOUR, Ending.OPEN, quiet=(evaluation, resumed))
    return _running(ctx, b, resumed + 20 * MINUTE)


def chatty_export_ends(ctx: Context) -> JobPlan:
    """Three workers train and write every minute; the export ends among their lines: a job
    in progress, and nothing in the input can show a hang."""
    tasks = (CHIEF, POOL[0], POOL[1])
    b, starts, t = _distributed(ctx, tasks)
    for task in tasks:
        b.run(task, starts[task], t + 5 * HOUR, Ending.OPEN)
    return _running(ctx, b, t + int(ctx.rng.uniform(60, 120) * MINUTE))


def final_save(ctx: Context) -> JobPlan:
    """At the end of its data each worker waits, silent, for the chief's final save, which
    writes its progress every minute or so; the export ends 25 minutes into the save, within
    the floor of a quiet phase (a save is no hang)."""
    tasks = (CHIEF, POOL[0], POOL[1])
    b, starts, t = _distributed(ctx, tasks)
    done = t + int(ctx.rng.uniform(60, 120) * MINUTE)
    cutoff = done + 25 * MINUTE
    for task in tasks:
        quiet = None if task == CHIEF else (done, cutoff + HOUR)
        b.run(task, starts[task], cutoff + HOUR, Ending.OPEN, quiet=quiet)
    return _running(ctx, b, cutoff)


JobFunction = Callable[[Context], JobPlan]


@dataclass(frozen=True, slots=True)
class Scenario:
    """A named simulation: a one-line description and how to plan its job(s) for a seed."""

    name: str
    description: str
    jobs: tuple[JobFunction, ...]
    scale: float = 1.0

    def plans(self, seed: int = 0) -> list[JobPlan]:
        """The scenario's job plans for ``seed`` (deterministic)."""
        rng = random.Random(f"{self.name}:{seed}")
        base = datetime(2024, 3, 11, 8, 0, tzinfo=UTC)
        t0 = ns_from_datetime(base) + rng.randint(0, 60 * 86_400) * SECOND
        t0 += rng.randint(0, 999_999_999)
        plans = []
        for index, function in enumerate(self.jobs):
            job = JobIdentity(PROJECT_ID, PROJECT_NUMBER, new_job_id(rng), REGION, f"{REGION}-a")
            ctx = Context(
                random.Random(f"{self.name}:{seed}:{index}"),
                job,
                t0 + index * rng.randint(4, 12) * MINUTE,
                f"{self.name}:{seed}:{index}",
                self.scale,
            )
            plans.append(function(ctx))
        return plans


def _scenario(name: str, description: str, *jobs: JobFunction, scale: float = 1.0) -> Scenario:
    return Scenario(name, description, jobs, scale)


SCENARIOS: Mapping[str, Scenario] = {
    s.name: s
    for s in (
        _scenario("success", "one worker trains and exits 0; job succeeds", success),
        _scenario(
            "vm-maintenance-restart",
            "the worker moves to another VM twice (maintenance), resumes, succeeds",
            vm_maintenance,
        ),
        _scenario(
            "user-code-exit1",
            "Python exception, exit 1, worker restarted once; permanent: job failed",
            user_code_exit1,
        ),
        _scenario(
            "transient-sigsegv-retry",
            "custom container exits 139 (SIGSEGV, transient); retried; attempt 2 succeeds",
            transient_sigsegv,
        ),
        _scenario("oom", "host out of memory ('Replicas low on memory'); failed, no retry", oom),
        _scenario(
            "stockout-exhausted",
            "no capacity in us-central1 on 4 attempts (3 retries); failed",
            stockout_exhausted,
        ),
        _scenario(
            "internal-error-exhausted",
            "internal error on 3 attempts, then 'will not be retried'; failed",
            internal_error_exhausted,
        ),
        _scenario(
            "worker-restarts-exhausted",
            "a worker fails 6 times (5 restarts used) so the job is retried; attempt 2 succeeds",
            worker_restarts_exhausted,
        ),
        _scenario(
            "multi-replica-worker-failure",
            "chief + 3 workers; workerpool1-1 raises, restarts once; job failed",
            multi_replica_failure,
        ),
        _scenario(
            "truncated-stockout",
            "stockout on attempts 1 and 2, then the log ends: predicted failed, 3 retries",
            truncated_stockout,
        ),
        _scenario(
            "still-running", "log ends 40 min into a healthy run: predicted running", still_running
        ),
        _scenario(
            "project-wide",
            "project-wide sink: 5 jobs interleaved (success, exit 1, OOM, SIGSEGV retry, stockout)",
            success,
            user_code_exit1,
            oom,
            transient_sigsegv,
            stockout_exhausted,
            scale=0.3,
        ),
        _scenario(
            "cuda-oom", "PyTorch CUDA out of memory: user-code exception, exit 1; failed", cuda_oom
        ),
        _scenario(
            "bare-137", "the chief is killed (137) without a traceback: OOM unproven", bare_kill
        ),
        _scenario(
            "nccl-cascade",
            "workerpool1-0 raises first; the chief's NCCL collective times "
            "out 10 min later; failed",
            nccl_cascade,
        ),
        _scenario("missing-module", "ModuleNotFoundError at start-up; failed", missing_module),
        _scenario(
            "permission-denied",
            "403 from Cloud Storage: the service account lacks storage.objects.get; failed",
            permission_denied,
        ),
        _scenario(
            "no-container-output",
            "exit 1 and not one container line (no roles/logging.logWriter); failed",
            no_container_output,
        ),
        _scenario(
            "file-not-found", "FileNotFoundError on the mounted bucket; failed", file_not_found
        ),
        _scenario(
            "shm-sigbus", "data-loader bus error (/dev/shm full), exit 135; failed", shm_sigbus
        ),
        _scenario(
            "rank-stuck-collective",
            "workerpool1-2 stuck in an all-reduce; the others' NCCL watchdog logs the timeout"
            " without ending them: RUNNING, stalled",
            rank_stuck_collective,
        ),
        _scenario(
            "straggler",
            "workerpool1-2 silent for 50 min while the others train on: RUNNING, stalled",
            straggler,
        ),
        _scenario(
            "silent-after-checkpoint",
            "every worker silent after a checkpoint while another job's lines go on in the"
            " project's sink: RUNNING, stalled; the other job succeeds",
            silent_after_checkpoint,
            long_success,
        ),
        _scenario(
            "watchdog-kills",
            "workerpool1-1 stuck in an all-reduce; the chief's NCCL watchdog ends it: failed",
            watchdog_kills,
        ),
        _scenario(
            "long-evaluation",
            "40 quiet minutes of evaluation, then training resumes: running, no stall",
            long_evaluation,
        ),
        _scenario(
            "chatty-export-ends",
            "the export ends while three workers write every minute: running, no stall",
            chatty_export_ends,
        ),
        _scenario(
            "final-save",
            "the workers wait silent for the chief's final save; the export ends 25 min in:"
            " running, no stall",
            final_save,
        ),
        _scenario(
            "long-checkpointed",
            "5.5-hour run checkpointing every few minutes, moved twice by VM maintenance; succeeds",
            long_checkpointed,
        ),
    )
}
