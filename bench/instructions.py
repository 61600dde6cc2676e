"""Instructions per input line of the fast path, counted by callgrind: a figure that does not
move with the machine's load, for comparing two versions of the scan.

    python bench/instructions.py [FILE] [--mb 20]

Scans the first ``--mb`` megabytes of FILE (the 200 MB bench export by default) in one
process, under ``valgrind --tool=callgrind``, and counts only the scan: callgrind dumps its
counters at each ``time.sleep(0)`` the scan is wrapped in. Start-up, imports and the rule
book's loading are left out. Needs valgrind (Debian: ``apt-get install valgrind``); takes
about 20 s for 20 MB.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_FILE = HERE / "out" / "fleet-200000000-seed0.jsonl"

# Run under callgrind: load everything, then scan between two markers.
_SCAN = """
import sys, time
sys.path.insert(0, {root!r})
from analyzer.classify._fastscan import blockdecode
from analyzer.classify._fastscan.parallel import scan_stream
from analyzer.ingest.records import InputStats
from analyzer.rulebook import RuleBook
book = RuleBook.load()
book.may_match_texts(["warm up"])
blockdecode.available()
with open({path!r}, "rb") as stream:
    time.sleep(0)
    found = scan_stream(stream, InputStats(path={path!r}), book)
    time.sleep(0)
print(found.stats.lines)
"""


def _slice(source: Path, megabytes: int, out: Path) -> None:
    """The first ``megabytes`` MB of ``source``, cut at a line end."""
    with source.open("rb") as stream:
        data = stream.read(megabytes << 20)
    out.write_bytes(data[: data.rfind(b"\n") + 1])


def between_markers(script: Path) -> tuple[int, int]:
    """Run ``script`` under callgrind: what it printed last (a count) and the instructions
    between its two ``time.sleep(0)`` markers (dump 2), so start-up is left out."""
    out = script.with_name("callgrind.out")
    result = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--dump-before=time_sleep",
            f"--callgrind-out-file={out}",
            sys.executable,
            str(script),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    count = int(result.stdout.split()[-1])
    # Dump 1 ends at the first marker, dump 2 at the second: the measured part.
    summary = Path(f"{out}.2").read_text(errors="replace")
    found = re.search(r"^summary: (\d+)", summary, re.M)
    assert found, "callgrind wrote no summary"
    return count, int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--mb", type=int, default=20)
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (apt-get install valgrind)", file=sys.stderr)
        return 2
    if not args.file.exists():
        print(f"{args.file}: no such export; make it with: python bench/run.py", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        sample = Path(scratch) / "sample.jsonl"
        _slice(args.file, args.mb, sample)
        script = Path(scratch) / "scan.py"
        script.write_text(_SCAN.format(root=str(HERE.parent), path=str(sample)))
        lines, instructions = between_markers(script)
    print(f"{lines} lines, {args.mb} MB of {args.file.name}")
    print(f"{instructions:,} instructions in the scan, {instructions / lines:,.0f} per line")
    return 0


if __name__ == "__main__":
    sys.exit(main())
