"""Start ``bqemulator`` (PyPI) on loopback, offline, for the BigQuery client tests.

bqemulator loads DuckDB's spatial extension at start-up, which DuckDB downloads from its
extension repository (no network here, nor in CI): the launcher replaces that step, and the
best-effort avro one, by nothing before starting it. jobdoctor never uses GEOGRAPHY or Avro.

Run as a script (``python tests/bqemulator_server.py PORT``) it serves until killed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve(rest_port: int, grpc_port: int) -> None:
    from bqemulator.cli import main
    from bqemulator.storage import engine

    def nothing(self: object) -> None:
        return None

    engine.DuckDBEngine._load_spatial = nothing  # type: ignore[method-assign]
    engine.DuckDBEngine._load_format_extensions = nothing  # type: ignore[method-assign]
    sys.argv = [
        "bqemulator",
        "start",
        "--rest-host",
        "127.0.0.1",
        "--rest-port",
        str(rest_port),
        "--grpc-host",
        "127.0.0.1",
        "--grpc-port",
        str(grpc_port),
        "--ephemeral",
        "--log-level",
        "warning",
    ]
    main()


@contextmanager
def running_emulator(timeout: float = 60.0) -> Iterator[str]:
    """The URL of a fresh emulator, stopped on exit."""
    rest, grpc = _free_port(), _free_port()
    log = open(os.devnull, "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), str(rest), str(grpc)],
        stdout=log,
        stderr=log,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"bqemulator exited with {process.returncode} at start-up")
            try:
                with socket.create_connection(("127.0.0.1", rest), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("bqemulator did not start in time") from None
                time.sleep(0.2)
        yield f"http://127.0.0.1:{rest}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


if __name__ == "__main__":
    _serve(int(sys.argv[1]), int(sys.argv[2]))
