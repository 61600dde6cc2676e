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
from analyzer.classify.tracebacks import ExceptionInfo
from analyzer.core.errors import InputError
from analyzer.simulate import SCENARIOS, simulate, write
from analyzer.verdict.diagnosis import Diagnosis, JobState
from analyzer.verdict.findings import FindingKind, Findings, Provenance, collect, finding

REAL = Path(__file__).resolve().parent / "real"
EXCERPTS = sorted(p.stem for p in REAL.glob("*.yaml"))
_IN_PROGRESS = {JobState.RUNNING, JobState.PENDING, JobState.QUEUED}
_FINAL = {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED}
# Sending the user to read what jobdoctor already read.
_READ_THE_ERROR = re.compile(r"\bread the (?:traceback|error)\b", re.IGNORECASE)
# (Not the interrupted wait's "Do not submit it again".)
_RESUBMIT = re.compile(r"\bresubmit|(?<!not )\bsubmit (?:it |the job )?again\b", re.IGNORECASE)
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
    from analyzer.verdict.predict import seen_exception

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
    if job.state in _IN_PROGRESS or (
        job.findings and job.findings.has(FindingKind.INTERRUPTED_WAIT)
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


# --- The rows themselves, over any findings (Hypothesis) ---

_CATEGORIES = [
    "user_code_exception",
    "oom",
    "stockout",
    "internal_error",
    "quota",
    "worker_restarts_exhausted",
    "cancelled",
]
_DETAILS = [None, "cuda-oom", "file-not-found", "oom-killed", "user-rule", "output-not-in-input"]
_STATES = [s.value.removeprefix("JOB_STATE_") for s in JobState]


@st.composite
def _findings(draw: st.DrawFn) -> Findings:
    kinds = draw(st.sets(st.sampled_from([k for k in FindingKind if k is not FindingKind.CAUSE])))
    found = [finding(kind, Provenance.SDK) for kind in kinds]
    if draw(st.booleans()):
        found.append(
            finding(
                FindingKind.CAUSE,
                Provenance.SERVICE,
                category=draw(st.sampled_from(_CATEGORIES)),
                detail=draw(st.sampled_from(_DETAILS)),
                transient=draw(st.booleans()),
                exception=draw(st.booleans()),
                frame=draw(st.booleans()),
                replica=draw(st.booleans()),
                exit_code=draw(st.booleans()),
                cloud_path=draw(st.booleans()),
            )
        )
    return collect(*found)


def _english(keys: list[str]) -> str:
    from analyzer.verdict.advice import _advice_path, _load

    table = _load(_advice_path())
    return " ".join(line for key in keys for line in table[key]["en"])


@settings(max_examples=300, deadline=None)
@given(_findings(), st.sampled_from(_STATES))
def test_no_row_contradicts_the_state(found: Findings, state: str) -> None:
    from analyzer.verdict.advice import _rows

    said = _english(_rows().keys(found, state))
    if state in ("RUNNING", "PENDING", "QUEUED") and not found.has(FindingKind.CAUSE):
        assert not _RESUBMIT.search(said), (state, found.kinds(), said)
    if found.has(FindingKind.INTERRUPTED_WAIT) and not found.has(FindingKind.CAUSE):
        assert not _RESUBMIT.search(said), said
    if state in ("SUCCEEDED", "FAILED", "CANCELLED"):
        assert not _NEWER_LOGS.search(said), (state, found.kinds(), said)
    if state == "SUCCEEDED" and not found.has(FindingKind.CAUSE):
        assert said == ""


@settings(max_examples=300, deadline=None)
@given(_findings(), st.sampled_from(_STATES))
def test_every_row_that_speaks_names_a_platform_fact(found: Findings, state: str) -> None:
    from analyzer.verdict.advice import _rows

    for row in _rows().chosen(found, state):
        assert row.fact.startswith("platform.md section ")


# --- Generated pastes: a service failure with the traceback tail it copied ---

_NAMES = st.from_regex(r"[A-Z][a-z]{2,8}(Error|Exception)", fullmatch=True)
_PATHS = st.sampled_from(
    [
        "gs://acme-data/train/part-0001.csv",
        "/gcs/acme-data/train/part-0001.csv",
        "/home/me/data/train.csv",
        "data/train.csv",
    ]
)


def _paste(lines: list[str], state_line: str) -> str:
    head = [
        "INFO\t2024-03-20 18:21:07 +0000\tservice\tWaiting for job to be provisioned.",
        "INFO\t2024-03-20 18:25:07 +0000\tservice\tJob is running.",
        "ERROR\t2024-03-20 18:30:00 +0000\tservice\tThe replica workerpool0-0 exited with a"
        " non-zero status of 1. Termination reason: Error. ",
    ]
    tail = [
        "ERROR\t2024-03-20 18:30:00 +0000\tservice\t",
        "ERROR\t2024-03-20 18:30:00 +0000\tservice\tTo find out more about why your job exited"
        " please check the logs: https://console.cloud.google.com/logs/viewer?project=123"
        "&resource=ml_job%2Fjob_id%2F456&advancedFilter=x",
        "INFO\t2024-03-20 18:30:40 +0000\tservice\tFinished tearing down training program.",
        state_line,
    ]
    body = [f"ERROR\t2024-03-20 18:30:00 +0000\tservice\t{line}" for line in lines]
    return "\n".join(head + body + tail) + "\n"


@st.composite
def _traceback(draw: st.DrawFn) -> tuple[list[str], str]:
    """A traceback's lines and its exception's name: a runtime error in the user's code, or
    a SyntaxError in a module the entry point imports."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.10/runpy.py", line 196, in _run_module_as_main',
        "    return _run_code(code, main_globals, None,",
        '  File "/root/.local/lib/python3.10/site-packages/trainer/task.py", line 5, in <module>',
    ]
    if draw(st.booleans()):
        line = draw(st.integers(1, 999))
        lines += [
            "    from trainer import model",
            f'  File "/root/.local/lib/python3.10/site-packages/trainer/model.py", line {line}',
            "    x = = 1",
            "        ^",
            "SyntaxError: invalid syntax",
        ]
        return lines, "SyntaxError"
    name = draw(st.sampled_from(["FileNotFoundError", "OSError"]) | _NAMES)
    path = draw(_PATHS)
    lines += [
        "    main()",
        f'  File "/root/.local/lib/python3.10/site-packages/trainer/data.py", line'
        f" {draw(st.integers(1, 999))}, in load",
        "    open(path)",
        f"{name}: [Errno 2] No such file or directory: '{path}'",
    ]
    return lines, name


@settings(max_examples=40, deadline=None)
@given(
    traceback=_traceback(),
    state_line=st.sampled_from(
        [
            "INFO\t2024-03-20 18:30:40 +0000\tservice\tJob failed.",
            "INFO\t2024-03-20 18:30:40 +0000\tservice\tTearing down training program.",
        ]
    ),
)
def test_a_generated_failure_keeps_the_invariants(
    traceback: tuple[list[str], str], state_line: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    lines, name = traceback
    text = _paste(lines, state_line)
    path = tmp_path_factory.mktemp("paste") / "paste.txt"
    path.write_text(text, encoding="utf-8")
    jobs = analyze([str(path)]).diagnoses
    assert jobs
    for job in jobs:
        assert job.cause is not None and job.cause.exception is not None
        assert job.cause.exception.type == name
        check_invariants(job, text)
