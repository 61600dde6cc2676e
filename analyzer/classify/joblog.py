"""What the classify stage hands on: one :class:`JobLog` per job.

A leaf of the pipeline's types: it imports nothing above the records and events it holds, so
the later stages (``analyzer.timeline.attempts`` and on) load no reading machinery.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from analyzer.classify.minutes import MinuteMap
from analyzer.rulebook.events import Event


@dataclass(frozen=True, slots=True)
class VmSpan:
    """The time one worker's records were seen on one VM (``vm`` None when unlabelled), and
    the minutes they fell in (None when the input's engine gave no rhythm: a query's
    summary of first, last and count)."""

    vm: str | None
    first: datetime
    last: datetime
    records: int
    minutes: MinuteMap | None = None


@dataclass(frozen=True, slots=True)
class JobLog:
    """Everything the later stages need of one job, in time order.

    ``job_id`` is None when no input named the job (a stream-logs text without a console link;
    ``named_in_text`` when only such a link named it);
    ``trial`` names the hyperparameter-tuning trial when the job is one trial of a tuning job.
    """

    job_id: str | None
    events: tuple[Event, ...]
    vm_spans: Mapping[str, tuple[VmSpan, ...]]
    records: int
    first_seen: datetime | None
    last_seen: datetime | None
    trial: str | None = None
    service_records: int = 0  # records the service wrote (task "service")
    # The latest time the inputs holding this job's lines show, whichever job wrote it (a
    # project sink goes on after a hung job's last line); None when none has a time. Inputs
    # that hold none of its lines say nothing of its silence (issue 30).
    input_end: datetime | None = None
    # The id was read from a line of a text without job ids (a console link): the text may
    # hold other jobs too (analyzer.timeline.attempts.separate_jobs). Lines that carry the
    # id themselves (a sink's) prove it one job.
    named_in_text: bool = False


@dataclass(frozen=True, slots=True)
class SpanSummary:
    """The records of one job group (:func:`~analyzer.ingest.records.job_group`), task and VM as a
    query engine counts them: first and last time (None when untimed) and how many."""

    group: str | None
    task: str | None
    vm: str | None
    first: datetime | None
    last: datetime | None
    records: int
    # The minutes its records fell in (None: the engine gave none).
    minutes: MinuteMap | None = None
