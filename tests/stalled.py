"""A straggler made of a real export, for the tests of how reports show a stalled job.

``multi-replica-worker-failure`` runs four workers for half an hour before it fails. Cut at
14:20 (before the failure, at 14:25) it is a job still running; with workerpool1-1's lines
after 14:00:32 left out, that worker is silent for 19 minutes while the three others write
on: the input a straggler stuck in a collective leaves (issue 30). :func:`straggler_input`
writes that input; :func:`stalled` gives its diagnosis the stall that input shows (the
verdict's ``stalled`` part, set with ``dataclasses.replace`` until detection lands), its times,
lines and costs read from the input itself, never invented.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from analyzer.ingest.records import Origin
from analyzer.verdict.diagnosis import Diagnosis
from analyzer.verdict.stall import SilentWorker, Stall, StallCost, StallKind

SAMPLE = (
    Path(__file__).resolve().parents[1] / "sample_logs" / "multi-replica-worker-failure.jsonl.gz"
)
JOB_ID = "3109896185039098226"
CUT = "2024-04-20T14:20:00"
SILENT = "workerpool1-1"
SILENT_AFTER = "2024-04-20T14:00:33"
# The platform's default scheduling.timeout (platform.md section 2).
DEFAULT_TIMEOUT = timedelta(days=7)
# The per-worker rhythm the silence is measured against (a floor of minutes): shown, not
# used to decide anything here.
THRESHOLD = timedelta(minutes=5)


def _entries() -> list[dict[str, Any]]:
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as stream:
        return [json.loads(line) for line in stream]


def _kept(entry: dict[str, Any]) -> bool:
    when = entry["timestamp"][:19]
    task = entry["resource"]["labels"].get("task_name")
    return when < CUT and not (task == SILENT and when >= SILENT_AFTER)


def straggler_input(directory: Path) -> Path:
    """Write the straggler's export (JSON lines, in the sample's order) into ``directory``."""
    path = directory / "straggler.jsonl"
    lines = [json.dumps(entry) for entry in _entries() if _kept(entry)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def stalled(
    diagnosis: Diagnosis,
    path: Path,
    *,
    accelerators: int | None = None,
    collective: str | None = None,
) -> Diagnosis:
    """``diagnosis`` (of :func:`straggler_input`'s file at ``path``) with the stall its
    input shows: workerpool1-1 silent from its last line to the input's end while the three
    others write on; the timeout the 7-day default after the job's first line, its cost the
    four workers' hours to it (and ``accelerators`` a worker's, when given, as a job spec
    says). ``collective`` names the collective the others wait in, as a watchdog's line would
    (this input holds none: None)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    entries = [json.loads(line) for line in lines]
    times = [_time(e["timestamp"]) for e in entries]
    input_end = max(times)
    silent_line = max(
        (i for i, e in enumerate(entries) if e["resource"]["labels"].get("task_name") == SILENT),
        key=lambda i: times[i],
    )
    last = times[silent_line]
    workers = sorted({e["resource"]["labels"]["task_name"] for e in entries} - {"service", SILENT})
    timeout_at = min(times) + DEFAULT_TIMEOUT
    hours_left = (timeout_at - input_end).total_seconds() / 3600
    cost = StallCost(
        hours_left=hours_left,
        machine_hours=4 * hours_left,
        accelerator_hours=None if accelerators is None else 4 * accelerators * hours_left,
        accelerator=None if accelerators is None else "NVIDIA_TESLA_V100",
    )
    origin = Origin(str(path), silent_line + 1)
    stall = Stall(
        since=last,
        kind=StallKind.STRAGGLER,
        workers=(SilentWorker(SILENT, last, input_end - last, THRESHOLD, origin),),
        evidence=(origin,),
        input_end=input_end,
        timeout_at=timeout_at,
        timeout_source="default",
        cost_to_timeout=cost,
        waiting=tuple(workers),
        collective=collective,
    )
    return replace(diagnosis, stalled=stall)
