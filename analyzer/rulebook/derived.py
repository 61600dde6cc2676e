"""Fields that a rule's capture stands for, named as the later stages read them.

A rule captures what the text holds; some texts hold a value by another name than the one the
diagnosis reads. The Vertex AI SDK's state line ends in the state's number when an IntEnum
formats as its value (1.x on Python 3.11 or later: ``current state:`` then ``3``), its success
line names no state (``CustomJob run completed. Resource name: ...``, logged only when the job
did not end in an error state), and an API error names its HTTP code, not its status
(``<HttpError 400 when requesting ...>``). The tables here say which state or status that is,
so that a state event always carries ``state`` as a name, and a refusal its ``status``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from analyzer.rulebook.events import EventKind, RuleMatch

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
# A training pipeline without a model to upload logs "Training did not produce a Managed Model
# returning None." instead, and only after _get_model's _block_until_complete found no failure.
_RUN_STATES = {"completed": "SUCCEEDED", "did not produce a Managed Model": "SUCCEEDED"}


# google.rpc's status of an API error's HTTP code (AIP-193's mapping; 400 may also be
# FAILED_PRECONDITION or OUT_OF_RANGE, all of them a refusal that is not quota).
_HTTP_STATUSES = {"429": "RESOURCE_EXHAUSTED", "400": "INVALID_ARGUMENT"}
# (the kind of match, the field it captured) -> the field it stands for, and how.
_DERIVED: dict[tuple[EventKind, str], tuple[str, Callable[[str], str | None]]] = {
    (EventKind.JOB_STATE, "state_code"): ("state", lambda code: _state_name(int(code))),
    (EventKind.JOB_STATE, "run"): ("state", _RUN_STATES.get),
    (EventKind.CREATION_REFUSED, "http_status"): ("status", _HTTP_STATUSES.get),
    # googleapiclient's HttpError (its own group: one name per alternative keeps the pattern
    # in the syntax the long-text windows read, rulebook/windows.py).
    (EventKind.CREATION_REFUSED, "http_error"): ("status", _HTTP_STATUSES.get),
}
_KINDS = frozenset(kind for kind, _ in _DERIVED)


def _state_name(number: int) -> str | None:
    return STATE_NAMES[number] if 0 <= number < len(STATE_NAMES) else None


def derived_fields(matches: tuple[RuleMatch, ...]) -> tuple[RuleMatch, ...]:
    """``matches`` with the fields their captures stand for added (see :data:`_DERIVED`)."""
    if not any(match.kind in _KINDS for match in matches):
        return matches
    return tuple(_derived(match) for match in matches)


def _derived(match: RuleMatch) -> RuleMatch:
    added: dict[str, str] = {}
    for (kind, captured), (field, meaning) in _DERIVED.items():
        value = match.field(captured)
        if kind is match.kind and value is not None and match.field(field) is None:
            found = meaning(str(value))
            if found is not None:
                added[field] = found
    return replace(match, fields={**match.fields, **added}) if added else match
