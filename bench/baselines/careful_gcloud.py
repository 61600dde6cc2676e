"""The careful-Python baseline for ``gcloud logging read --format=json`` (one JSON array).

The fastest obvious Python: ``orjson.loads`` of the whole file (an array cannot be split on
lines), then one pass over its entries with the same combined regex as ``careful.py``, the
first match per job kept. Its memory grows with the file: that is the price of the obvious way.
Prints ``{"lines": N, "jobs": {job_id: family}}`` (N: entries).

    python bench/baselines/careful_gcloud.py FILE
"""

from __future__ import annotations

import sys

import orjson
from careful import FAMILIES


def scan(path: str) -> dict[str, object]:
    """The first error family seen per job in the gcloud JSON array at ``path``."""
    with open(path, "rb") as stream:
        entries = orjson.loads(stream.read())
    first: dict[str, str] = {}
    search = FAMILIES.search
    # gcloud prints newest first: the first match in time order is the last one seen.
    for entry in reversed(entries):
        payload = entry.get("jsonPayload")
        text = payload.get("message") if isinstance(payload, dict) else None
        if not isinstance(text, str):
            text = entry.get("textPayload")
        if not isinstance(text, str):
            continue
        found = search(text)
        if found is None:
            continue
        job = ((entry.get("resource") or {}).get("labels") or {}).get("job_id")
        if job is not None and job not in first:
            first[job] = found.lastgroup or ""
    return {"lines": len(entries), "jobs": first}


if __name__ == "__main__":
    sys.stdout.write(orjson.dumps(scan(sys.argv[1])).decode() + "\n")
