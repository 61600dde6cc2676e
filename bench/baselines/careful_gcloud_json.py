"""The careful-Python baseline for ``gcloud logging read --format json`` (one JSON array).

The same afternoon's script as ``careful.py``, for the array gcloud prints: the file parsed
by one ``orjson.loads`` (the whole array in memory: the quickest way, not the leanest), then
per entry the same text lookup and combined regex, the first match per job kept. Prints one
JSON object: ``{"lines": N, "jobs": {job_id: family}}`` (``lines``: entries).

    python bench/baselines/careful_gcloud_json.py FILE
"""

from __future__ import annotations

import sys

import orjson
from careful import family  # type: ignore[import-not-found]


def scan(path: str) -> dict[str, object]:
    """The first error family seen per job in the gcloud JSON array at ``path``."""
    first: dict[str, str] = {}
    with open(path, "rb") as stream:
        entries = orjson.loads(stream.read())
    for entry in entries:
        payload = entry.get("jsonPayload")
        text = payload.get("message") if isinstance(payload, dict) else None
        if not isinstance(text, str):
            text = entry.get("textPayload")
        if not isinstance(text, str):
            continue
        found = family(text)
        if found is None:
            continue
        job = ((entry.get("resource") or {}).get("labels") or {}).get("job_id")
        if job is not None and job not in first:
            first[job] = found
    return {"lines": len(entries), "jobs": first}


if __name__ == "__main__":
    sys.stdout.write(orjson.dumps(scan(sys.argv[1])).decode() + "\n")
