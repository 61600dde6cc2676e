"""Instructions of the rule book's block step alone (``RuleBook.may_match_texts`` over every
block's message texts), counted by callgrind: the figure the load does not move.

    python bench/book_instructions.py FILE [--tree DIR]

The texts are those this checkout's fast scan hands the rule book for each block of FILE (sink
JSONL); ``--tree`` counts another checkout's code and rules on the same texts (e.g. a
``git worktree`` of an older commit), to compare the step alone. Prints the blocks, the texts
kept and the instructions. Needs valgrind.
"""

from __future__ import annotations

import argparse
import pickle
import shutil
import sys
import tempfile
from pathlib import Path

# Run as a script from bench/ (its folder first on sys.path): the callgrind run is shared.
from instructions import between_markers

HERE = Path(__file__).resolve().parent

_COUNT = """
import pickle, sys, time
sys.path.insert(0, {root!r})
from analyzer.rulebook import RuleBook
with open({texts!r}, "rb") as stream:
    blocks = pickle.load(stream)
book = RuleBook.load()
book.may_match_texts(["warm up"])
time.sleep(0)
kept = sum(len(book.may_match_texts(block)) for block in blocks)
time.sleep(0)
print(kept)
"""


def block_texts(path: Path) -> list[list[str]]:
    """The message texts of each block of the sink JSONL ``path``, as the fast scan takes them."""
    from analyzer.classify._fastscan import blockdecode, jsonl
    from analyzer.ingest.records import InputStats
    from analyzer.rulebook import RuleBook

    scanner = jsonl.JsonlScanner(InputStats(path=str(path)), RuleBook.load().may_match_texts)
    blocks = []
    with path.open("rb") as stream:
        for data, end, _ in jsonl.read_blocks(stream):
            entries = blockdecode.decode_block(data, end)
            if entries is not None:
                blocks.append(scanner._lean(entries, {}, careful=False)[0])
    return blocks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--tree", type=Path, default=HERE.parent)
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE.parent))
    blocks = block_texts(args.file)
    with tempfile.TemporaryDirectory() as scratch:
        texts = Path(scratch) / "texts.pickle"
        texts.write_bytes(pickle.dumps(blocks))
        script = Path(scratch) / "count.py"
        script.write_text(_COUNT.format(root=str(args.tree.resolve()), texts=str(texts)))
        kept, instructions = between_markers(script)
    print(
        f"{args.file.name} ({args.tree}): {len(blocks)} blocks, "
        f"{sum(map(len, blocks))} texts, {kept} kept, {instructions:,} instructions"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
