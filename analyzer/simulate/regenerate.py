"""Regenerate ``sample_logs/``: ``python -m analyzer.simulate.regenerate [--root DIR] [--check]``.

Writes one file per entry of :data:`SAMPLES` into ``sample_logs/``, the verdict
every file implies into ``tests/golden/expected.json``, and the folder's
description into ``docs/samples.md`` (kept out of ``sample_logs/`` so that
``jobdoctor diagnose sample_logs/`` reads logs only). ``--check`` writes nothing
and exits 1 when a file differs from what the simulator produces now.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from analyzer.simulate import SCENARIOS, expected, simulate, write

SEED = 0


@dataclass(frozen=True, slots=True)
class Sample:
    """One file of ``sample_logs/``: its name, scenario and output format."""

    file: str
    scenario: str
    fmt: str

    @property
    def gzipped(self) -> bool:
        return self.file.endswith(".gz")


SAMPLES: tuple[Sample, ...] = (
    Sample("success.jsonl", "success", "jsonl"),
    Sample("vm-maintenance-restart.json", "vm-maintenance-restart", "gcloud-json"),
    Sample("user-code-exit1.jsonl", "user-code-exit1", "jsonl"),
    Sample("user-code-exit1.stream-logs.txt", "user-code-exit1", "stream-logs"),
    Sample("transient-sigsegv-retry.jsonl", "transient-sigsegv-retry", "jsonl"),
    Sample("oom.stream-logs.txt", "oom", "stream-logs"),
    Sample("stockout-exhausted.jsonl", "stockout-exhausted", "jsonl"),
    Sample(
        "internal-error-exhausted.logs-explorer.txt", "internal-error-exhausted", "logs-explorer"
    ),
    Sample("worker-restarts-exhausted.jsonl", "worker-restarts-exhausted", "jsonl"),
    Sample("multi-replica-worker-failure.jsonl.gz", "multi-replica-worker-failure", "jsonl"),
    Sample("truncated-stockout.jsonl", "truncated-stockout", "jsonl"),
    Sample("still-running.jsonl", "still-running", "jsonl"),
    Sample("project-wide.jsonl", "project-wide", "jsonl"),
    Sample("cuda-oom.jsonl.gz", "cuda-oom", "jsonl"),
    Sample("bare-137.jsonl.gz", "bare-137", "jsonl"),
    Sample("nccl-cascade.jsonl.gz", "nccl-cascade", "jsonl"),
    Sample("missing-module.jsonl.gz", "missing-module", "jsonl"),
    Sample("permission-denied.jsonl.gz", "permission-denied", "jsonl"),
    Sample("no-container-output.jsonl.gz", "no-container-output", "jsonl"),
    Sample("file-not-found.jsonl.gz", "file-not-found", "jsonl"),
    Sample("shm-sigbus.jsonl.gz", "shm-sigbus", "jsonl"),
    Sample("long-checkpointed.jsonl.gz", "long-checkpointed", "jsonl"),
)

_FORMAT_NAMES = {
    "jsonl": "Log Router sink (JSONL)",
    "gcloud-json": "`gcloud logging read --format=json`",
    "stream-logs": "`gcloud ai custom-jobs stream-logs`",
    "logs-explorer": "Logs Explorer copy",
}


def render(sample: Sample, seed: int = SEED) -> tuple[bytes, str]:
    """The file's bytes and its text (uncompressed)."""
    out = io.StringIO()
    write(simulate(sample.scenario, seed), sample.fmt, out, seed=seed)
    text = out.getvalue()
    data = text.encode()
    if sample.gzipped:
        buffer = io.BytesIO()
        # mtime 0 and no file name: the same input gives the same bytes.
        with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as zipped:
            zipped.write(data)
        data = buffer.getvalue()
    return data, text


def verdicts(sample: Sample, text: str, seed: int = SEED) -> list[dict[str, object]]:
    """The expected verdicts of a sample file.

    Text formats carry the job id only in the console link of an error; where
    the file never shows it, ``job_id`` is null, as the JSON contract says.
    """
    result = []
    for verdict in expected(sample.scenario, seed):
        item = asdict(verdict)
        item["worker_restarts"] = dict(verdict.worker_restarts)
        if verdict.job_id is not None and verdict.job_id not in text:
            item["job_id"] = None
        result.append(item)
    return result


def _readme(rows: list[tuple[Sample, list[dict[str, object]]]]) -> str:
    lines = [
        "# sample_logs",
        "",
        "Simulated Vertex AI custom-job logs in `sample_logs/`, shaped like real exports",
        "(Cloud Logging entries, lifecycle messages and input formats as Google Cloud documents",
        "them). Generated, do not edit: run `python -m analyzer.simulate.regenerate` (seed 0);",
        "`--check` reports drift. `tests/golden/expected.json` holds the verdict of every file",
        "in the JSON contract's terms.",
        "",
        "| File | Format | Scenario | Verdict |",
        "|---|---|---|---|",
    ]
    for sample, items in rows:
        verdict_texts = []
        for item in items:
            how = "observed" if item["observed_final"] else "predicted"
            cause = item["category"] or "no failure"
            restarts = item["worker_restarts"] or {}
            assert isinstance(restarts, dict)
            moves = ", ".join(f"{k} {v}" for k, v in restarts.items()) or "none"
            verdict_texts.append(
                f"job `{item['job_id']}`: **{item['state']}** ({how}), attempts "
                f"{item['attempts']}, retries {item['retries']}, cause {cause}, "
                f"restarts {moves}"
            )
        description = SCENARIOS[sample.scenario].description
        lines.append(
            f"| `{sample.file}` | {_FORMAT_NAMES[sample.fmt]} | `{sample.scenario}`: "
            f"{description} | {'<br>'.join(verdict_texts)} |"
        )
    lines += [
        "",
        "Notes on the verdicts:",
        "",
        "- *cause* is the category of the first failed attempt, also when a later attempt",
        "  succeeded (`transient-sigsegv-retry`, `worker-restarts-exhausted`).",
        "- *restarts* counts process starts after the first in each attempt, VM-maintenance",
        "  moves included (`vm-maintenance-restart`: 2 moves, which do not use up the budget).",
        "- `worker-restarts-exhausted` assumes the service writes no replica-exit error for a",
        "  non-permanent failure: attempt 1 shows six runner exits of `workerpool0-0` and then",
        "  `Job failed.`; the policy (5 restarts per worker, then the job is retried) explains it.",
        "- Text formats (stream-logs, Logs Explorer) carry no job id except in the console link",
        "  of a replica-exit error: `job_id` is null where the file never shows it.",
        "",
    ]
    return "\n".join(lines)


def generate(seed: int = SEED) -> dict[str, bytes]:
    """Every generated file, by path relative to the repository root, as bytes."""
    files: dict[str, bytes] = {}
    rows = []
    expected_all: dict[str, list[dict[str, object]]] = {}
    for sample in SAMPLES:
        data, text = render(sample, seed)
        files[f"sample_logs/{sample.file}"] = data
        items = verdicts(sample, text, seed)
        expected_all[sample.file] = items
        rows.append((sample, items))
    files["tests/golden/expected.json"] = (json.dumps(expected_all, indent=2) + "\n").encode()
    files["docs/samples.md"] = _readme(rows).encode()
    return files


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or ``--check``) the sample folder; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m analyzer.simulate.regenerate", description=__doc__
    )
    parser.add_argument("--root", type=Path, default=Path("."), help="the repository root")
    parser.add_argument("--check", action="store_true", help="report drift, write nothing")
    args = parser.parse_args(argv)
    files = generate()
    root: Path = args.root
    if args.check:
        stale = [
            name
            for name, data in files.items()
            if not (root / name).is_file() or (root / name).read_bytes() != data
        ]
        for name in stale:
            print(f"{root / name}: differs from the simulator; regenerate", file=sys.stderr)
        return 1 if stale else 0
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    total = sum(len(data) for data in files.values())
    print(f"wrote {len(files)} files, {total} bytes, under {root}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
