"""A seeded corruption corpus: damaged copies of real exports, for the standing campaign.

:func:`corpus` turns the samples (``sample_logs/``, ``tests/fixtures/ingest/``) into damaged
inputs, the same ones for the same seed: truncation, bit flips, NUL bytes, invalid UTF-8,
UTF-16, whitespace heads, deeply nested JSON, fields of the wrong type, broken archives, odd
line ends, long lines, duplicated and shuffled lines, and several of these at once.
:func:`check_input` runs one input through everything a user runs (sniffing, reading, the
fast scan, diagnosing, every report) and returns what it found wrong: nothing, for every
input, is the campaign's claim (tests/test_corruption.py; ``python -m tests.corruption N``
for a longer run).

A mutation that keeps every record (a whitespace head, CRLF line ends, a BOM) is also
checked for giving exactly the records of the original: a lost record cannot hide behind
balanced totals.
"""

from __future__ import annotations

import bz2
import gzip
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Whitespace heads up to three times sniffing's 64 KiB window (a head of 64 KiB or more once
# made every record after it a blank line).
_MAX_HEAD = 192 << 10
# The samples are cut to this many lines: the damage matters, not the length.
_SEED_LINES = 600
# CPU seconds of this process, not wall-clock: a blow-up (a quadratic read) burns CPU, while
# other work on the machine only stretches the wall clock.
HANG_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Case:
    """One damaged input: ``name`` says which sample and which mutations made it."""

    name: str
    data: bytes
    # Records the undamaged sample gives, when the mutations keep every record; else None.
    keeps_records_of: bytes | None = None


def seeds() -> list[tuple[str, bytes]]:
    """The undamaged samples, decompressed, each cut to its first lines."""
    found: list[tuple[str, bytes]] = []
    paths = sorted((ROOT / "sample_logs").iterdir()) + sorted(
        p for p in (ROOT / "tests" / "fixtures" / "ingest").iterdir() if p.is_file()
    )
    for path in paths:
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        lines = data.splitlines(keepends=True)
        found.append((path.name, b"".join(lines[:_SEED_LINES])))
    return found


Mutation = Callable[[bytes, random.Random], bytes]


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _bit_flips(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(rng.randint(1, 16)):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def _insert(data: bytes, rng: random.Random, piece: bytes, times: int) -> bytes:
    out = data
    for _ in range(times):
        at = rng.randrange(len(out) + 1)
        out = out[:at] + piece + out[at:]
    return out


def _nul(data: bytes, rng: random.Random) -> bytes:
    return _insert(data, rng, b"\x00" * rng.randint(1, 4), rng.randint(1, 3))


def _invalid_utf8(data: bytes, rng: random.Random) -> bytes:
    bad = rng.choice([b"\xff", b"\xc3(", b"\xe2\x82", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"])
    return _insert(data, rng, bad, rng.randint(1, 5))


def _utf16(data: bytes, rng: random.Random) -> bytes:
    text = data.decode("utf-8", "replace")
    return text.encode(rng.choice(["utf-16", "utf-16-le", "utf-16-be"]))


def _whitespace_head(data: bytes, rng: random.Random) -> bytes:
    # Blank lines of any whitespace before the export, which starts on a line of its own;
    # after a byte order mark, which stays first.
    if data.lstrip(b"\xef\xbb\xbf")[:1].isspace():
        return data  # one head is enough
    unit = rng.choice([b" ", b"\n", b"\r\n", b"\t", b" \n", b"\n\n\t "])
    head = unit * (rng.randint(1, _MAX_HEAD) // len(unit)) + b"\n"
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    return bom + head + data[len(bom) :]


def _crlf(data: bytes, rng: random.Random) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def _bom(data: bytes, rng: random.Random) -> bytes:
    return data if data.startswith(b"\xef\xbb\xbf") else b"\xef\xbb\xbf" + data


def _lines_of(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True) or [b""]


def _nested_json(data: bytes, rng: random.Random) -> bytes:
    depth = rng.choice([64, 1000, 20000])
    opener, closer = rng.choice([(b"[", b"]"), (b'{"a":', b"}")])
    nested = opener * depth + b"1" + closer * depth
    if rng.random() < 0.5:  # a payload nested deep inside an otherwise good entry
        nested = b'{"textPayload":"x","jsonPayload":' + nested + b"}"
    lines = _lines_of(data)
    lines.insert(rng.randrange(len(lines) + 1), nested + b"\n")
    return b"".join(lines)


_WRONG_VALUES: list[object] = [
    None,
    12345,
    -1.5e308,
    True,
    [],
    {},
    [1, "two"],
    {"nested": {"deeper": [None]}},
    "",
    "not a time",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59.999999999Z",
    "2024-04-04T00:20:35",
    "2024-13-45T99:99:99Z",
    "\u202e\x1b]52;c;ZXZpbA==\x07",
]
_FIELDS = [
    ("timestamp",),
    ("receiveTimestamp",),
    ("severity",),
    ("insertId",),
    ("textPayload",),
    ("jsonPayload",),
    ("jsonPayload", "message"),
    ("resource",),
    ("resource", "labels"),
    ("resource", "labels", "job_id"),
    ("resource", "labels", "task_name"),
    ("labels",),
    ("logName",),
]


def _wrong_types(data: bytes, rng: random.Random) -> bytes:
    lines = _lines_of(data)
    for _ in range(rng.randint(1, 6)):
        index = rng.randrange(len(lines))
        try:
            entry = json.loads(lines[index])
        except (ValueError, RecursionError):  # not JSON, or nested past Python's json
            continue
        if not isinstance(entry, dict):
            continue
        path = rng.choice(_FIELDS)
        holder: object = entry
        for key in path[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if isinstance(holder, dict):
            value = rng.choice(_WRONG_VALUES)
            if value is None and rng.random() < 0.5:
                holder.pop(path[-1], None)
            else:
                holder[path[-1]] = value
        ending = b"\r\n" if lines[index].endswith(b"\r\n") else b"\n"
        lines[index] = json.dumps(entry).encode() + ending
    return b"".join(lines)


def _untimed(data: bytes, rng: random.Random) -> bytes:
    # Entries without any time beside timed ones (an agent's line, a hand-made export).
    lines = _lines_of(data)
    for index in rng.sample(range(len(lines)), k=min(len(lines), rng.randint(1, 8))):
        try:
            entry = json.loads(lines[index])
        except (ValueError, RecursionError):  # not JSON, or nested past Python's json
            continue
        if isinstance(entry, dict):
            entry.pop("timestamp", None)
            entry.pop("receiveTimestamp", None)
            lines[index] = json.dumps(entry).encode() + b"\n"
    return b"".join(lines)


def _broken_archive(data: bytes, rng: random.Random) -> bytes:
    packed = gzip.compress(data, mtime=0)
    kind = rng.randrange(7)
    if kind == 0:  # cut
        return packed[: rng.randrange(len(packed) + 1)]
    if kind == 1:  # damaged inside
        return _bit_flips(packed[:10], rng) + _bit_flips(packed[10:], rng)
    if kind == 2:  # garbage after the member
        return packed + bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    if kind == 3:  # compressed twice
        return gzip.compress(packed, mtime=0)
    if kind == 4:  # several members, one cut
        return packed + packed[: len(packed) // 2]
    if kind == 5:  # another format's archive
        return bz2.compress(data)
    return gzip.compress(b"", mtime=0)  # an empty member


def _long_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines_of(data)
    long = b'{"textPayload":"' + b"x" * rng.choice([70_000, 1 << 20]) + b'"}\n'
    lines.insert(rng.randrange(len(lines) + 1), long)
    return b"".join(lines)


def _odd_line_ends(data: bytes, rng: random.Random) -> bytes:
    return data.replace(b"\n", rng.choice([b"\r", b"\x0b", b"\x1e", b"\x85", b"\n\r"]))


def _duplicate_and_shuffle(data: bytes, rng: random.Random) -> bytes:
    lines = [line if line.endswith(b"\n") else line + b"\n" for line in _lines_of(data)]
    lines += rng.sample(lines, k=min(len(lines), rng.randint(0, 20)))
    rng.shuffle(lines)
    return b"".join(lines)


# Name, mutation, whether it keeps every record of the sample.
MUTATIONS: list[tuple[str, Mutation, bool]] = [
    ("truncate", _truncate, False),
    ("bit-flips", _bit_flips, False),
    ("nul", _nul, False),
    ("invalid-utf8", _invalid_utf8, False),
    ("utf16", _utf16, False),
    ("whitespace-head", _whitespace_head, True),
    ("crlf", _crlf, True),
    ("bom", _bom, True),
    ("nested-json", _nested_json, False),
    ("wrong-types", _wrong_types, False),
    ("untimed", _untimed, False),
    ("broken-archive", _broken_archive, False),
    ("long-line", _long_line, False),
    ("odd-line-ends", _odd_line_ends, False),
    ("duplicate-shuffle", _duplicate_and_shuffle, False),
]
# Mutations after which the input is no longer text: nothing is applied after them.
_LAST = {"utf16", "broken-archive"}


def mutate(data: bytes, rng: random.Random, steps: int) -> tuple[bytes, list[str], bool]:
    """``data`` after ``steps`` random mutations: the bytes, their names, and whether every
    record of ``data`` is still in them."""
    names: list[str] = []
    keeps = True
    for _ in range(steps):
        name, mutation, keeping = rng.choice(MUTATIONS)
        data = mutation(data, rng)
        names.append(name)
        keeps = keeps and keeping
        if name in _LAST:
            break
    return data, names, keeps


def corpus(seed: int, count: int) -> Iterator[Case]:
    """``count`` damaged inputs, the same for the same ``seed``: each a sample, mutated one
    to three times."""
    rng = random.Random(seed)
    samples = seeds()
    for number in range(count):
        name, original = samples[rng.randrange(len(samples))]
        steps = rng.choice([1, 1, 1, 2, 3])
        data, names, keeps = mutate(original, rng, steps)
        yield Case(f"{number:05d}-{name}-{'+'.join(names)}", data, original if keeps else None)


def _record_keys(data: bytes) -> list[tuple[object, ...]] | None:
    from analyzer.core.errors import InputError
    from analyzer.ingest import MemorySource

    try:
        source = MemorySource(data)
    except InputError:
        return None
    return [(r.job_id, r.task, r.timestamp, r.text.strip()) for r in source.records()]


def check_input(case: Case, folder: Path) -> list[str]:
    """What is wrong with how jobdoctor takes ``case``: an empty list when it read the input
    or refused it in one line, accounted for every line, kept every record it should, and
    rendered every report, in time."""
    from analyzer.api import analyze
    from analyzer.cli.report_command import render_fleet
    from analyzer.core.errors import InputError
    from analyzer.ingest import MemorySource
    from analyzer.report import render_json, render_markdown
    from analyzer.report.text import render_text

    wrong: list[str] = []
    started = time.process_time()
    # The readers on their own (the in-memory twin: no fast path).
    try:
        source = MemorySource(case.data, case.name)
    except InputError as error:
        if "\n" in str(error):
            wrong.append(f"refused in more than one line: {error!r}")
    else:
        records = list(source.records())
        stats = source.stats
        if stats.lines != stats.used + stats.skipped:
            wrong.append(f"lines {stats.lines} != used {stats.used} + skipped {stats.skipped}")
        if stats.records != len(records):
            wrong.append(f"records {stats.records} != {len(records)} yielded")
        if case.keeps_records_of is not None:
            want = _record_keys(case.keeps_records_of)
            got = [(r.job_id, r.task, r.timestamp, r.text.strip()) for r in records]
            if want is not None and got != want:
                wrong.append(f"lost records: {len(got)} of {len(want)}")
    # As a user runs it: a file, the fast scan, diagnosing, every report.
    path = folder / case.name[:120]
    path.write_bytes(case.data)
    try:
        analysis = analyze([path])
    except InputError as error:
        if "\n" in str(error):
            wrong.append(f"refused in more than one line: {error!r}")
    else:
        for stats in analysis.inputs:
            if stats.lines != stats.used + stats.skipped:
                wrong.append(f"file: lines {stats.lines} != {stats.used} + {stats.skipped}")
        render_json(analysis)
        render_markdown(analysis)
        from io import StringIO

        from rich.console import Console

        render_text(analysis, Console(file=StringIO(), highlight=False))
        render_fleet(analysis, "html")
    finally:
        path.unlink()
    took = time.process_time() - started
    if took > HANG_SECONDS:
        wrong.append(f"took {took:.1f} s of CPU")
    return wrong


def campaign(seed: int, count: int) -> tuple[int, dict[str, list[str]]]:
    """Run :func:`check_input` over ``corpus(seed, count)``: how many inputs were tried, and
    what went wrong with which (a crash is an exception's one line)."""
    failures: dict[str, list[str]] = {}
    tried = 0
    with tempfile.TemporaryDirectory() as folder:
        for case in corpus(seed, count):
            tried += 1
            try:
                wrong = check_input(case, Path(folder))
            except Exception as error:  # the campaign's finding: a crash
                wrong = [f"crash: {type(error).__name__}: {error}"]
            if wrong:
                failures[case.name] = wrong
    return tried, failures


def main(argv: list[str]) -> int:
    """``python -m tests.corruption [COUNT [SEED]]``: a longer campaign, for developers."""
    count = int(argv[0]) if argv else 2000
    seed = int(argv[1]) if len(argv) > 1 else 0
    started = time.perf_counter()
    tried, failures = campaign(seed, count)
    for name, wrong in sorted(failures.items()):
        print(f"{name}: {'; '.join(wrong)}")
    took = time.perf_counter() - started
    print(f"seed {seed}: {tried} inputs tried in {took:.0f} s, {len(failures)} went wrong")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
