"""A Log Router sink tree on disk, from sink lines: what a sink to Cloud Storage writes.

Each entry goes to ``<log_id>/YYYY/MM/DD/HH:00:00_HH:59:59_S0.json`` of its log (for a
Vertex job ``ml.googleapis.com/<job_id>``, the log name's ``%2F`` a folder) and its UTC hour;
now and then an entry arrives late, in that hour's ``..._A0:<unixtime>.json``
(``platform.md`` section 6). Streaming: a 1 GB tree is written in constant memory.

    python -m analyzer.simulate.tree OUT_DIR [--size 1GB] [--seed 0]
    python -m analyzer.simulate.tree OUT_DIR --scenario oom
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote

import orjson

from analyzer.core.errors import InputError

# About one entry in this many is delivered late, into the hour's _A0 file.
_LATE_ONE_IN = 40
# Files kept open at once; the oldest are closed (and reopened to append) beyond it.
_OPEN_FILES = 64


def _log_dir(log_name: object) -> str:
    """``projects/P/logs/ml.googleapis.com%2F123`` -> ``ml.googleapis.com/123``."""
    if not isinstance(log_name, str) or "/logs/" not in log_name:
        return "unknown"
    return unquote(log_name.split("/logs/", 1)[1]).strip("/") or "unknown"


def _hour_file(log_dir: str, timestamp: str, late: bool) -> str:
    day = f"{timestamp[0:4]}/{timestamp[5:7]}/{timestamp[8:10]}"
    hour = timestamp[11:13]
    name = f"{hour}:00:00_{hour}:59:59_S0.json"
    if late:
        start = datetime.fromisoformat(f"{timestamp[:13]}:00:00+00:00")
        written = int(start.astimezone(UTC).timestamp()) + 3600 + 600  # ten minutes after
        name = f"{hour}:00:00_{hour}:59:59_A0:{written}.json"
    return f"{log_dir}/{day}/{name}"


def write_sink_tree(lines: Iterable[bytes | str], root: Path, *, seed: int = 0) -> list[Path]:
    """Write the sink ``lines`` (one LogEntry each) into a sink tree under ``root``.

    Returns the files written, sorted. Lines without a timestamp go to a ``no-time.json``
    beside the tree (a sink never writes one; kept so no line is lost).
    """
    if root.exists() and any(root.iterdir()):
        # Files are appended to: a second run into the same folder would double them.
        raise InputError(f"{root}: not empty, write a sink tree into a new folder")
    rng = random.Random(f"tree:{seed}")
    handles: dict[str, BinaryIO] = {}
    written: set[str] = set()
    try:
        for line in lines:
            data = line.encode() if isinstance(line, str) else line
            entry = orjson.loads(data)
            stamp = entry.get("timestamp") if isinstance(entry, dict) else None
            if not isinstance(stamp, str) or len(stamp) < 13:
                relative = "no-time.json"
            else:
                late = rng.randrange(_LATE_ONE_IN) == 0
                relative = _hour_file(_log_dir(entry.get("logName")), stamp, late)
            handle = handles.get(relative)
            if handle is None:
                if len(handles) >= _OPEN_FILES:
                    oldest = next(iter(handles))
                    handles.pop(oldest).close()
                path = root / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                handle = handles[relative] = path.open("ab")
                written.add(relative)
            handle.write(data if data.endswith(b"\n") else data + b"\n")
    finally:
        for handle in handles.values():
            handle.close()
    return sorted(root / relative for relative in written)


def main(argv: list[str] | None = None) -> None:
    """``python -m analyzer.simulate.tree``: write a simulated fleet (or scenario) as a tree."""
    from analyzer.simulate import simulate
    from analyzer.simulate.fleet import fleet
    from analyzer.simulate.writers import sink_lines

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--size", default="100MB", help="fleet size, e.g. 200MB, 1GB")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scenario", help="one scenario instead of a fleet")
    args = parser.parse_args(argv)
    try:
        if args.scenario:
            lines: Iterable[bytes | str] = sink_lines(simulate(args.scenario, args.seed))
        else:
            lines = fleet(_bytes(args.size), seed=args.seed)
        files = write_sink_tree(lines, args.out, seed=args.seed)
    except InputError as error:  # one line, as the CLI says it
        sys.stderr.write(f"jobdoctor: {error}\n")
        raise SystemExit(2) from None
    total = sum(path.stat().st_size for path in files)
    print(f"wrote {len(files)} files, {total:,} bytes under {args.out}")


def _bytes(text: str) -> int:
    units = {"KB": 10**3, "MB": 10**6, "GB": 10**9}
    for unit, size in units.items():
        if text.upper().endswith(unit):
            return int(float(text[: -len(unit)]) * size)
    return int(text)


if __name__ == "__main__":
    main()
