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

import hashlib
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


# --- near misses and repeated real tracebacks (issue 32) ----------------------------------------

# What real training logs repeat at every step or start: texts that hold a rule's literal word
# (the prefilter lets them through) but match no rule. Each is a template: ``{step}`` and the
# other fields are filled per job and step, as a real line's numbers differ (tests/test_bench.py
# checks every one against the rule book). Weights: how often each is drawn.
NEAR_MISSES: tuple[tuple[int, str], ...] = (
    # A retry wrapper's own line about a harmless, retried failure.
    (
        4,
        "[retry] fetch_shard failed: ConnectionResetError(104, 'Connection reset by peer'),"
        " retrying in {seconds}.0s (attempt {attempt}/5)",
    ),
    # A sitecustomize that imports what the image lacks: printed by every process at start.
    (2, "Error in sitecustomize; set PYTHONVERBOSE for traceback:"),
    # pip at every start of a container that installs its requirements.
    (
        1,
        "WARNING: Running pip as the 'root' user can result in broken permissions and"
        " conflicting behaviour with the system package manager. It is recommended to use a"
        " virtual environment instead: https://pip.pypa.io/warnings/venv",
    ),
    (1, "WARNING: There was an error checking the latest version of pip."),
    (
        1,
        "ERROR: pip's dependency resolver does not currently take into account all the"
        " packages that are installed. This behaviour is the source of the following dependency"
        " conflicts.",
    ),
    # Progress lines that name memory, errors, quota, regions, checkpoints.
    (
        4,
        "step {step}: Out of memory? No | peak memory {memory}.{tenth} GiB | error rate"
        " 0.0{attempt}{seconds}",
    ),
    (
        2,
        "Resources are plentiful in this region (us-central1): quota used {percent}% of 64"
        " accelerators",
    ),
    (2, "memory: {memory}.{tenth}1 GiB allocated, {memory}.{tenth}9 GiB reserved, 0 OOM retries"),
    (2, "Checkpoint saved? not yet (next at step {next_step})"),
    (1, "Loading model weights from checkpoint-{step:06d} (warm start)"),
    # Python warnings from packages under /usr/local/lib/python3.10, at every step.
    (
        3,
        "/usr/local/lib/python3.10/site-packages/torch/utils/checkpoint.py:429: UserWarning:"
        " torch.utils.checkpoint: please pass in use_reentrant=True or use_reentrant=False"
        " explicitly. The default value of use_reentrant will be updated to be False in the"
        " future. To maintain current behavior, pass use_reentrant=True. It is recommended that"
        " you use use_reentrant=False. Refer to docs for more details on the differences between"
        " the two variants.",
    ),
    (
        1,
        "/usr/local/lib/python3.10/site-packages/torch/cuda/memory.py:303: FutureWarning:"
        " torch.cuda.reset_max_memory_allocated now calls torch.cuda.reset_peak_memory_stats,"
        " which resets /all/ peak memory stats.",
    ),
    (1, "eval: error={seconds}.0{attempt} exception_count=0"),
    # Lines that carry an id or an address of their own (hex: not the same text twice, and
    # not the same text but for its digits either).
    (
        4,
        "[retry] GET gs://acme-data/shards/train-{shard:05d}-of-01024.tfrecord failed (request id"
        " {request}): 503 Service Unavailable, retrying in {seconds}.0s",
    ),
    (2, "Exception ignored in: <function _releaseLock at 0x{address}>"),
    (
        2,
        "checkpoint manager: keeping gs://acme-ml-ckpt/run-{run}/step-{step:06d}, removed"
        " step-{old:06d}",
    ),
    (2, "quota check (request {request16}): {used} of 64 accelerators in use in this region"),
    (
        2,
        "[W socket.cpp:601] [c10d] The client socket has failed to connect to"
        " [worker-0.{run}.internal]:29500 (errno: 99 - Cannot assign requested address).",
    ),
    (1, "data loader worker pid {pid} exited with code 0 after shard train-{shard:05d} (ok)"),
)

# A retry wrapper's harmless traceback, logged a line an entry (as a container's stderr
# reaches Cloud Logging), after the sitecustomize warning every process prints at start:
# real matches (python.traceback, python.frame, python.exception, the missing-module
# detail) that repeat, for the thinner to keep few of. Walked in order per job and task.
STARTUP = (
    "Error in sitecustomize; set PYTHONVERBOSE for traceback:",
    "ModuleNotFoundError: No module named 'ddtrace'",
)
RETRIED_TRACEBACK = (
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.10/site-packages/urllib3/connectionpool.py", line 703, in'
    " urlopen",
    "    httplib_response = self._make_request(",
    '  File "/usr/local/lib/python3.10/site-packages/urllib3/connectionpool.py", line 449, in'
    " _make_request",
    "    six.raise_from(e, None)",
    '  File "/usr/local/lib/python3.10/http/client.py", line 1375, in getresponse',
    "    response.begin()",
    "ConnectionResetError: [Errno 104] Connection reset by peer",
    "[retry] fetch_shard failed: ConnectionResetError(104, 'Connection reset by peer'),"
    " retrying in 2.0s (attempt 1/5)",
)


def near_miss_text(template: str, step: int, job: str = "0") -> str:
    """``template`` of :data:`NEAR_MISSES` filled for ``job``'s ``step`` (numbers and ids as a
    real line's)."""
    turn = step // 10  # steps are logged every 10
    request = hashlib.blake2b(f"{job}:{step}".encode(), digest_size=16).hexdigest()
    return template.format(
        request=request,
        request16=request[:16],
        address="7f" + request[:10],
        run=hashlib.blake2b(job.encode(), digest_size=4).hexdigest(),
        shard=turn % 1024,
        pid=3000 + turn % 997,
        used=turn % 64,
        old=max(0, step - 500),
        step=step,
        next_step=step + 500 - step % 500,
        seconds=1 + turn % 8,
        attempt=1 + turn % 5,
        memory=10 + turn % 30,
        tenth=turn % 10,
        percent=20 + turn % 60,
    )


def text_of(entry: dict[str, Any]) -> str | None:
    """An entry's message: ``jsonPayload.message``, else ``textPayload`` (as the baselines)."""
    payload = entry.get("jsonPayload")
    text = payload.get("message") if isinstance(payload, dict) else None
    if not isinstance(text, str):
        text = entry.get("textPayload")
    return text if isinstance(text, str) else None


def literal_prefilter() -> Any:
    """The built-in rules' literal-word prefilter alone (``analyzer.rulebook.prefilter``): which
    texts hold a rule's literal word. Built here from the rules, not taken from the book, whose
    :meth:`may_match_texts` may decide more than the words (issue 32, point 2)."""
    from analyzer.rulebook import RuleBook
    from analyzer.rulebook.prefilter import Prefilter, literals_of

    return Prefilter([literals_of(rule) for rule in RuleBook.load().rules])


def near_miss_lines(path: Path) -> set[int]:
    """Line numbers (1-based) whose text holds a rule's literal word (a prefilter hit) and
    matches no rule: the real rule book's answer, a block of texts at a time."""
    from analyzer.rulebook import RuleBook

    book = RuleBook.load()
    prefilter = literal_prefilter()
    found: set[int] = set()
    numbers: list[int] = []
    texts: list[str] = []

    def decide() -> None:
        for index in prefilter.select(texts):
            if not book.match(texts[index]):
                found.add(numbers[index])
        numbers.clear()
        texts.clear()

    for number, line in enumerate(lines_of(path), 1):
        text = text_of(json.loads(line)) if line.strip() else None
        if text is not None:
            numbers.append(number)
            texts.append(text)
            if len(texts) >= 4096:
                decide()
    decide()
    return found


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
    # Issue 32: share of lines that hold a rule's word and match no rule (near misses), or
    # that are a repeated real traceback's lines matching a rule (repeats).
    near_miss: float | None = None
    repeats: float | None = None

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
    Shape(
        "nearmiss-10", "near misses 10% of lines (a rule's word, no match)", "jsonl", near_miss=0.10
    ),
    Shape("nearmiss-30", "near misses 30% of lines", "jsonl", near_miss=0.30),
    Shape("nearmiss-50", "near misses 50% of lines", "jsonl", near_miss=0.50),
    Shape("repeats-10", "a repeated harmless traceback, 10% of lines match", "jsonl", repeats=0.10),
    Shape("repeats-30", "a repeated harmless traceback, 30% of lines match", "jsonl", repeats=0.30),
    Shape("repeats-50", "a repeated harmless traceback, 50% of lines match", "jsonl", repeats=0.50),
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
    if shape.near_miss is not None or shape.repeats is not None:
        record["near_misses"] = len(near_miss_lines(path))
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
    elif shape.near_miss is not None:
        entries = _write_near_misses(fleet, out, shape.near_miss, rng)
    elif shape.repeats is not None:
        entries = _write_repeats(fleet, out, shape.repeats, rng)
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


def _replaceable(fleet: Path, taken: set[int]) -> tuple[int, int]:
    """The fleet's lines, and how many are chatter lines not in ``taken``."""
    lines = replaceable = 0
    for number, line in enumerate(lines_of(fleet), 1):
        lines += 1
        replaceable += number not in taken and _is_chatter(line)
    return lines, replaceable


def _write_near_misses(fleet: Path, out: BinaryIO, share: float, rng: random.Random) -> int:
    # Chatter lines that are neither matches nor near misses already become near misses
    # (NEAR_MISSES, drawn by weight, numbered per job) until ``share`` of all lines are.
    matched = matching_lines(fleet)
    near = near_miss_lines(fleet)
    taken = matched | near
    lines, replaceable = _replaceable(fleet, taken)
    fraction = max(0.0, min(1.0, (share * lines - len(near)) / max(1, replaceable)))
    weights = [weight for weight, _ in NEAR_MISSES]
    templates = [template for _, template in NEAR_MISSES]
    steps: dict[str, int] = {}
    for number, line in enumerate(lines_of(fleet), 1):
        if number not in taken and _is_chatter(line) and rng.random() < fraction:
            entry = json.loads(line)
            job = entry["resource"]["labels"].get("job_id", "0")
            steps[job] = steps.get(job, 0) + 1
            (template,) = rng.choices(templates, weights)
            entry["jsonPayload"]["message"] = near_miss_text(template, steps[job] * 10, job)
            line = dumps(entry)
        out.write(line)
    return lines


def _write_repeats(fleet: Path, out: BinaryIO, share: float, rng: random.Random) -> int:
    # Chatter lines that match no rule become, per job and task in order, the start-up lines
    # (STARTUP) and then RETRIED_TRACEBACK over and over, until ``share`` of all lines match.
    from analyzer.rulebook import RuleBook

    book = RuleBook.load()
    matching = sum(bool(book.match(text)) for text in RETRIED_TRACEBACK) / len(RETRIED_TRACEBACK)
    matched = matching_lines(fleet)
    lines, replaceable = _replaceable(fleet, matched)
    wanted = (share * lines - len(matched)) / matching
    fraction = max(0.0, min(1.0, wanted / max(1, replaceable)))
    walked: dict[tuple[str, str], int] = {}
    for number, line in enumerate(lines_of(fleet), 1):
        if number not in matched and _is_chatter(line) and rng.random() < fraction:
            entry = json.loads(line)
            labels = entry["resource"]["labels"]
            key = (labels.get("job_id", "0"), labels.get("task_name", ""))
            at = walked[key] = walked.get(key, -1) + 1
            text = (
                STARTUP[at]
                if at < len(STARTUP)
                else RETRIED_TRACEBACK[(at - len(STARTUP)) % len(RETRIED_TRACEBACK)]
            )
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
