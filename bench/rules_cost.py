"""What the finer-cause rules cost: diagnose a sink export with every shipped rule file, then
with only the platform's own messages (errors, lifecycle, runner), interleaved, in-process.

    python bench/rules_cost.py [FILE] [--runs 4]

FILE defaults to the 200 MB export that ``bench/run.py`` makes. Issue 4 asks that the finer
causes (tracebacks, frames, exceptions, details, checkpoints) not slow the common path
measurably; this prints both medians and their difference, on the export and on a copy of it
without the lines the finer rules make events of (its common path: noise for both books).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import orjson

from analyzer.api import analyze_sources
from analyzer.ingest import open_sources
from analyzer.rulebook import RuleBook, builtin_rules_dir

HERE = Path(__file__).resolve().parent
PLATFORM_FILES = ("errors.yaml", "lifecycle.yaml", "runner.yaml", "placeholders.yaml")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "file", nargs="?", default=str(HERE / "out" / "fleet-200000000-seed0.jsonl")
    )
    parser.add_argument("--runs", type=int, default=4)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        for name in PLATFORM_FILES:
            shutil.copy(builtin_rules_dir() / name, Path(folder) / name)
        books = {
            "all rules": RuleBook.load(),
            "platform messages only": RuleBook.load([Path(folder)], builtin=False),
            # The control: the same rules loaded again. Its difference from the first is what
            # this machine's noise alone makes of identical work.
            "all rules, again": RuleBook.load(),
        }
        noise, dropped = _without_finer_lines(Path(args.file), books)
        for label, path in (("the export", args.file), ("its noise only", str(noise))):
            if label != "the export":
                print(f"without the {dropped} lines the finer rules make events of:")
            _compare(path, books, args.runs)


def _compare(path: str, books: dict[str, RuleBook], runs: int) -> None:
    times: dict[str, list[float]] = {name: [] for name in books}
    for run in range(runs):
        # The order turns every run: the first of a series runs on a slightly different
        # machine state (caches, frequency), a bias as large as what is measured here.
        items = list(books.items())
        order = items[run % len(items) :] + items[: run % len(items)]
        for name, book in order:
            started = time.perf_counter()
            analyze_sources(open_sources([path]), rules=book)
            times[name].append(time.perf_counter() - started)
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, median in medians.items():
        print(f"  {name:24} {median:7.3f} s  ({len(books[name].rules)} rules)")
    extra = medians["all rules"] - medians["platform messages only"]
    print(f"  {'finer causes cost':24} {extra:7.3f} s  ({extra / medians['all rules']:.0%})")
    noise = abs(medians["all rules"] - medians["all rules, again"])
    print(f"  {'noise (same rules twice)':24} {noise:7.3f} s  ({noise / medians['all rules']:.0%})")


def _without_finer_lines(path: Path, books: dict[str, RuleBook]) -> tuple[Path, int]:
    """A copy of the export without the lines a finer-cause rule matches (cached in
    bench/out/), and how many lines that left out: what remains is the common path."""
    target = HERE / "out" / (path.stem + ".noise" + path.suffix)
    target.parent.mkdir(exist_ok=True)
    platform = {rule.id for rule in books["platform messages only"].rules}
    every = books["all rules"]
    dropped = 0
    fresh = not target.exists() or target.stat().st_mtime < path.stat().st_mtime
    with path.open("rb") as source, target.open("wb") if fresh else open(os.devnull, "wb") as out:
        for line in source:
            entry = orjson.loads(line)
            payload = entry.get("jsonPayload")
            text = payload.get("message") if isinstance(payload, dict) else entry.get("textPayload")
            if isinstance(text, str) and any(m.rule not in platform for m in every.match(text)):
                dropped += 1
                continue
            out.write(line)
    return target, dropped


if __name__ == "__main__":
    main()
