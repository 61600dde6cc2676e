"""Instructions per entry of reading one input, counted by callgrind (``bench/instructions.py``'s
method, for every reader): a figure that does not move with the machine's load.

    python bench/reader_instructions.py WAY FILE

WAY is one of:

- ``fast``: the fast scan of FILE as ``jobdoctor`` reads it in one process
  (``analyzer.classify._fastscan.scan``: sink JSONL, stream-logs text, gcloud JSON and YAML);
- ``plain``: the record-by-record reading (``fast=False``'s, prefilter batches on), the tally
  of each record kept as the classify stage keeps it;
- ``careful``, ``careful-stream-logs``, ``careful-gcloud-json``, ``careful-gcloud-yaml``: the
  careful-Python baselines'
  ``scan`` (``bench/baselines/``).

Only the reading is counted (callgrind dumps its counters at each ``time.sleep(0)`` around it):
start-up, imports and the rule book's loading are left out. Prints the instructions and, per
entry, divided by the entries of FILE (its records). Needs valgrind.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

# Run as a script from bench/ (its folder first on sys.path): the callgrind run is shared.
from instructions import between_markers

HERE = Path(__file__).resolve().parent

_PRELUDE = """
import sys, time
sys.path.insert(0, {root!r})
sys.path.insert(0, {baselines!r})
from analyzer.rulebook import RuleBook
from analyzer.classify._fastscan import blockdecode
book = RuleBook.load()
book.may_match_texts(["warm up"])
blockdecode.available()
path = {path!r}
"""
_WAYS = {
    "fast": """
from analyzer.classify._fastscan import scan
from analyzer.ingest import open_sources
sources = open_sources([path])
time.sleep(0)
(found,) = scan(sources, book, processes=1)
time.sleep(0)
assert found is not None, "the fast scan did not take this input"
print(found.stats.records)
""",
    "plain": """
from analyzer.classify.collector import _read_source
from analyzer.ingest import open_sources
(source,) = open_sources([path])
time.sleep(0)
_read_source(source, book, prefilter=True)
time.sleep(0)
print(source.stats.records)
""",
    "careful": "import careful as baseline",
    "careful-stream-logs": "import careful_stream_logs as baseline",
    "careful-gcloud-json": "import careful_gcloud_json as baseline",
    "careful-gcloud-yaml": "import careful_gcloud_yaml as baseline",
}
_CAREFUL = """
time.sleep(0)
baseline.scan(path)
time.sleep(0)
from analyzer.ingest import open_sources
(source,) = open_sources([path])
for _ in source.records():
    pass
print(source.stats.records)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("way", choices=sorted(_WAYS))
    parser.add_argument("file", type=Path)
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    body = _WAYS[args.way] + (_CAREFUL if args.way.startswith("careful") else "")
    script_text = (
        _PRELUDE.format(
            root=str(HERE.parent), baselines=str(HERE / "baselines"), path=str(args.file.resolve())
        )
        + body
    )
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "read.py"
        script.write_text(script_text)
        entries, instructions = between_markers(script)
    print(f"{args.way} {args.file.name}: {entries} entries")
    print(f"{instructions:,} instructions, {instructions / entries:,.0f} per entry")
    return 0


if __name__ == "__main__":
    sys.exit(main())
