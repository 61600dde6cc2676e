"""Diagnosing a collector's jobs one by one, in several processes when they hold many events.

Once the inputs are read, each job's log is built (its events read back from disk, put in
time order, deduplicated, what thinning dropped checked) and diagnosed, job after job: with
many events this is the serial tail of a run, after the scan that several processes share
(the bench's 200 MB fleet: ~80 ms of 4,470 events; its 30%-dense variant: ~420 ms of 13,500).
Jobs are independent, so large collections are diagnosed by forked workers too, each job
group built and diagnosed where it is taken, from the accumulators the fork copied; the
diagnoses come back in job order, so the result is the one a single process gives. What
building a log counts on the inputs (duplicate entries) comes back with them and is added up.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from analyzer.classify.collector import Collector
    from analyzer.classify.joblog import JobLog
    from analyzer.verdict.diagnosis import Diagnosis

# Below this many kept events diagnosing costs less than forking and sending the diagnoses
# back (~10 ms; building and diagnosing cost 18-31 us an event on the bench's fleet and
# dense variants).
PARALLEL_MIN_EVENTS = 2000
# Job groups per process: workers take the next group as they get free, so they finish
# within a small group of each other whatever the jobs weigh.
GROUPS_PER_PROCESS = 4

Key = tuple[str, str]


@dataclass(slots=True)
class _Done:
    """What a worker sends back for a job group: its diagnoses, and what building the
    group's logs counted on the inputs."""

    diagnoses: list[Diagnosis]
    duplicates: Counter[str] = field(default_factory=Counter)
    restored: list[str | None] = field(default_factory=list)


def each_diagnosis(
    collector: Collector,
    diagnose: Callable[[JobLog], Iterator[Diagnosis]],
    processes: int | None = None,
) -> Iterator[Diagnosis]:
    """``diagnose(log)`` for every log of ``collector``, in job order, each job's events let go
    once it is diagnosed (:meth:`Collector.each_log` with ``consume``). ``processes`` None:
    several where the jobs hold enough events (:data:`PARALLEL_MIN_EVENTS`) and the machine
    has several cores (``JOBDOCTOR_JOBS`` as for reading)."""
    keys = collector.log_keys()
    count = _processes(collector, len(keys), processes)
    if count <= 1:
        for log in collector.logs_of(keys, consume=True):
            yield from diagnose(log)
        return
    from analyzer.core.processes import run_forked

    size = -(-len(keys) // (count * GROUPS_PER_PROCESS))
    groups = [keys[at : at + size] for at in range(0, len(keys), size)]

    def work(group: Sequence[Key]) -> _Done:
        start = len(collector.restored)
        done = _Done([d for log in collector.logs_of(group, consume=True) for d in diagnose(log)])
        done.duplicates.update({s.path: s.duplicates for s in collector.stats if s.duplicates})
        # Only this group's: a process may take several, this one's list is added to below.
        done.restored = collector.restored[start:]
        del collector.restored[start:]
        return done

    results: list[_Done | None] = [None] * len(groups)
    duplicates: Counter[str] = Counter()
    after = 0  # the next group to give, in job order
    # What the scan left (the rule book, the collector) is shared with the workers
    # copy-on-write: out of the cyclic collector's reach, which would otherwise touch, and so
    # copy, every page of it in every process.
    gc.freeze()
    try:
        for index, found in run_forked(groups, work, count):
            duplicates.update(found.duplicates)
            results[index] = found
            while after < len(groups) and (ready := results[after]) is not None:
                results[after] = None
                collector.restored.extend(ready.restored)
                yield from ready.diagnoses
                after += 1
    finally:
        gc.unfreeze()
    collector.let_go(keys)
    for stats in collector.stats:
        stats.duplicates = duplicates[stats.path]


def _processes(collector: Collector, jobs: int, requested: int | None) -> int:
    if jobs < 2:
        return 1
    if requested is None and collector.kept_events() < PARALLEL_MIN_EVENTS:
        return 1
    from analyzer.classify._fastscan.parallel import PARALLEL_MIN_WORK, processes_for

    # The events decided it: the processes are those reading would use on a large input.
    return min(jobs, processes_for(PARALLEL_MIN_WORK, requested))
