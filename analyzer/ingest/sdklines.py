"""The Vertex AI SDK's messages that a text shows on two lines, read as the one message each is.

The SDK logs a job's state with one call whose message holds a line break (aiplatform
``jobs._log_job_state`` and ``training_jobs._block_until_complete``: ``"%s %s current
state:\\n%s"``), and raises ``RuntimeError("Job failed with:\\n%s" % error)`` whose text goes on
with the job object's error in protobuf text (``code: 1`` on the next line, platform.md section
10). A text reader cuts both at the line break: the resource name and its state, the failure
and its code, each half meaningless alone (a bare ``3`` is the state RUNNING only after
``... current state:``). :func:`sdk_messages` puts each pair back together, numbered by its
first line: the state line then names the job it belongs to, and ``code: 1`` (google.rpc
CANCELLED) is the code of the failure it follows. The error's message on the line after the
code is protobuf text, its line breaks escaped: it is read with them (the service's message
and the traceback tail it carries, a line each, not one line of ``\\n``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace

from analyzer.ingest.records import InputStats, LogRecord

# The first line of a state message: any logging prefix before it (INFO:google.cloud.aiplatform
# .jobs:, absl's I1207 ... jobs.py:178], a time) is kept. Not another kind of job's (batch
# prediction, model monitoring, data labeling: rule sdk.other-job-named): read as they always were.
_STATE_HEAD = re.compile(
    r"^(?!.*\b(?:batchPredictionJobs|modelDeploymentMonitoringJobs|dataLabelingJobs)/)"
    r".*\bcurrent state:\s*$"
)
# Its second line: the state as 2.x (JOB_STATE_RUNNING), 1.x before Python 3.11
# (JobState.JOB_STATE_RUNNING) and 1.x on 3.11 or later (3: an IntEnum formats as its number)
# print it; PipelineState's for training pipelines and pipeline jobs.
# A CI runner's prefix on every line (Cloud Build's "Step #4: ", nested steps one after the
# other: "Step #5: Step #4: ", tests/real/gh-vertex-ai-samples-1218-V) is allowed before it.
_CI_PREFIX = re.compile(r"^(?:Step #\d+: ?)*")
_STATE_VALUE = re.compile(
    r"^(?:Step #\d+: ?)*\s*"
    r"(?:(?:(?:JobState|PipelineState)\.)?(?:JOB|PIPELINE)_STATE_[A-Z_]+|\d{1,2})\s*$"
)
# The SDK's failure (pipelines: "Training failed with:"), a CI runner's "Step #4: " prefix on
# every line allowed, and the error code on the line after it.
_FAILED_HEAD = re.compile(r"\b(?:Job|Training) failed with:\s*$")
_CODE_LINE = re.compile(r"^(?:Step #\d+: ?)*\s*code: ?\d+\s*$")
_PAIRS = ((_STATE_HEAD, _STATE_VALUE), (_FAILED_HEAD, _CODE_LINE))
# The line after the code: the error's message as protobuf's text format writes a string, on
# one line, its line breaks and quotes escaped (\n, \", \', \\, a byte as \NNN or \xNN).
_MESSAGE_LINE = re.compile(r'^(?P<head>(?:Step #\d+: ?)*\s*message: ")(?P<body>.*)"\s*$')
_ESCAPE = re.compile(
    r"\\(?:([nrtabfv\"'\\?])|((?:[0-7]{1,3}|x[0-9a-fA-F]{1,2})(?:\\(?:[0-7]{1,3}|x[0-9a-fA-F]{1,2}))*))"
)
_SIMPLE = {"n": "\n", "r": "\r", "t": "\t", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_BYTE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{1,2}))")


def _unescaped(match: re.Match[str]) -> str:
    simple, run = match.group(1), match.group(2)
    if simple is not None:
        return _SIMPLE.get(simple, simple)
    # A run of byte escapes: the UTF-8 bytes of a character or more.
    data = bytes(int(o, 8) if o else int(h, 16) for o, h in _BYTE.findall("\\" + run))
    return data.decode("utf-8", "replace")


def decoded_message(text: str) -> str | None:
    """The error message line of the SDK's "Job failed with:" (``message: "..."``) with its
    escapes read: the service's message with its line breaks, as the service wrote it; None
    when ``text`` is no such line."""
    found = _MESSAGE_LINE.match(text)
    if found is None or "\\" not in found["body"]:
        return None
    return f'{found["head"]}{_ESCAPE.sub(_unescaped, found["body"])}"'


def _second_half(text: str) -> str:
    """The second line of a two-line message as the message holds it: without the CI runner's
    prefix, which is the runner's (the first line keeps its own), not the SDK's."""
    return _CI_PREFIX.sub("", text).strip()


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
    failure = False  # the last record was the SDK's failure and its code
    for record in records:
        if failure and (message := decoded_message(record.text)) is not None:
            record = replace(record, text=message)
        failure = False
        if held is not None:
            if expected is not None and expected.match(record.text):
                stats.records -= 1
                failure = expected is _CODE_LINE
                yield replace(held, text=f"{held.text.rstrip()}\n{_second_half(record.text)}")
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
