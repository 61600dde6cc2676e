"""The shape matrix's inputs: the simulator's fleet, re-serialised as users' exports differ.

Each :class:`Shape` turns the cached fleet (``bench/out/fleet-<bytes>-seed<N>.jsonl``) into one
variant, streamed line by line to ``bench/out/<shape>-<bytes>-seed<N>.<ext>`` (never the whole
export in memory) and cached there; ``bench/run.py --shapes`` times jobdoctor and the baselines
on each. The variants hold the same entries as the fleet (but for the ones that add foreign
entries, long tracebacks or event-dense texts, which say so); only their serialisation differs.

A variant's side file ``<name>.meta.json`` records its bytes, lines, entries and how many
records match a rule (``jobdoctor classify``'s rows), counted once when the variant is made.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

# --- line sources ------------------------------------------------------------------------------


def lines_of(path: Path) -> Iterator[bytes]:
    """The raw lines of ``path`` (each with its ``\\n``), streamed."""
    with path.open("rb") as stream:
        yield from stream


def reversed_lines(path: Path, block: int = 1 << 22) -> Iterator[bytes]:
    """The non-empty lines of ``path`` last first (without their ``\\n``), read from the end."""
    with path.open("rb") as stream:
        end = stream.seek(0, os.SEEK_END)
        tail = b""
        while end > 0:
            start = max(0, end - block)
            stream.seek(start)
            pieces = (stream.read(end - start) + tail).split(b"\n")
            end = start
            # The first piece may be the end of a line that began in the block before.
            tail = pieces.pop(0) if start > 0 else b""
            yield from (line for line in reversed(pieces) if line)


def dumps(entry: dict[str, Any], *, ensure_ascii: bool = False) -> bytes:
    """One compact line as the simulator's sink writer makes it."""
    return (json.dumps(entry, separators=(",", ":"), ensure_ascii=ensure_ascii) + "\n").encode()


# --- timestamps ---------------------------------------------------------------------------------

# The sink writes RFC 3339 with nine fractional digits and Z; only the two top-level fields
# carry timestamps (a quote inside a text is escaped, so this cannot match inside one).
_STAMP = re.compile(rb'"(timestamp|receiveTimestamp)":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{9})Z"')


def _isoformat(match: re.Match[bytes]) -> bytes:
    # datetime.isoformat() of an aware UTC time: microseconds, dropped when zero; +00:00.
    micros = match[3][:6]
    fraction = b"" if micros == b"000000" else b"." + micros
    return b'"%s":"%s%s+00:00"' % (match[1], match[2], fraction)


def _micros(match: re.Match[bytes]) -> bytes:
    # google-cloud-logging's to_api_repr(): strftime("%Y-%m-%dT%H:%M:%S.%fZ").
    return b'"%s":"%s.%sZ"' % (match[1], match[2], match[3][:6])


def _trimmed(match: re.Match[bytes]) -> bytes:
    # Go's time.RFC3339Nano: trailing zeros of the fraction dropped, and the dot with them.
    fraction = match[3].rstrip(b"0")
    return b'"%s":"%s%sZ"' % (match[1], match[2], b"." + fraction if fraction else b"")


def _stamps(rewrite: Callable[[re.Match[bytes]], bytes]) -> Callable[[bytes], bytes]:
    return lambda line: _STAMP.sub(rewrite, line)


def _stamp_of(line: bytes) -> str:
    found = re.search(rb'"timestamp":"([^"]+)"', line)
    return found[1].decode() if found else "2024-03-11T08:00:00.000000000Z"


# --- per-line rewrites --------------------------------------------------------------------------


def _shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {key: _shuffled(value[key], rng) for key in keys}
    if isinstance(value, list):
        return [_shuffled(item, rng) for item in value]
    return value


def _with_extra_fields(entry: dict[str, Any], index: int) -> dict[str, Any]:
    # LogEntry fields the fleet does not write, and payload keys a logging library adds; in
    # the sink's order (sorted), as a real sink would place them.
    job = entry.get("resource", {}).get("labels", {}).get("job_id", "0")
    entry["trace"] = f"projects/acme-ml-prod/traces/{index:032x}"
    entry["spanId"] = f"{index * 7919 % (1 << 64):016x}"
    entry["traceSampled"] = index % 2 == 0
    entry["sourceLocation"] = {
        "file": "trainer/task.py",
        "line": str(index % 400),
        "function": "train",
    }
    entry["operation"] = {"id": f"job-{job}", "producer": "trainer", "first": index == 0}
    entry["split"] = {"uid": f"{index:x}", "index": 0, "totalSplits": 1}
    payload = entry.get("jsonPayload")
    if isinstance(payload, dict):
        payload["python_logger"] = "trainer.task"
        payload["lineno"] = index % 400
        payload["thread"] = 140_000_000_000 + index % 8
        entry["jsonPayload"] = dict(sorted(payload.items()))
    return dict(sorted(entry.items()))


# --- foreign entries of a project-wide sink ----------------------------------------------------

_FOREIGN_TEXTS = (
    "pam_unix(sshd:session): session closed for user root",
    "google_guest_agent: Updating keys for user deploy.",
    "GET /healthz 200 3ms",
    "Started Daily apt download activities.",
    "worker 3 finished batch 18812 in 2.1s",
    "Job failed.",  # a VM's syslog line that reads like the service's (platform.md section 9)
)


def _foreign(index: int, stamp: str, rng: random.Random) -> bytes:
    kind = index % 4
    text = _FOREIGN_TEXTS[rng.randrange(len(_FOREIGN_TEXTS))]
    entry: dict[str, Any]
    if kind == 0:
        entry = {
            "insertId": f"gce{index:x}",
            "logName": "projects/acme-ml-prod/logs/syslog",
            "resource": {
                "labels": {"instance_id": str(4_000_000 + index % 97), "zone": "us-central1-a"},
                "type": "gce_instance",
            },
            "severity": "INFO",
            "textPayload": text,
            "timestamp": stamp,
        }
    elif kind == 1:
        entry = {
            "insertId": f"k8s{index:x}",
            "jsonPayload": {"level": "info", "message": text},
            "logName": "projects/acme-ml-prod/logs/stdout",
            "resource": {
                "labels": {
                    "cluster_name": "serving",
                    "container_name": "api",
                    "namespace_name": "default",
                    "pod_name": f"api-{index % 13}",
                },
                "type": "k8s_container",
            },
            "timestamp": stamp,
        }
    elif kind == 2:
        entry = {
            "httpRequest": {"requestMethod": "GET", "status": 200, "requestUrl": "/predict"},
            "insertId": f"run{index:x}",
            "logName": "projects/acme-ml-prod/logs/run.googleapis.com%2Frequests",
            "resource": {
                "labels": {"revision_name": "predict-00042", "service_name": "predict"},
                "type": "cloud_run_revision",
            },
            "severity": "INFO",
            "textPayload": text,
            "timestamp": stamp,
        }
    else:
        entry = {
            "insertId": f"audit{index:x}",
            "logName": "projects/acme-ml-prod/logs/cloudaudit.googleapis.com%2Factivity",
            "protoPayload": {
                "@type": "type.googleapis.com/google.cloud.audit.AuditLog",
                "methodName": "google.cloud.aiplatform.v1.JobService.CreateCustomJob",
                "serviceName": "aiplatform.googleapis.com",
                "status": {"message": text},
            },
            "resource": {
                "labels": {"service": "aiplatform.googleapis.com"},
                "type": "audited_resource",
            },
            "severity": "NOTICE",
            "timestamp": stamp,
        }
    return dumps(entry)


# --- event-dense and long texts -----------------------------------------------------------------

# A harmless traceback: PyTorch's data loader at interpreter exit ("Exception ignored in").
WARNING_TRACEBACK = (
    "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f3a2c1e0d30>\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1479,'
    " in __del__\n"
    "    self._shutdown_workers()\n"
    '  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1437,'
    " in _shutdown_workers\n"
    "    if self._persistent_workers or self._workers_status[worker_id]:\n"
    "AttributeError: '_MultiProcessingDataLoaderIter' object has no attribute '_workers_status'"
)
MISSING_MODULE = "ModuleNotFoundError: No module named 'x'"


def checkpoint_text(job: str, step: int) -> str:
    """A checkpoint line; its number differs from line to line, as a real one's does."""
    return f"Saving checkpoint to gs://acme-ml-ckpt/{job}/checkpoint-{step:04d}"


def long_traceback(size: int = 50_000) -> str:
    """A deep-recursion traceback of about ``size`` characters, one message."""
    frame = (
        '  File "/opt/trainer/trainer/model.py", line {n}, in forward\n'
        "    return self.block(x) + self.residual(x)\n"
    )
    frames = []
    length = 0
    n = 0
    while length < size:
        frames.append(frame.format(n=100 + n % 300))
        length += len(frames[-1])
        n += 1
    return (
        "Traceback (most recent call last):\n"
        + "".join(frames)
        + "RecursionError: maximum recursion depth exceeded while calling a Python object"
    )


def _is_chatter(line: bytes) -> bool:
    # A container's own output line (the texts the dense and long-text variants replace).
    return b'/log_area":"user"' in line and b'"jsonPayload":{' in line and b'"message":"' in line


# --- the shapes ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shape:
    """One row of the matrix: how the variant is made from the fleet, and what reads it."""

    name: str
    label: str
    fmt: str  # "jsonl", "stream-logs", "gcloud-json" or "gcloud-yaml": which careful baseline reads
    density: float | None = None  # the event-density axis: share of lines matching a rule

    @property
    def ext(self) -> str:
        return {
            "jsonl": "jsonl",
            "stream-logs": "txt",
            "gcloud-json": "json",
            "gcloud-yaml": "yaml",
        }[self.fmt]


SHAPES = (
    Shape("fleet", "the fleet as the simulator writes it (sink JSONL)", "jsonl"),
    Shape("ts-offset", "timestamps `+00:00` (Python `isoformat()`)", "jsonl"),
    Shape("ts-micros", "6-digit fractions (google-cloud-logging `to_api_repr()`)", "jsonl"),
    Shape("ts-trimmed", "Go-trimmed fractions (trailing zeros dropped)", "jsonl"),
    Shape("space", "a space after each object", "jsonl"),
    Shape("blank", "one blank line in 500", "jsonl"),
    Shape("foreign", "20% entries of other resource types (project-wide sink)", "jsonl"),
    Shape("long-text", "50 KB tracebacks (400 entries at 200 MB)", "jsonl"),
    Shape("crlf", "CRLF line ends", "jsonl"),
    Shape("ascii", "`ensure_ascii` (non-ASCII as `\\uXXXX`)", "jsonl"),
    Shape("key-order", "key order shuffled", "jsonl"),
    Shape("extra-fields", "extra LogEntry and payload fields", "jsonl"),
    Shape("dense-1", "event density 1% of lines", "jsonl", 0.01),
    Shape("dense-10", "event density 10% of lines", "jsonl", 0.10),
    Shape("dense-30", "event density 30% of lines", "jsonl", 0.30),
    Shape("stream-logs", "stream-logs text of the same entries", "stream-logs"),
    Shape("gcloud-json", "gcloud JSON array of the same entries", "gcloud-json"),
    Shape("gcloud-yaml", "gcloud's default YAML of the same entries", "gcloud-yaml"),
)
BY_NAME = {shape.name: shape for shape in SHAPES}
LONG_TEXTS = 400
_FOREIGN_EVERY = 4  # one foreign entry after every 4 of the fleet's: 20% of the entries
_BLANK_EVERY = 500


def pick(names: Iterable[str]) -> list[Shape]:
    """The shapes named (all for ``all``), in the matrix's order; SystemExit for a bad name."""
    wanted = set(names)
    if "all" in wanted:
        return list(SHAPES)
    unknown = wanted - set(BY_NAME)
    if unknown:
        raise SystemExit(f"unknown shape(s) {sorted(unknown)}; known: {', '.join(BY_NAME)}")
    return [shape for shape in SHAPES if shape.name in wanted]


def variant_path(shape: Shape, fleet: Path) -> Path:
    """Where the variant of ``fleet`` for ``shape`` is cached (the fleet itself for ``fleet``)."""
    stem = fleet.name.removeprefix("fleet-").removesuffix(".jsonl")  # "<bytes>-seed<N>"
    return fleet if shape.name == "fleet" else fleet.with_name(f"{shape.name}-{stem}.{shape.ext}")


def fleet_export(size: int, seed: int, out_dir: Path) -> Path:
    """The simulator's fleet of ``size`` bytes, ``out_dir/fleet-<size>-seed<N>.jsonl``, made
    on first use (streamed)."""
    from analyzer.simulate import fleet

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"fleet-{size}-seed{seed}.jsonl"
    if not path.exists():
        partial = path.with_suffix(".partial")
        with partial.open("wb") as stream:
            stream.writelines(fleet(size, seed))
        partial.replace(path)
    return path


def variant(shape: Shape, fleet: Path, seed: int) -> Path:
    """The cached variant of ``fleet`` for ``shape`` (made on first use), with its meta file."""
    path = variant_path(shape, fleet)
    meta = meta_path(path)
    if path.exists() and meta.exists():
        return path
    if path == fleet:
        entries = _count_lines(fleet)
    else:
        partial = path.with_suffix(".partial")
        with partial.open("wb") as out:
            entries = _make(shape, fleet, out, seed)
        partial.replace(path)
    record = {
        "bytes": path.stat().st_size,
        "lines": _count_lines(path),
        "entries": entries,
        "matching_records": len(matching_lines(path)),
    }
    meta.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return path


def meta_path(path: Path) -> Path:
    """Where the bytes, lines and matching lines of a variant are recorded."""
    return path.with_name(path.name + ".meta.json")


def read_meta(path: Path) -> dict[str, int]:
    """The recorded bytes, lines and matching lines of the variant at ``path``."""
    meta: dict[str, int] = json.loads(meta_path(path).read_text(encoding="utf-8"))
    return meta


def matching_lines(path: Path) -> set[int]:
    """Line numbers (1-based) of the records that match a rule: ``jobdoctor classify``'s rows."""
    command = [sys.executable, "-m", "analyzer.cli", "classify", "--format", "jsonl", str(path)]
    found: set[int] = set()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as process:
        assert process.stdout is not None
        for row in process.stdout:
            line = json.loads(row).get("line")
            if isinstance(line, int):
                found.add(line)
    return found


def _count_lines(path: Path) -> int:
    with path.open("rb") as stream:
        return sum(block.count(b"\n") for block in iter(lambda: stream.read(1 << 22), b""))


def _make(shape: Shape, fleet: Path, out: BinaryIO, seed: int) -> int:
    """Write ``shape``'s variant of ``fleet`` to ``out``; the number of entries written."""
    rng = random.Random(f"shape:{shape.name}:{seed}")
    simple: dict[str, Callable[[bytes], bytes]] = {
        "ts-offset": _stamps(_isoformat),
        "ts-micros": _stamps(_micros),
        "ts-trimmed": _stamps(_trimmed),
        "space": lambda line: line[:-1] + b" \n",
        "crlf": lambda line: line[:-1] + b"\r\n",
        "ascii": lambda line: dumps(json.loads(line), ensure_ascii=True),
        "key-order": lambda line: dumps(_shuffled(json.loads(line), rng)),
    }
    entries = 0
    if shape.name in simple:
        rewrite = simple[shape.name]
        for line in lines_of(fleet):
            out.write(rewrite(line))
            entries += 1
    elif shape.name == "blank":
        for entries, line in enumerate(lines_of(fleet), 1):
            out.write(line + b"\n" if entries % _BLANK_EVERY == 0 else line)
    elif shape.name == "extra-fields":
        for index, line in enumerate(lines_of(fleet)):
            out.write(dumps(_with_extra_fields(json.loads(line), index)))
            entries += 1
    elif shape.name == "foreign":
        for index, line in enumerate(lines_of(fleet), 1):
            out.write(line)
            entries += 1
            if index % _FOREIGN_EVERY == 0:
                out.write(_foreign(index // _FOREIGN_EVERY, _stamp_of(line), rng))
                entries += 1
    elif shape.name == "long-text":
        entries = _write_long_texts(fleet, out)
    elif shape.density is not None:
        entries = _write_dense(fleet, out, shape.density, rng)
    elif shape.fmt == "stream-logs":
        entries = _write_stream_logs(fleet, out)
    elif shape.fmt == "gcloud-json":
        entries = _write_gcloud_json(fleet, out)
    elif shape.fmt == "gcloud-yaml":
        entries = _write_gcloud_yaml(fleet, out)
    else:
        raise AssertionError(shape.name)
    return entries


def long_text_count(fleet_bytes: int) -> int:
    """How many 50 KB tracebacks the long-text variant holds: 400 at 200 MB, in proportion."""
    return max(1, round(LONG_TEXTS * fleet_bytes / 200e6))


def _write_long_texts(fleet: Path, out: BinaryIO) -> int:
    # Spread evenly over the export: the first chatter line of each stretch becomes a traceback.
    lines = _count_lines(fleet)
    count = long_text_count(fleet.stat().st_size)
    every = max(1, lines // count)
    text = long_traceback()
    placed = 0
    for index, line in enumerate(lines_of(fleet)):
        if placed < count and index >= placed * every and _is_chatter(line):
            entry = json.loads(line)
            entry["jsonPayload"]["message"] = text
            line = dumps(entry)
            placed += 1
        out.write(line)
    return lines


def _write_dense(fleet: Path, out: BinaryIO, density: float, rng: random.Random) -> int:
    # Chatter lines that match no rule become checkpoint lines (a number per job and step),
    # a harmless warning traceback or a missing module, until ``density`` of all lines match.
    matched = matching_lines(fleet)
    lines = chatter = 0
    for number, line in enumerate(lines_of(fleet), 1):
        lines += 1
        chatter += number not in matched and _is_chatter(line)
    share = max(0.0, min(1.0, (density * lines - len(matched)) / max(1, chatter)))
    steps: dict[str, int] = {}
    for number, line in enumerate(lines_of(fleet), 1):
        if number not in matched and _is_chatter(line) and rng.random() < share:
            entry = json.loads(line)
            job = entry["resource"]["labels"].get("job_id", "0")
            draw = rng.random()
            if draw < 0.6:
                steps[job] = steps.get(job, 0) + 1
                text = checkpoint_text(job, steps[job] * 50)
            elif draw < 0.85:
                text = WARNING_TRACEBACK
            else:
                text = MISSING_MODULE
            entry["jsonPayload"]["message"] = text
            line = dumps(entry)
        out.write(line)
    return lines


def _write_stream_logs(fleet: Path, out: BinaryIO) -> int:
    # The simulator's own stream-logs writer, fed one entry at a time (it streams).
    import io

    from analyzer.simulate import write

    entries = 0

    def read() -> Iterator[dict[str, Any]]:
        nonlocal entries
        for line in lines_of(fleet):
            entries += 1
            yield json.loads(line)

    text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=False)
    write(read(), "stream-logs", text)
    text.flush()
    text.detach()
    return entries


def _write_gcloud_json(fleet: Path, out: BinaryIO) -> int:
    # The simulator's gcloud-json layout (json.dumps of the list, sorted keys, indent 2,
    # newest first) written an element at a time: the sink's lines read from the end. The
    # sink's small reorderings come out reversed too, as gcloud would not print them; the
    # readers sort by time anyway.
    out.write(b"[")
    separator = b"\n  "
    entries = 0
    for entries, line in enumerate(reversed_lines(fleet), 1):  # noqa: B007
        element = json.dumps(json.loads(line), indent=2, sort_keys=True, ensure_ascii=False)
        out.write(separator + element.replace("\n", "\n  ").encode())
        separator = b",\n  "
    out.write(b"\n]\n")
    return entries


def _write_gcloud_yaml(fleet: Path, out: BinaryIO) -> int:
    # What gcloud logging read prints without --format (the simulator's writer: "---" before
    # each entry, width 80, literal blocks), newest first as _write_gcloud_json reads them.
    from analyzer.simulate.writers import gcloud_yaml

    entries = 0
    for entries, line in enumerate(reversed_lines(fleet), 1):  # noqa: B007
        out.write(gcloud_yaml(json.loads(line)).encode())
    return entries


def main(argv: list[str] | None = None) -> None:
    """Make the fleet and the variants named (all by default), for ``bench/run.py``."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--fleet-bytes", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--shape", action="append", default=[])
    args = parser.parse_args(argv)
    fleet = fleet_export(args.fleet_bytes, args.seed, args.out_dir)
    for shape in pick(args.shape) if args.shape else []:
        variant(shape, fleet, args.seed)


if __name__ == "__main__":
    main()
