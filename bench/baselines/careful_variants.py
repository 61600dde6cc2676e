"""Honest variants of the careful-Python baseline (issue 32, point 3), raced by
``bench/careful_race.py``: the same answer as ``careful.py`` on every export, written other ways.

Each variant reads the sink JSONL file at ``path`` and returns ``{"lines": N, "jobs": {job_id:
family}}``: the first of the four error families seen per job, in file order. What they vary:

- ``previous``: the session-25 baseline: ``orjson.loads`` per line, one alternation of named
  groups (``(?P<oom>ran out[ -]of[ -]memory)|...``). Python's ``re`` cannot skip ahead on it:
  a branch that opens with a group gives the compiler no first characters, so the search
  tries a match at every position of every text.
- ``literal``: the same, the alternation written as plain literals (the four spellings of "ran
  out of memory" spelled out), the family looked up from the words found: ``re`` builds the
  set of the branches' first characters and skips positions that cannot start one.
- ``in-checks``: ``orjson.loads``, then ``in`` checks of the four families' leading words before
  the ``previous`` regex runs.
- ``msgspec``: ``msgspec.json`` decoding each line into small structs of the three fields read
  (the other keys skipped in C, no dict built; ``careful.py``'s), then the literal alternation;
  a line whose fields have other types is read by ``orjson`` (same answer).
- ``msgspec-in-checks``: ``careful.py`` itself: the structs, the ``in`` checks, the literals.
- ``msgspec-lines``: the structs decoded a block of lines at a time (``decode_lines``), a block
  that fails read line by line.
- ``grep-first`` (reference, not eligible): the raw line checked for the leading words before
  it is parsed. It parses only the lines the check picks, so it is not the baseline's task
  (every entry read as JSON); and it can be wrong on legal JSON, where a text escapes a letter
  of the words (``r\\u0061n out of memory``), which ``tests/test_bench.py`` shows.

    python bench/baselines/careful_variants.py VARIANT FILE
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import careful  # type: ignore[import-not-found]
import msgspec
import orjson

# The session-25 regex (``previous``): named groups, leftmost match names the family.
GROUPED = re.compile(
    r"(?P<oom>ran out[ -]of[ -]memory)"
    r"|(?P<user_code_exception>exited with a non-zero status of)"
    r"|(?P<stockout>Resources are insufficient in region)"
    r"|(?P<internal_error>Internal error occurred)"
)
# The same words as plain literals, each naming its family.
LITERALS: dict[str, str] = careful.LITERALS
LITERAL: re.Pattern[str] = careful.FAMILIES
# What every match of GROUPED holds: checked with ``in`` first.
LEADING = ("ran out", "non-zero status of", "Resources are insufficient", "Internal error")


def _entry_text(entry: dict[str, Any]) -> Any:
    payload = entry.get("jsonPayload")
    text = payload.get("message") if isinstance(payload, dict) else None
    return text if isinstance(text, str) else entry.get("textPayload")


def _job_of(entry: dict[str, Any]) -> Any:
    return ((entry.get("resource") or {}).get("labels") or {}).get("job_id")


def _orjson_scan(path: str, family: Callable[[str], str | None]) -> dict[str, object]:
    first: dict[Any, str] = {}
    lines = 0
    with open(path, "rb") as stream:
        for raw in stream:
            lines += 1
            try:
                entry = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            text = _entry_text(entry)
            if not isinstance(text, str):
                continue
            found = family(text)
            if found is None:
                continue
            job = _job_of(entry)
            if job is not None and job not in first:
                first[job] = found
    return {"lines": lines, "jobs": first}


def grouped_family(text: str) -> str | None:
    """The family of the leftmost match of :data:`GROUPED` in ``text``."""
    found = GROUPED.search(text)
    return None if found is None else found.lastgroup or ""


def literal_family(text: str) -> str | None:
    """The family of the leftmost match of :data:`LITERAL` in ``text``."""
    found = LITERAL.search(text)
    return None if found is None else LITERALS[found[0]]


def checked_family(text: str) -> str | None:
    """:func:`grouped_family`, run only on a text holding one of the :data:`LEADING` words."""
    if (
        "ran out" in text
        or "non-zero status of" in text
        or "Resources are insufficient" in text
        or "Internal error" in text
    ):
        return grouped_family(text)
    return None


# --- msgspec: careful.py's structs (``gc=False``) ------------------------------------------------

_DECODER = careful._DECODER


def _struct_answer(
    entry: careful.Entry, family: Callable[[str], str | None]
) -> tuple[Any, str] | None:
    """(job, family) of a decoded entry, None when it names no family."""
    payload = entry.jsonPayload
    text = payload.message if payload is not None else None
    if not isinstance(text, str):
        text = entry.textPayload
        if not isinstance(text, str):
            return None
    found = family(text)
    if found is None:
        return None
    resource = entry.resource
    labels = resource.labels if resource is not None else None
    return (labels.job_id if labels is not None else None), found


Family = Callable[[str], "str | None"]


def _line_answer(raw: bytes, family: Family) -> tuple[Any, str] | None:
    """(job, family) of one line, or None; the orjson reading where the structs do not fit
    (a field of another type: ``resource: []``, ``jsonPayload: "text"``...)."""
    try:
        return _struct_answer(_DECODER.decode(raw), family)
    except msgspec.ValidationError:
        pass
    except msgspec.DecodeError:
        return None
    try:
        entry = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    text = _entry_text(entry)
    found = family(text) if isinstance(text, str) else None
    return None if found is None else (_job_of(entry), found)


def msgspec_scan(path: str, family: Family = literal_family) -> dict[str, object]:
    """``msgspec`` structs a line at a time, then ``family`` of the text."""
    first: dict[Any, str] = {}
    lines = 0
    with open(path, "rb") as stream:
        for raw in stream:
            lines += 1
            answer = _line_answer(raw, family)
            if answer is not None and answer[0] is not None and answer[0] not in first:
                first[answer[0]] = answer[1]
    return {"lines": lines, "jobs": first}


def _blocks(path: str, size: int = 1 << 22) -> Iterator[bytes]:
    """``path`` in blocks of whole lines (the last may lack its ``\\n``)."""
    with open(path, "rb") as stream:
        tail = b""
        while block := stream.read(size):
            block = tail + block
            cut = block.rfind(b"\n") + 1
            if cut:
                yield block[:cut]
            tail = block[cut:]
        if tail:
            yield tail


def msgspec_lines_scan(path: str, family: Family = literal_family) -> dict[str, object]:
    """``msgspec`` structs a block of lines at a time (``decode_lines``); a block that fails
    (a bad line, a field of another type) read line by line."""
    first: dict[Any, str] = {}
    lines = 0
    for block in _blocks(path):
        lines += block.count(b"\n") + (not block.endswith(b"\n"))
        try:
            entries = _DECODER.decode_lines(block)
            answers = [_struct_answer(entry, family) for entry in entries]
        except (msgspec.ValidationError, msgspec.DecodeError):
            answers = [_line_answer(raw, family) for raw in block.splitlines()]
        for answer in answers:
            if answer is not None and answer[0] is not None and answer[0] not in first:
                first[answer[0]] = answer[1]
    return {"lines": lines, "jobs": first}


_RAW_WORDS = tuple(word.encode() for word in LEADING)


def grep_first_scan(path: str) -> dict[str, object]:
    """The raw line checked for the leading words before it is parsed (a reference: see the
    module's text)."""
    first: dict[Any, str] = {}
    lines = 0
    with open(path, "rb") as stream:
        for raw in stream:
            lines += 1
            if not any(word in raw for word in _RAW_WORDS):
                continue
            try:
                entry = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            text = _entry_text(entry)
            found = literal_family(text) if isinstance(text, str) else None
            job = _job_of(entry) if found is not None else None
            if found is not None and job is not None and job not in first:
                first[job] = found
    return {"lines": lines, "jobs": first}


def checked_literal_family(text: str) -> str | None:
    """:func:`literal_family`, run only on a text holding one of the :data:`LEADING` words."""
    if (
        "ran out" in text
        or "non-zero status of" in text
        or "Resources are insufficient" in text
        or "Internal error" in text
    ):
        return literal_family(text)
    return None


VARIANTS: dict[str, Callable[[str], dict[str, object]]] = {
    "previous": lambda path: _orjson_scan(path, grouped_family),
    "literal": lambda path: _orjson_scan(path, literal_family),
    "in-checks": lambda path: _orjson_scan(path, checked_family),
    "msgspec": msgspec_scan,
    "msgspec-in-checks": careful.scan,  # the winner: careful.py itself
    "msgspec-lines": msgspec_lines_scan,
    "grep-first": grep_first_scan,
}
# Not eligible as the baseline: parses only the lines its raw search picks.
REFERENCE_ONLY = ("grep-first",)


if __name__ == "__main__":
    sys.stdout.write(orjson.dumps(VARIANTS[sys.argv[1]](sys.argv[2])).decode() + "\n")
