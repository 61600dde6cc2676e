"""What Dask costs over this machine's own processes, on a sink tree (issue 17).

    python bench/dask_tree.py [--size 1GB] [--runs 3]

Makes (once, cached under bench/out/) a sink tree of the simulator's fleet
(``analyzer.simulate.tree``: hourly files per job, late ``_A0`` files), then times, interleaved,
each as its own process:

- ``processes``: ``jobdoctor diagnose --format json TREE`` (forked processes, one per core);
- ``dask-local``: the same with ``--dask local`` (a LocalCluster started and stopped by the run);
- ``dask-tcp``: the same with ``--dask tcp://...``, against a scheduler and one worker process
  per core started before the runs (what a user with a cluster pays: no cluster start-up).

Checks that the three print the same JSON, and prints wall times (median and best) and the CPU
seconds every process of the run used (the machine's load moves those less): the command's
and its descendants', plus, for ``dask-tcp``, what the workers and the scheduler used during it.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import parse_size  # noqa: E402


def tree(size: int, seed: int) -> Path:
    """The cached sink tree of ``size`` bytes (made on first use)."""
    from analyzer.simulate.fleet import fleet
    from analyzer.simulate.tree import write_sink_tree

    root = HERE / "out" / f"tree-{size}-seed{seed}"
    if not (root / ".done").exists():
        partial = root.with_suffix(".partial")
        if partial.exists():
            import shutil

            shutil.rmtree(partial)
        write_sink_tree(fleet(size, seed), partial, seed=seed)
        partial.replace(root)
        (root / ".done").write_text("")  # hidden: never read as an input
    return root


def start_cluster(workers: int, folder: Path) -> tuple[str, list[subprocess.Popen[bytes]]]:
    """A scheduler and ``workers`` single-threaded worker processes; their address."""
    address_file = folder / "scheduler.json"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    scheduler = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "distributed.cli.dask_scheduler",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--dashboard-address",
            ":0",
            "--scheduler-file",
            str(address_file),
        ],
        **quiet,  # type: ignore[call-overload]
    )
    while not address_file.exists() or not address_file.read_text().strip():
        time.sleep(0.1)
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "distributed.cli.dask_worker",
            "--nworkers",
            str(workers),
            "--nthreads",
            "1",
            "--no-dashboard",
            "--scheduler-file",
            str(address_file),
        ],
        **quiet,  # type: ignore[call-overload]
    )
    import distributed

    with distributed.Client(scheduler_file=str(address_file)) as client:
        client.wait_for_workers(workers, timeout=120)
        address: str = client.scheduler.address
    return address, [worker, scheduler]


def _cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _cluster_cpu(address: str) -> float:
    """CPU seconds the cluster's workers and scheduler have used so far."""
    import distributed

    with distributed.Client(address) as client:
        workers = client.run(_cpu_self)
        return sum(workers.values()) + float(client.run_on_scheduler(_cpu_self))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1GB")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    root = tree(parse_size(args.size), args.seed)
    files = [p for p in root.rglob("*.json")]
    total = sum(p.stat().st_size for p in files)
    print(f"tree: {root} ({len(files)} files, {total:,} bytes)")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with tempfile.TemporaryDirectory() as folder:
        address, processes = start_cluster(cores or 1, Path(folder))
        try:
            base = [sys.executable, "-m", "analyzer.cli", "diagnose", "--format", "json"]
            contenders = {
                "processes": [*base, str(root)],
                "dask-local": [*base, "--dask", "local", str(root)],
                "dask-tcp": [*base, "--dask", address, str(root)],
            }
            times: dict[str, list[float]] = {name: [] for name in contenders}
            cpu: dict[str, list[float]] = {name: [] for name in contenders}
            outputs: dict[str, bytes] = {}
            for _ in range(args.runs):
                for name, command in contenders.items():
                    remote = _cluster_cpu(address) if name == "dask-tcp" else 0.0
                    used = _children_cpu()
                    began = time.perf_counter()
                    done = subprocess.run(command, capture_output=True, check=True)
                    times[name].append(time.perf_counter() - began)
                    spent = _children_cpu() - used
                    if name == "dask-tcp":
                        spent += _cluster_cpu(address) - remote
                    cpu[name].append(spent)
                    outputs.setdefault(name, done.stdout)
                    assert done.stdout == outputs[name], f"{name}: output changed between runs"
        finally:
            for process in processes:
                process.terminate()
                process.wait()
    same = len(set(outputs.values())) == 1
    print(f"same JSON from all three: {same}")
    plain = statistics.median(times["processes"])
    for name, runs in times.items():
        median = statistics.median(runs)
        print(
            f"{name:<11} median {median:6.2f} s  best {min(runs):6.2f} s  "
            f"{total / median / 1e6:6.0f} MB/s  x{median / plain:4.2f}  "
            f"CPU {statistics.median(cpu[name]):6.2f} s  runs " + " ".join(f"{t:.2f}" for t in runs)
        )
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
