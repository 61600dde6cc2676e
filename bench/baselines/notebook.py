"""The notebook baseline: load the whole export with pandas, then search each category.

``pandas.read_json(FILE, lines=True)``, the message column, ``str.contains`` per error
family, first match per job. Prints ``{"lines": N, "jobs": {job_id: family}}``.

    python bench/baselines/notebook.py FILE
"""

from __future__ import annotations

import json
import sys

import pandas as pd

FAMILIES = {
    "oom": r"ran out[ -]of[ -]memory",
    "user_code_exception": r"exited with a non-zero status of",
    "stockout": r"Resources are insufficient in region",
    "internal_error": r"Internal error occurred",
}


def scan(path: str) -> dict[str, object]:
    """The first error family seen per job in the sink file at ``path``."""
    frame = pd.read_json(path, lines=True)
    message = frame["jsonPayload"].map(lambda p: p.get("message") if isinstance(p, dict) else None)
    if "textPayload" in frame:
        message = message.fillna(frame["textPayload"])
    message = message.fillna("").astype(str)
    job = frame["resource"].map(lambda r: (r.get("labels") or {}).get("job_id"))
    first: dict[str, tuple[int, str]] = {}
    for family, pattern in FAMILIES.items():
        hits = message.str.contains(pattern, regex=True)
        for index, job_id in job[hits].items():
            # OOM text also says "exited with a non-zero status": the earlier family wins a tie.
            if job_id not in first or index < first[job_id][0]:
                first[job_id] = (int(index), family)
    return {"lines": len(frame), "jobs": {k: v[1] for k, v in first.items()}}


if __name__ == "__main__":
    sys.stdout.write(json.dumps(scan(sys.argv[1])) + "\n")
