"""Lines longer than any log entry (Cloud Logging refuses an entry over about 256 KiB): read
past in pieces, never held, each skipped with its reason and numbered in ``long_lines``.

Every format, plain reader and fast scan alike (one process and byte ranges over three), and
the jobs those inputs hold read as if the long line were not there. A 100 MB line cost 400-600
MB of memory before (a JSON line 612 MB, a text line 418 MB): a child process's peak RSS says
it is now read in the memory of a small input.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from analyzer.api import analyze
from analyzer.classify.collector import collect
from analyzer.ingest.gcloud_json import LONG_ENTRY
from analyzer.ingest.lines import LONG_LINE, LONGEST_LINE
from analyzer.ingest.sources import StreamSource
from analyzer.rulebook import RuleBook
from analyzer.simulate import simulate, write
from tests.clirun import peak_rss
from tests.test_every_shape import _verdicts
from tests.test_fast_readers import _analysis, _streamed, small_ranges  # noqa: F401

# A worker's chatter line made longer than the longest line an entry can be.
_HUGE = "x" * (LONGEST_LINE + 100)
# Every format the simulator writes that a line can be too long in, and the reason it gives:
# a JSON array's or a response's element is skipped whole.
FORMATS = {
    "jsonl": LONG_LINE,
    "stream-logs": LONG_LINE,
    "logs-explorer": LONG_LINE,
    "summary-lines": LONG_LINE,
    "yaml": LONG_LINE,
    "explorer-csv": LONG_LINE,
    "gcloud-json": LONG_ENTRY,
    "api-response": LONG_ENTRY,
}


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


def _entries(huge: bool) -> list[dict[str, Any]]:
    entries = list(simulate("oom", seed=1))
    at = len(entries) // 2
    assert entries[at]["jsonPayload"]["message"].startswith("step ")
    if huge:
        entries[at]["jsonPayload"]["message"] = _HUGE
    else:
        del entries[at]
    return entries


def _written(fmt: str, path: Path, *, huge: bool) -> Path:
    out = io.StringIO()
    write(_entries(huge), fmt, out, seed=1)
    path.write_text(out.getvalue())
    return path


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.usefixtures("small_ranges")
def test_a_long_line_is_skipped_alike_fast_and_plain(
    fmt: str, book: RuleBook, tmp_path: Path
) -> None:
    path = _written(fmt, tmp_path / f"long.{fmt}", huge=True)
    plain = _analysis(path, book, fast=False)
    assert _analysis(path, book, fast=True) == plain
    assert _analysis(path, book, fast=True, processes=3) == plain
    data = path.read_bytes()
    assert _streamed(data, path.name, book, fast=True) == _streamed(
        data, path.name, book, fast=False
    )
    (stats,) = plain["inputs"]  # type: ignore[index]
    reason = FORMATS[fmt]
    assert stats["skip_reasons"][reason] >= 1
    assert stats["lines"] == stats["used"] + stats["skipped"]
    if reason == LONG_LINE:
        (number,) = stats["long_lines"]
        assert len(data.split(b"\n")[number - 1]) > LONGEST_LINE
    # The jobs are those of the input without that line.
    without = _written(fmt, tmp_path / f"short.{fmt}", huge=False)
    assert _verdicts(analyze([str(path)])) == _verdicts(analyze([str(without)]))


@pytest.mark.parametrize(
    "text",
    [
        # A paste with a dump in it, and one that ends in a long line with no line end.
        "Job failed.\n" + _HUGE + "\nThe replica workerpool0-0 ran out of memory.\n",
        "Job failed.\n" + _HUGE,
    ],
)
def test_plain_text(text: str, tmp_path: Path) -> None:
    path = tmp_path / "paste.txt"
    path.write_text(text)
    (stats,) = analyze([str(path)]).inputs
    assert stats.skip_reasons[LONG_LINE] == 1
    assert stats.long_lines == [text.split("\n").index(_HUGE) + 1]


def test_the_text_report_names_the_line(tmp_path: Path) -> None:
    from tests.clirun import run

    path = _written("jsonl", tmp_path / "long.jsonl", huge=True)
    code, out, _ = run("diagnose", str(path))
    (number,) = json.loads(run("diagnose", str(path), "--format", "json")[1])["inputs"][0][
        "long_lines"
    ]
    assert code == 0
    assert f"line {number:,} is longer than any log entry" in " ".join(out.split())


_BIG = 60 << 20  # a line of 60 MB: 240-360 MB of memory to hold before


@pytest.mark.parametrize("fmt", ["jsonl", "stream-logs"])
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_huge_line_costs_no_memory(fmt: str, jobs: str, tmp_path: Path) -> None:
    small = _written(fmt, tmp_path / f"small.{fmt}", huge=False)
    lines = small.read_bytes().split(b"\n")
    if fmt == "jsonl":
        entry = json.loads(lines[5])
        entry.pop("jsonPayload", None)
        entry["textPayload"] = "y" * _BIG
        long = json.dumps(entry).encode()
    else:
        long = lines[5] + b"y" * _BIG
    path = tmp_path / f"huge.{fmt}"
    path.write_bytes(b"\n".join([*lines[:6], long, *lines[6:]]))
    env = {**os.environ, "JOBDOCTOR_JOBS": jobs}
    base, _ = peak_rss(["diagnose", str(small), "--format", "json"], env)
    peak, out = peak_rss(["diagnose", str(path), "--format", "json"], env)
    assert json.loads(out)["inputs"][0]["long_lines"] == [7]
    # Held whole, the line alone would be 60 MB, and its copies several times that.
    assert peak < base + (24 << 20), (base, peak)


@pytest.mark.usefixtures("small_ranges")
def test_a_long_line_of_text_inside_a_json_array(book: RuleBook, tmp_path: Path) -> None:
    # Not an element: skipped as text that is no entry, marked line by line (byte by byte, a
    # 20 MB line took 4 CPU s).
    out = io.StringIO()
    write(_entries(huge=False), "gcloud-json", out)
    lines = out.getvalue().split("\n")
    at = lines.index("  },") + 1
    path = tmp_path / "junk.json"
    path.write_text("\n".join([*lines[:at], _HUGE, *lines[at:]]))
    plain = _analysis(path, book, fast=False)
    assert _analysis(path, book, fast=True, processes=3) == plain
    (stats,) = plain["inputs"]  # type: ignore[index]
    assert stats["skip_reasons"] == {"not a LogEntry object": 1}


@pytest.mark.parametrize("fmt", ["jsonl", "stream-logs"])
def test_a_stream_cut_into_chunks_for_workers(fmt: str, book: RuleBook, tmp_path: Path) -> None:
    # stdin read by forked workers: the chunker keeps a long line to one byte past the longest,
    # which the workers still skip as too long.
    path = _written(fmt, tmp_path / f"long.{fmt}", huge=True)
    data = path.read_bytes() + path.read_bytes()  # two chunks at least
    found = []
    for fast, processes in ((False, 1), (True, 2)):
        logs, stats = collect(
            [StreamSource(io.BytesIO(data), "-")], book, fast=fast, processes=processes
        )
        found.append((logs, [s.to_dict() for s in stats]))
    assert found[0] == found[1]
    first, second = found[1][1][0]["long_lines"]
    assert second - first == data.count(b"\n") // 2
