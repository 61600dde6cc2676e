"""pandas frames for notebooks: records in, one row per job out.

- :func:`read_logs` reads inputs into a record frame (one row per log record);
- :func:`diagnose_frame` diagnoses every job in the inputs into a job frame (one row per job);
- :func:`~analyzer.report.frames.jobs_frame` (importable from here too) turns diagnoses already
  in hand into the same job frame.

``diagnose_frame`` never builds a record frame: it streams the inputs through
:func:`analyzer.api.analyze_sources`, which keeps only the matched events of each job, so a
thousand files cost memory in proportion to their jobs, not their lines. Importing this
module also registers the ``df.jobdoctor`` accessor (:mod:`analyzer.accessor`). It is the
only place, with the accessor, that imports pandas.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from analyzer import accessor as _accessor  # noqa: F401 - registers df.jobdoctor
from analyzer.api import PathsLike, analyze, flatten_paths
from analyzer.core.errors import InputError
from analyzer.ingest import read_records
from analyzer.report.frames import jobs_frame, signatures_frame
from analyzer.report.redact import shown

__all__ = [
    "RECORD_COLUMNS",
    "UnreadInputWarning",
    "diagnose_frame",
    "jobs_frame",
    "read_logs",
    "signatures_frame",
]

if TYPE_CHECKING:
    from analyzer.engines.bigquery import BigQuerySource

# The columns of a record frame; the first five are what the accessor requires.
RECORD_COLUMNS: tuple[str, ...] = (
    "timestamp",
    "job_id",
    "task",
    "severity",
    "text",
    "path",
    "line",
    "vm",
    "trial",
    "insert_id",
)


def read_logs(*paths: PathsLike) -> pd.DataFrame:
    """Every record of ``paths`` (files, directories, globs, ``-``, or lists of them), one row
    per record.

    Columns: ``timestamp`` (UTC, NaT when the input has none), ``job_id``, ``task``,
    ``severity``, ``text``, ``path``, ``line`` (where the record starts), then ``vm``
    (``compute.googleapis.com/resource_id``), ``trial`` and ``insert_id``, which the
    accessor uses to see VM moves and drop duplicates. Holds every record in memory: for
    the per-job view of many files use :func:`diagnose_frame`. Raises
    :class:`~analyzer.core.errors.InputError` for an input that cannot be read.
    """
    columns: dict[str, list[object]] = {name: [] for name in RECORD_COLUMNS}
    for record in read_records(flatten_paths(paths)):
        columns["timestamp"].append(record.timestamp)
        columns["job_id"].append(record.job_id)
        columns["task"].append(record.task)
        columns["severity"].append(record.severity)
        columns["text"].append(shown(record.text))  # redacted (--no-redact: set_redaction)
        columns["path"].append(record.origin.path)
        columns["line"].append(record.origin.line)
        columns["vm"].append(record.vm)
        columns["trial"].append(record.trial)
        columns["insert_id"].append(record.insert_id)
    frame = pd.DataFrame(columns, columns=list(RECORD_COLUMNS))
    frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True)
    frame["line"] = frame["line"].astype("int64")
    return frame


def diagnose_frame(
    *paths: PathsLike | BigQuerySource,
    rules_dirs: Sequence[str | Path] = (),
    policy_path: str | Path | None = None,
    job_spec: str | Path | None = None,
    job: str | None = None,
    lang: str = "en",
    bigquery: str | None = None,
    since: str | None = None,
    start: str | None = None,
    end: str | None = None,
    job_ids: Sequence[str] = (),
    billing_project: str | None = None,
    max_bytes: str = "100GB",
    dask: object = None,
) -> pd.DataFrame:
    """Diagnose every job in ``paths`` (files, directories, globs, or lists of them, such as
    ``glob.glob("exports/*.json")``) into one row per job (see :func:`jobs_frame`).

    Streams the inputs: records are matched against the rules as they are read and only
    each job's matched events are kept. ``rules_dirs``, ``policy_path`` and ``job_spec`` are
    the CLI's ``--rules``, ``--policy`` and ``--job-spec`` (the record also gives the job's
    accelerator-hours); a path may be a ``gs://BUCKET/PREFIX/`` sink tree, and
    ``since``/``start``/``end`` and ``dask`` are those of :func:`analyzer.api.analyze`. An
    input that cannot be read is skipped with a :class:`UnreadInputWarning` naming it, and
    listed in ``frame.attrs["unread"]``; the others are diagnosed. ``bigquery="P.D.TABLE"``
    with ``since`` (or ``start`` and ``end``) reads a BigQuery table instead, as ``jobdoctor
    diagnose --bigquery`` does (also: an :class:`analyzer.engines.bigquery.BigQuerySource` given as
    the path).
    """
    from analyzer.verdict.jobspec import load_job_spec

    spec_path = Path(job_spec) if job_spec is not None else None
    spec = load_job_spec(spec_path) if spec_path is not None else None
    rules = tuple(Path(d) for d in rules_dirs)
    policy_file = Path(policy_path) if policy_path is not None else None
    # A table is the one thing given that is neither a path nor a list of paths.
    tables = [p for p in paths if not isinstance(p, str | Path | Iterable)]
    if bigquery is not None or tables:
        from analyzer.engines.bigquery import analyze_bigquery, bigquery_source
        from analyzer.rulebook import RuleBook
        from analyzer.verdict.policy import load_policy

        if bigquery is not None:
            tables.append(
                bigquery_source(
                    bigquery,
                    since=since,
                    start=start,
                    end=end,
                    job_ids=job_ids,
                    billing_project=billing_project,
                    max_bytes=max_bytes,
                )
            )
        if len(tables) != 1 or len(tables) != len(paths) + (bigquery is not None):
            raise InputError("diagnose_frame reads one BigQuery table, or files: not both")
        book = RuleBook.load(rules)
        found = analyze_bigquery(
            tables[0], rules=book, policy=load_policy(policy_file), job_spec=spec, lang=lang
        )
        assert found is not None
        return jobs_frame(found.diagnoses, spec)
    files = flatten_paths(p for p in paths if isinstance(p, str | Path | Iterable))
    analysis = analyze(
        files,
        rules_dirs=rules,
        policy_path=policy_file,
        job=job,
        job_spec_path=spec_path,
        lang=lang,
        since=since,
        start=start,
        end=end,
        dask=dask,
    )
    frame = jobs_frame(analysis.diagnoses, spec)
    frame.attrs["unread"] = list(analysis.unread)
    for problem in analysis.unread:
        warnings.warn(problem, UnreadInputWarning, stacklevel=2)
    return frame


class UnreadInputWarning(UserWarning):
    """An input of a batch that could not be read (the others were)."""
