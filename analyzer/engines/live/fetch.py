"""``jobdoctor fetch``: save one job's live entries as a sink-shaped JSONL file.

The file has one LogEntry (API JSON) per line, like a Log Router sink to Cloud
Storage, so every file input of jobdoctor reads it back for offline and
repeated analysis.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from analyzer.core.errors import SourceError
from analyzer.engines.live.client import make_client
from analyzer.engines.live.errors import DEFAULT_BACKOFF, Backoff
from analyzer.engines.live.query import LiveQuery
from analyzer.engines.live.source import DEFAULT_PAGE_SIZE, Cursor, iter_entries


def fetch_to_file(
    query: LiveQuery,
    out: Path,
    *,
    page_size: int = DEFAULT_PAGE_SIZE,
    backoff: Backoff = DEFAULT_BACKOFF,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Write the job's entries over the query's window to ``out``; return how many.

    Entries are written in timestamp order as they arrive (memory stays flat).
    The file appears only when the read completed: a failed fetch leaves no
    truncated file that looks whole. Raises SourceError.
    """
    client = make_client(query)
    partial = out.with_name(out.name + ".part")
    count = 0
    try:
        with partial.open("w", encoding="utf-8", newline="\n") as handle:
            for entry in iter_entries(
                client,
                query,
                Cursor(),
                end=query.window.end,
                page_size=page_size,
                backoff=backoff,
                sleep=sleep,
            ):
                handle.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
                handle.write("\n")
                count += 1
        os.replace(partial, out)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise SourceError(f"cannot write {out}: {exc.strerror or exc}") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return count
