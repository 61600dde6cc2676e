"""Diagnosing a collector's jobs in several processes (analyzer.pipeline.diagnosing) gives what one
process gives: the same diagnoses in the same order (timelines and their events too), the
same duplicates counted on the inputs, the same jobs read back from the spill files; and
with another thread running (no fork), one process does it all alike."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import orjson
import pytest

import analyzer.classify._fastscan.parallel as parallel
from analyzer.classify.collector import Collector
from analyzer.ingest import open_sources
from analyzer.pipeline import diagnosing
from analyzer.pipeline.stages import diagnose_collected
from analyzer.rulebook import RuleBook
from analyzer.simulate import SCENARIOS, write
from analyzer.simulate.plan import merge_jobs


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


def _diagnosed(
    paths: list[str], book: RuleBook, processes: int, *, timelines: bool = True
) -> tuple[Any, ...]:
    # The inputs read by two processes (their events on disk, as a large input's are), then
    # diagnosed by ``processes``.
    collector = Collector(book, processes=2)
    collector.read_all(open_sources(paths))
    analysis = diagnose_collected(collector, book, processes=processes, timelines=timelines)
    duplicates = {s.path: s.duplicates for s in collector.stats}
    return (
        analysis.to_dict(),
        analysis.diagnoses,
        duplicates,
        list(collector.restored),
        collector.without_jobs(),
        collector.has_logs(),
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Many jobs, twice (a copy under another name: every entry a duplicate of the other
    file's), and a job whose service line was written far from its time, read back."""
    folder = tmp_path_factory.mktemp("diagnosing")
    fleet = folder / "fleet.jsonl"
    # Every scenario's job, each with event-dense chatter, in one sink file.
    plans = [
        replace(plan, event_share=0.3, chatter_per_minute=plan.chatter_per_minute * 2)
        for seed, name in enumerate(sorted(SCENARIOS))
        for plan in SCENARIOS[name].plans(seed)
    ]
    with fleet.open("w", encoding="utf-8") as stream:
        write(merge_jobs(plans), "jsonl", stream, seed=5)
    copy = folder / "copy.jsonl"
    copy.write_bytes(fleet.read_bytes())
    lines = fleet.read_bytes().splitlines(keepends=True)
    running = next(orjson.loads(x) for x in lines if b"Job is running." in x)
    middle = orjson.loads(lines[len(lines) // 2])
    late = orjson.dumps({**running, "timestamp": middle["timestamp"], "insertId": "late"})
    at = 2 * len(lines) // 3
    anchored = folder / "late.jsonl"
    anchored.write_bytes(b"".join([*lines[:at], late + b"\n", *lines[at:]]))
    return [str(fleet), str(copy), str(anchored)]


@pytest.fixture(autouse=True)
def _small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    # Many ranges: each scanned apart, its events on disk, merged in order.
    monkeypatch.setattr(parallel, "MIN_RANGE_BYTES", 256 << 10)


@pytest.mark.parametrize("timelines", [True, False])
def test_several_processes_diagnose_as_one(
    inputs: list[str], book: RuleBook, timelines: bool
) -> None:
    one = _diagnosed(inputs, book, 1, timelines=timelines)
    _, diagnoses, duplicates, restored, _, _ = one
    # What is compared is not empty: many jobs, duplicates across inputs, a job read back.
    assert len(diagnoses) > 8 and sum(duplicates.values()) > 1000 and restored
    for processes in (2, 3):
        assert _diagnosed(inputs, book, processes, timelines=timelines) == one


def test_a_thread_running_diagnoses_in_one_process_alike(inputs: list[str], book: RuleBook) -> None:
    want = _diagnosed(inputs, book, 1)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert _diagnosed(inputs, book, 2) == want
    finally:
        stop.set()
        thread.join()


def test_many_events_decide_for_several_processes(
    inputs: list[str], book: RuleBook, monkeypatch: pytest.MonkeyPatch
) -> None:
    # By default several processes diagnose only when the jobs hold many events.
    import analyzer.core.processes as processes

    forked: list[int] = []
    original = processes.run_forked

    def counting(*args: Any, **kwargs: Any) -> Iterator[Any]:
        forked.append(args[2])
        return original(*args, **kwargs)

    monkeypatch.setattr(processes, "run_forked", counting)
    monkeypatch.setenv("JOBDOCTOR_JOBS", "2")
    for more in (1, 0):
        collector = Collector(book, processes=1)
        collector.read_all(open_sources(inputs[:1]))
        monkeypatch.setattr(diagnosing, "PARALLEL_MIN_EVENTS", collector.kept_events() + more)
        diagnose_collected(collector, book)
    assert forked == [2]


def test_kept_events_counts_what_is_on_disk(inputs: list[str], book: RuleBook) -> None:
    # The estimate that decides: events in memory and on disk alike, within a factor.
    collector = Collector(book, processes=2)
    collector.read_all(open_sources(inputs[:1]))
    estimate = collector.kept_events()
    actual = sum(len(log.events) for log in collector.logs())
    assert actual / 2 < estimate < actual * 2, (estimate, actual)
