"""``gcloud ai custom-jobs list`` (and legacy ``gcloud ai-platform jobs list``) as a table.

gcloud's table printer writes a header row of column labels (``NAME`` or ``JOB_ID``,
``DISPLAY_NAME``, ``STATE`` or the legacy ``STATUS``, ``CREATE_TIME`` ...), each cell starting
where its label starts, then one row per job::

    NAME                 DISPLAY_NAME             STATE             CREATE_TIME
    2161270372761075712  major-wind-1762750552    JOB_STATE_FAILED  2025-11-10T04:58:03Z

A list holds each job's state when it was listed, recorded by the API: one record per row,
the job's id its job id and ``state: JOB_STATE_X`` its text (what a describe prints, read by
the same rule), without a time (the row does not say when the job reached that state). It
shows states, not causes: the report says so (``report.facts.jobs_list_line``). The command
line and gcloud's other lines are records of their own, as the text readers keep them; other
lines are skipped with :data:`NOT_A_ROW`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO

from analyzer.ingest.lines import text_lines
from analyzer.ingest.preamble import is_preamble, preamble_record
from analyzer.ingest.records import InputStats, LogRecord, Origin

NOT_A_ROW = "not a row of the jobs list"
BLANK_LINE = "blank line"
# The column labels of a job's id and state, as gcloud's formats name them.
ID_LABELS = ("JOB_ID", "CUSTOM_JOB_ID", "ID", "NAME", "JOB")
STATE_LABELS = ("STATE", "STATUS")
_LABEL = re.compile(r"[A-Z][A-Z0-9_]*")
_LABELS = re.compile(rb"^[A-Z][A-Z0-9_]*(?: {2,}[A-Z][A-Z0-9_]*)+[ \t]*$")
# A JobState (JOB_STATE_FAILED), or a legacy AI Platform job state.
_STATE = re.compile(
    r"JOB_STATE_[A-Z_]+|QUEUED|PREPARING|RUNNING|SUCCEEDED|FAILED|CANCELLING|CANCELLED"
)
# A cell of the id column: a job id, or the job's resource name (its last part is the id).
_JOB_ID = re.compile(r"(?:projects/[^/\s]+/locations/[^/\s]+/customJobs/)?([A-Za-z0-9_-]+)")


def columns(header: str) -> dict[str, int] | None:
    """Where each column of a jobs list's ``header`` row starts, by label; None when it is no
    such header (labels apart by two spaces or more, a job id's and a state's among them)."""
    if _LABELS.match(header.encode()) is None:
        return None
    found = {match.group(): match.start() for match in _LABEL.finditer(header)}
    if not (found.keys() & set(ID_LABELS) and found.keys() & set(STATE_LABELS)):
        return None
    return found


def is_jobs_list(lines: list[bytes]) -> bool:
    """Whether ``lines`` (a head's lines, gcloud's own left out) are a jobs list: a header row,
    then rows at least half of which hold a job state."""
    try:
        header = lines[0].decode("utf-8")
    except UnicodeDecodeError:
        return False
    if columns(header) is None:
        return False
    rows = [line for line in lines[1:] if line.strip()]
    states = sum(1 for row in rows if _STATE.search(row.decode("utf-8", "replace")))
    return bool(rows) and states * 2 >= len(rows)


def read_jobs_list(stream: BinaryIO, stats: InputStats) -> Iterator[LogRecord]:
    """Yield one record per job row of the table in ``stream`` (see the module's docstring)."""
    cells: dict[str, int] | None = None
    for number, text in text_lines(stream, stats):
        if not text.strip():
            stats.skip(BLANK_LINE)
            continue
        if cells is None and (found := columns(text)) is not None:
            cells = found
            stats.used += 1
            continue
        if is_preamble(text):
            yield preamble_record(text, number, stats)
            continue
        row = None if cells is None else _row(text, cells)
        if row is None:
            stats.skip(NOT_A_ROW)
            continue
        job_id, state = row
        stats.records += 1
        stats.used += 1
        yield LogRecord(
            timestamp=None,
            job_id=job_id,
            task=None,
            severity="DEFAULT",
            text=f"state: {state}",
            origin=Origin(stats.path, number),
        )


def _row(text: str, cells: dict[str, int]) -> tuple[str, str] | None:
    """The job id and state of a row (the state as a JobState name), None for another line."""
    # Cells apart by two spaces or more, one per label; else (an empty cell, a paste that
    # squeezed the padding) where each label starts.
    split = re.split(r" {2,}|\t+", text.strip())
    labels = sorted(cells, key=cells.__getitem__)
    if len(split) == len(labels):
        value = dict(zip(labels, split, strict=True))
    else:
        starts = sorted(cells.values())
        value = {}
        for label, start in cells.items():
            later = [at for at in starts if at > start]
            value[label] = text[start : later[0] if later else len(text)].strip()
    id_cell = next(value[label] for label in ID_LABELS if label in value)
    state_cell = next(value[label] for label in STATE_LABELS if label in value)
    job = _JOB_ID.fullmatch(id_cell)
    state = _STATE.fullmatch(state_cell)
    if job is None or state is None:
        return None
    name = state.group()
    if not name.startswith("JOB_STATE_"):
        # Legacy AI Platform's states; PREPARING (provisioning) is what Vertex calls PENDING.
        name = "JOB_STATE_" + ("PENDING" if name == "PREPARING" else name)
    return job.group(1), name
