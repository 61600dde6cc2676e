"""A job that hangs: :class:`Stall`, the verdict's part that says since when and who.

The platform does not fail a hung job: it bills every VM until the job's
``scheduling.timeout`` (7 days by default; platform.md section 2). A stall is found
from the logs alone (issue 30): a collective or rendezvous timeout, or a worker silent
far past its own rhythm while the input goes on. A job that ended is never stalled.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from analyzer.ingest.records import Origin


class StallKind(StrEnum):
    """What shows the hang (``stalled.kind`` in the JSON contract)."""

    # Some workers silent past their rhythm while others still write: a straggler, or a
    # rank stuck in a collective that the others wait on.
    STRAGGLER = "straggler"
    # Every worker silent past its rhythm, and nothing ends the job.
    ALL_SILENT = "all_silent"
    # A collective, rendezvous, barrier or deadline timeout logged, and the job not ended.
    COLLECTIVE_TIMEOUT = "collective_timeout"


@dataclass(frozen=True, slots=True)
class SilentWorker:
    """One worker silent since ``last_line``: ``silent_for`` when the input ends, against
    the threshold its own rhythm gave (``threshold``)."""

    replica: str
    last_line: datetime
    silent_for: timedelta
    threshold: timedelta
    last_origin: Origin | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "replica": self.replica,
            "last_line": _iso(self.last_line),
            "silent_seconds": round(self.silent_for.total_seconds(), 3),
            "threshold_seconds": round(self.threshold.total_seconds(), 3),
            "last_evidence": self.last_origin.to_dict() if self.last_origin else None,
        }


@dataclass(frozen=True, slots=True)
class StallCost:
    """What the hung job will have cost by its timeout, from the input's end: machine-hours
    always (workers seen × hours left), accelerator-hours only with the job spec."""

    hours_left: float
    machine_hours: float
    accelerator_hours: float | None = None
    accelerator: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "hours_left": round(self.hours_left, 2),
            "machine_hours": round(self.machine_hours, 2),
            "accelerator_hours": (
                None if self.accelerator_hours is None else round(self.accelerator_hours, 2)
            ),
            "accelerator": self.accelerator,
        }


@dataclass(frozen=True, slots=True)
class Stall:
    """The job is RUNNING and stalled since ``since``.

    ``workers`` are the silent ones; ``waiting`` the workers still writing (those that wait
    on them, e.g. in an all-reduce); ``evidence`` the timeout lines and each silent worker's
    last line. ``input_end`` is the latest time the inputs show (any job's), or now for a live
    read; ``timeout_at`` when the platform stops the job (``timeout_source``: "job_spec" or
    "default", the 7-day default of platform.md section 2).
    """

    since: datetime
    kind: StallKind
    workers: tuple[SilentWorker, ...]
    evidence: tuple[Origin, ...]
    input_end: datetime
    timeout_at: datetime | None
    timeout_source: str
    cost_to_timeout: StallCost | None
    waiting: tuple[str, ...] = ()
    # The collective or timeout named by the evidence ("ALLREDUCE", "rendezvous"), if any.
    collective: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``stalled`` object of the JSON contract."""
        return {
            "since": _iso(self.since),
            "kind": self.kind.value,
            "workers": [w.to_dict() for w in self.workers],
            "waiting": list(self.waiting),
            "collective": self.collective,
            "evidence": [o.to_dict() for o in self.evidence],
            "input_end": _iso(self.input_end),
            "timeout_at": _iso(self.timeout_at),
            "timeout_source": self.timeout_source,
            "cost_to_timeout": self.cost_to_timeout.to_dict() if self.cost_to_timeout else None,
        }


def _iso(when: datetime | None) -> str | None:
    if when is None:
        return None
    return when.isoformat().replace("+00:00", "Z")
