"""What the sink scan's parts cost on their own, in one process: the floors under its time.

    python bench/scan_floors.py [FILE] [--runs 3]

For the 200 MB fleet export by default, the CPU seconds (``time.process_time``, the least of
``--runs``) of: reading the blocks; the two Hyperscan checks of each block (its lines' shape
and UTF-8); msgspec decoding every line into an empty struct (the JSON parse alone), into a
struct of only the fields the tally needs (job, task, VM, trial, time, text), and into the
scan's own struct; the prefilter over every block's texts; and the whole scan as the CLI runs
it (thinning on). Whatever the Python around them does, a scan of this design costs at least
the read, the checks, the decode and the prefilter; on two processes, half of that.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import msgspec

from analyzer.classify import eventstore
from analyzer.classify._fastscan import blockdecode, jsonl
from analyzer.classify._fastscan.parallel import scan_stream
from analyzer.ingest.records import AUDIT_PATH, JOB_RESOURCE_TYPES, RESOURCE_TYPE_PATH, InputStats
from analyzer.rulebook import RuleBook

DEFAULT_FILE = Path(__file__).resolve().parent / "out" / "fleet-200000000-seed0.jsonl"


class _Nothing(msgspec.Struct):
    pass


def _decoder(without: tuple[str, ...] = ()) -> Any:
    """A decoder of the scan's struct without the attributes ``without``."""
    fields = blockdecode._declared()
    fields[AUDIT_PATH] = ("audit", None)
    fields[RESOURCE_TYPE_PATH] = ("type", Literal[tuple(sorted(JOB_RESOURCE_TYPES))] | None)
    kept = {path: declared for path, declared in fields.items() if declared[0] not in without}
    return msgspec.json.Decoder(blockdecode._struct("Floor", kept))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    path = str(args.file)
    if not args.file.exists():
        print(f"{path}: no such export; make it with: python bench/run.py", file=sys.stderr)
        return 2
    if not blockdecode.available():
        print("Hyperscan is not installed: no block decoding to measure", file=sys.stderr)
        return 2
    gc.disable()
    book = RuleBook.load()
    book.may_match_texts(["warm up"])
    guard = blockdecode._GUARD
    assert isinstance(guard, blockdecode._Guard)
    with open(path, "rb") as stream:
        blocks = list(jsonl.read_blocks(stream))
    views = [memoryview(data)[:end] for data, end, _ in blocks]

    def timed(name: str, work: Callable[[], object]) -> None:
        best = min(_cpu(work) for _ in range(args.runs))
        print(f"{name:48s} {best:6.3f} s", flush=True)

    def read() -> None:
        with open(path, "rb") as stream:
            for _ in jsonl.read_blocks(stream):
                pass

    def checks() -> None:
        for (data, end, _), view in zip(blocks, views, strict=True):
            guard.shape(data, end, view)
            guard.valid_utf8(data, view)

    def decode(decoder: Any) -> Callable[[], None]:
        def run() -> None:
            for view in views:
                decoder.decode_lines(view)  # dropped at once, as the scan drops a block's

        return run

    scanner = jsonl.JsonlScanner(InputStats(path=path), book.may_match_texts)
    texts = []
    for data, end, _ in blocks:
        entries = blockdecode.decode_block(data, end)
        if entries is not None:
            texts.append(scanner._lean(entries, {}, careful=False)[0])

    def select() -> None:
        for some in texts:
            book.may_match_texts(some)

    def scan() -> None:
        eventstore.prepare()
        token = eventstore.thinning.set(True)
        try:
            with open(path, "rb") as stream:
                scan_stream(stream, InputStats(path=path), book)
        finally:
            eventstore.thinning.reset(token)

    print(f"{args.file.name}: {len(blocks)} blocks, CPU seconds in one process")
    timed("read the blocks", read)
    timed("shape and UTF-8 checks (Hyperscan)", checks)
    timed("msgspec, an empty struct (the JSON parse)", decode(msgspec.json.Decoder(_Nothing)))
    timed(
        "msgspec, the fields the tally needs",
        decode(_decoder(("insert_id", "severity", "audit", "type"))),
    )
    timed("msgspec, the scan's struct", decode(blockdecode._DECODER))
    timed("the prefilter over every block's texts", select)
    timed("the whole scan (thinning on)", scan)
    return 0


def _cpu(work: Callable[[], object]) -> float:
    start = time.process_time()
    work()
    return time.process_time() - start


if __name__ == "__main__":
    sys.exit(main())
