"""The lifecycle facts of platform.md, one constructed case each (tests/fixtures/evidence/
cases.yaml), checked like the real excerpts, on the fast path and the plain path alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from analyzer.api import analyze
from analyzer.classify.collector import collect
from analyzer.ingest import open_sources
from analyzer.rulebook import RuleBook
from tests.expectations import check

CASES_DIR = Path(__file__).resolve().parent / "fixtures" / "evidence"
CASES: list[dict[str, Any]] = yaml.safe_load((CASES_DIR / "cases.yaml").read_text())


def _marked(case: dict[str, Any]) -> Any:
    if "pending" in case:
        return pytest.param(case, marks=pytest.mark.xfail(strict=True, reason=case["pending"]))
    return case


@pytest.mark.parametrize("case", [_marked(c) for c in CASES], ids=lambda c: str(c["text"]))
def test_lifecycle_fact(case: dict[str, Any]) -> None:
    path = CASES_DIR / case["text"]
    spec = CASES_DIR / case["job_spec"] if "job_spec" in case else None
    analysis = analyze([path], job_spec_path=spec)
    check(analysis, case["expect"], path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c["text"]))
def test_fast_and_plain_paths_agree(case: dict[str, Any]) -> None:
    book = RuleBook.load()
    path = str(CASES_DIR / case["text"])
    assert collect(open_sources([path]), book, fast=True) == collect(
        open_sources([path]), book, fast=False
    )


@pytest.mark.parametrize(
    ("text", "codes"),
    [
        # The runner's CalledProcessError line, then "Module completed" (legacy) or "Task
        # completed. Exit code (1)" (prebuilt containers): one exit, not two.
        ("legacy-runner-exit1-with-service.jsonl", [1]),
        ("legacy-runner-killed-then-oom.jsonl", [-9]),
        ("legacy-runner-sigabrt-alone.jsonl", [-6]),
        # The simulator's prebuilt-container runner: six of each line, six exits.
        ("../../../sample_logs/worker-restarts-exhausted.jsonl", [1] * 6),
    ],
)
def test_a_runner_reports_one_exit_once(text: str, codes: list[int]) -> None:
    (diagnosis,) = analyze([CASES_DIR / text]).diagnoses
    assert diagnosis.timeline is not None
    seen = [g.exit_code for a in diagnosis.timeline.attempts for w in a.workers for g in w.exits]
    assert [c for c in seen if c] == codes


def _runner_log(tmp: Path, gap: float, restart: bool = False, twice: bool = False) -> Path:
    """A Vertex job whose prebuilt-container runner reports its command's failure, then
    ``Task completed`` ``gap`` seconds later; ``restart``: the process starts again between
    them; ``twice``: two completion lines and no report."""
    import json
    from datetime import UTC, datetime, timedelta

    start = datetime(2024, 4, 4, 0, 20, tzinfo=UTC)
    lines: list[tuple[float, str, str]] = [
        (0, "service", "Waiting for job to be provisioned."),
        (60, "service", "Job is running."),
        (61, "workerpool0-0", "Running command: python3 -m trainer.task"),
        (300, "workerpool0-0", "Traceback (most recent call last):"),
        (300, "workerpool0-0", "KeyError: 'label'"),
    ]
    first = "Task completed. Exit code (1). Exit reason (SUBPROCESS_EXCEPTION)"
    report = "Command '['python3', '-m', 'trainer.task']' returned non-zero exit status 1."
    lines.append((302, "workerpool0-0", first if twice else report))
    if restart:
        lines.append((302 + gap / 2, "workerpool0-0", "Running command: python3 -m trainer.task"))
    lines.append((302 + gap, "workerpool0-0", first))
    later = 302 + gap + 20
    lines.append(
        (later, "service", "The replica workerpool0-0 exited with a non-zero status of 1.")
    )
    lines.append((later + 10, "service", "Job failed."))
    path = tmp / f"runner-{gap}.jsonl"
    with path.open("w") as out:
        for index, (seconds, task, text) in enumerate(lines):
            when = start + timedelta(seconds=seconds)
            entry = {
                "insertId": f"i{index}",
                "resource": {"type": "ml_job", "labels": {"job_id": "42", "task_name": task}},
                "timestamp": when.isoformat().replace("+00:00", "Z"),
                "severity": "INFO",
            }
            key = "textPayload" if task == "service" else "jsonPayload"
            entry[key] = text if task == "service" else {"message": text}
            out.write(json.dumps(entry) + "\n")
    return path


@pytest.mark.parametrize("gap", [1, 30, 600])
def test_the_runners_two_lines_of_one_exit_are_one_exit_however_far_apart(
    tmp_path: Path, gap: int
) -> None:
    # Paired by fact (the same replica's next runner exit line after the report, no start
    # between), not by a time window: a slow VM may put seconds or minutes between them, and
    # counting two exits would charge a restart the replica never had.
    path = _runner_log(tmp_path, gap)
    (diagnosis,) = analyze([path]).diagnoses
    [worker] = diagnosis.timeline.attempts[0].workers
    assert [g.exit_code for g in worker.exits] == [1]
    assert diagnosis.worker_restarts == {} or set(diagnosis.worker_restarts.values()) == {0}
    assert diagnosis.cause is not None and diagnosis.cause.exit_code == 1
    book = RuleBook.load()
    assert collect(open_sources([str(path)]), book, fast=True) == collect(
        open_sources([str(path)]), book, fast=False
    )


@pytest.mark.parametrize(("restart", "twice"), [(True, False), (False, True)])
def test_two_exits_stay_two(tmp_path: Path, restart: bool, twice: bool) -> None:
    # A start between the lines, or two completion lines (no report): two processes ended.
    path = _runner_log(tmp_path, 2, restart=restart, twice=twice)
    (diagnosis,) = analyze([path]).diagnoses
    [worker] = diagnosis.timeline.attempts[0].workers
    assert [g.exit_code for g in worker.exits] == [1, 1]


@pytest.mark.parametrize(
    ("lines", "final"),
    [
        # The message alone: the job failed, its end is not in the input.
        (
            ["Replicas low on disk: workerpool0. Specify a larger bootDiskSizeGb and try again."],
            False,
        ),
        (
            [
                "Replicas low on disk: workerpool0. Specify a larger bootDiskSizeGb and try again.",
                "Job failed.",
            ],
            True,
        ),
    ],
)
def test_a_disk_shortage_is_quoted_not_categorised(
    tmp_path: Path, lines: list[str], final: bool
) -> None:
    # No category of the contract is a disk shortage (neither host memory nor a quota): the
    # cause stays null, the verdict, a note and the advice quote the job's error.
    path = tmp_path / "disk.txt"
    path.write_text("\n".join(lines) + "\n")
    (diagnosis,) = analyze([path]).diagnoses
    job = diagnosis.to_dict()
    assert job["cause"] is None and job["state"] == "JOB_STATE_FAILED"
    assert job["observed_final"] is final
    assert str(diagnosis).endswith("- the job's error: Replicas low on disk: workerpool0")
    assert any('"Replicas low on disk: workerpool0.' in n and ":1)" in n for n in job["notes"])
    assert any("bootDiskSizeGb" in a and "Replicas low on disk" in a for a in job["advice"])


def test_one_exit_line_says_what_it_shows_once() -> None:
    # tests/real/gh-tensorflow-tensorflow-18984-L: one runner exit line and nothing after.
    # The exit note says what that supports (the job predicted in progress, whether the exit
    # ended it not shown); the general "logs end while ... in progress" note would say less.
    from analyzer.verdict.predict import IN_PROGRESS_NOTE

    real = Path(__file__).parent / "real" / "gh-tensorflow-tensorflow-18984-L.txt"
    (diagnosis,) = analyze([real]).diagnoses
    assert IN_PROGRESS_NOTE not in diagnosis.notes
    [note] = [n for n in diagnosis.notes if "worker-replica-0 exited" in n]
    assert "predicted still in progress" in note and "is not shown" in note
    assert "(predicted from one log entry)" in str(diagnosis)


def test_a_message_cut_at_its_top_is_shown_from_its_exception() -> None:
    # tests/real/gh-sinaungoding-tf-od-cloud-S: the service's message without its first line.
    real = Path(__file__).parent / "real" / "gh-sinaungoding-tf-od-cloud-S.txt"
    (diagnosis,) = analyze([real]).diagnoses
    assert diagnosis.cause is not None
    assert diagnosis.cause.message.startswith("… SyntaxError: invalid syntax To find out more")
    assert not any("status unknown" in line for line in diagnosis.advice), diagnosis.advice


@pytest.mark.parametrize(
    ("excerpt", "start"),
    [
        ("gh-rstudio-cloudml-130-S.txt", "The replica master 0 exited"),  # R's str() of it
        ("gh-vertex-ai-samples-1898-V.txt", "The replica workerpool0-0 exited"),  # SDK YAML
        ("gh-stable-diffusion-on-gcp-12-V.txt", "The following quota metrics"),  # JSON body
        ("gh-vertex-ai-samples-1504-V.txt", "The replica workerpool1-1 exited"),  # Cloud Build
    ],
)
def test_the_cause_is_the_message_not_its_key(excerpt: str, start: str) -> None:
    real = Path(__file__).parent / "real" / excerpt
    (diagnosis,) = analyze([real]).diagnoses
    assert diagnosis.cause is not None and diagnosis.cause.message.startswith(start)
    assert not diagnosis.cause.message.endswith(('"', "',"))


def test_the_text_report_says_a_refused_job_was_never_created() -> None:
    from rich.console import Console

    from analyzer.report.text import render_text

    console = Console(record=True, width=200, color_system=None)
    render_text(analyze([CASES_DIR / "refused-at-creation.txt"]), console)
    assert "UNSPECIFIED (never created: the API refused it)" in console.export_text()


@pytest.mark.parametrize(
    "excerpt",
    [
        "gh-xmanager-29-V.txt",  # the API refused the job: never created
        # Nothing shows an attempt began (gh-sinaungoding-tf-od-cloud-S was this case while its
        # page was read as one line; read as lines, its "Job failed." ends an attempt).
        "gh-rstudio-cloudml-142-S.txt",
    ],
)
def test_no_attempt_is_listed_when_none_ran(excerpt: str) -> None:
    """A job with 0 attempts has no attempt log: a placeholder "#1" contradicted the count."""
    real = Path(__file__).parent / "real" / excerpt
    (diagnosis,) = analyze([real]).diagnoses
    assert diagnosis.attempts == 0
    assert diagnosis.attempt_log == ()
    assert diagnosis.to_dict()["attempt_log"] == []


@pytest.mark.parametrize(
    ("state", "phrase"),
    [
        ("JOB_STATE_SUCCEEDED", "no failure"),
        ("JOB_STATE_FAILED", "no failure message the rules know"),
        ("JOB_STATE_RUNNING", "no failure message"),
        ("JOB_STATE_PENDING", "no failure message"),
        ("JOB_STATE_UNSPECIFIED", "no failure message"),
    ],
)
def test_no_failure_is_said_only_of_a_success(state: str, phrase: str) -> None:
    # A job without a cause that did not succeed may have failed in what the input lacks (a
    # paste cut before the failure): the verdict says what is missing, not "no failure".
    import dataclasses

    from analyzer.verdict.diagnosis import JobState, cause_phrase

    samples = Path(__file__).resolve().parent.parent / "sample_logs"
    [diagnosis] = analyze([samples / "success.jsonl"]).diagnoses
    changed = dataclasses.replace(diagnosis, state=JobState(state), cause=None)
    assert cause_phrase(changed) == phrase
    assert str(changed).endswith(f" - {phrase}")


@pytest.mark.parametrize(
    ("sample", "phrase"),
    [
        ("worker-restarts-exhausted.jsonl", "recovered from worker_restarts_exhausted,"),
        ("transient-sigsegv-retry.jsonl", "recovered from user_code_exception,"),
        ("user-code-exit1.jsonl", "user_code_exception,"),
    ],
)
def test_a_failure_a_success_got_past_reads_as_recovered(sample: str, phrase: str) -> None:
    # A bare category beside SUCCEEDED read as the reason the job failed.
    from analyzer.verdict.diagnosis import cause_phrase

    samples = Path(__file__).resolve().parent.parent / "sample_logs"
    [diagnosis] = analyze([samples / sample]).diagnoses
    assert cause_phrase(diagnosis).startswith(phrase)


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_the_table_says_recovered_beside_succeeded(fmt: str) -> None:
    # The table's CAUSE cell beside SUCCEEDED says what the verdict line says; the JSON
    # keeps the bare category (the contract).
    from tests.clirun import run

    samples = Path(__file__).resolve().parent.parent / "sample_logs"
    paths = [str(samples / s) for s in ("transient-sigsegv-retry.jsonl", "user-code-exit1.jsonl")]
    code, out, _ = run("diagnose", *paths, "--format", fmt)
    assert code == 0
    rows = [line for line in out.splitlines() if "SUCCEEDED" in line]
    failed = [line for line in out.splitlines() if "FAILED" in line and "user_code" in line]
    assert rows and all("recovered from user_code_exception" in line for line in rows), out
    assert failed and not any("recovered" in line for line in failed), out
    code, out, _ = run("diagnose", *paths, "--format", "json")
    assert '"recovered' not in out


@pytest.mark.parametrize(
    ("excerpt", "command"),
    [
        # The console link gives the project, the message the job id.
        (
            "gh-tensorflow-models-6912-L.txt",
            "jobdoctor fetch --project 86882897199 --job-id object_detection_05_29_2019_11_47_57",
        ),
        # gcloud's own lines name the job; no link, so the project stays to be filled in.
        (
            "gh-training-data-analyst-cv-vertex-create-S.txt",
            "jobdoctor fetch --project PROJECT --job-id 3584008783828877312",
        ),
        ("gh-tensorflow-models-4294-L.txt", "jobdoctor fetch --project PROJECT --job-id JOB_ID"),
    ],
)
def test_the_fetch_command_carries_the_ids_the_input_shows(excerpt: str, command: str) -> None:
    real = Path(__file__).parent / "real" / excerpt
    advice = [line for d in analyze([real]).diagnoses for line in d.advice]
    assert any(command in line for line in advice), advice


@pytest.mark.parametrize(
    "excerpt",
    [
        "gh-Open_Data_QnA-61-V.txt",
        "gh-vertex-ai-samples-996-V.txt",
        "gh-langchain-google-355-V.txt",
    ],
)
def test_another_services_429_gets_no_fetch_advice(excerpt: str) -> None:
    # No training job exists: the advice had been to fetch "the job's" whole log.
    real = Path(__file__).parent / "real" / excerpt
    (diagnosis,) = analyze([real]).diagnoses
    assert diagnosis.advice and diagnosis.advice[0].startswith("No training job is in the input")
    assert not any("jobdoctor fetch" in line for line in diagnosis.advice)


@pytest.mark.parametrize(
    ("lines", "codes"),
    [
        # A paste without times: the runner's report, its completion line, the service's
        # report of the same exit after them: one exit (tests/real/gh-tensorflow-models-4578-S).
        (
            [
                "E  master-replica-0 Command '['python3', '-m', 'x']' returned non-zero exit"
                " status 1  master-replica-0",
                "I  master-replica-0 Module completed; cleaning up.  master-replica-0",
                "E  The replica master 0 exited with a non-zero status of 1. Termination reason:"
                " Error.",
            ],
            [1],
        ),
        # Another code: two exits.
        (
            [
                "E  master-replica-0 Command '['python3', '-m', 'x']' returned non-zero exit"
                " status 2  master-replica-0",
                "E  The replica master 0 exited with a non-zero status of 1.",
            ],
            [2, 1],
        ),
        # The service's report first, then the runner's: not the order of one exit.
        (
            [
                "E  The replica master 0 exited with a non-zero status of 1.",
                "E  master-replica-0 Command '['python3', '-m', 'x']' returned non-zero exit"
                " status 1  master-replica-0",
            ],
            [1, 1],
        ),
    ],
)
def test_a_paste_reports_one_exit_once(tmp_path: Path, lines: list[str], codes: list[int]) -> None:
    path = tmp_path / "paste.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (diagnosis,) = analyze([path]).diagnoses
    seen = [g.exit_code for a in diagnosis.timeline.attempts for w in a.workers for g in w.exits]
    assert [c for c in seen if c is not None] == codes


@pytest.mark.parametrize("lang", ["en", "ja", "he"])
def test_a_pasted_traceback_alone_is_what_the_advice_starts_from(tmp_path: Path, lang: str) -> None:
    # No platform message: the state is unknown, but the advice names the exception and its
    # frame, in every language (it had said only that nothing of the job is known).
    path = tmp_path / "paste.txt"
    path.write_text(
        "Traceback (most recent call last):\n"
        '  File "/root/trainer/task.py", line 10, in <module>\n'
        "    import tensorflow_addons\n"
        "ModuleNotFoundError: No module named 'tensorflow_addons'\n",
        encoding="utf-8",
    )
    (diagnosis,) = analyze([path], lang=lang).diagnoses
    assert diagnosis.cause is None
    first = diagnosis.advice[0]
    assert "ModuleNotFoundError" in first and "/root/trainer/task.py:10" in first
    assert any("jobdoctor fetch" in line for line in diagnosis.advice)


@pytest.mark.parametrize(
    ("message", "detail"),
    [
        # The container runtime's reason is a memory message: the cause is memory.
        (
            "The replica workerpool0-0 exited with a non-zero status of 137. Termination"
            " reason: OOMKilled.",
            "oom-killed",
        ),
        # SIGKILL alone proves no memory shortage (platform.md section 7).
        (
            "The replica workerpool0-0 exited with a non-zero status of 137. Termination"
            " reason: Error.",
            "killed-no-traceback",
        ),
    ],
)
def test_a_termination_reason_of_oomkilled_is_memory(
    tmp_path: Path, message: str, detail: str
) -> None:
    path = tmp_path / "paste.txt"
    path.write_text(message + "\n", encoding="utf-8")
    (diagnosis,) = analyze([path]).diagnoses
    cause = diagnosis.cause
    assert cause is not None and cause.detail == detail
    # The platform's category (its retry policy) stays the replica's exit.
    assert cause.category.value == "user_code_exception"
    memory = "ran out of memory" in diagnosis.advice[0]
    assert memory is (detail == "oom-killed")


_SDK_JOB = "CustomJob projects/1/locations/us-central1/customJobs/42 current state:\n"


@pytest.mark.parametrize(
    ("states", "code", "message", "state"),
    [
        # The SDK raises "Job failed with:" for FAILED and CANCELLED alike.
        (["RUNNING", "CANCELLED"], 1, "CANCELED", "CANCELLED"),
        (
            ["RUNNING", "FAILED"],
            3,
            "The replica workerpool0-0 exited with a non-zero status of 1.",
            "FAILED",
        ),
        (["RUNNING"], 13, "Internal error occurred for the current attempt.", "FAILED"),
    ],
)
def test_the_sdks_error_of_a_cancelled_job_is_no_failure(
    tmp_path: Path, states: list[str], code: int, message: str, state: str
) -> None:
    text = "".join(f"{_SDK_JOB}JobState.JOB_STATE_{s}\n" for s in states)
    text += f'RuntimeError: Job failed with:\ncode: {code}\nmessage: "{message}"\n'
    path = tmp_path / "run.txt"
    path.write_text(text, encoding="utf-8")
    (diagnosis,) = analyze([path]).diagnoses
    assert diagnosis.state.value == f"JOB_STATE_{state}"


def test_the_sdks_error_code_1_alone_is_a_cancelled_job(tmp_path: Path) -> None:
    # The error and its code in one entry (the SDK's output logged by a launcher): code 1,
    # google.rpc CANCELLED, with no CANCELLED state printed before it.
    import json

    def entry(number: int, text: str) -> str:
        labels = {"job_id": "42", "task_name": "service"}
        return json.dumps(
            {
                "insertId": str(number),
                "textPayload": text,
                "resource": {"type": "ml_job", "labels": labels},
                "timestamp": f"2024-01-01T00:0{number}:00Z",
                "severity": "INFO",
            }
        )

    path = tmp_path / "run.jsonl"
    path.write_text(
        entry(1, f"{_SDK_JOB}JobState.JOB_STATE_RUNNING")
        + "\n"
        + entry(2, 'RuntimeError: Job failed with:\ncode: 1\nmessage: "CANCELED"')
        + "\n",
        encoding="utf-8",
    )
    (diagnosis,) = analyze([path]).diagnoses
    assert diagnosis.state.value == "JOB_STATE_CANCELLED"


def _frames(*packages: str) -> list[Any]:
    from analyzer.classify.tracebacks import Frame

    root = "/root/.local/lib/python3.10/site-packages"
    return [Frame(f"{root}/{p}/m.py", i + 1, f"f{i}") for i, p in enumerate(packages)]


@pytest.mark.parametrize(
    ("packages", "top_cut", "expected"),
    [
        # The top cut: a framework called the user's package, which called a library.
        (("pytorch_lightning", "pathograph", "pathograph", "zarr"), True, 3),
        # The whole traceback: the entry point's package is the user's (as before).
        (("trainer", "pytorch_lightning", "zarr"), False, 1),
        (("trainer", "pytorch_lightning", "pathograph", "zarr"), False, 1),
        # Cut, but no package between the ends: the entry rule again.
        (("pytorch_lightning", "zarr"), True, 1),
    ],
)
def test_the_users_frame_when_the_traceback_top_is_cut(
    packages: tuple[str, ...], top_cut: bool, expected: int
) -> None:
    from analyzer.classify.tracebacks import user_frame

    frame = user_frame(_frames(*packages), top_cut=top_cut)
    assert frame is not None and frame.line == expected


def test_a_batch_prediction_jobs_states_are_set_aside(tmp_path: Path) -> None:
    # A listing prints each batch prediction job's name, then its state: not a training
    # job's. A training job named after it has its own state again.
    path = tmp_path / "listing.txt"
    path.write_text(
        " name: projects/1/locations/us-central1/batchPredictionJobs/3212526685756850176\n"
        " state: JobState.JOB_STATE_SUCCEEDED\n"
        "CustomJob projects/1/locations/us-central1/customJobs/42 current state:\n"
        "JobState.JOB_STATE_FAILED\n",
        encoding="utf-8",
    )
    (diagnosis,) = analyze([path]).diagnoses
    assert diagnosis.job_id == "42" and diagnosis.state.value == "JOB_STATE_FAILED"
    assert diagnosis.timeline.other_jobs == 1


def test_a_traceback_the_running_job_lived_through_does_not_lead_the_advice(
    tmp_path: Path,
) -> None:
    # "Job is running." and a worker's traceback after it, then more lines: the job went on,
    # so the advice is the in-progress one, not "fix this exception".
    import json

    def entry(number: int, task: str, text: str) -> str:
        labels = {"job_id": "42", "task_name": task}
        key = "textPayload" if task == "service" else "jsonPayload"
        value: object = text if task == "service" else {"message": text}
        return json.dumps(
            {
                "insertId": str(number),
                key: value,
                "resource": {"type": "ml_job", "labels": labels},
                "timestamp": f"2024-01-01T00:{number:02d}:00Z",
                "severity": "INFO",
            }
        )

    lines = [
        entry(1, "service", "Waiting for job to be provisioned."),
        entry(2, "service", "Job is running."),
        entry(3, "workerpool0-0", "Traceback (most recent call last):"),
        entry(4, "workerpool0-0", '  File "/app/train.py", line 3, in <module>'),
        entry(5, "workerpool0-0", "AttributeError: 'X' object has no attribute 'y'"),
        entry(6, "workerpool0-0", "step 100 loss 0.3"),
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (diagnosis,) = analyze([path]).diagnoses
    assert not diagnosis.advice[0].startswith("The input shows")
    assert any("AttributeError" in note for note in diagnosis.notes)
