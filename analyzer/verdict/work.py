"""Work lost to failures and restarts, checkpoint gaps, and start-up skew, per attempt.

Only checkpoint saves are events (rules ``progress.*``); training progress is bounded by the
workers' own start and exit times, which the timeline keeps anyway. Figures are wall-clock
seconds, not machine-hours.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime, timedelta

from analyzer.rulebook.events import EventKind
from analyzer.timeline.attempts import Attempt

# A failure this close after a worker's death is that death, reported by the service.
_SAME_FAILURE = timedelta(minutes=5)
# Lines that show when an attempt began: the service's, as it provisions and starts the job.
_BEGINNINGS = frozenset(
    {
        EventKind.ATTEMPT_STARTED,
        EventKind.JOB_PROVISIONING,
        EventKind.JOB_PREPARING,
        EventKind.JOB_RUNNING,
    }
)


def _start_shown(attempt: Attempt) -> bool:
    """Whether the input shows when the attempt's work began: a service line of its start, or
    a runner's start line on a worker. Without either, a worker's first record is only where
    the input begins (a paste of a traceback, an export that starts mid-run): work measured
    from it would be the paste's length, not the job's."""
    return any(e.kind in _BEGINNINGS for e in attempt.events) or any(
        s.origin is not None for w in attempt.workers for s in w.starts
    )


@dataclass(frozen=True, slots=True)
class AttemptWork:
    """What one attempt shows about progress.

    ``lost`` is the work thrown away: for every worker restart and for the attempt's failure,
    the time from the last checkpoint (or the dying process's start, when later) to the
    death. ``checkpoint_gap`` is the longest stretch of training without a checkpoint.
    ``startup_skew`` is the time between the first and the last worker's first start;
    ``startup_race`` says a failure happened inside that window (workers start in parallel
    and user code runs as soon as its worker is up).
    """

    lost: timedelta | None
    training: timedelta | None
    checkpoint_gap: timedelta | None
    startup_skew: timedelta | None
    startup_race: bool


def _checkpoints(attempt: Attempt) -> list[datetime]:
    return sorted(
        e.timestamp
        for e in attempt.events
        if e.kind is EventKind.CHECKPOINT and e.timestamp is not None
    )


def _loss(start: datetime | None, death: datetime, checkpoints: list[datetime]) -> timedelta:
    since = start
    for saved in checkpoints:
        if saved <= death and (since is None or saved > since):
            since = saved
    return max(timedelta(0), death - since) if since is not None else timedelta(0)


def attempt_work(attempt: Attempt, failure: datetime | None, failed: bool) -> AttemptWork:
    """Lost work, checkpoint gap and start-up skew of ``attempt``.

    ``failure`` is when the attempt's decisive failure happened (None: unknown or none);
    ``failed`` whether the attempt failed (its end then loses work too).
    """
    checkpoints = _checkpoints(attempt)
    firsts = [w.starts[0].time for w in attempt.workers if w.starts and w.starts[0].time]
    train_start = min(firsts) if firsts else None
    lost = timedelta(0)
    deaths: list[datetime] = []
    for worker in attempt.workers:
        starts = [s.time for s in worker.starts if s.time is not None]
        for previous, restart in itertools.pairwise(starts):
            exits = [e.time for e in worker.exits if e.time and previous < e.time <= restart]
            death = min(exits) if exits else restart
            deaths.append(death)
            lost += _loss(previous, death, checkpoints)
    if failed:
        end = failure or attempt.end
        if end is not None and not any(
            timedelta(0) <= end - death <= _SAME_FAILURE for death in deaths
        ):
            deaths.append(end)
            begun = [s for s in firsts if s <= end]
            lost += _loss(max(begun) if begun else train_start, end, checkpoints)
    timed = train_start is not None and attempt.end is not None
    training = attempt.end - train_start if timed and attempt.end and train_start else None
    gap: timedelta | None = None
    if training is not None and train_start is not None and attempt.end is not None:
        points = [train_start, *(c for c in checkpoints if c >= train_start), attempt.end]
        gap = max(b - a for a, b in itertools.pairwise(points))
    skew = max(firsts) - min(firsts) if len(firsts) > 1 else None
    race = bool(skew and failure is not None and skew > timedelta(0) and failure <= max(firsts))
    shown = _start_shown(attempt)
    return AttemptWork(
        lost=lost if (deaths or timed) and shown else None,
        training=training if shown else None,
        checkpoint_gap=gap if shown else None,
        startup_skew=skew,
        startup_race=race,
    )
