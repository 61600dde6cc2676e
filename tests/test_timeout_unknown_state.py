"""A collective timeout in a job whose state no line tells (issue 30): neither a stall nor a
failure is said; a note says what timed out and what would tell, unless a later line shows the
process ending (an exception, an exit), when the timeout was not the last word."""

from __future__ import annotations

from analyzer.api import analyze_sources
from analyzer.ingest import MemorySource
from analyzer.verdict.diagnosis import JobState

WATCHDOG = (
    "[E ProcessGroupNCCL.cpp:481] [Rank 3] Watchdog caught collective operation timeout:"
    " WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for"
    " 600123 milliseconds before timing out.\n"
)
NOTE = "timed out, and no line jobdoctor reads after it shows the job ending or going on"


def _notes(text: str) -> tuple[JobState, bool, list[str]]:
    analysis = analyze_sources([MemorySource(text.encode(), "paste.txt")])
    (diagnosis,) = analysis.diagnoses
    return diagnosis.state, diagnosis.stalled is not None, list(diagnosis.notes)


def test_a_timeout_alone_says_what_it_cannot_tell() -> None:
    state, stalled, notes = _notes(WATCHDOG)
    assert state is JobState.UNSPECIFIED and not stalled
    assert any(n.startswith("An all-reduce " + NOTE.split(" ", 1)[0]) for n in notes), notes


def test_a_timeout_the_process_ended_after_is_not_the_last_word() -> None:
    ended = WATCHDOG + (
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 9, in <module>\n'
        "torch.distributed.DistBackendError: NCCL communicator was aborted on rank 3.\n"
    )
    _, stalled, notes = _notes(ended)
    assert not stalled
    assert not any(NOTE in n for n in notes), notes


def test_a_traceback_after_the_timeout_shows_the_job_going_on() -> None:
    # determined-ai/determined#8915: the watchdog aborts rank 4 ("Fatal Python error:
    # Aborted", which no rule reads) and rank 3 begins its traceback: not the last word.
    went_on = WATCHDOG + (
        "Fatal Python error: Aborted\n"
        "Traceback (most recent call last):\n"
        '  File "/run/determined/workdir/train.py", line 126, in <module>\n'
    )
    _, stalled, notes = _notes(went_on)
    assert not stalled
    assert not any(NOTE in n for n in notes), notes


def test_a_barriers_id_is_named_as_written() -> None:
    # AI-Hypercomputer/gpu-recipes#2's barrier: its id is what to search the logs for.
    from analyzer.verdict.hangs import collective_words

    assert collective_words("ALLREDUCE") == "an all-reduce"
    name = "[Init]Wait_for_all_tasks_to_register::0"
    assert collective_words(name) == f"the collective {name}"
