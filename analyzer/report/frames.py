"""The job frame: diagnoses in hand as a pandas frame, one row per job.

The report stage's table for notebooks (:func:`analyzer.frames.diagnose_frame` and
``Analysis.frame()`` build it); the columns are the fleet report's (:mod:`analyzer.report.fleet`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pandas as pd

from analyzer.report.facts import OUTCOMES, job_label
from analyzer.report.fleet import JOB_COLUMNS, SIGNATURE_COLUMNS, job_summary, signature_json
from analyzer.report.signatures import failed_attempts, recurring
from analyzer.rulebook.events import Category
from analyzer.verdict.diagnosis import Diagnosis, JobState

if TYPE_CHECKING:
    from analyzer.verdict.jobspec import JobSpec


def jobs_frame(diagnoses: Iterable[Diagnosis], job_spec: JobSpec | None = None) -> pd.DataFrame:
    """One row per diagnosis: the columns of ``analyzer.report.fleet.JOB_COLUMNS``.

    ``job`` (the job's label, never missing: ``(no id) PATH:LINE`` for a job whose logs name
    no id, so ``groupby("job")`` keeps it), ``job_id``, ``trial`` (None for a plain job) and
    ``path`` (the input holding the cause's evidence) say which job a row is; ``state``,
    ``outcome`` and ``category`` are Categoricals of every ``JobState``, outcome and cause
    category (so ``value_counts()`` lists the zeros too, and a filter on a misspelt state
    fails): ``frame[frame.outcome == "failed"].groupby("category", observed=True)`` gives the
    fleet report's causes table, ``outcome == "recovered"`` its "recovered from" table;
    ``attempts`` and ``retries`` count what the logs show, ``attempts_predicted`` and
    ``retries_predicted`` what the verdict predicts beyond them; ``first_seen``/``last_seen``
    are UTC timestamps, ``duration``/``time_lost``/``lost_work`` timedeltas, ``machine_hours`` and
    ``accelerator_hours`` floats (the latter NaN without the job's record), ``exit_code`` a
    nullable integer; ``category``, ``detail`` and the cause's fields are missing for a job
    with no failure. ``stalled_since`` (a UTC timestamp) is when a stalled job's silence began,
    NaT for a job not stalled (``frame[frame.stalled_since.notna()]`` lists the stalled ones);
    ``stall_timeout_at`` when the platform stops it, ``stall_machine_hours`` and
    ``stall_accelerator_hours`` what it will have cost by then (NaT and NaN when not stalled).
    """
    summaries = (job_summary(d, job_spec) for d in diagnoses)
    rows = [tuple(getattr(s, name) for name in JOB_COLUMNS) for s in summaries]
    frame = pd.DataFrame.from_records(rows, columns=list(JOB_COLUMNS))
    frame["state"] = pd.Categorical(frame["state"], categories=[s.value for s in JobState])
    frame["category"] = pd.Categorical(frame["category"], categories=[c.value for c in Category])
    frame["outcome"] = pd.Categorical(frame["outcome"], categories=list(OUTCOMES))
    for name in ("first_seen", "last_seen", "stalled_since", "stall_timeout_at"):
        frame[name] = pd.to_datetime(frame[name], utc=True)
    for name in ("duration", "time_lost", "lost_work"):
        frame[name] = pd.to_timedelta(frame[name])
    for name in (
        "machine_hours",
        "accelerator_hours",
        "stall_machine_hours",
        "stall_accelerator_hours",
    ):
        frame[name] = frame[name].astype("float64")
    frame["exit_code"] = frame["exit_code"].astype("Int64")
    for name in (
        "attempts",
        "attempts_predicted",
        "retries",
        "retries_predicted",
        "restarts",
        "records",
    ):
        frame[name] = frame[name].astype("int64")
    frame["observed_final"] = frame["observed_final"].astype(bool)
    return frame


def signatures_frame(diagnoses: Iterable[Diagnosis]) -> pd.DataFrame:
    """One row per recurring failure (:mod:`analyzer.report.signatures`), the most costly
    first: the fleet report's "Recurring failures" table, columns
    ``analyzer.report.fleet.SIGNATURE_COLUMNS`` (``job_ids`` a list of job labels,
    ``first_seen``/``last_seen`` UTC timestamps, ``time_lost_s`` seconds)."""
    groups = recurring(a for d in diagnoses for a in failed_attempts(d, job_label(d)))
    rows = [signature_json(g) for g in groups]
    frame = pd.DataFrame.from_records(
        [tuple(row[name] for name in SIGNATURE_COLUMNS) for row in rows],
        columns=list(SIGNATURE_COLUMNS),
    )
    frame["first_seen"] = pd.to_datetime(frame["first_seen"], utc=True, format="ISO8601")
    frame["last_seen"] = pd.to_datetime(frame["last_seen"], utc=True, format="ISO8601")
    frame["exit_code"] = frame["exit_code"].astype("Int64")
    for name in ("jobs", "attempts"):
        frame[name] = frame[name].astype("int64")
    for name in ("time_lost_s", "machine_hours"):
        frame[name] = frame[name].astype("float64")
    return frame
