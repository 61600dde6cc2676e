"""The scripted cases: what the fake plays (:mod:`tests.sdk.fake_vertex`) and the user's code
that drives the real SDK against it, as users' scripts and notebooks do; with the truth of
each job, written from the script (never from what jobdoctor reads).

A case's code is a list of cells: run as one script in a terminal, or cell by cell in a
Jupyter kernel. :func:`prelude` is the first cell of every case: the SDK pointed at the fake
and its polling sped up (its module-level wait constants, the capture's only change to how the
SDK runs). With ``_LOG_WAIT_TIME = 0`` the SDK logs the state at every poll, so each state the
fake plays is printed once, whatever the machine's speed.

The error messages are the platform's (platform.md section 3, "What real logs say"); the
google.rpc codes the jobs carry are those platform.md gives (8 for the low-memory OOM and for
quota, 13 internal, 1 cancelled, 3 a user-code exit as in the real pastes of tests/real); where
it gives none (template OOM, legacy OOM, stockout) the code is the scripter's choice (8,
RESOURCE_EXHAUSTED) and truth.yaml marks it ``error_code_documented: false``.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any

import grpc

from tests.sdk.fake_vertex import LOCATION, PROJECT_NUMBER, ScriptedJob, Trial

IMAGE = "us-docker.pkg.dev/my-project/trainers/trainer:latest"
PREBUILT = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-1.py310:latest"

# platform.md section 3, "What real logs say".
EXIT_1 = "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error. "
LOW_MEMORY = (
    "Replicas low on memory: workerpool0. Specify a machine with larger memory and try again."
)
_LINK = (
    "To find out more about why your job exited please check the logs: "
    f"https://console.cloud.google.com/logs/viewer?project={PROJECT_NUMBER}"
    "&resource=ml_job%2Fjob_id%2F{job_id}"
    "&advancedFilter=resource.type%3D%22ml_job%22%0Aresource.labels.job_id%3D%22{job_id}%22"
)
_TAIL = (
    "\nTraceback (most recent call last):\n  [...]\n"
    '  File "/root/.local/lib/python3.10/site-packages/trainer/task.py", line 57, in main\n'
    "    train(args)\n"
    '  File "/root/.local/lib/python3.10/site-packages/trainer/task.py", line 31, in train\n'
    "    frame = pd.read_csv(args.train_path)\n"
    "FileNotFoundError: [Errno 2] No such file or directory: '/gcs/my-bucket/data/train.csv'\n\n"
)


@dataclass(frozen=True)
class Cause:
    """The failure the script gives a job: jobdoctor's cause category and fields."""

    category: str
    exit_code: int | None = None
    replica: str | None = None
    region: str | None = None


@dataclass(frozen=True)
class Job:
    """One scripted job of a case and its truth: the cause its error message states, and
    whether platform.md gives the google.rpc code the job carries (``documented``)."""

    script: ScriptedJob
    cause: Cause | None = None
    documented: bool = True


@dataclass(frozen=True)
class Case:
    """A scenario: its jobs, the user's code (cells), and a Ctrl-C after ``interrupt_after``
    printed state lines (None: run to the end)."""

    name: str
    about: str
    jobs: tuple[Job, ...]
    cells: tuple[str, ...]
    interrupt_after: int | None = None
    needs_storage: bool = False


def prelude(*, logging_config: bool) -> str:
    """The first cell: logging as the variant wants it, the SDK pointed at the fake."""
    logging_lines = (
        "import logging\nlogging.basicConfig(level=logging.INFO)\n" if logging_config else ""
    )
    return logging_lines + textwrap.dedent(
        f"""\
            import os

            from google.auth.credentials import AnonymousCredentials
            from google.cloud import aiplatform
            from google.cloud.aiplatform import jobs, training_jobs

            # The capture's only change to the SDK: it polls every 0.1 s and logs every poll.
            jobs._JOB_WAIT_TIME = training_jobs._JOB_WAIT_TIME = 0.1
            jobs._LOG_WAIT_TIME = training_jobs._LOG_WAIT_TIME = 0

            aiplatform.init(
                project="my-project",
                location="{LOCATION}",
                staging_bucket="gs://my-bucket",
                api_endpoint=os.environ["FAKE_VERTEX"],
                credentials=AnonymousCredentials(),
            )
            """
    )


def _custom(name: str, *, wait: str = "run", var: str = "job") -> str:
    """A user's CustomJob on a custom container; ``wait``: ``run``, ``submit`` then
    ``wait_for_completion()``, or ``async``: ``run(sync=False)`` then ``wait()``."""
    start = {
        "run": f"{var}.run()",
        "submit": f"{var}.submit()\n{var}.wait_for_completion()",
        "async": f"{var}.run(sync=False)\n{var}.wait()",
    }[wait]
    return (
        textwrap.dedent(
            f"""\
        {var} = aiplatform.CustomJob(
            display_name="{name}",
            worker_pool_specs=[
                {{
                    "machine_spec": {{
                        "machine_type": "n1-standard-8",
                        "accelerator_type": "NVIDIA_TESLA_T4",
                        "accelerator_count": 1,
                    }},
                    "replica_count": 1,
                    "container_spec": {{"image_uri": "{IMAGE}", "args": ["--epochs", "10"]}},
                }}
            ],
        )
        """
        )
        + start
        + "\n"
    )


def _states(*middle: str, end: str) -> tuple[str, ...]:
    return ("QUEUED", "PENDING", *middle, end)


def _failed_custom(
    name: str, code: int, message: str, cause: Cause, *, documented: bool = True, about: str
) -> Case:
    script = ScriptedJob(name, "custom", _states("RUNNING", "RUNNING", end="FAILED"))
    message = message.replace("{job_id}", script.job_id)
    script = ScriptedJob(name, "custom", script.states, error=(code, message))
    return Case(name, about, (Job(script, cause, documented),), (_custom(name),))


def _user_error(exit_code: int, replica: str = "workerpool0-0") -> Cause:
    return Cause("user_code_exception", exit_code, replica)


def _custom_cases() -> list[Case]:
    reason = EXIT_1
    return [
        Case(
            "custom-succeeded",
            "a CustomJob queued, then running, then succeeded (run())",
            (
                Job(
                    ScriptedJob(
                        "custom-succeeded", "custom", _states("RUNNING", "RUNNING", end="SUCCEEDED")
                    )
                ),
            ),
            (_custom("custom-succeeded"),),
        ),
        Case(
            "custom-submit-wait",
            "a CustomJob submitted, then waited for (submit(), wait_for_completion()), succeeded",
            (
                Job(
                    ScriptedJob(
                        "custom-submit-wait", "custom", ("QUEUED", "QUEUED", "RUNNING", "SUCCEEDED")
                    )
                ),
            ),
            (_custom("custom-submit-wait", wait="submit"),),
        ),
        Case(
            "custom-async-wait",
            "a CustomJob run with sync=False, then wait(), succeeded",
            (Job(ScriptedJob("custom-async-wait", "custom", _states("RUNNING", end="SUCCEEDED"))),),
            (_custom("custom-async-wait", wait="async"),),
        ),
        _failed_custom(
            "user-error-traceback-link",
            3,
            reason + _TAIL + _LINK,
            _user_error(1),
            about="user code exits 1: reason, the traceback tail and the console link",
        ),
        _failed_custom(
            "user-error-reason", 3, reason, _user_error(1), about="user code exits 1: reason only"
        ),
        _failed_custom(
            "user-error-link",
            3,
            "The replica workerpool0-0 exited with a non-zero status of 1. " + _LINK,
            _user_error(1),
            about="user code exits 1: no reason, the console link",
        ),
        _failed_custom(
            "user-error-127",
            3,
            "The replica workerpool0-0 exited with a non-zero status of 127",
            _user_error(127),
            about="the bare message, exit 127 (command not found)",
        ),
        _failed_custom(
            "user-error-two-replicas",
            3,
            EXIT_1.replace("workerpool0-0", "workerpool1-0")
            + EXIT_1.replace("workerpool0-0", "workerpool1-3"),
            _user_error(1, "workerpool1-0"),
            about="one message naming two replicas (the first named is the cause's replica)",
        ),
        _failed_custom(
            "oom-template",
            8,
            "The replica workerpool0-0 ran out of memory and exited with a non-zero status of 137.",
            Cause("oom", 137, "workerpool0-0"),
            documented=False,
            about="OOM in the documentation's template wording",
        ),
        _failed_custom(
            "oom-low-memory",
            8,
            LOW_MEMORY,
            Cause("oom", None, "workerpool0"),
            about="OOM, current wording (names the pool, no exit code), code 8",
        ),
        _failed_custom(
            "oom-legacy",
            8,
            "The replica master 0 ran out-of-memory and exited with a non-zero status of "
            "9(SIGKILL)",
            Cause("oom", 9, "master 0"),
            documented=False,
            about="OOM, legacy wording (master 0, 9(SIGKILL))",
        ),
        _failed_custom(
            "stockout",
            8,
            "Resources are insufficient in region: us-central1",
            Cause("stockout", region="us-central1"),
            documented=False,
            about="stockout as real logs say it (no advice sentence)",
        ),
        _failed_custom(
            "stockout-advice",
            8,
            "Resources are insufficient in region: europe-west4. "
            "Try a different region or use a different accelerator.",
            Cause("stockout", region="europe-west4"),
            documented=False,
            about="stockout in the template's wording",
        ),
        _failed_custom(
            "internal-error",
            13,
            "Internal error occurred for the current attempt.",
            Cause("internal_error"),
            about="internal error, code 13",
        ),
        _failed_custom(
            "quota-code-8",
            8,
            "The following quota metrics exceed quota limits: "
            "aiplatform.googleapis.com/custom_model_training_nvidia_k80_gpus",
            Cause("quota"),
            about="quota exceeded on a created job, code 8",
        ),
        Case(
            "refused-429",
            "the create call refused: RESOURCE_EXHAUSTED (HTTP 429) over gRPC, no job made",
            (
                Job(
                    ScriptedJob(
                        "refused-429",
                        "custom",
                        ("QUEUED",),
                        refuse=(
                            grpc.StatusCode.RESOURCE_EXHAUSTED,
                            "The following quota metrics exceed quota limits: "
                            "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus",
                        ),
                    ),
                    Cause("quota"),
                ),
            ),
            (_custom("refused-429"),),
        ),
        Case(
            "cancelled",
            "a running CustomJob cancelled from the console: code 1, CANCELED",
            (
                Job(
                    ScriptedJob(
                        "cancelled",
                        "custom",
                        _states("RUNNING", "RUNNING", "CANCELLING", end="CANCELLED"),
                        error=(1, "CANCELED"),
                    ),
                    Cause("cancelled"),
                ),
            ),
            (_custom("cancelled"),),
        ),
    ]


def _container_pipeline(name: str) -> str:
    return textwrap.dedent(
        f"""\
        job = aiplatform.CustomContainerTrainingJob(
            display_name="{name}",
            container_uri="{IMAGE}",
        )
        model = job.run(
            args=["--epochs", "10"],
            replica_count=1,
            machine_type="n1-standard-8",
            accelerator_type="NVIDIA_TESLA_T4",
            accelerator_count=1,
        )
        """
    )


def _script_pipeline(name: str) -> str:
    return textwrap.dedent(
        f"""\
        from pathlib import Path

        Path("task.py").write_text("print('training')\\n")
        job = aiplatform.CustomTrainingJob(
            display_name="{name}",
            script_path="task.py",
            container_uri="{PREBUILT}",
            requirements=["pandas"],
        )
        model = job.run(replica_count=1, machine_type="n1-standard-8")
        """
    )


def _pipeline_cases() -> list[Case]:
    states = ("PENDING", "RUNNING", "RUNNING", "RUNNING")
    link_failure = EXIT_1 + _TAIL + _LINK

    def failed(name: str, code: int, message: str) -> ScriptedJob:
        job_id = ScriptedJob(name, "pipeline", ("FAILED",)).backing_job_id
        return ScriptedJob(
            name, "pipeline", (*states, "FAILED"), error=(code, message.replace("{job_id}", job_id))
        )

    return [
        Case(
            "container-pipeline-succeeded",
            "CustomContainerTrainingJob.run() succeeds (no model)",
            (Job(ScriptedJob("container-pipeline-succeeded", "pipeline", (*states, "SUCCEEDED"))),),
            (_container_pipeline("container-pipeline-succeeded"),),
        ),
        Case(
            "container-pipeline-failed",
            "CustomContainerTrainingJob.run() fails: user code exits 1 (traceback tail, link)",
            (Job(failed("container-pipeline-failed", 3, link_failure), _user_error(1)),),
            (_container_pipeline("container-pipeline-failed"),),
        ),
        Case(
            "script-pipeline-succeeded",
            "CustomTrainingJob.run() of a local script (packaged to Cloud Storage) succeeds",
            (Job(ScriptedJob("script-pipeline-succeeded", "pipeline", (*states, "SUCCEEDED"))),),
            (_script_pipeline("script-pipeline-succeeded"),),
            needs_storage=True,
        ),
        Case(
            "script-pipeline-oom",
            "CustomTrainingJob.run() fails: replicas low on memory, code 8",
            (
                Job(
                    failed(
                        "script-pipeline-oom",
                        8,
                        LOW_MEMORY,
                    ),
                    Cause("oom", None, "workerpool0"),
                ),
            ),
            (_script_pipeline("script-pipeline-oom"),),
            needs_storage=True,
        ),
    ]


def _tuning(name: str, max_failed: int) -> str:
    trial = _custom(f"{name}-trial", var="trial_job").removesuffix("trial_job.run()\n")
    return (
        "from google.cloud.aiplatform import hyperparameter_tuning as hpt\n\n"
        + trial
        + textwrap.dedent(
            f"""\
        job = aiplatform.HyperparameterTuningJob(
            display_name="{name}",
            custom_job=trial_job,
            metric_spec={{"accuracy": "maximize"}},
            parameter_spec={{"lr": hpt.DoubleParameterSpec(min=1e-4, max=1e-1, scale="log")}},
            max_trial_count=4,
            parallel_trial_count=2,
            max_failed_trial_count={max_failed},
        )
        job.run()
        """
        )
    )


def _tuning_cases() -> list[Case]:
    failing = (
        Trial("1", "SUCCEEDED"),
        Trial(
            "2",
            "INFEASIBLE",
            EXIT_1,
        ),
        Trial(
            "3",
            "INFEASIBLE",
            EXIT_1,
        ),
        Trial("4", "SUCCEEDED"),
    )
    states = ("QUEUED", "PENDING", "RUNNING", "RUNNING", "RUNNING")
    return [
        Case(
            "tuning-failed-trials",
            "a tuning job whose trials fail (2 of 4, max 1 failed): the job fails",
            (
                Job(
                    ScriptedJob(
                        "tuning-failed-trials",
                        "tuning",
                        (*states, "FAILED"),
                        error=(
                            3,
                            EXIT_1,
                        ),
                        trials=failing,
                    ),
                    _user_error(1),
                    documented=False,
                ),
            ),
            (_tuning("tuning-failed-trials", 1),),
        ),
        Case(
            "tuning-some-trials-failed",
            "a tuning job with 2 failed trials of 4 (max 3 failed): the job succeeds",
            (
                Job(
                    ScriptedJob(
                        "tuning-some-trials-failed",
                        "tuning",
                        (*states, "SUCCEEDED"),
                        trials=failing,
                    )
                ),
            ),
            (_tuning("tuning-some-trials-failed", 3),),
        ),
    ]


def _several_cases() -> list[Case]:
    ok = _states("RUNNING", end="SUCCEEDED")
    reason = EXIT_1
    loop = textwrap.dedent(
        """\
        for lr in ["0.1", "0.01", "0.001"]:
            job = aiplatform.CustomJob(
                display_name=f"sweep-lr-{lr}",
                worker_pool_specs=[
                    {
                        "machine_spec": {"machine_type": "n1-standard-8"},
                        "replica_count": 1,
                        "container_spec": {"image_uri": "IMAGE", "args": ["--lr", lr]},
                    }
                ],
            )
            try:
                job.run()
            except RuntimeError as err:
                print(f"lr={lr}: {err}")
        """
    ).replace("IMAGE", IMAGE)
    return [
        Case(
            "several-jobs",
            "three CustomJobs run in turn from one loop; the second fails, the user prints "
            "the error",
            (
                Job(ScriptedJob("sweep-lr-0.1", "custom", ok)),
                Job(
                    ScriptedJob(
                        "sweep-lr-0.01",
                        "custom",
                        _states("RUNNING", end="FAILED"),
                        error=(3, reason),
                    ),
                    _user_error(1),
                ),
                Job(ScriptedJob("sweep-lr-0.001", "custom", ok)),
            ),
            (loop,),
        ),
        Case(
            "several-jobs-stopped",
            "two CustomJobs in one script: the first succeeds, the second fails (OOM) and "
            "ends the script",
            (
                Job(ScriptedJob("prepare-data", "custom", ok)),
                Job(
                    ScriptedJob(
                        "train-model",
                        "custom",
                        _states("RUNNING", end="FAILED"),
                        error=(
                            8,
                            LOW_MEMORY,
                        ),
                    ),
                    Cause("oom", None, "workerpool0"),
                ),
            ),
            (_custom("prepare-data", var="prepare"), _custom("train-model", var="train")),
        ),
    ]


def _interrupted_cases() -> list[Case]:
    return [
        Case(
            "interrupted-running",
            "Ctrl-C while the SDK waits on a running CustomJob: the job goes on",
            (Job(ScriptedJob("interrupted-running", "custom", ("QUEUED", "PENDING", "RUNNING"))),),
            (_custom("interrupted-running"),),
            interrupt_after=4,
        ),
        Case(
            "interrupted-queued",
            "Ctrl-C while the CustomJob is still queued",
            (Job(ScriptedJob("interrupted-queued", "custom", ("QUEUED",))),),
            (_custom("interrupted-queued"),),
            interrupt_after=2,
        ),
        Case(
            "interrupted-pipeline",
            "Ctrl-C while a CustomContainerTrainingJob runs",
            (Job(ScriptedJob("interrupted-pipeline", "pipeline", ("PENDING", "RUNNING"))),),
            (_container_pipeline("interrupted-pipeline"),),
            interrupt_after=3,
        ),
    ]


CASES: tuple[Case, ...] = tuple(
    _custom_cases() + _pipeline_cases() + _tuning_cases() + _several_cases() + _interrupted_cases()
)


def scripted_jobs() -> list[ScriptedJob]:
    return [job.script for case in CASES for job in case.jobs]


def truth(case: Case) -> dict[str, Any]:
    """The case's truth file: per job, from the script. An interrupted job's script ends in
    the state it repeats until the Ctrl-C (the capture checks the fake served it last): the
    last state seen, not a final one."""
    jobs = []
    for job in case.jobs:
        script = job.script
        refused = script.refuse is not None
        final = script.final_state in ("SUCCEEDED", "FAILED", "CANCELLED")
        interrupted = case.interrupt_after is not None
        entry: dict[str, Any] = {
            "display_name": script.name,
            "kind": {
                "custom": "CustomJob",
                "tuning": "HyperparameterTuningJob",
                "pipeline": "TrainingPipeline",
            }[script.kind],
            "job_id": None if refused else script.job_id,
            "resource_name": None if refused else script.resource_name,
            "refused_at_creation": refused,
            "interrupted": interrupted,
            "state": None if refused else ("JOB_STATE_" + script.final_state),
            "observed_final": (not refused) and final and not interrupted,
            "error_code": script.refuse[0].value[0]
            if refused
            else (script.error[0] if script.error else None),
            "error_code_documented": job.documented,
            "error_message": script.refuse[1]
            if refused
            else (script.error[1] if script.error else None),
            "cause": None
            if job.cause is None
            else {
                "category": job.cause.category,
                "exit_code": job.cause.exit_code,
                "replica": job.cause.replica,
                "region": job.cause.region,
            },
        }
        if script.kind == "pipeline" and not refused:
            entry["backing_custom_job_id"] = script.backing_job_id
        if script.trials:
            entry["trials"] = {t.trial_id: t.state for t in script.trials}
        jobs.append(entry)
    return {
        "case": case.name,
        "about": case.about,
        "interrupt": case.interrupt_after is not None,
        "jobs": jobs,
    }
