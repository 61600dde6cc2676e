"""jobdoctor against named baselines on a sink-shaped export made by the simulator.

    python bench/run.py [--size 200MB|1GB] [--runs 3] [--out bench/out/results.json]

Makes (once, cached under bench/out/) a sink JSONL export of many jobs, mostly noise, then
times, interleaved, each command as its own process: ``jobdoctor diagnose --format json``,
the careful-Python baseline, the notebook (pandas) baseline and ``rg -c`` for the same
literals; and ``jobdoctor explain``. Prints medians (and best runs), MB/s, ratios to jobdoctor
and peak RSS (from ``wait4``), and writes them as JSON.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RG_LITERALS = (
    "ran out of memory",
    "ran out-of-memory",
    "exited with a non-zero status of",
    "Resources are insufficient in region",
    "Internal error occurred",
)
EXPLAIN = "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error."


def parse_size(text: str) -> int:
    """``200MB``, ``1GB``, ``512KB`` or a byte count (decimal units)."""
    units = {"KB": 10**3, "MB": 10**6, "GB": 10**9}
    upper = text.strip().upper()
    for unit, factor in units.items():
        if upper.endswith(unit):
            return int(float(upper[: -len(unit)]) * factor)
    return int(upper)


def export(size: int, seed: int, out_dir: Path) -> Path:
    """The cached simulator export of ``size`` bytes (made on first use)."""
    from analyzer.simulate import fleet

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"fleet-{size}-seed{seed}.jsonl"
    if not path.exists():
        partial = path.with_suffix(".partial")
        with partial.open("wb") as stream:
            stream.writelines(fleet(size, seed))
        partial.replace(path)
    return path


def run_once(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one run of ``command``; output discarded."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):
        raise SystemExit(f"{command[:3]} failed with {process.returncode}")
    return elapsed, usage.ru_maxrss


def commands(path: Path) -> dict[str, list[str] | None]:
    """The contenders; None for one that cannot run here."""
    python = sys.executable
    jobdoctor = [python, "-m", "analyzer.cli"]
    rg = shutil.which("rg")
    return {
        "jobdoctor": [*jobdoctor, "diagnose", "--format", "json", str(path)],
        "careful-python": [python, str(HERE / "baselines" / "careful.py"), str(path)],
        "notebook-pandas": [python, str(HERE / "baselines" / "notebook.py"), str(path)],
        "ripgrep": (
            [rg, "-c", *(a for lit in RG_LITERALS for a in ("-e", lit)), str(path)] if rg else None
        ),
        "explain": [*jobdoctor, "explain", EXPLAIN],
    }


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="200MB")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "results.json")
    parser.add_argument("--skip", action="append", default=[], help="a contender to leave out")
    args = parser.parse_args(argv)
    size = parse_size(args.size)
    path = export(size, args.seed, args.out.parent)
    # An installed package carries compiled modules; this checkout may not (and this machine
    # sets PYTHONDONTWRITEBYTECODE), which would charge every run ~50 ms of compiling.
    compileall.compile_dir(str(HERE.parent / "analyzer"), quiet=1)
    actual = path.stat().st_size
    contenders = {k: v for k, v in commands(path).items() if k not in args.skip}
    if contenders.get("ripgrep", ()) is None:
        print("ripgrep not installed (apt-get install ripgrep): its figure is left out")
    times: dict[str, list[float]] = {name: [] for name, cmd in contenders.items() if cmd}
    rss: dict[str, int] = dict.fromkeys(times, 0)
    for _ in range(max(1, args.runs)):
        for name in times:  # interleaved: a slow moment of the machine hits every contender
            command = contenders[name]
            assert command is not None
            elapsed, peak = run_once(command)
            times[name].append(elapsed)
            rss[name] = max(rss[name], peak)
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians.get("jobdoctor")
    rows: dict[str, dict[str, Any]] = {
        name: {
            "median_s": round(medians[name], 3),
            # On a shared machine the best run is the steadier figure of what the code
            # costs; the median is what a user waits, noise included.
            "best_s": round(min(times[name]), 3),
            "runs_s": [round(t, 3) for t in times[name]],
            "mb_per_s": None if name == "explain" else round(actual / 1e6 / medians[name], 1),
            "ratio_to_jobdoctor": None if base is None else round(medians[name] / base, 2),
            "peak_rss_mb": round(rss[name] / 1024, 1),
        }
        for name in times
    }
    results: dict[str, object] = {
        "input": {"path": str(path), "bytes": actual, "lines": _count_lines(path)},
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(),
        },
        "runs": args.runs,
        "contenders": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"input {path.name}: {actual / 1e6:.0f} MB, median of {args.runs} interleaved runs")
    print(f"{'':18}{'median s':>10}{'best s':>9}{'MB/s':>9}{'x jobdoctor':>13}{'peak RSS MB':>13}")
    for name, row in rows.items():
        speed = "" if row["mb_per_s"] is None else f"{row['mb_per_s']:.0f}"
        ratio = "" if row["ratio_to_jobdoctor"] is None else f"{row['ratio_to_jobdoctor']:.2f}"
        print(
            f"{name:18}{row['median_s']:>10.3f}{row['best_s']:>9.3f}{speed:>9}{ratio:>13}"
            f"{row['peak_rss_mb']:>13.1f}"
        )
    print(f"written to {args.out}")
    return results


def _count_lines(path: Path) -> int:
    with path.open("rb") as stream:
        return sum(block.count(b"\n") for block in iter(lambda: stream.read(1 << 22), b""))


if __name__ == "__main__":
    main()
