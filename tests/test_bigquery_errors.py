"""The one-line errors and the cost guard, with the real client against a loopback HTTP server
that answers as BigQuery does when it refuses (403 and its roles, quota, a missing table or
column, the bytes-billed limit) or when a dry run says the scan is large."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("google.cloud.bigquery", reason="the bigquery extra is not installed")

from tests.clirun import run

TABLE_PATH = "/bigquery/v2/projects/p/datasets/d/tables/t"
SCHEMA = {
    "fields": [
        {"name": "timestamp", "type": "TIMESTAMP"},
        {"name": "textPayload", "type": "STRING"},
        {"name": "insertId", "type": "STRING"},
    ]
}
TABLE = {"tableReference": {"projectId": "p", "datasetId": "d", "tableId": "t"}, "schema": SCHEMA}


def _error(code: int, reason: str, message: str) -> tuple[int, dict[str, Any]]:
    status = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}[code]
    return code, {
        "error": {
            "code": code,
            "message": message,
            "errors": [{"reason": reason, "message": message, "domain": "global"}],
            "status": status,
        }
    }


def _dry_run(total: int) -> tuple[int, dict[str, Any]]:
    return 200, {
        "jobReference": {"projectId": "p", "jobId": "j1", "location": "US"},
        "configuration": {"query": {"query": "SELECT 1"}, "dryRun": True},
        "status": {"state": "DONE"},
        "statistics": {
            "totalBytesProcessed": str(total),
            "query": {"totalBytesProcessed": str(total)},
        },
    }


class Server:
    """Answers by (method, path) from ``routes``; a POST to jobs is told apart by dryRun."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], tuple[int, dict[str, Any]]] = {}
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("?")[0]
                server.requests.append((method, path, body))
                key = path
                if method == "POST" and path.endswith("/jobs"):
                    dry = body.get("configuration", {}).get("dryRun", False)
                    key = path + (":dry" if dry else ":run")
                code, answer = server.routes.get((method, key), _error(404, "notFound", key))
                data = json.dumps(answer).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

            def log_message(self, *args: object) -> None:
                return None

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    found = Server()
    thread = threading.Thread(target=found.http.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("JOBDOCTOR_BIGQUERY_ENDPOINT", found.url)
    yield found
    found.http.shutdown()
    found.http.server_close()


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if not line.startswith("jobdoctor: window:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


DIAGNOSE = ("diagnose", "--bigquery", "p.d.t", "--since", "7d")


def test_forbidden_names_the_roles(server: Server) -> None:
    server.routes[("GET", TABLE_PATH)] = _error(403, "accessDenied", "Access Denied: Table p:d.t")
    code, _, err = run(*DIAGNOSE)
    line = _one_line(err)
    assert code == 2
    assert "permission denied (403)" in line
    assert "roles/bigquery.dataViewer" in line and "roles/bigquery.jobUser" in line


def test_missing_table(server: Server) -> None:
    server.routes[("GET", TABLE_PATH)] = _error(404, "notFound", "Not found: Table p:d.t")
    code, _, err = run(*DIAGNOSE)
    assert code == 2 and "table not found reading p.d.t" in _one_line(err)


def test_quota(server: Server) -> None:
    server.routes[("GET", TABLE_PATH)] = (200, TABLE)
    server.routes[("POST", "/bigquery/v2/projects/p/jobs:dry")] = _error(
        403, "quotaExceeded", "Quota exceeded: Your project exceeded quota for free query bytes"
    )
    code, _, err = run(*DIAGNOSE)
    assert code == 2 and "quota or rate limit reached for project p" in _one_line(err)


def test_missing_column(server: Server) -> None:
    server.routes[("GET", TABLE_PATH)] = (200, TABLE)
    server.routes[("POST", "/bigquery/v2/projects/p/jobs:dry")] = _error(
        400, "invalidQuery", "Unrecognized name: textPayload at [12:7]"
    )
    code, _, err = run(*DIAGNOSE)
    assert code == 2 and "p.d.t has no column textPayload" in _one_line(err)


def test_over_max_bytes_runs_nothing(server: Server) -> None:
    server.routes[("GET", TABLE_PATH)] = (200, TABLE)
    server.routes[("POST", "/bigquery/v2/projects/p/jobs:dry")] = _dry_run(150 * 10**9)
    code, _, err = run(*DIAGNOSE, "--max-bytes", "200GB")
    lines = err.strip().splitlines()
    assert code == 2
    assert "dry run: the 2 queries will scan 300.00 GB (about $1.7053" in lines[-2]
    assert lines[-1] == (
        "jobdoctor: the queries would scan 300.00 GB, over --max-bytes 200.00 GB (about $1.71):"
        " narrow --since or --job-id, or raise --max-bytes"
    )
    assert not [r for r in server.requests if r[0] == "POST" and not _is_dry(r[2])]


def _is_dry(body: dict[str, Any]) -> bool:
    return bool(body.get("configuration", {}).get("dryRun"))


def test_queries_run_with_maximum_bytes_billed(server: Server) -> None:
    server.routes[("GET", TABLE_PATH)] = (200, TABLE)
    server.routes[("POST", "/bigquery/v2/projects/p/jobs:dry")] = _dry_run(10**6)
    server.routes[("POST", "/bigquery/v2/projects/p/jobs:run")] = _error(
        400,
        "bytesBilledLimitExceeded",
        "Query exceeded limit for bytes billed: 5000000. 10485760 or higher required.",
    )
    code, _, err = run(*DIAGNOSE, "--max-bytes", "5MB", "--billing-project", "p")
    assert code == 2 and "stopped the query at --max-bytes" in err.splitlines()[-1]
    sent = [r[2] for r in server.requests if r[0] == "POST" and not _is_dry(r[2])]
    assert sent and sent[0]["configuration"]["query"]["maximumBytesBilled"] == "5000000"
    # Both queries were dry-run first, with the window as named parameters.
    dry = [r[2] for r in server.requests if r[0] == "POST" and _is_dry(r[2])]
    assert len(dry) == 2
    names = {p["name"] for p in dry[0]["configuration"]["query"]["queryParameters"]}
    assert {"start", "end"} <= names


def test_dry_run_prints_bytes_and_price(server: Server) -> None:
    server.routes[("GET", TABLE_PATH)] = (200, TABLE)
    server.routes[("POST", "/bigquery/v2/projects/p/jobs:dry")] = _dry_run(2 * 10**12)
    code, out, err = run(*DIAGNOSE, "--dry-run", "--max-bytes", "10TB")
    assert code == 0 and out == ""
    assert re.search(r"scan 4\.00 TB \(about \$22\.7374 on demand at \$6\.25/TiB", err)


def test_no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.delenv("JOBDOCTOR_BIGQUERY_ENDPOINT", raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    code, _, err = run(*DIAGNOSE)
    line = _one_line(err)
    assert code == 2 and line.startswith("jobdoctor: no credentials for BigQuery")


def test_plain_http_elsewhere_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JOBDOCTOR_BIGQUERY_ENDPOINT", "http://bigquery.example.com")
    code, _, err = run(*DIAGNOSE)
    assert code == 2 and "refusing plain http to bigquery.example.com" in _one_line(err)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("--max-bytes=lots", "invalid --max-bytes 'lots'"),
        ("--since=3x", "invalid --since '3x'"),
    ],
)
def test_bad_options_are_one_line(value: str, message: str) -> None:
    code, _, err = run("diagnose", "--bigquery", "p.d.t", "--since", "7d", value)
    assert code == 2 and message in _one_line(err)


def test_bad_table_reference() -> None:
    code, _, err = run("diagnose", "--bigquery", "just-a-table", "--since", "7d")
    assert code == 2 and "give PROJECT.DATASET.TABLE" in _one_line(err)


def test_an_endpoint_that_is_down_is_one_error() -> None:
    import socket

    from analyzer.core.errors import SourceError
    from analyzer.engines.bigquery import BigQueryEngine, TableRef

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    engine = BigQueryEngine("p", f"http://127.0.0.1:{port}", retry_seconds=0.5)
    with pytest.raises(SourceError, match=f"cannot reach BigQuery at http://127.0.0.1:{port}"):
        engine.describe(TableRef.parse("p.d.t"))
