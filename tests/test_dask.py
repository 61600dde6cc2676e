"""--dask: jobdoctor's own scan on the workers of a real Dask cluster (LocalCluster, worker
processes on loopback), over trees on disk and in the Cloud Storage emulator; the output is the
run without --dask, byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.api import analyze
from analyzer.core.errors import InputError
from analyzer.engines import dask as dask_cluster
from analyzer.simulate.fleet import fleet
from tests.clirun import run
from tests.sink_trees import BUCKET

distributed = pytest.importorskip("distributed", reason="pip install -e '.[test]' installs it")


@pytest.fixture(scope="module", autouse=True)
def _io_loop_stopped() -> Iterator[None]:
    """After the module, the IO loop's thread that distributed's closed clients leave running
    stopped: while a Python thread runs, conftest has this xdist worker spawn the workers of
    every later run over processes instead of forking them (with worksteal a worker often
    takes more tests after these: 130 in one run, spawning)."""
    yield
    from distributed.utils import LoopRunner

    for _, runner in list(LoopRunner._all_loops.values()):
        if runner is not None:
            runner.stop()


@pytest.fixture(scope="module")
def scheduler(
    sink_trees: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The address of a Dask scheduler with two single-threaded workers, each its own process
    (``dask scheduler`` and ``dask worker``, as a user runs them); started after the emulator,
    so that the workers find it through STORAGE_EMULATOR_HOST. Run apart from this process,
    which then owns no worker process (other tests count its children)."""
    address_file = tmp_path_factory.mktemp("dask") / "scheduler.json"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    started = [
        subprocess.Popen(
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
    ]
    try:
        deadline = time.monotonic() + 60
        while not address_file.exists() or not address_file.read_text().strip():
            assert time.monotonic() < deadline, "the Dask scheduler did not start"
            time.sleep(0.1)
        started.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_worker",
                    "--nworkers",
                    "2",
                    "--nthreads",
                    "1",
                    "--no-dashboard",
                    "--scheduler-file",
                    str(address_file),
                ],
                **quiet,  # type: ignore[call-overload]
            )
        )
        with distributed.Client(scheduler_file=str(address_file), timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
            address: str = client.scheduler.address
        yield address
    finally:
        for process in reversed(started):
            process.terminate()
            process.wait(timeout=30)


@pytest.fixture(scope="module")
def big_file(storage_emulator: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One 16 MB sink file, on disk and as ``gs://BUCKET/dask-big/fleet.jsonl``: cut into
    byte ranges, several per worker."""
    folder = tmp_path_factory.mktemp("dask")
    path = folder / "fleet.jsonl"
    with path.open("wb") as out:
        out.writelines(fleet(16_000_000, seed=5))
    storage_emulator.upload_tree(BUCKET, "dask-big/", folder)
    return path


@pytest.mark.parametrize(
    ("where", "command"),
    [
        ("fleet-local", ("diagnose", "--format", "json")),
        ("scenarios-local", ("diagnose", "--format", "json")),
        ("fleet-gs", ("diagnose", "--format", "json")),
        ("scenarios-gs", ("diagnose", "--format", "json")),
        ("scenarios-gs", ("classify", "--format", "csv")),
        ("scenarios-local", ("report", "--format", "markdown")),
        ("big-file", ("diagnose", "--format", "json")),
        ("big-object", ("diagnose", "--format", "json")),
    ],
)
def test_dask_gives_the_output_of_the_plain_run(
    scheduler: str,
    sink_trees: dict[str, Any],
    big_file: Path,
    where: str,
    command: tuple[str, ...],
) -> None:
    if where == "big-file":
        path = str(big_file)
    elif where == "big-object":
        path = f"gs://{BUCKET}/dask-big/fleet.jsonl"
    else:
        name, kind = where.split("-")
        tree = sink_trees[name]
        path = tree.uri if kind == "gs" else str(tree.local)
    code, plain, err = run(*command, path)
    assert code == 0, err
    code, spread, err = run(*command, "--dask", scheduler, path)
    assert code == 0, err
    assert spread == plain
    assert plain.strip()


def test_dask_local_on_the_simulated_fleet(sink_trees: dict[str, Any]) -> None:
    # In a process of its own, as a user runs it: the LocalCluster's processes are its.
    tree = sink_trees["fleet"]
    code, plain, _ = run("diagnose", "--format", "json", str(tree.local))
    assert code == 0
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "analyzer.cli",
            "diagnose",
            "--format",
            "json",
            "--dask",
            "local",
            str(tree.local),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == plain
    assert done.stderr == ""
    assert len(json.loads(plain)["jobs"]) >= 6


def test_the_api_takes_a_connected_client(scheduler: str, sink_trees: dict[str, Any]) -> None:
    tree = sink_trees["scenarios"]
    with distributed.Client(scheduler) as client:
        spread = analyze([tree.uri], dask=client, since=None)
        assert client.status == "running"  # a client it was given stays open
    assert spread.to_dict() == analyze([tree.uri]).to_dict()


def test_an_unreachable_scheduler_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dask_cluster, "CONNECT_SECONDS", 1)
    unreachable = r"^--dask tcp://127\.0\.0\.1:9: cannot reach the Dask"
    cluster = dask_cluster.DaskCluster("tcp://127.0.0.1:9")
    with cluster, pytest.raises(InputError, match=unreachable):
        cluster.width()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--dask", "somewhere", "sample_logs/success.jsonl"), "--dask somewhere: give 'local'"),
        (
            ("--dask", "local", "--project", "acme-ml-prod", "--job-id", "1"),
            "--dask scans files and gs:// trees, not live logs",
        ),
        (
            ("--dask", "local", "--bigquery", "p.d.ml_googleapis_com_*", "--since", "7d"),
            "--dask scans files and gs:// trees, not live logs or BigQuery",
        ),
    ],
)
def test_bad_dask_use_is_one_line(args: tuple[str, ...], message: str) -> None:
    code, out, err = run("diagnose", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err


def test_inputs_the_scan_does_not_take_start_no_cluster() -> None:
    # A stream-logs text is read here: an unreachable scheduler is never asked.
    code, out, err = run(
        "diagnose",
        "--format",
        "json",
        "--dask",
        "tcp://127.0.0.1:9",
        "sample_logs/oom.stream-logs.txt",
    )
    assert code == 0, err
    assert out == run("diagnose", "--format", "json", "sample_logs/oom.stream-logs.txt")[1]


def test_a_worker_of_another_version_refuses_to_scan(scheduler: str) -> None:
    with distributed.Client(scheduler) as client:
        future = client.submit(dask_cluster._scan_batch, b"", "digest", "0.0.0-other", [])
        with pytest.raises(InputError, match=r"install jobdoctor 0\.0\.0-other on the workers"):
            future.result()


@settings(max_examples=200, deadline=None)
@given(
    weights=st.lists(st.integers(min_value=0, max_value=80 << 20), max_size=300),
    width=st.integers(min_value=1, max_value=64),
)
def test_batches_hold_every_task_once_in_order(weights: list[int], width: int) -> None:
    tasks = [(index, f"f{index}", 0, -1) for index in range(len(weights))]
    batches = dask_cluster._batches(tasks, weights, width)
    flat = [item for batch in batches for item in batch]
    assert flat == list(enumerate(tasks))
    target = min(
        dask_cluster.BATCH_BYTES, max(dask_cluster.MIN_BATCH_BYTES, sum(weights) // (4 * width))
    )
    for batch in batches[:-1]:  # each full enough to be worth a Dask task, none past it
        held = [weights[position] for position, _ in batch]
        assert sum(held) >= target and sum(held[:-1]) < target
