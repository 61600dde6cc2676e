"""Benchmark input: a large sink file of many jobs, streamed in constant memory."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace

from analyzer.simulate.entries import MINUTE, SECOND, JobIdentity, new_job_id
from analyzer.simulate.plan import merge_jobs
from analyzer.simulate.scenarios import (
    PROJECT_ID,
    PROJECT_NUMBER,
    REGION,
    Context,
    JobFunction,
    internal_error_exhausted,
    multi_replica_failure,
    oom,
    stockout_exhausted,
    success,
    transient_sigsegv,
    user_code_exit1,
    vm_maintenance,
    worker_restarts_exhausted,
)
from analyzer.simulate.writers import sink_lines

# Weighted like a real project: mostly successes, failures of every kind now and then.
_MIX: tuple[JobFunction, ...] = (
    success,
    success,
    success,
    success,
    vm_maintenance,
    user_code_exit1,
    user_code_exit1,
    transient_sigsegv,
    oom,
    stockout_exhausted,
    internal_error_exhausted,
    worker_restarts_exhausted,
    multi_replica_failure,
)
_CONCURRENT = 4  # jobs interleaved at a time: memory stays bounded by this
_SCALE = 25.0  # chatter multiplier: benchmark files are mostly training noise


def fleet(target_bytes: int, seed: int = 0, *, event_share: float = 0.0) -> Iterator[bytes]:
    """Sink-shaped JSONL lines (each ending in ``b"\\n"``) until about ``target_bytes``.

    Many jobs of mixed outcomes, a few running at once, mostly training chatter.
    Streaming: memory does not grow with ``target_bytes``. ``event_share`` makes that share
    of the chatter events (:func:`dense_fleet`).
    """
    rng = random.Random(f"fleet:{seed}")
    written = 0
    t0 = 1_710_144_000 * SECOND  # 2024-03-11T08:00:00Z
    batch = 0
    while written < target_bytes:
        plans = []
        for index in range(_CONCURRENT):
            job = JobIdentity(PROJECT_ID, PROJECT_NUMBER, new_job_id(rng), REGION, f"{REGION}-a")
            tag = f"fleet:{seed}:{batch}:{index}"
            start = t0 + index * rng.randint(2, 15) * MINUTE
            plan = rng.choice(_MIX)(Context(random.Random(tag), job, start, tag, _SCALE))
            plans.append(replace(plan, event_share=event_share) if event_share else plan)
        for line in sink_lines(merge_jobs(plans), seed=seed + batch):
            data = line.encode()
            written += len(data)
            yield data
            if written >= target_bytes:
                return
        t0 += rng.randint(3, 8) * 60 * MINUTE
        batch += 1


# The share of chatter lines that are events in dense_fleet: with the lines a fleet matches
# anyway, about a third of all lines match a rule (the event-dense row of issue 19).
DENSE_EVENT_SHARE = 0.34


def dense_fleet(
    target_bytes: int, seed: int = 0, *, event_share: float = DENSE_EVENT_SHARE
) -> Iterator[bytes]:
    """:func:`fleet` with event-dense chatter: a checkpoint line at every step, a harmless
    retried traceback and the sitecustomize ModuleNotFoundError again and again. The same
    jobs and verdicts; many more events."""
    return fleet(target_bytes, seed, event_share=event_share)
