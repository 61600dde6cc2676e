"""The careful-Python baseline: what a competent engineer writes in an afternoon.

One pass over the file, ``orjson.loads`` per line, one combined regex over the message text
for the four error families, the first match per job kept. Prints one JSON object:
``{"lines": N, "jobs": {job_id: family}}``.

    python bench/baselines/careful.py FILE
"""

from __future__ import annotations

import re
import sys

import orjson

# One alternation for the four families; the OOM sentence also says "exited with a non-zero
# status", but its own words come first in the text, so a leftmost search names it right.
FAMILIES = re.compile(
    r"(?P<oom>ran out[ -]of[ -]memory)"
    r"|(?P<user_code_exception>exited with a non-zero status of)"
    r"|(?P<stockout>Resources are insufficient in region)"
    r"|(?P<internal_error>Internal error occurred)"
)


def scan(path: str) -> dict[str, object]:
    """The first error family seen per job in the sink file at ``path``."""
    first: dict[str, str] = {}
    lines = 0
    with open(path, "rb") as stream:
        for raw in stream:
            lines += 1
            try:
                entry = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
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
    return {"lines": lines, "jobs": first}


if __name__ == "__main__":
    sys.stdout.write(orjson.dumps(scan(sys.argv[1])).decode() + "\n")
