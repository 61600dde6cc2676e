"""The Vertex AI SDK's messages that a text shows on two lines, read as the one message each is.

The SDK logs a job's state with one call whose message holds a line break (aiplatform
``jobs._log_job_state`` and ``training_jobs._block_until_complete``: ``"%s %s current
state:\\n%s"``), and raises ``RuntimeError("Job failed with:\\n%s" % error)`` whose text goes on
with the job object's error in protobuf text (``code: 1`` on the next line, platform.md section
10). A text reader cuts both at the line break: the resource name and its state, the failure
and its code, each half meaningless alone (a bare ``3`` is the state RUNNING only after
``... current state:``). :func:`sdk_messages` puts each pair back together, numbered by its
first line: the state line then names the job it belongs to, and ``code: 1`` (google.rpc
CANCELLED) is the code of the failure it follows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

from analyzer.records import InputStats, LogRecord

# The first line of a state message: any logging prefix before it (INFO:google.cloud.aiplatform
# .jobs:, absl's I1207 ... jobs.py:178], a time) is kept. Not a batch prediction job's: its
# states are another kind of job's (rule sdk.other-job-named), read as they always were.
_STATE_HEAD = re.compile(r"^(?!.*\bbatchPredictionJobs/).*\bcurrent state:\s*$")
# Its second line: the state as 2.x (JOB_STATE_RUNNING), 1.x before Python 3.11
# (JobState.JOB_STATE_RUNNING) and 1.x on 3.11 or later (3: an IntEnum formats as its number)
# print it; PipelineState's for training pipelines and pipeline jobs.
_STATE_VALUE = re.compile(
    r"^\s*(?:(?:(?:JobState|PipelineState)\.)?(?:JOB|PIPELINE)_STATE_[A-Z_]+|\d{1,2})\s*$"
)
# The SDK's failure (pipelines: "Training failed with:"), a CI runner's "Step #4: " prefix on
# every line allowed, and the error code on the line after it.
_FAILED_HEAD = re.compile(r"\b(?:Job|Training) failed with:\s*$")
_CODE_LINE = re.compile(r"^(?:Step #\d+: ?)*\s*code: ?\d+\s*$")
_PAIRS = ((_STATE_HEAD, _STATE_VALUE), (_FAILED_HEAD, _CODE_LINE))


def _second_line(first: LogRecord) -> re.Pattern[str] | None:
    """What the line after ``first`` must be to go on its message, None when it goes on none."""
    for head, second in _PAIRS:
        if head.search(first.text):
            return second
    return None


def sdk_messages(records: Iterator[LogRecord], stats: InputStats) -> Iterator[LogRecord]:
    """``records`` (one a line, in order) with each of the SDK's two-line messages read as one
    record of both lines (see the module docstring): its text the two joined by a line break,
    its origin the first line's. ``stats.records`` counts one record for the two; both lines
    stay used."""
    held: LogRecord | None = None
    expected: re.Pattern[str] | None = None
    for record in records:
        if held is not None:
            if expected is not None and expected.match(record.text):
                stats.records -= 1
                yield replace(held, text=f"{held.text.rstrip()}\n{record.text.strip()}")
                held = None
                continue
            yield held
            held = None
        expected = _second_line(record)
        if expected is None:
            yield record
        else:
            held = record
    if held is not None:
        yield held
