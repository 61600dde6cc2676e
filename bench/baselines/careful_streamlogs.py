"""The careful-Python baseline for ``gcloud ai custom-jobs stream-logs`` text.

One pass over the file as text, each line split on its first three tabs (severity, time,
task, message), the same combined regex as ``careful.py`` over the message, the first match
kept. stream-logs names no job (it prints one job's logs), so the file is one job, ``-``.
Prints ``{"lines": N, "jobs": {"-": family}}``.

    python bench/baselines/careful_streamlogs.py FILE
"""

from __future__ import annotations

import sys

import orjson
from careful import FAMILIES


def scan(path: str) -> dict[str, object]:
    """The first error family seen in the stream-logs file at ``path``."""
    first: dict[str, str] = {}
    lines = 0
    search = FAMILIES.search
    with open(path, encoding="utf-8", errors="replace") as stream:
        for line in stream:
            lines += 1
            parts = line.split("\t", 3)
            if len(parts) < 4:
                continue  # gcloud's own lines ("Using endpoint [...]")
            found = search(parts[3])
            if found is not None and not first:
                first["-"] = found.lastgroup or ""
    return {"lines": lines, "jobs": first}


if __name__ == "__main__":
    sys.stdout.write(orjson.dumps(scan(sys.argv[1])).decode() + "\n")
