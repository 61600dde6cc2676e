"""The ``df.jobdoctor`` accessor: classify and diagnose any frame of log records.

A frame from :func:`analyzer.frames.read_logs`, from BigQuery (a Log Router sink table,
columns renamed) or from anywhere else works, as long as it has the columns ``timestamp``,
``job_id``, ``task``, ``severity`` and ``text``; ``path``, ``line``, ``vm``, ``trial`` and
``insert_id`` are used when present. The accessor keeps no state: every call turns the rows
into :class:`~analyzer.ingest.records.LogRecord` through :class:`FrameSource`, an in-memory
:class:`~analyzer.ingest.records.Source`, and runs the same pipeline as files do::

    df.jobdoctor.classify()    # one row per (record, rule match)
    df.jobdoctor.diagnose()    # one row per job, as analyzer.frames.diagnose_frame
    df.jobdoctor.diagnoses()   # the Diagnosis objects (a DiagnosisList: charts in Jupyter)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from analyzer.api import analyze_sources
from analyzer.classify.collector import classify_sources
from analyzer.core.errors import InputError
from analyzer.ingest.records import InputStats, LogRecord, LostDigits, Origin, id_text
from analyzer.pipeline.analysis import Analysis, DiagnosisList
from analyzer.rulebook import RuleBook
from analyzer.verdict.policy import load_policy

REQUIRED_COLUMNS: tuple[str, ...] = ("timestamp", "job_id", "task", "severity", "text")
OPTIONAL_COLUMNS: tuple[str, ...] = ("path", "line", "vm", "trial", "insert_id")
FRAME_NAME = "<dataframe>"
FRAME_FORMAT = "dataframe"
NO_TEXT = "no text"

CLASSIFY_COLUMNS: tuple[str, ...] = (
    "timestamp",
    "job_id",
    "task",
    "kind",
    "category",
    "detail",
    "rule",
    "lang",
    "replica",
    "exit_code",
    "region",
    "reason",
    "text",
    "path",
    "line",
)


def _missing(value: Any) -> bool:
    # pd.isna is elementwise on lists and arrays: only scalars count as missing.
    return value is None or (pd.api.types.is_scalar(value) and bool(pd.isna(value)))


def _string(value: Any) -> str | None:
    if _missing(value):
        return None
    return str(value)


def _id(value: Any, column: str, place: str) -> str | None:
    """An id cell (a numeric job id read by BigQuery or read_csv with a missing value becomes
    a float: its digits, or an InputError when a float lost some)."""
    if _missing(value):
        return None
    try:
        return str(id_text(value, column))
    except LostDigits as error:
        raise InputError(f"{place}: {error}") from None


def _timestamps(column: pd.Series[Any]) -> list[datetime | None]:
    try:
        parsed = pd.to_datetime(column, utc=True, format="ISO8601")
    except (ValueError, TypeError) as error:
        raise InputError(
            f"column 'timestamp' cannot be read as times ({error}); give RFC 3339 strings "
            "or datetimes"
        ) from None
    # Python datetimes hold microseconds: drop nanoseconds first, as the file readers do.
    floored = parsed.dt.floor("us")
    return [None if _missing(v) else v.to_pydatetime() for v in floored]


class FrameSource:
    """The rows of a record frame as a :class:`~analyzer.ingest.records.Source`, in row order.

    Rows without text are skipped with the reason ``no text``. A row without ``path`` and
    ``line`` cites ``<dataframe>`` and its position (1-based) as its origin.
    """

    def __init__(self, frame: pd.DataFrame, name: str = FRAME_NAME) -> None:
        _check_columns(frame)
        self._frame = frame
        self._stats = InputStats(path=name, format=FRAME_FORMAT)

    @property
    def stats(self) -> InputStats:
        """How the rows were read; complete once :meth:`records` is exhausted."""
        return self._stats

    def records(self) -> Iterator[LogRecord]:
        """The frame's rows as records; each call reads again and resets the counts."""
        stats = self._stats
        stats.restart()
        frame = self._frame
        size = len(frame)
        times = _timestamps(frame["timestamp"])
        columns = {
            name: frame[name].tolist() if name in frame.columns else [None] * size
            for name in (*REQUIRED_COLUMNS[1:], *OPTIONAL_COLUMNS)
        }
        # Rows of one place (the records of a compact JSON array share a line) are told
        # apart, as the readers tell them apart: an origin names one record.
        on_line: dict[tuple[str, int], int] = {}
        for index in range(size):
            stats.lines += 1
            text = columns["text"][index]
            if _missing(text):
                stats.skip(NO_TEXT)
                continue
            line = columns["line"][index]
            place = (
                _string(columns["path"][index]) or stats.path,
                int(line) if line is not None and not _missing(line) else index + 1,
            )
            entry = on_line[place] = on_line.get(place, -1) + 1
            origin = Origin(*place, entry)
            stats.records += 1
            stats.used += 1
            yield LogRecord(
                timestamp=times[index],
                job_id=_id(columns["job_id"][index], "job_id", f"{stats.path}: row {index + 1}"),
                task=_string(columns["task"][index]),
                severity=_string(columns["severity"][index]) or "DEFAULT",
                text=str(text),
                origin=origin,
                vm=_string(columns["vm"][index]),
                trial=_id(columns["trial"][index], "trial", f"{stats.path}: row {index + 1}"),
                insert_id=_string(columns["insert_id"][index]),
            )


def _check_columns(frame: pd.DataFrame) -> None:
    missing = [name for name in REQUIRED_COLUMNS if name not in frame.columns]
    if missing:
        raise InputError(
            f"the frame lacks column(s) {', '.join(missing)}; a record frame needs "
            f"{', '.join(REQUIRED_COLUMNS)} (optional: {', '.join(OPTIONAL_COLUMNS)}), "
            "rename yours with df.rename(columns={...})"
        )


@pd.api.extensions.register_dataframe_accessor("jobdoctor")
class JobDoctorAccessor:
    """``df.jobdoctor``: classify and diagnose a frame of log records (keeps no state).

    Raises :class:`~analyzer.core.errors.InputError` when the frame lacks a required column.
    """

    def __init__(self, frame: pd.DataFrame) -> None:
        _check_columns(frame)
        self._frame = frame

    def sources(self) -> list[FrameSource]:
        """The frame as :class:`~analyzer.ingest.records.Source` objects, one per ``path``.

        Split by input path (in order of first appearance) so that a frame of many files
        is read as those files are: a stream-logs file without a job id takes it from its
        own console link, not from another file's.
        """
        frame = self._frame
        if "path" not in frame.columns:
            return [FrameSource(frame)]
        return [
            FrameSource(part, _string(key) or FRAME_NAME)
            for key, part in frame.groupby("path", sort=False, dropna=False)
        ]

    def classify(self, rules: RuleBook | None = None) -> pd.DataFrame:
        """One row per rule match: the record's time, job, task and text, and what matched.

        ``kind`` is the event kind (``error``, ``worker_exited``, ``job_failed``, ...),
        ``category`` the error category when there is one; ``replica``, ``exit_code``,
        ``region`` and ``reason`` are the fields the rule extracted. Records that match no
        rule are left out.
        """
        book = rules if rules is not None else RuleBook.load()
        rows: list[tuple[object, ...]] = []
        for event in classify_sources(self.sources(), book):
            match = event.match
            exit_code = match.field("exit_code")
            rows.append(
                (
                    event.timestamp,
                    event.job_id,
                    event.task,
                    match.kind.value,
                    match.category.value if match.category else None,
                    match.detail,
                    match.rule,
                    match.lang,
                    _string(match.field("replica")),
                    exit_code if isinstance(exit_code, int) else None,
                    _string(match.field("region")),
                    _string(match.field("reason")),
                    event.text,
                    event.origin.path,
                    event.origin.line,
                )
            )
        frame = pd.DataFrame.from_records(rows, columns=list(CLASSIFY_COLUMNS))
        frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True)
        frame["exit_code"] = frame["exit_code"].astype("Int64")
        return frame

    def analyze(self, rules_dirs: Sequence[Path] = (), policy_path: Path | None = None) -> Analysis:
        """The full :class:`~analyzer.pipeline.analysis.Analysis` of the frame's records."""
        return analyze_sources(
            self.sources(),
            rules=RuleBook.load(tuple(rules_dirs)),
            policy=load_policy(policy_path),
        )

    def diagnoses(
        self, rules_dirs: Sequence[Path] = (), policy_path: Path | None = None
    ) -> DiagnosisList:
        """The diagnosis of every job in the frame (shown as cards and charts in Jupyter)."""
        return DiagnosisList(self.analyze(rules_dirs, policy_path).diagnoses)

    def diagnose(
        self, rules_dirs: Sequence[Path] = (), policy_path: Path | None = None
    ) -> pd.DataFrame:
        """One row per job, the columns of :func:`analyzer.frames.diagnose_frame`."""
        from analyzer.report.frames import jobs_frame

        return jobs_frame(self.analyze(rules_dirs, policy_path).diagnoses)
