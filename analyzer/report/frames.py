"""The job frame: diagnoses in hand as a pandas frame, one row per job.

The report stage's table for notebooks (:func:`analyzer.frames.diagnose_frame` and
``Analysis.frame()`` build it); the columns are the fleet report's (:mod:`analyzer.report.fleet`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pandas as pd

from analyzer.report.fleet import JOB_COLUMNS, job_summary
from analyzer.rulebook.events import Category
from analyzer.verdict.diagnosis import Diagnosis, JobState

if TYPE_CHECKING:
    from analyzer.verdict.jobspec import JobSpec


def jobs_frame(diagnoses: Iterable[Diagnosis], job_spec: JobSpec | None = None) -> pd.DataFrame:
    """One row per diagnosis: the columns of ``analyzer.report.fleet.JOB_COLUMNS``.

    ``job_id``, ``trial`` (None for a plain job) and ``path`` (the input holding the cause's
    evidence) say which job a row is; ``state`` and ``category`` are Categoricals of every
    ``JobState`` and cause category (so ``value_counts()`` lists the zeros too, and a filter
    on a misspelt state fails); ``first_seen``/``last_seen`` are UTC timestamps,
    ``duration``/``time_lost``/``lost_work`` timedeltas, ``machine_hours`` and
    ``accelerator_hours`` floats (the latter NaN without the job's record), ``exit_code`` a
    nullable integer; ``category``, ``detail`` and the cause's fields are missing for a job
    with no failure.
    """
    summaries = (job_summary(d, job_spec) for d in diagnoses)
    rows = [tuple(getattr(s, name) for name in JOB_COLUMNS) for s in summaries]
    frame = pd.DataFrame.from_records(rows, columns=list(JOB_COLUMNS))
    frame["state"] = pd.Categorical(frame["state"], categories=[s.value for s in JobState])
    frame["category"] = pd.Categorical(frame["category"], categories=[c.value for c in Category])
    frame["first_seen"] = pd.to_datetime(frame["first_seen"], utc=True)
    frame["last_seen"] = pd.to_datetime(frame["last_seen"], utc=True)
    for name in ("duration", "time_lost", "lost_work"):
        frame[name] = pd.to_timedelta(frame[name])
    frame["machine_hours"] = frame["machine_hours"].astype("float64")
    frame["accelerator_hours"] = frame["accelerator_hours"].astype("float64")
    frame["exit_code"] = frame["exit_code"].astype("Int64")
    for name in ("attempts", "retries", "restarts", "records"):
        frame[name] = frame[name].astype("int64")
    frame["observed_final"] = frame["observed_final"].astype(bool)
    return frame
