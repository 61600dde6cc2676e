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
    lost, deaths = _restart_losses(attempt, checkpoints)
    if failed:
        lost += _end_loss(attempt, failure, firsts, deaths, checkpoints)
    timed = train_start is not None and attempt.end is not None
    training, gap = _training(train_start, attempt.end, checkpoints)
    skew, race = _startup_skew(firsts, failure)
    shown = _start_shown(attempt)
    return AttemptWork(
        lost=lost if (deaths or timed) and shown else None,
        training=training if shown else None,
        checkpoint_gap=gap if shown else None,
        startup_skew=skew,
        startup_race=race,
    )


def _restart_losses(
    attempt: Attempt, checkpoints: list[datetime]
) -> tuple[timedelta, list[datetime]]:
    """The work lost at each worker's restarts (from its start before, or the last
    checkpoint since, to its death: its first exit before the restart, else the restart),
    and those deaths."""
    lost = timedelta(0)
    deaths: list[datetime] = []
    for worker in attempt.workers:
        starts = [s.time for s in worker.starts if s.time is not None]
        for previous, restart in itertools.pairwise(starts):
            exits = [e.time for e in worker.exits if e.time and previous < e.time <= restart]
            death = min(exits) if exits else restart
            deaths.append(death)
            lost += _loss(previous, death, checkpoints)
    return lost, deaths


def _end_loss(
    attempt: Attempt,
    failure: datetime | None,
    firsts: list[datetime],
    deaths: list[datetime],
    checkpoints: list[datetime],
) -> timedelta:
    """The work a failed attempt lost at its end (its failure, else its end), unless a
    worker's death told already is that failure; the end put among ``deaths``."""
    end = failure or attempt.end
    if end is None or any(timedelta(0) <= end - death <= _SAME_FAILURE for death in deaths):
        return timedelta(0)
    deaths.append(end)
    begun = [s for s in firsts if s <= end]
    return _loss(max(begun) if begun else min(firsts, default=None), end, checkpoints)


def _training(
    start: datetime | None, end: datetime | None, checkpoints: list[datetime]
) -> tuple[timedelta | None, timedelta | None]:
    """How long the attempt trained (from its first worker's start to its end) and its
    longest stretch without a checkpoint; None when either end is unknown."""
    if start is None or end is None:
        return None, None
    return end - start, _checkpoint_gap(start, end, checkpoints)


def _startup_skew(
    firsts: list[datetime], failure: datetime | None
) -> tuple[timedelta | None, bool]:
    """How far apart the workers' first starts were (None for one worker), and whether the
    failure came before the last of them had started (a start-up race)."""
    skew = max(firsts) - min(firsts) if len(firsts) > 1 else None
    race = bool(skew and failure is not None and skew > timedelta(0) and failure <= max(firsts))
    return skew, race


def _checkpoint_gap(start: datetime, end: datetime, checkpoints: list[datetime]) -> timedelta:
    """The longest stretch of training between ``start``, the checkpoints and ``end``."""
    points = [start, *(c for c in checkpoints if c >= start), end]
    return max(b - a for a, b in itertools.pairwise(points))
