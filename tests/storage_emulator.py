"""A Cloud Storage emulator on 127.0.0.1 for tests: ``gcp-storage-emulator`` (PyPI), served
by a threaded HTTP server (its own answers one request at a time, and jobdoctor's workers read
several objects at once), in memory.

    with StorageEmulator() as emulator:        # sets STORAGE_EMULATOR_HOST while it runs
        emulator.upload_tree("bucket", "prefix/", Path("tree"))

A second server, :class:`RefusingServer`, answers every request with a 403 in Cloud Storage's
JSON error shape: what a user without the Storage Object Viewer role gets.
"""

from __future__ import annotations

import json
import os
import threading
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

ENV = "STORAGE_EMULATOR_HOST"
# The name of the storage emulator's threads (the server's and each connection's): idle
# between the tests that use it (conftest forks the workers of the others beside them).
EMULATOR_THREADS = "storage-emulator"


class _Named(ThreadingHTTPServer):
    """Each connection's thread named ``thread_name``."""

    thread_name = "http-server"

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        threading.current_thread().name = self.thread_name
        super().process_request_thread(request, client_address)


class _Serving:
    """A ThreadingHTTPServer run in a thread, with STORAGE_EMULATOR_HOST pointing at it."""

    def __init__(self, handler: Any, name: str = "http-server") -> None:
        self._server = _Named(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._server.thread_name = name
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name=name, daemon=True)
        self._previous: str | None = None

    def __enter__(self) -> _Serving:
        self._thread.start()
        self._previous = os.environ.get(ENV)
        os.environ[ENV] = self.url
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._previous is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = self._previous


class StorageEmulator(_Serving):
    """gcp-storage-emulator in memory, threaded; ``requests`` records each request's method,
    path and Range header."""

    def __init__(self) -> None:
        from gcp_storage_emulator.server import RequestHandler
        from gcp_storage_emulator.storage import Storage

        self.storage = Storage(use_memory_fs=True)
        self.requests: list[tuple[str, str, str | None]] = []
        seen = self.requests

        class Recording(RequestHandler):  # type: ignore[misc]
            def handle_one_request(self) -> None:
                super().handle_one_request()
                if getattr(self, "command", None):
                    seen.append((self.command, self.path, self.headers.get("range")))

        super().__init__(partial(Recording, self.storage), EMULATOR_THREADS)

    def __enter__(self) -> StorageEmulator:
        super().__enter__()
        return self

    def upload_tree(self, bucket: str, prefix: str, root: Path) -> list[str]:
        """:func:`upload_tree` into this emulator."""
        return upload_tree(bucket, prefix, root)


def upload_tree(bucket: str, prefix: str, root: Path) -> list[str]:
    """Upload every file under ``root`` as ``prefix`` + its relative path (``/``-separated),
    with the real client, to where STORAGE_EMULATOR_HOST points; the bucket is made if it is
    missing. Returns the object names."""
    from google.cloud import storage

    client = storage.Client()
    target = client.lookup_bucket(bucket) or client.create_bucket(bucket)
    names = []
    for path in sorted(root.rglob("*")):
        if path.is_file():
            name = prefix + path.relative_to(root).as_posix()
            target.blob(name).upload_from_filename(str(path))
            names.append(name)
    return names


class _Refusing(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps(
            {
                "error": {
                    "code": 403,
                    "message": "tester@example.com does not have storage.objects.list access"
                    " to the Google Cloud Storage bucket.",
                    "errors": [{"reason": "forbidden", "domain": "global"}],
                }
            }
        ).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class RefusingServer(_Serving):
    """Answers every request 403, as Cloud Storage does for a caller without the role."""

    def __init__(self) -> None:
        super().__init__(_Refusing)

    def __enter__(self) -> RefusingServer:
        super().__enter__()
        return self
