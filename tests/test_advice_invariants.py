"""Advice that follows the evidence (issue 27, point 6), over every real excerpt
(tests/real/), every simulated scenario (analyzer.simulate) and generated tracebacks:

- when the input shows an exception, the advice names it and never sends the user to read
  the error;
- the frame named is where the exception was raised (a SyntaxError names the file and line
  it reports, not the module that imported it);
- a ``gs://`` path that is missing is not answered with "read inputs from Cloud Storage";
- no advice contradicts the state: no "resubmit" for a job still running, no "fetch newer
  logs" for a log that holds the job's end.
"""

from __future__ import annotations

import io
import re
from functools import cache
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.api import analyze
from analyzer.diagnosis import Diagnosis, JobState
from analyzer.errors import InputError
from analyzer.findings import FindingKind
from analyzer.simulate import SCENARIOS, simulate, write
from analyzer.tracebacks import ExceptionInfo

REAL = Path(__file__).resolve().parent / "real"
EXCERPTS = sorted(p.stem for p in REAL.glob("*.yaml"))
_IN_PROGRESS = {JobState.RUNNING, JobState.PENDING, JobState.QUEUED}
_FINAL = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}
# Sending the user to read what jobdoctor already read.
_READ_THE_ERROR = re.compile(r"\bread the (?:traceback|error)\b", re.IGNORECASE)
_RESUBMIT = re.compile(r"\bresubmit|\bsubmit (?:it |the job )?again\b", re.IGNORECASE)
_NEWER_LOGS = re.compile(r"\bnewer logs\b|\bstill in progress\b", re.IGNORECASE)
_READ_FROM_GCS = "read inputs from Cloud Storage"
# A SyntaxError's own location line: `File "X", line N` with no function after it.
_SYNTAX_LOCATION = re.compile(r'File "([^"]+)", line (\d+)\s*$', re.MULTILINE)
_SYNTAX_ERRORS = ("SyntaxError", "IndentationError", "TabError")


def _shown_exception(job: Diagnosis) -> ExceptionInfo | None:
    """The exception the advice starts from: the cause's, or the one a job without a
    failure message shows (its exception-seen finding)."""
    if job.cause is not None:
        return job.cause.exception
    found = job.findings
    if found is None or not found.has(FindingKind.EXCEPTION_SEEN):
        return None
    return None if found.has(FindingKind.INTERRUPTED_WAIT) else _seen(job)


def _seen(job: Diagnosis) -> ExceptionInfo | None:
    from analyzer.predict import seen_exception

    return seen_exception(job.timeline, job.state)


def check_invariants(job: Diagnosis, text: str) -> None:
    advice = " ".join(job.advice)
    exception = _shown_exception(job)
    if exception is not None and exception.type:
        short = exception.type.rsplit(".", 1)[-1]
        assert short in advice, (job.job_id, exception.type, advice)
        assert not _READ_THE_ERROR.search(advice), (job.job_id, advice)
        _check_frame(job, exception, text)
        if "gs://" in exception.message:
            assert _READ_FROM_GCS not in advice, (job.job_id, advice)
    if job.state in _IN_PROGRESS or job.findings and job.findings.has(
        FindingKind.INTERRUPTED_WAIT
    ):
        assert not _RESUBMIT.search(advice), (job.job_id, job.state, advice)
    if job.observed_final and job.state in _FINAL:
        assert not _NEWER_LOGS.search(advice), (job.job_id, job.state, advice)


def _check_frame(job: Diagnosis, exception: ExceptionInfo, text: str) -> None:
    """A SyntaxError's frame is the location it reports, or none when the input lacks it."""
    if exception.type.rsplit(".", 1)[-1] not in _SYNTAX_ERRORS or exception.frame is None:
        return
    before = text[: text.rfind(exception.type)] if exception.type in text else text
    where = _SYNTAX_LOCATION.findall(before)
    assert where, (job.job_id, exception.frame)
    file, line = where[-1]
    assert (exception.frame.file, exception.frame.line) == (file, int(line)), job.job_id


@cache
def _corpus_text(name: str) -> str:
    meta = yaml.safe_load((REAL / f"{name}.yaml").read_text(encoding="utf-8"))
    return (REAL / str(meta["text"])).read_text(encoding="utf-8", errors="replace")


@pytest.mark.parametrize("name", EXCERPTS)
def test_the_advice_on_every_real_excerpt_keeps_the_invariants(name: str) -> None:
    meta = yaml.safe_load((REAL / f"{name}.yaml").read_text(encoding="utf-8"))
    path = REAL / str(meta["text"])
    try:
        analysis = analyze([str(path)])
    except InputError:
        # (An input jobdoctor refuses in one line gives no advice: tests/test_real_corpus.)
        return
    for job in analysis.diagnoses:
        check_invariants(job, _corpus_text(name))


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_advice_on_every_simulated_scenario_keeps_the_invariants(
    scenario: str, tmp_path: Path
) -> None:
    for shape in ("stream-logs", "jsonl"):
        out = io.StringIO()
        write(simulate(scenario, seed=3), shape, out)
        path = tmp_path / f"{scenario}.{shape}.txt"
        path.write_text(out.getvalue(), encoding="utf-8")
        for job in analyze([str(path)]).diagnoses:
            check_invariants(job, out.getvalue())
