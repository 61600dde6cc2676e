"""The careful-Python baseline: what a competent engineer writes in an afternoon.

One pass over the file; each line decoded by ``msgspec`` into small structs of the three fields
read (the LogEntry's other keys skipped in C, no dict built); ``in`` checks of the four error
families' leading words, then one alternation of plain literals (which Python's ``re`` scans
for by their first characters) naming the family; the first match per job kept. A line whose
fields have other types than the structs' is read by ``orjson`` instead. Prints one JSON
object: ``{"lines": N, "jobs": {job_id: family}}``.

The fastest of the honest variants raced by ``bench/careful_race.py`` (issue 32, point 3;
the others, and this script's session-25 form, ``previous``, are in ``careful_variants.py``,
with the same answers): about 3x less CPU than ``previous`` on the bench's 200 MB fleet.

    python bench/baselines/careful.py FILE
"""

from __future__ import annotations

import re
import sys
from typing import Any

import msgspec
import orjson

# Each spelling names its family. The OOM sentence also says "exited with a non-zero status",
# but its own words come first in the text, so a leftmost search names it right.
LITERALS = {
    **{f"ran out{a}of{b}memory": "oom" for a in " -" for b in " -"},
    "exited with a non-zero status of": "user_code_exception",
    "Resources are insufficient in region": "stockout",
    "Internal error occurred": "internal_error",
}
FAMILIES = re.compile("|".join(map(re.escape, LITERALS)))


def family(text: str) -> str | None:
    """The error family ``text`` names (its leftmost one), None for most texts."""
    if (
        "ran out" in text
        or "non-zero status of" in text
        or "Resources are insufficient" in text
        or "Internal error" in text
    ):
        found = FAMILIES.search(text)
        if found is not None:
            return LITERALS[found[0]]
    return None


# The structs hold no cycles: not tracked by the garbage collector.
class Payload(msgspec.Struct, gc=False):
    message: Any = None


class Labels(msgspec.Struct, gc=False):
    job_id: Any = None


class Resource(msgspec.Struct, gc=False):
    labels: Labels | None = None


class Entry(msgspec.Struct, gc=False):
    jsonPayload: Payload | None = None  # the LogEntry's own key names
    textPayload: Any = None
    resource: Resource | None = None


_DECODER = msgspec.json.Decoder(Entry)


def _answer(raw: bytes) -> tuple[Any, str] | None:
    """(job id, family) of one sink line, None when it names no family."""
    try:
        entry = _DECODER.decode(raw)
    except msgspec.ValidationError:  # a field of another type: read as plain JSON
        return _plain_answer(raw)
    except msgspec.DecodeError:
        return None
    payload = entry.jsonPayload
    text = payload.message if payload is not None else None
    if not isinstance(text, str):
        text = entry.textPayload
        if not isinstance(text, str):
            return None
    found = family(text)
    if found is None:
        return None
    labels = entry.resource.labels if entry.resource is not None else None
    return (labels.job_id if labels is not None else None), found


def _plain_answer(raw: bytes) -> tuple[Any, str] | None:
    try:
        entry = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    payload = entry.get("jsonPayload")
    text = payload.get("message") if isinstance(payload, dict) else None
    if not isinstance(text, str):
        text = entry.get("textPayload")
    found = family(text) if isinstance(text, str) else None
    if found is None:
        return None
    return ((entry.get("resource") or {}).get("labels") or {}).get("job_id"), found


def scan(path: str) -> dict[str, object]:
    """The first error family seen per job in the sink file at ``path``."""
    first: dict[Any, str] = {}
    lines = 0
    with open(path, "rb") as stream:
        for raw in stream:
            lines += 1
            answer = _answer(raw)
            if answer is not None and answer[0] is not None and answer[0] not in first:
                first[answer[0]] = answer[1]
    return {"lines": lines, "jobs": first}


if __name__ == "__main__":
    sys.stdout.write(orjson.dumps(scan(sys.argv[1])).decode() + "\n")
