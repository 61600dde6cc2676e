"""Live Cloud Logging: read, save and follow one Vertex AI job's logs from its project.

Needs the ``gcp`` extra (``pip install 'jobdoctor[gcp]'``); google-cloud-logging
is imported only when a request is made, so importing this package is cheap.

>>> query = LiveQuery("my-project", "8501620632646057984", parse_window("7d", None, None))
>>> records = LiveSource(query).records()          # a records.Source, like a file
>>> fetch_to_file(query, Path("job.jsonl"))        # sink-shaped JSONL  # doctest: +SKIP
"""

from __future__ import annotations

from analyzer.engines.live.client import ENDPOINT_ENV, make_client
from analyzer.engines.live.errors import Backoff
from analyzer.engines.live.fetch import fetch_to_file
from analyzer.engines.live.follow import FollowEnd, follow
from analyzer.engines.live.query import LiveQuery, build_filter
from analyzer.engines.live.source import FORMAT, LiveSource, describe_window
from analyzer.engines.live.window import DEFAULT_SPAN, Window, parse_span, parse_window

__all__ = [
    "DEFAULT_SPAN",
    "ENDPOINT_ENV",
    "FORMAT",
    "Backoff",
    "FollowEnd",
    "LiveQuery",
    "LiveSource",
    "Window",
    "build_filter",
    "describe_window",
    "fetch_to_file",
    "follow",
    "make_client",
    "parse_span",
    "parse_window",
]
