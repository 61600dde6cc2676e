"""Memory flat whatever the input's size (issue 19): the reading process holds one job's events
at a time, and a run's long texts go with its diagnoses, not with the process.

The results are those of holding everything: compared whole, forked against one process,
one job at a time against all at once, diagnoses without their timelines' events against
those with them in every report that shows none.
"""

from __future__ import annotations

import gc
import os
import weakref
from pathlib import Path

import pytest

from analyzer.api import analyze_sources, diagnose
from analyzer.classify import longtext
from analyzer.classify._fastscan import parallel
from analyzer.classify.collector import Collector
from analyzer.ingest import open_sources
from analyzer.report.json import render_json, render_jsonl, render_yaml
from analyzer.rulebook import RuleBook
from analyzer.simulate import fleet
from tests import reshape

BOOK = RuleBook.load()
_FLEET = list(fleet(400_000, seed=19))


@pytest.fixture
def export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small fleet with long texts, cut into ranges of 40 KB: ten ranges on two processes."""
    monkeypatch.setattr(parallel, "MIN_RANGE_BYTES", 40_000)
    path = tmp_path / "fleet.jsonl"
    path.write_bytes(b"".join(reshape.long_texts(_FLEET, count=8, size=20_000, every=40)))
    return path


def _collected(path: Path, processes: int) -> Collector:
    collector = Collector(BOOK, processes=processes)
    collector.read_all(open_sources([str(path)]))
    return collector


def test_the_workers_kept_events_wait_on_disk_until_their_job_is_built(export: Path) -> None:
    forked = _collected(export, processes=2)
    held = list(forked._jobs.values())
    # Every kept event came from a worker's range: none is in memory before its job is built.
    assert sum(len(acc.stored) for acc in held) >= len(held) > 1
    assert sum(len(acc.events) for acc in held) == 0
    alone = _collected(export, processes=1)
    assert forked.logs() == alone.logs()
    assert [s.to_dict() for s in forked.stats] == [s.to_dict() for s in alone.stats]


def test_jobs_built_one_at_a_time_are_those_built_together(export: Path) -> None:
    together = _collected(export, processes=2).logs()
    collector = _collected(export, processes=2)
    one_by_one = []
    for log in collector.each_log(consume=True):
        one_by_one.append(log)
        # Only the job just given holds its events: the others are let go or still on disk
        # (one event left of each job given, to count it as a job).
        assert sum(len(acc.events) > 1 for acc in collector._jobs.values()) <= 1
    assert all(len(acc.events) <= 1 and not acc.stored for acc in collector._jobs.values())
    assert one_by_one == together
    assert collector.has_logs() and collector.without_jobs() == []


@pytest.mark.parametrize("processes", ["1", "2"])
def test_reports_without_timeline_events_are_the_same(
    export: Path, processes: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOBDOCTOR_JOBS", processes)
    full = analyze_sources(open_sources([str(export)]))
    lean = analyze_sources(open_sources([str(export)]), timelines=False)
    assert all(d.timeline.attempts for d in full.diagnoses)
    assert not any(d.timeline.attempts for d in lean.diagnoses)
    for render in (render_json, render_jsonl, render_yaml):
        assert render(lean) == render(full)


def test_repeated_library_calls_keep_only_the_live_runs_texts(export: Path) -> None:
    # A notebook diagnosing again and again: each run's long texts in a store of its own,
    # gone (file closed) with the run's diagnoses; a kept earlier result still reads them.
    first = diagnose(export)
    store = longtext._stores[0]
    size = store.size
    assert size > 0
    texts = [e.text for d in first for a in d.timeline.attempts for e in a.events]
    assert any(len(text) > longtext.LONG_TEXT for text in texts)
    second = diagnose(export)
    assert longtext._stores[0] is not store
    assert longtext._stores[0].size == size  # this run's texts alone, not both runs'
    assert [e.text for d in first for a in d.timeline.attempts for e in a.events] == texts
    assert [e.text for d in second for a in d.timeline.attempts for e in a.events] == texts
    gone = weakref.ref(store)
    fd = store.fd
    del first, store
    gc.collect()
    assert gone() is None
    with pytest.raises(OSError):
        os.fstat(fd)
