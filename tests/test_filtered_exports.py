"""Exports that lack part of the service's lines: filtered by severity, or cut by a time range.

Logs Explorer's ``severity>=ERROR`` keeps the service's failure message and whatever the
containers wrote to stderr (progress bars, warnings), and drops every INFO line that starts
or ends an attempt. A job retried after a transient crash then showed one failure and
nothing else of the service: jobdoctor said ``FAILED (predicted from one log entry) ...
logs end after attempt 1``, while the worker's lines went on for 45 minutes on a new VM.
platform.md section 8 counts an attempt from a worker starting again after a job-level
failure when the service's lines are absent: a VM first seen after the failure is the next
attempt's, and the note says what the input lacks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from analyzer.api import analyze_sources
from analyzer.ingest import MemorySource
from analyzer.simulate import SCENARIOS, simulate
from analyzer.verdict.diagnosis import Diagnosis

_ERRORS = {"ERROR", "CRITICAL", "ALERT", "EMERGENCY"}


def _sink(entries: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in entries)


def _diagnoses(entries: list[dict[str, Any]]) -> list[Diagnosis]:
    return list(analyze_sources([MemorySource(_sink(entries), "export.json")]).diagnoses)


def _errors_only(scenario: str) -> list[dict[str, Any]]:
    return [e for e in simulate(scenario, seed=0) if e.get("severity") in _ERRORS]


def test_a_retry_seen_only_in_the_workers_lines_is_an_attempt() -> None:
    (job,) = _diagnoses(_errors_only("transient-sigsegv-retry"))
    assert (job.attempts, job.state.value, job.observed_final) == (2, "JOB_STATE_RUNNING", False)
    assert job.cause is not None and job.cause.exit_code == 139
    first, second = job.timeline.attempts
    assert job.timeline.resumed == 2
    assert not any(e.task in (None, "service") for e in second.events)
    # The new attempt starts with the first line of a VM the worker had not used.
    assert first.errors and second.start is not None
    assert second.start > max(e.timestamp for e in first.errors if e.timestamp)
    assert any("attempt 2 is seen only in the workers' lines" in note for note in job.notes)
    assert not any("logs end after attempt 1" in note for note in job.notes)


@pytest.mark.parametrize("scenario", ["user-code-exit1", "oom", "nccl-cascade", "cuda-oom"])
def test_a_failure_the_platform_does_not_retry_starts_no_attempt(scenario: str) -> None:
    (full,) = _diagnoses(list(simulate(scenario, seed=0)))
    (filtered,) = _diagnoses(_errors_only(scenario))
    assert filtered.attempts == 1 and filtered.timeline.resumed is None
    assert filtered.cause is not None and full.cause is not None
    assert filtered.cause.category is full.cause.category


def _from_last_provisioning(scenario: str) -> list[dict[str, Any]]:
    """A Logs Explorer export whose time range starts inside the job: after its last
    attempt's provisioning."""
    entries = list(simulate(scenario, seed=0))
    text = [
        str(e.get("textPayload") or (e.get("jsonPayload") or {}).get("message")) for e in entries
    ]
    starts = [i for i, t in enumerate(text) if t.startswith("Waiting for job to be provisioned")]
    return entries[starts[-1] + 3 :]


def test_an_export_that_begins_inside_the_job_says_its_counts_are_what_it_shows() -> None:
    (whole,) = _diagnoses(list(simulate("worker-restarts-exhausted", seed=0)))
    (cut,) = _diagnoses(_from_last_provisioning("worker-restarts-exhausted"))
    assert (whole.attempts, cut.attempts) == (2, 1)
    assert cut.state is whole.state and cut.observed_final
    late = [note for note in cut.notes if note.startswith("the input begins inside the job")]
    assert late and "UTC" in late[0] and "attempts before that" in late[0]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_whole_export_infers_no_attempt_and_begins_with_its_job(scenario: str) -> None:
    # Where the service's lines are there, they and only they start attempts, and the
    # job's start is among them.
    for job in _diagnoses(list(simulate(scenario, seed=0))):
        assert job.timeline.resumed is None
        assert not any("begins inside the job" in note for note in job.notes)
