"""Where the input ends for a job's silence (issue 30): the inputs that hold its lines.

A project sink goes on after a hung job's last line: that sink's later lines show the job
silent. An unrelated export read beside it (another job's file, days later) says nothing of
the job: the same lines split into one file per job must not call it stalled.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from analyzer.api import analyze_sources
from analyzer.ingest import open_sources
from analyzer.simulate import simulate, write
from analyzer.verdict.stall import StallKind


def _sink(tmp_path: Path) -> Path:
    path = tmp_path / "sink.jsonl"
    with path.open("w", encoding="utf-8") as out:
        write(simulate("silent-after-checkpoint", seed=1), "jsonl", out, seed=1)
    return path


def _job_of(line: bytes) -> str:
    entry = orjson.loads(line)
    return str(entry["resource"]["labels"]["job_id"])


def _stalled(paths: list[Path]) -> dict[str | None, StallKind | None]:
    analysis = analyze_sources(open_sources([str(p) for p in paths]))
    return {
        d.job_id: (d.stalled.kind if d.stalled is not None else None) for d in analysis.diagnoses
    }


def test_a_project_sink_shows_the_hung_job_silent(tmp_path: Path) -> None:
    kinds = _stalled([_sink(tmp_path)])
    assert StallKind.ALL_SILENT in kinds.values()


def test_another_jobs_export_says_nothing_of_its_silence(tmp_path: Path) -> None:
    sink = _sink(tmp_path)
    together = _stalled([sink])
    hung = next(job for job, kind in together.items() if kind is StallKind.ALL_SILENT)
    by_job: dict[str, list[bytes]] = {}
    for line in sink.read_bytes().splitlines():
        if line.strip():
            by_job.setdefault(_job_of(line), []).append(line)
    assert len(by_job) == 2, "the scenario writes a second job into the sink"
    paths = []
    for job, lines in by_job.items():
        path = tmp_path / f"{job}.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        paths.append(path)
    apart = _stalled(paths)
    assert apart[hung] is None
    analysis = analyze_sources(open_sources([str(p) for p in paths]))
    (diagnosis,) = [d for d in analysis.diagnoses if d.job_id == hung]
    assert any("cannot show whether every worker went silent" in n for n in diagnosis.notes)
