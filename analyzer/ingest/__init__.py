"""The ingest stage: any log export in, a stream of :class:`~analyzer.ingest.records.LogRecord` out.

:func:`open_sources` expands paths (files, ``-``, directories, globs), sniffs
each input's format (:class:`Format`) from its first bytes, gzip included, and
returns one :class:`~analyzer.ingest.records.Source` per input. Reading never loads a
whole file and accounts for every physical line in the source's ``stats``:
``lines == used + skipped`` once its records are exhausted, with a reason for
every skipped line. Bad content never raises; only an input that cannot be
opened, or that is binary, raises :class:`~analyzer.core.errors.InputError`, up front.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The stage's entry points, loaded on first use: the shared record type
# (analyzer.ingest.records) is imported by every stage, and must not bring the readers with it
# (`jobdoctor explain` reads no file).
_LAZY = {
    "FileSource": "analyzer.ingest.sources",
    "Format": "analyzer.ingest.sniff",
    "MemorySource": "analyzer.ingest.sources",
    "StreamSource": "analyzer.ingest.sources",
    "open_sources": "analyzer.ingest.inputs",
    "read_jsonl": "analyzer.ingest.jsonl",
    "read_records": "analyzer.ingest.inputs",
    "sniff": "analyzer.ingest.sniff",
}
__all__ = [
    "FileSource",
    "Format",
    "MemorySource",
    "StreamSource",
    "open_sources",
    "read_jsonl",
    "read_records",
    "sniff",
]

if TYPE_CHECKING:
    from analyzer.ingest.inputs import open_sources, read_records
    from analyzer.ingest.jsonl import read_jsonl
    from analyzer.ingest.sniff import Format, sniff
    from analyzer.ingest.sources import FileSource, MemorySource, StreamSource


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
