"""A fake API on loopback: a ``ThreadingHTTPServer`` on 127.0.0.1 (a free port) run in a
daemon thread for the length of a ``with`` block (``tests/logging_server.py``,
``tests/vertex_server.py``)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self


class LoopbackServer:
    """What every fake API server does to start, answer at :attr:`url` and stop; a subclass
    gives its request handler, bound to itself (:meth:`handler`)."""

    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """The handler class of this server's requests, bound to this server's state."""
        raise NotImplementedError

    @property
    def url(self) -> str:
        """The endpoint to give the client: ``http://127.0.0.1:<port>``."""
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> Self:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        # A short poll interval keeps shutdown (each test's teardown) fast.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._httpd is not None and self._thread is not None
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
