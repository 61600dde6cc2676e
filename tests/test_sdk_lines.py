"""The Vertex AI SDK's state lines in every form it prints them (issue 27, point 2).

The forms are the SDK's own (platform.md section 10; aiplatform jobs._log_job_state,
training_jobs._block_until_complete, base.log_action_completed_against_resource): the resource
line ``<Class> projects/P/locations/L/<collection>/ID current state:`` and, on the next line,
the state as 2.x (``JOB_STATE_RUNNING``), 1.x before Python 3.11 (``JobState.JOB_STATE_RUNNING``)
or 1.x on 3.11 and later (the number) print it; PipelineState's for training pipelines and
pipeline jobs; the success line ``<Class> run completed. Resource name: ...``; the failure
``Job failed with:`` and its code on the next line; with the logging prefixes users see.
"""

from __future__ import annotations

import pytest

from analyzer.api import analyze_sources
from analyzer.ingest import MemorySource
from analyzer.rulebook import RuleBook
from analyzer.rulebook.derived import STATE_NAMES, derived_fields
from analyzer.rulebook.events import EventKind

BOOK = RuleBook.load()
RESOURCE = "projects/123/locations/us-central1"
# (class, collection, id, enum prefix, state prefix) of each kind of job the SDK polls.
JOBS = {
    "custom": ("CustomJob", "customJobs", "4695452998984269824", "JobState.", "JOB_STATE_"),
    "tuning": (
        "HyperparameterTuningJob",
        "hyperparameterTuningJobs",
        "1248415738746634240",
        "JobState.",
        "JOB_STATE_",
    ),
    "pipeline": (
        "CustomContainerTrainingJob",
        "trainingPipelines",
        "301533504775127040",
        "PipelineState.",
        "PIPELINE_STATE_",
    ),
    "pipeline-job": (
        "PipelineJob",
        "pipelineJobs",
        "eval-pipe-v1-20230515101352",
        "PipelineState.",
        "PIPELINE_STATE_",
    ),
}
# How each SDK prints a state (its number: JobState's and PipelineState's numbering).
FORMS = {
    "2.x": lambda enum, prefix, name: f"{prefix}{name}",
    "1.x-py310": lambda enum, prefix, name: f"{enum}{prefix}{name}",
    "1.x-py311": lambda enum, prefix, name: str(STATE_NAMES.index(name)),
}
# What precedes each logged line: the SDK's own handler, logging.basicConfig, absl, a time.
PREFIXES = {
    "bare": "",
    "logging": "INFO:google.cloud.aiplatform.jobs:",
    "absl": "I1207 10:31:09.588982 139812155360832 jobs.py:178] ",
    "time": "2026-12-07 10:31:09,588 INFO ",
}


def _state_lines(kind: str, form: str, prefix: str, states: list[str]) -> list[str]:
    cls, collection, job, enum, state_prefix = JOBS[kind]
    lines: list[str] = []
    for state in states:
        lines.append(f"{PREFIXES[prefix]}{cls} {RESOURCE}/{collection}/{job} current state:")
        lines.append(FORMS[form](enum, state_prefix, state))
    return lines


def _jobs(text: str) -> dict[str | None, str]:
    analysis = analyze_sources([MemorySource(text, "sdk.txt")])
    return {d.job_id: d.state.value for d in analysis.diagnoses}


@pytest.mark.parametrize("kind", sorted(JOBS))
@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("prefix", sorted(PREFIXES))
def test_every_form_names_its_job_and_state(kind: str, form: str, prefix: str) -> None:
    text = "\n".join(_state_lines(kind, form, prefix, ["PENDING", "RUNNING", "FAILED"])) + "\n"
    assert _jobs(text) == {JOBS[kind][2]: "JOB_STATE_FAILED"}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_running_job_is_running(form: str) -> None:
    text = "\n".join(_state_lines("custom", form, "bare", ["QUEUED", "PENDING", "RUNNING"]))
    assert _jobs(text) == {JOBS["custom"][2]: "JOB_STATE_RUNNING"}


@pytest.mark.parametrize("kind", ["custom", "pipeline"])
def test_run_completed_is_a_success(kind: str) -> None:
    # A training pipeline polls without printing its final state: its success is the SDK's
    # "run completed" line alone.
    cls, collection, job, _, _ = JOBS[kind]
    lines = _state_lines(kind, "2.x", "logging", ["RUNNING"])
    lines.append(
        f"INFO:google.cloud.aiplatform.training_jobs:{cls} run completed."
        f" Resource name: {RESOURCE}/{collection}/{job}"
    )
    lines.append("Training did not produce a Managed Model returning None.")
    assert _jobs("\n".join(lines)) == {job: "JOB_STATE_SUCCEEDED"}


def test_several_jobs_each_state_line_to_its_job() -> None:
    custom, tuning = JOBS["custom"][2], JOBS["tuning"][2]
    lines = [
        "Creating CustomJob",
        f"CustomJob created. Resource name: {RESOURCE}/customJobs/{custom}",
        *_state_lines("custom", "1.x-py311", "bare", ["PENDING", "RUNNING", "SUCCEEDED"]),
        f"CustomJob run completed. Resource name: {RESOURCE}/customJobs/{custom}",
        "Creating HyperparameterTuningJob",
        "HyperparameterTuningJob created."
        f" Resource name: {RESOURCE}/hyperparameterTuningJobs/{tuning}",
        *_state_lines("tuning", "1.x-py311", "bare", ["PENDING", "RUNNING", "FAILED"]),
        "Traceback (most recent call last):",
        '  File "/home/user/run.py", line 30, in <module>',
        "    hp_job.run()",
        "RuntimeError: Job failed with:",
        "code: 3",
        'message: "The replica workerpool0-0 exited with a non-zero status of 1.'
        ' Termination reason: Error. "',
    ]
    analysis = analyze_sources([MemorySource("\n".join(lines), "two.txt")])
    found = {d.job_id: d for d in analysis.diagnoses}
    assert found[custom].state.value == "JOB_STATE_SUCCEEDED"
    assert found[custom].cause is None
    assert found[tuning].state.value == "JOB_STATE_FAILED"
    assert found[tuning].cause is not None
    assert found[tuning].cause.category.value == "user_code_exception"


def test_interleaved_jobs_keep_their_states() -> None:
    # Two jobs polled side by side (sync=False, threads): each state line names its job.
    a, b = (
        _state_lines("custom", "1.x-py310", "absl", ["PENDING", "RUNNING"]),
        _state_lines("tuning", "1.x-py310", "absl", ["PENDING", "PENDING"]),
    )
    lines = [*a[:2], *b[:2], *a[2:], *b[2:]]
    assert _jobs("\n".join(lines)) == {
        JOBS["custom"][2]: "JOB_STATE_RUNNING",
        JOBS["tuning"][2]: "JOB_STATE_PENDING",
    }


@pytest.mark.parametrize("form", sorted(FORMS))
def test_job_failed_with_code_1_is_cancelled(form: str) -> None:
    # FAILED and CANCELLED share the SDK's "Job failed with:" (google.rpc code 1: CANCELLED),
    # even when the last state printed was not yet CANCELLED.
    lines = _state_lines("custom", form, "bare", ["RUNNING", "CANCELLING"])
    lines += ["RuntimeError: Job failed with:", "code: 1", 'message: "CANCELED"']
    analysis = analyze_sources([MemorySource("\n".join(lines), "cancel.txt")])
    (diagnosis,) = analysis.diagnoses
    assert diagnosis.state.value == "JOB_STATE_CANCELLED"
    assert diagnosis.cause is not None and diagnosis.cause.category.value == "cancelled"


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_cancelled_state_is_the_cause_with_its_state(form: str) -> None:
    # An async run prints CANCELLED and nothing after it (tests/real/
    # gh-jarokaz-reduction-server-cancelled-S): the cause quotes the state, not only the name.
    lines = _state_lines("custom", form, "logging", ["RUNNING", "CANCELLED"])
    analysis = analyze_sources([MemorySource("\n".join(lines), "cancelled.txt")])
    (diagnosis,) = analysis.diagnoses
    assert diagnosis.cause is not None and diagnosis.cause.category.value == "cancelled"
    assert diagnosis.cause.message.endswith(lines[-1])


def test_two_line_messages_count_both_lines() -> None:
    lines = [*_state_lines("custom", "2.x", "bare", ["RUNNING"]), "", "Job failed with:", "code: 3"]
    source = MemorySource("\n".join(lines) + "\n", "pairs.txt")
    records = list(source.records())
    assert [r.origin.line for r in records] == [1, 4]
    assert records[0].text.endswith("current state:\nJOB_STATE_RUNNING")
    stats = source.stats
    assert (stats.lines, stats.records, stats.used, stats.skipped) == (5, 2, 4, 1)


def test_a_number_alone_is_no_state() -> None:
    # The number is a state only on the line after the SDK's resource line.
    text = "Epoch 3\n3\nCustomJob projects/1/locations/l/batchPredictionJobs/9 current state:\n4\n"
    records = list(MemorySource(text, "n.txt").records())
    assert len(records) == 4
    assert not [m for r in records for m in BOOK.match(r.text) if m.kind is EventKind.JOB_STATE]


def test_state_numbers_are_the_sdks() -> None:
    # The table is the SDK's enums' numbering, read from the installed SDK when there is one.
    types = pytest.importorskip("google.cloud.aiplatform_v1.types")
    assert [state.name for state in sorted(types.JobState, key=int)] == [
        f"JOB_STATE_{name}" for name in STATE_NAMES
    ]
    for state in types.PipelineState:
        assert state.name == f"PIPELINE_STATE_{STATE_NAMES[int(state)]}"


def test_derived_fields_leave_named_ones() -> None:
    text = f"CustomJob {RESOURCE}/customJobs/1 current state:\n7"
    (state,) = [m for m in derived_fields(BOOK.match(text)) if m.kind is EventKind.JOB_STATE]
    assert state.fields == {"job_id": "1", "state_code": "7", "state": "CANCELLED"}
    named = BOOK.match("JobState.JOB_STATE_FAILED")
    assert derived_fields(named) == named
