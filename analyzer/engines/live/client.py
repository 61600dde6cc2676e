"""Building the ``google.cloud.logging`` client for a query (imported lazily).

The client is forced onto its REST transport (``_use_grpc=False``): with gRPC
installed it would otherwise take ``api_endpoint`` as a gRPC target, where a
``http://`` URL (emulators, the test server) does not work; jobdoctor reads
through the client's REST connection anyway (see ``source.raw_entries``).
Loopback ``http://`` endpoints get anonymous credentials; a non-loopback
``http://`` endpoint is refused, since it would send the user's token in clear
text.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from analyzer.core.errors import SourceError
from analyzer.engines.live.errors import missing_extra, translate
from analyzer.engines.live.query import LiveQuery
from analyzer.report.redact import redact

ENDPOINT_ENV = "JOBDOCTOR_LOGGING_ENDPOINT"
PUBLIC_ENDPOINT = "https://logging.googleapis.com"
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}


def resolve_endpoint(query: LiveQuery) -> str | None:
    """``query.endpoint``, else ``$JOBDOCTOR_LOGGING_ENDPOINT``, else None (the public API)."""
    chosen = query.endpoint or os.environ.get(ENDPOINT_ENV) or None
    return chosen.rstrip("/") if chosen else None


def is_local(endpoint: str | None) -> bool:
    """True for ``http://localhost``, ``http://127.0.0.1`` and ``http://[::1]`` URLs."""
    if not endpoint:
        return False
    parts = urlsplit(endpoint)
    return parts.scheme == "http" and (parts.hostname or "") in _LOOPBACK


def make_client(query: LiveQuery) -> Any:
    """A ``google.cloud.logging.Client`` for ``query.project`` on the resolved endpoint.

    Raises SourceError when google-cloud-logging is missing, the endpoint is
    unusable, or there are no Application Default Credentials.
    """
    try:
        from google.api_core import client_info
        from google.auth import credentials
        from google.cloud import logging as cloud_logging
    except ImportError:
        raise missing_extra() from None
    from analyzer import __version__

    # The library is untyped: hold its constructors as Any rather than silence each call.
    client_class: Any = cloud_logging.Client
    anonymous: Any = credentials.AnonymousCredentials
    info: Any = client_info.ClientInfo

    endpoint = resolve_endpoint(query)
    kwargs: dict[str, Any] = {
        "project": query.project,
        "_use_grpc": False,
        "client_info": info(user_agent=f"jobdoctor/{__version__}"),
    }
    if endpoint is not None:
        scheme = urlsplit(endpoint).scheme
        if scheme not in ("http", "https") or not urlsplit(endpoint).hostname:
            raise SourceError(
                f"invalid --api-endpoint {redact(endpoint)!r}: give a URL such as "
                "https://logging.googleapis.com or http://127.0.0.1:8085"
            )
        if scheme == "http" and not is_local(endpoint):
            raise SourceError(
                f"refusing plain http to {urlsplit(endpoint).hostname}: credentials would travel "
                "unencrypted; use https, or http only for localhost/127.0.0.1 emulators"
            )
        kwargs["client_options"] = {"api_endpoint": endpoint}
        if is_local(endpoint):
            kwargs["credentials"] = anonymous()
    try:
        return client_class(**kwargs)
    except Exception as exc:
        error = translate(exc, query.project, endpoint or PUBLIC_ENDPOINT)
        if error is None:
            raise
        raise error from None
