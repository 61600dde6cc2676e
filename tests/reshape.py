"""Legal re-serialisations of sink JSONL lines: the same entries in the shapes other writers
give them (issue 19 point 2), for the fast path's identity tests and its measurements.

Each function takes the lines of an export (bytes, each ending in ``\\n``) and yields them in
another legal form that names the same entries: timestamps as Python's ``isoformat()``, as
google-cloud-logging's ``to_api_repr()`` (6 digits), as Go (trailing zeros trimmed) or with an
offset; JSON whitespace around the objects; blank lines; entries of other resource types and
audit entries mixed in; long tracebacks.

    python -m tests.reshape SHAPE IN OUT     # one shape of an export, for bench/instructions.py
"""

from __future__ import annotations

import random
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta, timezone

import orjson

_SINK_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{9})Z")


def _moment(stamp: str) -> tuple[datetime, str]:
    """The second of a sink timestamp (aware UTC) and its nine fraction digits."""
    found = _SINK_TIME.fullmatch(stamp)
    assert found, stamp
    return datetime.fromisoformat(found.group(1)).replace(tzinfo=UTC), found.group(2)


def isoformat(stamp: str) -> str:
    """What Python's ``datetime.isoformat()`` writes of the moment: microseconds (none when
    they are zero) and ``+00:00``."""
    second, digits = _moment(stamp)
    return (second + timedelta(microseconds=int(digits[:6]))).isoformat()


def six_digits(stamp: str) -> str:
    """What google-cloud-logging's ``to_api_repr()`` writes: 6 digits and ``Z``."""
    return stamp[:26] + "Z"


def go_trimmed(stamp: str) -> str:
    """What Go's ``time.RFC3339Nano`` writes: trailing zeros of the fraction trimmed (and the
    dot when nothing is left)."""
    fraction = stamp[20:29].rstrip("0")
    return stamp[:19] + ("." + fraction if fraction else "") + "Z"


def bigquery(stamp: str) -> str:
    """What ``bq extract`` and the BigQuery console write of a sink table's TIMESTAMP:
    a space, microseconds with trailing zeros trimmed (no dot when none is left), ``UTC``."""
    fraction = stamp[20:26].rstrip("0")
    return f"{stamp[:10]} {stamp[11:19]}{'.' + fraction if fraction else ''} UTC"


def with_offset(stamp: str, minutes: int, digits: int = 9, zulu: str = "Z") -> str:
    """The same moment written at UTC offset ``minutes`` (``zulu`` when 0 and not ``+00:00``),
    with ``digits`` fraction digits (the moment's own, cut)."""
    second, fraction = _moment(stamp)
    local = second.astimezone(timezone(timedelta(minutes=minutes)))
    text = local.strftime("%Y-%m-%dT%H:%M:%S")
    if digits:
        text += "." + fraction[:digits]
    if minutes == 0 and zulu != "+00:00":
        return text + zulu
    sign = "+" if minutes >= 0 else "-"
    hours, rest = divmod(abs(minutes), 60)
    return f"{text}{sign}{hours:02d}:{rest:02d}"


def retime(lines: Iterable[bytes], form: Callable[[str], str]) -> Iterator[bytes]:
    """``lines`` with each entry's ``timestamp`` written by ``form`` (key order kept)."""
    for line in lines:
        entry = orjson.loads(line)
        if isinstance(entry.get("timestamp"), str):
            entry["timestamp"] = form(entry["timestamp"])
        yield orjson.dumps(entry) + b"\n"


def spaced(lines: Iterable[bytes], before: bytes = b"", after: bytes = b" ") -> Iterator[bytes]:
    """``lines`` with JSON whitespace before and after each object."""
    for line in lines:
        yield before + line.rstrip(b"\n") + after + b"\n"


def blank_lines(lines: Iterable[bytes], every: int = 500, blank: bytes = b"\n") -> Iterator[bytes]:
    """``lines`` with a blank line (``blank``) after every ``every`` lines."""
    for number, line in enumerate(lines, 1):
        yield line
        if number % every == 0:
            yield blank


def foreign_entry(rng: random.Random, stamp: str) -> dict[str, object]:
    """An entry of a project-wide sink that no job wrote: another resource's, or an audit
    entry, some reading like a job's messages."""
    kind = rng.choice(("gce_instance", "k8s_container", "cloud_run_revision", "audit"))
    text = rng.choice(("Job failed.", "healthy", "GET /index.html 200", "Traceback (most recent"))
    if kind == "audit":
        return {
            "insertId": f"a{rng.getrandbits(40):x}",
            "logName": "projects/acme-ml-prod/logs/cloudaudit.googleapis.com%2Factivity",
            "protoPayload": {"methodName": "v1.compute.instances.insert", "status": {}},
            "resource": {"labels": {"project_id": "acme-ml-prod"}, "type": "gce_instance"},
            "severity": "NOTICE",
            "timestamp": stamp,
        }
    return {
        "insertId": f"f{rng.getrandbits(40):x}",
        "labels": {"compute.googleapis.com/resource_id": str(rng.getrandbits(60))},
        "logName": f"projects/acme-ml-prod/logs/{kind}",
        "resource": {
            "labels": {"project_id": "acme-ml-prod", "zone": "us-central1-a"},
            "type": kind,
        },
        "severity": "INFO",
        "textPayload": text,
        "timestamp": stamp,
    }


def foreign(lines: Iterable[bytes], share: float = 0.2, seed: int = 0) -> Iterator[bytes]:
    """``lines`` with entries of other resource types (and audit entries) mixed in, about
    ``share`` of the result."""
    rng = random.Random(seed)
    odds = share / (1 - share)
    for line in lines:
        yield line
        if rng.random() < odds:  # one foreign entry after odds of the lines: share of all
            stamp = orjson.loads(line).get("timestamp")
            yield orjson.dumps(foreign_entry(rng, stamp if isinstance(stamp, str) else "")) + b"\n"


def long_traceback(rng: random.Random, size: int) -> str:
    """A Python traceback of about ``size`` characters: a deep recursion's frames."""
    frames = ["Traceback (most recent call last):"]
    depth = 0
    while sum(map(len, frames)) < size:
        depth += 1
        frames.append(
            f'  File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line'
            f" {rng.randint(1, 2000)}, in _call_impl\n    return forward_call(*input, **kwargs)"
        )
    frames.append("RecursionError: maximum recursion depth exceeded while calling a Python object")
    return "\n".join(frames)


def long_texts(
    lines: Iterable[bytes], count: int = 40, size: int = 50_000, every: int = 600, seed: int = 0
) -> Iterator[bytes]:
    """``lines`` with the text of up to ``count`` entries (one in ``every``) replaced by a long
    traceback of about ``size`` characters."""
    rng = random.Random(seed)
    done = 0
    for number, line in enumerate(lines):
        if done < count and number % every == every - 1:
            entry = orjson.loads(line)
            payload = entry.get("jsonPayload")
            if isinstance(payload, dict) and isinstance(payload.get("message"), str):
                payload["message"] = long_traceback(rng, size)
            elif isinstance(entry.get("textPayload"), str):
                entry["textPayload"] = long_traceback(rng, size)
            else:
                yield line
                continue
            done += 1
            yield orjson.dumps(entry) + b"\n"
            continue
        yield line


SHAPES: dict[str, Callable[[Iterable[bytes]], Iterator[bytes]]] = {
    "isoformat": lambda lines: retime(lines, isoformat),
    "six-digits": lambda lines: retime(lines, six_digits),
    "go-trimmed": lambda lines: retime(lines, go_trimmed),
    "bigquery": lambda lines: retime(lines, bigquery),
    "offset": lambda lines: retime(lines, lambda s: with_offset(s, 330)),
    "space-after": spaced,
    "blank-lines": blank_lines,
    "foreign": foreign,
    "long-texts": long_texts,
}


def main(argv: list[str]) -> int:
    shape, source, target = argv
    with open(source, "rb") as lines, open(target, "wb") as out:
        out.writelines(SHAPES[shape](lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
