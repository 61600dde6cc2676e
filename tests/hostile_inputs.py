"""Hostile inputs made on the spot, sized by the caller: the cost of each follows its bytes.

A runaway recursion's traceback (issue 31.8) in the three ways it reaches jobdoctor: pasted
as text, as a sink export with one entry per line, and as one entry holding it whole (a
``logger.exception`` record); jobs of one line each, many of them (issue 31.9). The frames are
those of a real recursion through an installed package (its modules and functions in turn),
the user's own script at its top.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

HEADER = "Traceback (most recent call last):"
EXCEPTION = "RecursionError: maximum recursion depth exceeded"
JOB_ID = "8214410932231086080"
_START = datetime(2024, 5, 2, 9, 30, tzinfo=UTC)


def frame_lines(frames: int) -> Iterator[str]:
    """The lines of a traceback of ``frames`` frames (each a frame line and its source line),
    its header first and its exception last: the user's script, then a library's recursion."""
    yield HEADER
    yield '  File "/app/trainer/task.py", line 88, in <module>'
    yield "    main()"
    yield '  File "/app/trainer/task.py", line 61, in main'
    yield "    model.fit(data)"
    for index in range(frames - 2):
        module, line, function = index % 97, index % 500, index % 13
        library = f"/usr/lib/python3.10/site-packages/pkg/mod{module}.py"
        yield f'  File "{library}", line {line}, in fn{function}'
        yield "    return inner(x)"
    yield EXCEPTION


def pasted(frames: int) -> bytes:
    """The traceback as a user pastes it: plain text."""
    return "".join(line + "\n" for line in frame_lines(frames)).encode()


def _entry(text: str, when: datetime, index: int, task: str = "workerpool0-0") -> str:
    payload = {"message": text} if task != "service" else None
    entry = {
        "insertId": f"i{index:012d}",
        **({"jsonPayload": payload} if payload else {"textPayload": text}),
        "logName": f"projects/acme-ml-prod/logs/ml.googleapis.com%2F{JOB_ID}",
        "resource": {
            "labels": {"job_id": JOB_ID, "project_id": "acme-ml-prod", "task_name": task},
            "type": "ml_job",
        },
        "severity": "ERROR" if task != "service" else "INFO",
        "timestamp": when.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    }
    return json.dumps(entry, separators=(",", ":")) + "\n"


def _service_end(index: int, when: datetime) -> str:
    return _entry(
        "The replica workerpool0-0 exited with a non-zero status of 1. To find out more about"
        f" why your job exited please check the logs: https://console.cloud.google.com/logs/"
        f"viewer?project=123&resource=ml_job%2Fjob_id%2F{JOB_ID}",
        when,
        index,
        "service",
    ) + _entry("Job failed.", when + timedelta(seconds=2), index + 1, "service")


def sink_lines(frames: int) -> bytes:
    """The traceback as a sink export holds it: an entry per line, a millisecond apart, then
    the service's failure."""
    out = []
    when = _START
    index = 0
    for index, line in enumerate(frame_lines(frames)):
        out.append(_entry(line, when + timedelta(microseconds=index), index))
    out.append(_service_end(index + 1, when + timedelta(seconds=30)))
    return "".join(out).encode()


def sink_whole(frames: int) -> bytes:
    """The traceback as one entry's text (a ``logger.exception`` record), then the service's
    failure."""
    text = "\n".join(frame_lines(frames))
    return (_entry(text, _START, 0) + _service_end(1, _START + timedelta(seconds=30))).encode()


# The one entry of each one-line job, in turn: the service's lifecycle, a failure, a
# success, a worker's line no rule knows.
_ONE_LINES = [
    ("service", "Waiting for job to be provisioned."),
    (
        "service",
        "The replica workerpool0-0 exited with a non-zero status of 1. To find out more about"
        " why your job exited please check the logs: https://console.cloud.google.com/logs/"
        "viewer?project=123",
    ),
    ("service", "Job completed successfully."),
    ("workerpool0-0", "epoch 3 step 1200 loss=0.4312"),
]


def one_line_jobs(jobs: int) -> Iterator[bytes]:
    """A sink export of ``jobs`` jobs, one entry each (a second apart), a line at a time."""
    for index in range(jobs):
        task, text = _ONE_LINES[index % len(_ONE_LINES)]
        job_id = f"{7000000000000000000 + index * 7919}"
        entry = {
            "insertId": f"j{index:012d}",
            **({"textPayload": text} if task == "service" else {"jsonPayload": {"message": text}}),
            "logName": f"projects/acme-ml-prod/logs/ml.googleapis.com%2F{job_id}",
            "resource": {
                "labels": {"job_id": job_id, "project_id": "acme-ml-prod", "task_name": task},
                "type": "ml_job",
            },
            "severity": "INFO",
            "timestamp": (_START + timedelta(seconds=index)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }
        yield (json.dumps(entry, separators=(",", ":")) + "\n").encode()
