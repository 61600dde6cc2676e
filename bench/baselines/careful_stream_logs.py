"""The careful-Python baseline for ``gcloud ai custom-jobs stream-logs`` text.

The same afternoon's script as ``careful.py``, for the text gcloud prints: one pass over the
file, each line split at its tabs (severity, time, task, message), the message tested for the
four error families as ``careful.py`` tests it (``careful.family``), the first match per task
kept (a stream-logs text is one job's and names no job id). Prints one JSON object:
``{"lines": N, "jobs": {task: family}}``.

    python bench/baselines/careful_stream_logs.py FILE
"""

from __future__ import annotations

import sys

import orjson
from careful import family  # type: ignore[import-not-found]


def scan(path: str) -> dict[str, object]:
    """The first error family seen per task in the stream-logs text at ``path``."""
    first: dict[str, str] = {}
    lines = 0
    with open(path, encoding="utf-8", errors="replace") as stream:
        for line in stream:
            lines += 1
            parts = line.rstrip("\n").split("\t", 3)
            if len(parts) < 4:
                continue
            _, _, task, text = parts
            found = family(text)
            if found is not None and task not in first:
                first[task] = found
    return {"lines": lines, "jobs": first}


if __name__ == "__main__":
    sys.stdout.write(orjson.dumps(scan(sys.argv[1])).decode() + "\n")
