"""jobdoctor against named baselines on a sink-shaped export made by the simulator.

    python bench/run.py [--size 200MB|1GB] [--runs 3] [--out bench/out/results.json]
    python bench/run.py --shapes [--sizes 200MB,1GB] [--runs 3] [--write-readme]

Makes (once, cached under bench/out/) a sink JSONL export of many jobs, mostly noise, then
times, interleaved, each command as its own process: ``jobdoctor diagnose --format json``,
the careful-Python baseline, the notebook (pandas) baseline and ``rg -c`` for the same
literals; and ``jobdoctor explain``. Prints medians (and best runs), MB/s, ratios to jobdoctor
and peak RSS (from ``wait4``), and writes them as JSON.

``--shapes`` runs the shape matrix instead (issue 19): the same fleet re-serialised as users'
exports differ (``bench/shapes.py``), each row jobdoctor against the careful-Python script for
its format and DuckDB, the same interleaved runs; ``--write-readme`` puts its table into
``bench/README.md`` and ``docs/performance.md`` (alone, from the last ``bench/out/shapes.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
RG_LITERALS = (
    "ran out of memory",
    "ran out-of-memory",
    "exited with a non-zero status of",
    "Resources are insufficient in region",
    "Internal error occurred",
)
Key = TypeVar("Key")
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
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
    path = out_dir / f"fleet-{size}-seed{seed}.jsonl"
    if not path.exists():
        prepare(size, seed, out_dir, [])
    return path


def prepare(size: int, seed: int, out_dir: Path, shapes: list[str]) -> None:
    """Make the fleet and the variants named, in a child process (``bench/shapes.py``).

    Not here: a child's peak RSS (``wait4``) counts the pages of the process it was forked
    from until it execs, so this process must stay small for the figures to be the
    contenders' own.
    """
    command = [sys.executable, str(HERE / "shapes.py"), "--fleet-bytes", str(size)]
    command += ["--seed", str(seed), "--out-dir", str(out_dir)]
    subprocess.run(command + [a for name in shapes for a in ("--shape", name)], check=True)


def run_once(command: list[str]) -> tuple[float, int, float]:
    """Wall seconds, peak RSS (KiB) and CPU seconds (user + system, the command and every
    process it waited for) of one run of ``command``; output discarded.

    The peak comes from GNU time where it is installed: ``wait4``'s figure for a direct child
    also counts this process's pages (a child holds them until it execs), which would put a
    floor of this harness's size under every contender.
    """
    with tempfile.NamedTemporaryFile("r", prefix="bench-rss-", suffix=".txt") as report:
        wrapped = [GNU_TIME, "-f", "%M", "-o", report.name, *command] if GNU_TIME else command
        started = time.perf_counter()
        process = subprocess.Popen(wrapped, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode not in (0, 1):
            raise SystemExit(f"{command[:3]} failed with {process.returncode}")
        lines = report.read().split()
    peak = int(lines[-1]) if GNU_TIME and lines else usage.ru_maxrss
    return elapsed, peak, usage.ru_utime + usage.ru_stime


def interleaved(
    contenders: dict[Key, list[str]], runs: int
) -> tuple[dict[Key, list[float]], dict[Key, int], dict[Key, list[float]]]:
    """Wall seconds of each run, the peak RSS (KiB) and CPU seconds of each run of each
    contender; run 1 of every contender, then run 2...: a slow moment of the machine hits
    every contender."""
    times: dict[Key, list[float]] = {key: [] for key in contenders}
    cpu: dict[Key, list[float]] = {key: [] for key in contenders}
    rss: dict[Key, int] = dict.fromkeys(contenders, 0)
    for _ in range(max(1, runs)):
        for key, command in contenders.items():
            elapsed, peak, used = run_once(command)
            times[key].append(elapsed)
            cpu[key].append(used)
            rss[key] = max(rss[key], peak)
    return times, rss, cpu


def timing(values: list[float]) -> dict[str, Any]:
    """Median, best and every run of one contender, in seconds."""
    return {
        "median_s": round(statistics.median(values), 3),
        # On a shared machine the best run is the steadier figure of what the code costs;
        # the median is what a user waits, noise included.
        "best_s": round(min(values), 3),
        "runs_s": [round(t, 3) for t in values],
    }


def machine() -> dict[str, object]:
    """What the figures were measured on."""
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "processor": platform.processor() or platform.machine(),
    }


def compile_checkout() -> None:
    """Compile the checkout's modules before timing anything.

    An installed package carries compiled modules; this checkout may not (and this machine
    sets PYTHONDONTWRITEBYTECODE), which would charge every run ~50 ms of compiling. In a
    child process, as :func:`prepare`, so that this one stays small.
    """
    command = [sys.executable, "-m", "compileall", "-q", str(HERE.parent / "analyzer")]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def harness_rss_mb() -> float:
    """This process's peak RSS: every contender's figure includes it (see :func:`prepare`)."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def jobdoctor_command() -> list[str]:
    """How a user runs jobdoctor: its console script beside this interpreter (``python -m
    analyzer.cli.app`` where there is none). ``-m`` puts runpy's frames under every call, and on
    CPython 3.11 that moved the nested imports across the end of a chunk of the frame stack,
    which is then mapped and unmapped for each module: about 1,000 more page faults and
    10-15 ms more CPU per run (perf, on ``diagnose`` of a small file), the harness's cost."""
    script = Path(sys.executable).with_name("jobdoctor")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "analyzer.cli"]


def commands(path: Path) -> dict[str, list[str] | None]:
    """The contenders; None for one that cannot run here."""
    python = sys.executable
    jobdoctor = jobdoctor_command()
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
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results JSON (a bare name: under bench/out/); the inputs are cached beside it",
    )
    parser.add_argument("--skip", action="append", default=[], help="a contender to leave out")
    matrix = parser.add_argument_group("the shape matrix (issue 19)")
    matrix.add_argument("--shapes", action="store_true", help="run the shape matrix")
    matrix.add_argument("--sizes", help="several fleet sizes, e.g. 200MB,1GB (peak RSS flat?)")
    matrix.add_argument(
        "--shape", action="append", default=[], help="only this row (repeatable; default all)"
    )
    matrix.add_argument(
        "--instructions",
        type=int,
        default=0,
        metavar="MB",
        help="also count the scan's instructions per line on each sink JSONL row's first MB"
        " megabytes (bench/instructions.py, callgrind: load-proof; about 1 min a row at 10)",
    )
    matrix.add_argument("--note", help="a sentence put above the table (what code, what machine)")
    matrix.add_argument(
        "--write-readme",
        action="store_true",
        help="put the matrix table into bench/README.md and docs/performance.md",
    )
    args = parser.parse_args(argv)
    if args.shapes or args.write_readme:
        return matrix_main(args, argv if argv is not None else sys.argv[1:])
    out = results_path(args.out, HERE / "out" / "results.json")
    size = parse_size(args.size)
    path = export(size, args.seed, out.parent)
    compile_checkout()
    actual = path.stat().st_size
    contenders = {k: v for k, v in commands(path).items() if k not in args.skip}
    if contenders.get("ripgrep", ()) is None:
        print("ripgrep not installed (apt-get install ripgrep): its figure is left out")
    runnable = {name: command for name, command in contenders.items() if command}
    times, rss, cpu = interleaved(runnable, args.runs)
    medians = {name: statistics.median(values) for name, values in times.items()}
    base = medians.get("jobdoctor")
    rows: dict[str, dict[str, Any]] = {
        name: {
            **timing(times[name]),
            "mb_per_s": None if name == "explain" else round(actual / 1e6 / medians[name], 1),
            "ratio_to_jobdoctor": None if base is None else round(medians[name] / base, 2),
            "peak_rss_mb": round(rss[name] / 1024, 1),
            "cpu_s": round(statistics.median(cpu[name]), 3),
        }
        for name in times
    }
    results: dict[str, object] = {
        "input": {"path": str(path), "bytes": actual, "lines": _count_lines(path)},
        "machine": machine(),
        "runs": args.runs,
        "contenders": rows,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"input {path.name}: {actual / 1e6:.0f} MB, median of {args.runs} interleaved runs")
    print(f"{'':18}{'median s':>10}{'best s':>9}{'MB/s':>9}{'x jobdoctor':>13}{'peak RSS MB':>13}")
    for name, row in rows.items():
        speed = "" if row["mb_per_s"] is None else f"{row['mb_per_s']:.0f}"
        ratio = "" if row["ratio_to_jobdoctor"] is None else f"{row['ratio_to_jobdoctor']:.2f}"
        print(
            f"{name:18}{row['median_s']:>10.3f}{row['best_s']:>9.3f}{speed:>9}{ratio:>13}"
            f"{row['peak_rss_mb']:>13.1f}"
        )
    print(f"written to {out}")
    return results


# --- the shape matrix (issue 19, point 4) -----------------------------------------------------

MATRIX_OUT = HERE / "out" / "shapes.json"


def results_path(given: Path | None, default: Path) -> Path:
    """The results file: ``given``, else ``default``. A bare name goes under bench/out/, as
    --help says: the inputs are made and cached beside the results, and a bare name once
    made 20 GB of variants again in the working directory."""
    if given is None:
        return default
    return HERE / "out" / given if given.parent == Path() else given


READMES = (HERE / "README.md", HERE.parent / "docs" / "performance.md")
BEGIN, END = "<!-- shape-matrix:begin -->", "<!-- shape-matrix:end -->"
CAREFUL = {
    "jsonl": "careful.py",
    "stream-logs": "careful_stream_logs.py",
    "gcloud-json": "careful_gcloud_json.py",
    "gcloud-yaml": "careful_gcloud_yaml.py",
}
# Point 5's targets: jobdoctor's median over careful Python's, per format; sink JSONL also
# at most 64 MB peak RSS at every size; on the fleet at most DuckDB's time; explain 0.15 s.
# gcloud's YAML (not in point 5): faster than careful Python's libyaml read.
RATIO_TARGET = {"jsonl": 0.5, "gcloud-json": 0.5, "stream-logs": 1.0, "gcloud-yaml": 1.0}
RSS_TARGET_MB = 64.0
EXPLAIN_TARGET_S = 0.15
# Issue 32, point 4: the near-miss rows (both kinds) at most careful Python's CPU time too.
NEAR_MISS_CPU_TARGET = 1.0


def shapes_module() -> Any:
    """``bench/shapes.py``, loaded by path (this file runs as a script and, in the tests, as
    a module loaded by path: bench/ is not a package)."""
    import importlib.util

    name = "bench_shapes"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "shapes.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # the dataclass machinery looks its module up
        spec.loader.exec_module(module)
    return sys.modules[name]


def matrix_commands(path: Path, fmt: str) -> dict[str, list[str]]:
    """jobdoctor, the careful script for ``fmt`` and (where installed) DuckDB on ``path``."""
    import importlib.util

    python = sys.executable
    found = {
        "jobdoctor": [*jobdoctor_command(), "diagnose", "--format", "json", str(path)],
        "careful-python": [python, str(HERE / "baselines" / CAREFUL[fmt]), str(path)],
    }
    # DuckDB reads no YAML.
    if importlib.util.find_spec("duckdb") is not None and fmt != "gcloud-yaml":
        peer = HERE / "baselines" / "duckdb_peer.py"
        found["duckdb"] = [python, str(peer), "--format", fmt, str(path)]
    return found


def run_matrix(args: argparse.Namespace, argv: list[str]) -> dict[str, Any]:
    """Make the variants (cached), time every row interleaved, write and print the table."""
    shapes = shapes_module()
    started = time.perf_counter()
    load_at_start = os.getloadavg()[0]
    picked = shapes.pick(args.shape or ["all"])
    sizes = [text.strip() for text in (args.sizes or args.size).split(",") if text.strip()]
    out = results_path(args.out, MATRIX_OUT)
    out_dir = out.parent
    variants: dict[tuple[str, str], Path] = {}
    for size in sizes:
        print(f"{size}: the fleet and its variants (made once, cached in {out_dir})", flush=True)
        prepare(parse_size(size), args.seed, out_dir, [shape.name for shape in picked])
        fleet = export(parse_size(size), args.seed, out_dir)
        for shape in picked:
            variants[size, shape.name] = shapes.variant_path(shape, fleet)
    made = time.perf_counter()
    compile_checkout()
    contenders: dict[tuple[str, str, str], list[str]] = {}
    for (size, name), path in variants.items():
        for contender, command in matrix_commands(path, shapes.BY_NAME[name].fmt).items():
            if contender not in args.skip:
                contenders[size, name, contender] = command
    if "explain" not in args.skip:
        contenders["", "explain", "jobdoctor"] = commands(Path())["explain"] or []
    times, rss, cpu = interleaved(contenders, args.runs)

    def measured(key: tuple[str, str, str]) -> dict[str, Any] | None:
        if key not in times:
            return None
        return {
            **timing(times[key]),
            "peak_rss_mb": round(rss[key] / 1024, 1),
            # Less moved by the machine's load than wall time; jobdoctor's counts both of
            # its processes, so its CPU ratio is above its wall ratio on a quiet machine.
            "cpu_s": round(statistics.median(cpu[key]), 3),
        }

    results: dict[str, Any] = {
        "command": "python bench/run.py " + shlex.join(_without_note(argv)),
        "machine": machine(),
        # The machine's 1-minute load average before and after: how noisy the figures are.
        "load_average": [round(load_at_start, 1), round(os.getloadavg()[0], 1)],
        "runs": args.runs,
        "note": args.note,
        "harness_rss_mb": harness_rss_mb(),
        "sizes": {},
    }
    for size in sizes:
        rows = []
        for shape in picked:
            path = variants[size, shape.name]
            meta = shapes.read_meta(path)
            row: dict[str, Any] = {
                "shape": shape.name,
                "label": shape.label,
                "format": shape.fmt,
                "path": str(path),
                **meta,
                "density": round(meta["matching_records"] / max(1, meta["entries"]), 4),
                "near_miss_share": _near_miss_share(meta),
            }
            for contender in ("jobdoctor", "careful-python", "duckdb"):
                row[contender] = measured((size, shape.name, contender))
            row["ratio_to_careful"] = _ratio(row["jobdoctor"], row["careful-python"])
            row["ratio_to_duckdb"] = _ratio(row["jobdoctor"], row["duckdb"])
            row["cpu_ratio_to_careful"] = _ratio(row["jobdoctor"], row["careful-python"], "cpu_s")
            row["instructions_per_line"] = (
                instructions_per_line(path, args.instructions)
                if args.instructions and shape.fmt == "jsonl"
                else None
            )
            row["targets"] = _targets(shape.name, shape.fmt, row)
            rows.append(row)
        results["sizes"][size] = {"fleet_bytes": parse_size(size), "rows": rows}
    results["explain"] = measured(("", "explain", "jobdoctor"))
    if results["explain"] is not None:
        results["explain"]["target_s"] = EXPLAIN_TARGET_S
        results["explain"]["met"] = results["explain"]["median_s"] <= EXPLAIN_TARGET_S
    results["flat"] = _flatness(results) if len(sizes) > 1 else None
    results["making_s"] = round(made - started, 1)
    results["elapsed_s"] = round(time.perf_counter() - started, 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(markdown(results))
    print(
        f"variants made in {results['making_s']} s; {results['elapsed_s']} s in all;"
        f" written to {out}"
    )
    return results


def _without_note(argv: list[str]) -> list[str]:
    # The note is printed above the table already; the command shows what to type.
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip or arg.startswith("--note="):
            skip = False
        elif arg == "--note":
            skip = True
        else:
            kept.append(arg)
    return kept


def instructions_per_line(path: Path, megabytes: int) -> int | None:
    """The scan's instructions per line on the first ``megabytes`` MB of ``path``
    (``bench/instructions.py``); None without valgrind."""
    command = [sys.executable, str(HERE / "instructions.py"), str(path), "--mb", str(megabytes)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    found = re.search(r"([\d,]+) per line$", done.stdout, re.M)
    return int(found[1].replace(",", "")) if done.returncode == 0 and found else None


def _ratio(
    top: dict[str, Any] | None, bottom: dict[str, Any] | None, key: str = "median_s"
) -> float | None:
    if top is None or bottom is None or not bottom.get(key):
        return None
    return round(top[key] / bottom[key], 2)


def _targets(name: str, fmt: str, row: dict[str, Any]) -> dict[str, bool | None]:
    """Each of point 5's targets for this row: met, not met, or None (not measured)."""
    ratio = row["ratio_to_careful"]
    met: dict[str, bool | None] = {
        f"<= {RATIO_TARGET[fmt]}x careful": None if ratio is None else ratio <= RATIO_TARGET[fmt]
    }
    if fmt == "jsonl" and row["jobdoctor"] is not None:
        met[f"<= {RSS_TARGET_MB:.0f} MB"] = row["jobdoctor"]["peak_rss_mb"] <= RSS_TARGET_MB
    shape = shapes_module().BY_NAME.get(name)
    if shape is not None and (shape.near_miss is not None or shape.repeats is not None):
        cpu = row.get("cpu_ratio_to_careful")
        target = f"<= {NEAR_MISS_CPU_TARGET}x careful CPU"
        met[target] = None if cpu is None else cpu <= NEAR_MISS_CPU_TARGET
    if name == "fleet":
        to_duckdb = row["ratio_to_duckdb"]
        met["<= DuckDB"] = None if to_duckdb is None else to_duckdb <= 1.0
    return met


def _flatness(results: dict[str, Any]) -> dict[str, Any]:
    """Per row, jobdoctor's peak RSS at each size; flat when every one is within the target."""
    flat: dict[str, Any] = {}
    for size, block in results["sizes"].items():
        for row in block["rows"]:
            if row["jobdoctor"] is not None:
                entry = flat.setdefault(row["shape"], {"peak_rss_mb": {}})
                entry["peak_rss_mb"][size] = row["jobdoctor"]["peak_rss_mb"]
    for shape, entry in flat.items():
        peaks = list(entry["peak_rss_mb"].values())
        fmt = shapes_module().BY_NAME[shape].fmt
        entry["met"] = max(peaks) <= RSS_TARGET_MB if fmt == "jsonl" else None
    return flat


def _cell(value: float | None, digits: int = 2, suffix: str = "") -> str:
    return "" if value is None else f"{value:.{digits}f}{suffix}"


def _near_miss_share(meta: dict[str, int]) -> float | None:
    """Issue 32's rows: the share of entries holding a rule's word but matching no rule (None
    where the variant's meta has not counted them)."""
    if "near_misses" not in meta:
        return None
    return round(meta["near_misses"] / max(1, meta["entries"]), 4)


def _percent(share: float | None) -> float | None:
    return None if share is None else 100 * share


def _count(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def _verdict(targets: dict[str, bool | None]) -> str:
    words = []
    for target, met in targets.items():
        mark = "?" if met is None else ("met" if met else "**no**")
        words.append(f"{target}: {mark}")
    return "; ".join(words)


def markdown(results: dict[str, Any]) -> str:
    """The matrix as Markdown tables: one per size, then peak RSS by size when several."""
    parts = [results["note"]] if results.get("note") else []
    header = (
        "| row | MB | matching | near misses | jobdoctor s | careful s | x careful | x careful CPU"
        " | jobdoctor RSS MB | careful RSS MB | DuckDB s | x DuckDB | DuckDB RSS MB | targets |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---:"
        " | --- |"
    )
    counted = any(
        row.get("instructions_per_line")
        for block in results["sizes"].values()
        for row in block["rows"]
    )
    if counted:  # a column of the scan's instructions per line, before the targets
        header = header.replace(" | targets |", " | scan instr./line | targets |", 1)
        header = header.replace(" | --- |", " | ---: | --- |", 1)
    for size, block in results["sizes"].items():
        lines = [f"**{size} fleet**, median of {results['runs']} interleaved runs:", "", header]
        for row in block["rows"]:
            jd, careful, duck = row["jobdoctor"], row["careful-python"], row["duckdb"]
            lines.append(
                "| "
                + " | ".join(
                    [
                        row["label"],
                        f"{row['bytes'] / 1e6:.0f}",
                        f"{100 * row['density']:.1f}%",
                        _cell(_percent(row.get("near_miss_share")), 1, "%"),
                        _cell(jd and jd["median_s"], 3),
                        _cell(careful and careful["median_s"], 3),
                        _cell(row["ratio_to_careful"], 2, "x"),
                        _cell(row.get("cpu_ratio_to_careful"), 2, "x"),
                        _cell(jd and jd["peak_rss_mb"], 0),
                        _cell(careful and careful["peak_rss_mb"], 0),
                        _cell(duck and duck["median_s"], 3),
                        _cell(row["ratio_to_duckdb"], 2, "x"),
                        _cell(duck and duck["peak_rss_mb"], 0),
                        *([_count(row.get("instructions_per_line"))] if counted else []),
                        _verdict(row["targets"]),
                    ]
                )
                + " |"
            )
        parts.append("\n".join(lines))
    if results.get("flat"):
        sizes = list(results["sizes"])
        lines = [
            "jobdoctor's peak RSS (MB) by fleet size; the target: at most 64 MB at every size"
            " (sink JSONL rows)",
            "",
            "| row | " + " | ".join(sizes) + " | growth | <= 64 MB |",
            "| --- | " + " | ".join("---:" for _ in sizes) + " | ---: | --- |",
        ]
        for shape, entry in results["flat"].items():
            peaks = [entry["peak_rss_mb"].get(size) for size in sizes]
            growth = peaks[-1] / peaks[0] if peaks[0] and peaks[-1] else None
            met = entry["met"]
            mark = "" if met is None else ("met" if met else "**no**")
            cells = [_cell(peak, 0) for peak in peaks] + [_cell(growth, 2, "x"), mark]
            lines.append(f"| {shape} | " + " | ".join(cells) + " |")
        parts.append("\n".join(lines))
    explain = results.get("explain")
    if explain:
        mark = "met" if explain["met"] else "**not met**"
        parts.append(
            f"`jobdoctor explain`: median {explain['median_s']:.3f} s, best"
            f" {explain['best_s']:.3f} s (target {explain['target_s']} s: {mark})."
        )
    machine_ = results["machine"]
    load = results.get("load_average")
    parts.append(
        f"Command: `{results['command']}`; {machine_['cpus']} CPUs, CPython"
        f" {machine_['python']}, {machine_['platform']}"
        + _load_words(load)
        + f"; {results['elapsed_s']} s in all (variants made in {results['making_s']} s)."
    )
    return "\n\n".join(parts)


def _load_words(load: list[float] | None) -> str:
    if not load:
        return ""
    if len(load) == 2:
        return f"; load average {load[0]} at the start, {load[1]} at the end"
    return f"; load average {load[0]} at the end"  # results of an earlier harness


def write_readmes(results: dict[str, Any], readmes: tuple[Path, ...] = READMES) -> None:
    """Put the matrix's tables between the shape-matrix markers of each README."""
    block = f"{BEGIN}\n{markdown(results)}\n{END}"
    for readme in readmes:
        text = readme.read_text(encoding="utf-8")
        start, end = text.find(BEGIN), text.find(END)
        if start < 0 or end < start:
            raise SystemExit(f"{readme}: no {BEGIN} ... {END} markers to put the table between")
        readme.write_text(text[:start] + block + text[end + len(END) :], encoding="utf-8")
        print(f"table written into {readme}")


def matrix_main(args: argparse.Namespace, argv: list[str]) -> dict[str, Any]:
    """``--shapes`` (run, then ``--write-readme`` if asked) or ``--write-readme`` alone."""
    if args.shapes:
        results = run_matrix(args, argv)
    else:
        source = results_path(args.out, MATRIX_OUT)
        if not source.exists():
            raise SystemExit(f"{source} does not exist: run bench/run.py --shapes first")
        results = json.loads(source.read_text(encoding="utf-8"))
    if args.write_readme:
        write_readmes(results)
    return results


def _count_lines(path: Path) -> int:
    with path.open("rb") as stream:
        return sum(block.count(b"\n") for block in iter(lambda: stream.read(1 << 22), b""))


if __name__ == "__main__":
    main()
