"""Per-line cost of each way to read a sink line, measured on (part of) a bench export.

    python bench/line_costs.py [FILE] [--mb 50]

What it answers: where the fast path's time goes, and whether deciding a line from its raw
bytes is cheaper than parsing it. Each contender runs over the same lines, gc off, best of
two passes, and prints microseconds per line: splitting a block into lines, ``orjson.loads``,
the block guard, msgspec's block decoding, the fast path's whole ``feed_block`` and the
line-by-line fallback, a raw-bytes "skeleton" proof of validity in Python (split on quotes,
look the structure up), a Hyperscan grammar for the compact sink layout (one scan per block,
anchored per line), the raw-block literal scan, and ``RuleBook.match`` per candidate.
"""

from __future__ import annotations

import argparse
import gc
import re
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from analyzer.classify._fastscan import blockdecode
from analyzer.classify._fastscan.jsonl import BLOCK_BYTES, JsonlScanner
from analyzer.ingest.records import InputStats
from analyzer.rulebook import RuleBook

DEFAULT = Path(__file__).resolve().parent / "out" / "fleet-200000000-seed0.jsonl"

# The compact sink layout as a Hyperscan grammar: printable-ASCII strings without \u escapes,
# a jsonPayload of string, number and flat-object members with a string "message".
_CH = rb"[\x20\x21\x23-\x5b\x5d-\x7e]"
_S = rb'"(?:' + _CH + rb'|\\["\\/bfnrt])*"'
_SV = rb'"' + _CH + rb'+"'
_SV0 = rb'"' + _CH + rb'*"'
_NUM = rb"-?(?:0|[1-9][0-9]{0,14})(?:\.[0-9]{1,15})?(?:[eE][+-]?[0-9]{1,2})?"
_SCALAR = rb"(?:" + _S + rb"|" + _NUM + rb"|true|false|null)"
_FLAT = rb"\{(?:" + _S + rb":" + _SCALAR + rb"(?:," + _S + rb":" + _SCALAR + rb")*)?\}"
_VALUE = rb"(?:" + _SCALAR + rb"|" + _FLAT + rb")"
_TS = rb'"[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]\.[0-9]{9}Z"'
_PAYLOAD = (
    rb"\{(?:" + _S + rb":" + _VALUE + rb",)*" + rb'"message":' + _S
    + rb"(?:," + _S + rb":" + _VALUE + rb")*\}"
)  # fmt: skip
_LABELS = rb"\{(?:" + _SV0 + rb":" + _SV0 + rb"(?:," + _SV0 + rb":" + _SV0 + rb")*)?\}"
_MIDDLE = (
    rb',"labels":' + _LABELS + rb'(?:,"logName":' + _SV0 + rb')?(?:,"receiveTimestamp":'
    + _SV0 + rb')?,"resource":\{"labels":\{"job_id":' + _SV + rb'(?:,"project_id":' + _SV0
    + rb')?,"task_name":' + _SV + rb'\},"type":' + _SV0 + rb'\}(?:,"severity":' + _SV0 + rb")?"
)  # fmt: skip
LAYOUT = (
    rb'^\{"insertId":' + _SV0 + rb'(?:,"jsonPayload":' + _PAYLOAD + _MIDDLE
    + rb'(?:,"textPayload":' + _S + rb")?|" + _MIDDLE + rb',"textPayload":' + _S
    + rb'),"timestamp":' + _TS + rb"\}$"
)  # fmt: skip


def _best(run: Callable[[], object], count: int) -> float:
    """Best of two passes, in microseconds per line."""
    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best / count * 1e6


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--mb", type=float, default=50)
    args = parser.parse_args(argv)
    with args.file.open("rb") as stream:
        data = stream.read(int(args.mb * 1e6))
    data = data[: data.rfind(b"\n") + 1]
    blocks = [data[i : i + BLOCK_BYTES] for i in range(0, len(data), BLOCK_BYTES)]
    blocks = _at_line_ends(blocks)
    lines = [line for block in blocks for line in block.split(b"\n")[:-1]]
    book = RuleBook.load()
    book.may_match_texts(["warm up"])
    count = len(lines)
    costs: dict[str, float] = {}
    gc.disable()
    costs["split blocks into lines"] = _best(lambda: [b.split(b"\n") for b in blocks], count)
    loads = orjson.loads

    def parse() -> None:
        for line in lines:  # each dict dropped at once, as the fast path does
            loads(line)

    costs["orjson.loads"] = _best(parse, count)

    if blockdecode.available():
        checks = blockdecode._GUARD
        assert isinstance(checks, blockdecode._Guard)

        def guard() -> None:
            for block in blocks:
                checks.shape(block)
                checks.valid_utf8(block)

        costs["block guard (one object per line, UTF-8) per block"] = _best(guard, count)
    costs["msgspec decode_lines per block"] = _best(
        lambda: [blockdecode._DECODER.decode_lines(block) for block in blocks], count
    )

    def feed(line_by_line: bool) -> list[object]:
        scanner = JsonlScanner(InputStats(path="x"), book.may_match_texts, matches=book.match)
        found: list[object] = []
        number = 1
        for block in blocks:
            if line_by_line:
                lines = block.split(b"\n")[:-1]
                scanner.feed(lines, number)
                number += len(lines)
            else:
                number += scanner.feed_block(block, number)
            found.extend(scanner.tally.candidates)
            scanner.tally.candidates.clear()
        return found

    candidates = feed(False)
    costs["fast path feed_block (guard, decode, bookkeeping, prefilter, match)"] = _best(
        lambda: feed(False), count
    )
    costs["line-by-line feed (the fallback: orjson per line)"] = _best(lambda: feed(True), count)
    skeletons: dict[bytes, bool] = {}

    def skeleton() -> None:
        for line in lines:
            if b"\\" in line or not line.isascii():
                continue
            shape = b'"'.join(line.split(b'"')[0::2])
            if shape not in skeletons:
                skeletons[shape] = True

    costs["raw skeleton proof in Python (split on quotes)"] = _best(skeleton, count)
    literals = [w.encode() for w in book._prefilter.literals if w.isascii()]
    try:
        import hyperscan
    except ImportError:
        print("hyperscan not installed: its rows are left out")
    else:
        for name, expressions, flag in (
            ("hyperscan layout grammar per block", [LAYOUT], hyperscan.HS_FLAG_MULTILINE),
            ("hyperscan raw literal scan per block", literals, hyperscan.HS_FLAG_CASELESS),
        ):
            database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            database.compile(
                expressions=[re.escape(e) if e in literals else e for e in expressions],
                ids=list(range(len(expressions))),
                flags=[flag] * len(expressions),
            )

            def scan(database: object = database) -> None:
                ends: list[int] = []

                def on_match(_id: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
                    ends.append(end)

                for block in blocks:
                    database.scan(block, match_event_handler=on_match)  # type: ignore[attr-defined]

            costs[name] = _best(scan, count)
    texts = [candidate[0].text for candidate in candidates]  # type: ignore[index]
    match_total = _best(lambda: [book.match(text) for text in texts], count)
    costs[f"RuleBook.match of the {len(texts)} candidates, per input line"] = match_total
    gc.enable()
    print(f"{count} lines, {len(data) / 1e6:.0f} MB of {args.file.name}; us per input line:")
    for name, value in costs.items():
        print(f"  {value:6.2f}  {name}")
    return costs


def _at_line_ends(blocks: list[bytes]) -> list[bytes]:
    """Move each block's unfinished last line to the next block."""
    out: list[bytes] = []
    carry = b""
    for block in blocks:
        block = carry + block
        cut = block.rfind(b"\n") + 1
        out.append(block[:cut])
        carry = block[cut:]
    if carry:
        out.append(carry + b"\n")
    return out


if __name__ == "__main__":
    main()
