"""Rule timeouts are counted once however the scan is shared out: a task the parent process
runs itself (it takes tasks too) counted its timeouts in the book already."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import analyzer.classify._fastscan.parallel as parallel
from analyzer.classify.collector import collect
from analyzer.ingest import open_sources
from analyzer.rulebook import RuleBook
from analyzer.simulate import fleet

_SLOW_RULE = (
    "- id: acme.slow\n"
    "  category: internal_error\n"
    "  pattern: '(a|aa)+$'\n"
    "  literals: [aaaa]\n"
    "  examples:\n"
    "    match:\n"
    '      - "aaaa"\n'
)
RUNAWAY = 12  # texts on which the rule runs out of time, one every few ranges


def _runaway(number: int) -> bytes:
    entry = {
        "textPayload": "a" * 40 + f"!{number}",
        "resource": {"type": "ml_job", "labels": {"job_id": "1", "task_name": "service"}},
        "timestamp": f"2024-01-01T00:00:{number:02d}Z",
    }
    return json.dumps(entry).encode() + b"\n"


@pytest.mark.parametrize("processes", [1, 2])
def test_timeouts_are_counted_once_per_text(
    processes: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "slow.yaml").write_text(_SLOW_RULE)
    book = RuleBook.load([folder])
    book.new_run()
    chatter = list(fleet(1_500_000, seed=3))
    every = len(chatter) // RUNAWAY
    log = tmp_path / "fleet.jsonl"
    with log.open("wb") as out:
        for index, line in enumerate(chatter):
            if index % every == 0 and index // every < RUNAWAY:
                out.write(_runaway(index // every))
            out.write(line)
    # Ranges of 128 KB: a dozen tasks, some of them taken by this process.
    monkeypatch.setattr(parallel, "MIN_RANGE_BYTES", 128 << 10)
    collect(open_sources([str(log)]), book, processes=processes)
    assert book.timeouts["acme.slow"] == RUNAWAY
