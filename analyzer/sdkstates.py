"""The job states the Vertex AI SDK prints without their names, by name.

The SDK's state line ends in the state's number when an IntEnum formats as its value (1.x on
Python 3.11 or later: ``current state:`` then ``3``), and its success line names no state at
all (``CustomJob run completed. Resource name: ...``, logged only when the job did not end in
an error state). The rules capture what the text holds (``state_code``, ``run``); this table
says which state that is, so that a state event always carries ``state`` as a name.
"""

from __future__ import annotations

from dataclasses import replace

from analyzer.events import EventKind, RuleMatch

# google.cloud.aiplatform_v1.types.JobState's numbering (job_state.py of python-aiplatform;
# platform.md section 10). PipelineState (pipeline_state.py) numbers its states 0-8 alike:
# PIPELINE_STATE_UNSPECIFIED 0 ... PIPELINE_STATE_PAUSED 8, so one table reads both.
STATE_NAMES = (
    "UNSPECIFIED",
    "QUEUED",
    "PENDING",
    "RUNNING",
    "SUCCEEDED",
    "FAILED",
    "CANCELLING",
    "CANCELLED",
    "PAUSED",
    "EXPIRED",
    "UPDATING",
    "PARTIALLY_SUCCEEDED",
)
# "<Class> run completed.": jobs._block_until_complete logs it when the state is not one of
# _JOB_ERROR_STATES (FAILED, CANCELLED), training_jobs._block_until_complete only after
# _raise_failure found no error: the run succeeded.
_RUN_STATES = {"completed": "SUCCEEDED"}


def state_of(match: RuleMatch) -> str | None:
    """The state name a state match's ``state_code`` or ``run`` stands for (None: neither, or
    a number no state has)."""
    code = match.field("state_code")
    if code is not None:
        number = int(code)
        return STATE_NAMES[number] if 0 <= number < len(STATE_NAMES) else None
    run = match.field("run")
    return _RUN_STATES.get(str(run)) if run is not None else None


def named_states(matches: tuple[RuleMatch, ...]) -> tuple[RuleMatch, ...]:
    """``matches`` with each state match that names no state given its ``state`` field."""
    if not any(m.kind is EventKind.JOB_STATE and m.field("state") is None for m in matches):
        return matches
    return tuple(_named(match) for match in matches)


def _named(match: RuleMatch) -> RuleMatch:
    if match.kind is not EventKind.JOB_STATE or match.field("state") is not None:
        return match
    state = state_of(match)
    if state is None:
        return match
    return replace(match, fields={**match.fields, "state": state})
