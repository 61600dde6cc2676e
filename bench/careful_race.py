"""Which careful-Python variant is the baseline (issue 32, point 3): a race on the bench's fleet.

    python bench/careful_race.py [--size 200MB] [--runs 3] [--out bench/out/careful-race.json]

Runs each variant of ``bench/baselines/careful_variants.py`` as its own process on the cached
fleet (made by ``bench/shapes.py`` on first use), interleaved (run 1 of every variant, then run
2...), and keeps each one's least CPU time (user + system: the machine is shared, and the least
is what the code costs) and least wall time, with its peak RSS (GNU time). Every run's output
must be the same as ``careful.py``'s: a variant that answers otherwise stops the race. Prints
the variants fastest first with their CPU against ``previous`` (the session-25 baseline).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BASELINES = HERE / "baselines"
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def variant_names() -> list[str]:
    """The variants ``careful_variants.py`` defines, in its order."""
    sys.path.insert(0, str(BASELINES))
    try:
        import careful_variants  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(BASELINES))
    return list(careful_variants.VARIANTS)


def run_once(command: list[str]) -> tuple[float, float, int, bytes]:
    """Wall seconds, CPU seconds (user + system), peak RSS (KiB) and stdout of one run."""
    before = os.times()
    with tempfile.NamedTemporaryFile("r", prefix="race-", suffix=".txt") as report:
        wrapped = [GNU_TIME, "-f", "%M", "-o", report.name, *command] if GNU_TIME else command
        started = time.perf_counter()
        done = subprocess.run(wrapped, capture_output=True, check=True)
        elapsed = time.perf_counter() - started
        peak = report.read().split()
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return elapsed, cpu, int(peak[-1]) if peak else 0, done.stdout


def race(path: Path, names: list[str], runs: int) -> dict[str, dict[str, Any]]:
    """Each variant's runs on ``path``; SystemExit when one answers otherwise than careful.py."""
    want = subprocess.run(
        [sys.executable, str(BASELINES / "careful.py"), str(path)], capture_output=True, check=True
    ).stdout
    found: dict[str, dict[str, Any]] = {
        name: {"wall_s": [], "cpu_s": [], "peak_rss_mb": 0.0} for name in names
    }
    for _ in range(max(1, runs)):
        for name in names:
            command = [sys.executable, str(BASELINES / "careful_variants.py"), name, str(path)]
            wall, cpu, peak, out = run_once(command)
            if out != want:
                raise SystemExit(f"{name} answers otherwise than careful.py on {path}")
            row = found[name]
            row["wall_s"].append(round(wall, 3))
            row["cpu_s"].append(round(cpu, 3))
            row["peak_rss_mb"] = max(row["peak_rss_mb"], round(peak / 1024, 1))
    return found


def table(found: dict[str, dict[str, Any]]) -> str:
    """The variants fastest (least CPU) first, as Markdown."""
    base = min(found["previous"]["cpu_s"]) if "previous" in found else None
    lines = [
        "| variant | least CPU s | CPU runs s | x previous CPU | least wall s | peak RSS MB |",
        "| --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for name, row in sorted(found.items(), key=lambda item: min(item[1]["cpu_s"])):
        cpu = min(row["cpu_s"])
        ratio = f"{cpu / base:.2f}x" if base else ""
        runs = " ".join(f"{value:.2f}" for value in row["cpu_s"])
        lines.append(
            f"| `{name}` | {cpu:.3f} | {runs} | {ratio} | {min(row['wall_s']):.3f}"
            f" | {row['peak_rss_mb']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="200MB")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "out" / "careful-race.json")
    parser.add_argument("--variant", action="append", default=[], help="only these (repeatable)")
    parser.add_argument("--input", type=Path, help="race on this sink JSONL file instead")
    args = parser.parse_args(argv)
    if args.input is not None:
        path = args.input
    else:
        import importlib.util

        spec = importlib.util.spec_from_file_location("bench_run", HERE / "run.py")
        assert spec is not None and spec.loader is not None
        bench = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(bench)
        path = bench.export(bench.parse_size(args.size), args.seed, args.out.parent)
    names = args.variant or variant_names()
    load = os.getloadavg()[0]
    found = race(path, names, args.runs)
    results = {
        "input": str(path),
        "bytes": path.stat().st_size,
        "runs": args.runs,
        "load_average": [round(load, 1), round(os.getloadavg()[0], 1)],
        "variants": found,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(table(found))
    print(f"{path.name}, {args.runs} interleaved runs, load {results['load_average']}: {args.out}")
    return results


if __name__ == "__main__":
    main()
