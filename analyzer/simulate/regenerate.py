"""Regenerate ``sample_logs/``: ``python -m analyzer.simulate.regenerate [--out DIR] [--check]``.

Writes one file per entry of :data:`SAMPLES`, ``expected.json`` (the verdict
of every file, for golden tests) and ``README.md``. ``--check`` writes nothing
and exits 1 when the folder differs from what the simulator produces now.
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
    Sample("internal-error-exhausted.logs-explorer.txt", "internal-error-exhausted",
           "logs-explorer"),
    Sample("worker-restarts-exhausted.jsonl", "worker-restarts-exhausted", "jsonl"),
    Sample("multi-replica-worker-failure.jsonl.gz", "multi-replica-worker-failure", "jsonl"),
    Sample("truncated-stockout.jsonl", "truncated-stockout", "jsonl"),
    Sample("still-running.jsonl", "still-running", "jsonl"),
    Sample("project-wide.jsonl", "project-wide", "jsonl"),
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
        "Simulated Vertex AI custom-job logs, shaped like real exports (see",
        "`/work/shared/docs/platform.md` sections 4-6). Generated, do not edit: run",
        "`python -m analyzer.simulate.regenerate` (seed 0); `--check` reports drift.",
        "`expected.json` holds the verdict of every file in the JSON contract's terms.",
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


def generate(out: Path, seed: int = SEED) -> dict[str, bytes]:
    """Every file of the folder, by name, as bytes."""
    files: dict[str, bytes] = {}
    rows = []
    expected_all: dict[str, list[dict[str, object]]] = {}
    for sample in SAMPLES:
        data, text = render(sample, seed)
        files[sample.file] = data
        items = verdicts(sample, text, seed)
        expected_all[sample.file] = items
        rows.append((sample, items))
    files["expected.json"] = (json.dumps(expected_all, indent=2) + "\n").encode()
    files["README.md"] = _readme(rows).encode()
    return files


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or ``--check``) the sample folder; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m analyzer.simulate.regenerate",
                                     description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("sample_logs"))
    parser.add_argument("--check", action="store_true", help="report drift, write nothing")
    args = parser.parse_args(argv)
    files = generate(args.out)
    if args.check:
        stale = [name for name, data in files.items()
                 if not (args.out / name).is_file() or (args.out / name).read_bytes() != data]
        for name in stale:
            print(f"{args.out / name}: differs from the simulator; regenerate", file=sys.stderr)
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (args.out / name).write_bytes(data)
    total = sum(len(data) for data in files.values())
    print(f"wrote {len(files)} files, {total} bytes, to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
