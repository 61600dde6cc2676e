"""The careful-Python baseline for ``gcloud logging read`` without ``--format`` (YAML).

The same afternoon's script as ``careful.py``, for the YAML gcloud prints: the documents read
by ``yaml.load_all`` through libyaml (``CSafeLoader``, the quickest PyYAML has; streamed, a
document at a time), then per entry the same text lookup and combined regex, the first match
per job kept. Prints one JSON object: ``{"lines": N, "jobs": {job_id: family}}`` (``lines``:
entries).

    python bench/baselines/careful_gcloud_yaml.py FILE
"""

from __future__ import annotations

import sys

import orjson
import yaml
from careful import FAMILIES  # type: ignore[import-not-found]


def scan(path: str) -> dict[str, object]:
    """The first error family seen per job in the gcloud YAML at ``path``."""
    first: dict[str, str] = {}
    entries = 0
    with open(path, "rb") as stream:
        for entry in yaml.load_all(stream, Loader=yaml.CSafeLoader):
            if not isinstance(entry, dict):
                continue
            entries += 1
            payload = entry.get("jsonPayload")
            text = payload.get("message") if isinstance(payload, dict) else None
            if not isinstance(text, str):
                text = entry.get("textPayload")
            if not isinstance(text, str):
                continue
            found = FAMILIES.search(text)
            if found is None:
                continue
            job = ((entry.get("resource") or {}).get("labels") or {}).get("job_id")
            if job is not None and job not in first:
                first[job] = found.lastgroup or ""
    return {"lines": entries, "jobs": first}


if __name__ == "__main__":
    sys.stdout.write(orjson.dumps(scan(sys.argv[1])).decode() + "\n")
