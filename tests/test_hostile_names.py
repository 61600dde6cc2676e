"""No credential leaves for a host the input chose (issue 31, point 1).

The Vertex AI address is built as ``https://{region}-aiplatform.googleapis.com``; a region of
``127.0.0.1:PORT#`` would aim the request (and, for any host but loopback, the user's bearer
token) at that address. A real listener on loopback stands where such a region points, and
counts the connections it is offered: none must arrive, whichever of the four places the region
came from (a pasted resource name, ``--region``, ``CLOUDSDK_AI_REGION``, gcloud's
configuration), and the run stops with one line naming the value and where it came from.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analyzer.cli.app import app
from analyzer.core.errors import InputError, SourceError
from analyzer.engines.live.gcloud import checked, resolve_live_job
from analyzer.engines.live.vertex import read_custom_job
from tests.logging_server import LoggingServer, load_entries

ROOT = Path(__file__).resolve().parents[1]
PROJECT, JOB = "acme-ml-prod", "1597253863006895240"
WINDOW = ["--start", "2024-01-01T00:00:00Z", "--end", "2024-06-01T00:00:00Z"]
runner = CliRunner()


class Listener:
    """A TCP listener on loopback that accepts and counts every connection."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.2)
        self.port = int(self.socket.getsockname()[1])
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.socket.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.socket.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    found = Listener()
    yield found
    found.close()


def test_the_listener_sees_a_connection(listener: Listener) -> None:
    # The checks below would pass vacuously if the listener never counted anything.
    with socket.create_connection(("127.0.0.1", listener.port), timeout=2):
        pass
    for _ in range(50):
        if listener.connections:
            break
        threading.Event().wait(0.05)
    assert listener.connections == 1


def test_a_region_aimed_at_a_listener_reaches_nothing(listener: Listener) -> None:
    region = f"127.0.0.1:{listener.port}#"
    with pytest.raises(SourceError, match="is not a region"):
        read_custom_job(PROJECT, region, JOB)
    assert listener.connections == 0


def _gcloud_config(tmp_path: Path, region: str) -> str:
    config = tmp_path / "gcloud"
    (config / "configurations").mkdir(parents=True)
    (config / "active_config").write_text("work\n")
    (config / "configurations" / "config_work").write_text(
        f"[core]\nproject = {PROJECT}\n\n[ai]\nregion = {region}\n"
    )
    return str(config)


@pytest.mark.parametrize("source", ["resource name", "--region", "environment", "gcloud config"])
def test_a_hostile_region_from_any_source_is_refused_before_any_request(
    source: str, listener: Listener, tmp_path: Path
) -> None:
    region = f"127.0.0.1:{listener.port}#"
    env = {
        "CLOUDSDK_CONFIG": str(tmp_path / "none"),
        "CLOUDSDK_AI_REGION": "",
        "CLOUDSDK_CORE_PROJECT": PROJECT,
    }
    args = ["--project", PROJECT, "--job-id", JOB]
    said = {
        "resource name": "the job's resource name",
        "--region": "--region",
        "environment": "CLOUDSDK_AI_REGION",
        "gcloud config": "gcloud configuration 'work' (ai/region)",
    }[source]
    if source == "resource name":
        args = ["--job-id", f"projects/{PROJECT}/locations/{region}/customJobs/{JOB}"]
    elif source == "--region":
        args += ["--region", region]
    elif source == "environment":
        env["CLOUDSDK_AI_REGION"] = region
    else:
        env["CLOUDSDK_CONFIG"] = _gcloud_config(tmp_path, region)
    logs = LoggingServer(entries=load_entries(ROOT / "sample_logs" / "user-code-exit1.jsonl"))
    vertex = f"https://127.0.0.1:{listener.port}"
    with logs:
        result = runner.invoke(
            app,
            ["diagnose", "--api-endpoint", logs.url, *WINDOW, *args],
            env={**env, "JOBDOCTOR_VERTEX_ENDPOINT": ""},
        )
        asked = len(logs.list_bodies)
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert "\n" not in line and repr(region) in line and said in line, line
    assert (asked, listener.connections) == (0, 0), vertex


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("region", "us-central1.evil.example.com#"),
        ("region", "US-CENTRAL1"),
        ("region", "europe-west4/"),
        ("project", "p"),
        ("project", "acme@evil.example.com"),
        ("project", "acme-ml-prod-"),
        ("job id", 'x" OR resource.type="gce_instance'),
        ("job id", "1\n2"),
    ],
)
def test_values_of_another_shape_are_refused(kind: str, value: str) -> None:
    with pytest.raises(InputError) as raised:
        checked(kind, value, "--somewhere")
    message = str(raised.value)
    assert "\n" not in message and "--somewhere" in message


@pytest.mark.parametrize(
    ("project", "region", "job"),
    [
        ("acme-ml-prod", "us-central1", "1597253863006895240"),
        ("123456789012", "europe-west4", "census_training_20240101"),
        ("my-project-30-characters-long", "asia-northeast1", "7"),
    ],
)
def test_the_platforms_names_pass(project: str, region: str, job: str) -> None:
    name = resolve_live_job(project, job, region)
    assert (name.project, name.region, name.job_id) == (project, region, job)
