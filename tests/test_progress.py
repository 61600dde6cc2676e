"""Feedback on slow work: what the progress meter is told adds up to what it said it would
read (directories, globs, gzip by what it expands to, several processes), and a real terminal
shows a bar for stdin; no bar when stderr is not a terminal."""

from __future__ import annotations

import gzip
import io
import sys
import threading
from pathlib import Path

import orjson
import pytest

from analyzer.classify.collector import Collector, classify_sources
from analyzer.ingest import open_sources
from analyzer.ingest.progress import gzip_size, reading_progress
from analyzer.rulebook import RuleBook
from analyzer.simulate import FORMATS, encoding, fleet, write
from tests.terminal import run_in_terminal

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"


class Recorder:
    def __init__(self) -> None:
        self.totals: set[int | None] = set()
        self.read = 0
        self.calls = 0
        self.largest = 0

    def __call__(self, total: int | None, count: int) -> None:
        self.totals.add(total)
        self.read += count
        self.calls += 1
        self.largest = max(self.largest, count)


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


@pytest.mark.parametrize("given", ["directory", "glob"])
@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.parametrize("how", ["diagnose", "classify"])
def test_the_meter_adds_up_over_a_directory(
    book: RuleBook, processes: int, how: str, given: str
) -> None:
    files = sorted(p for p in SAMPLES.iterdir() if p.is_file())
    if given == "glob":
        files = [p for p in files if p.name.startswith("s")]
    recorder = Recorder()
    token = reading_progress.set(recorder)
    try:
        sources = open_sources([str(SAMPLES) if given == "directory" else str(SAMPLES / "s*")])
        if how == "diagnose":
            Collector(book, processes=processes).read_all(sources)
        else:
            list(classify_sources(sources, book, processes=processes))
    finally:
        reading_progress.reset(token)
    # One total (the inputs' sizes on disk), said before anything was read, and everything
    # read adds up to it, however the files were read.
    (total,) = recorder.totals
    assert total == sum(p.stat().st_size for p in files)
    assert recorder.read == total


def test_a_gzip_file_moves_the_bar_while_it_is_decompressed(book: RuleBook, tmp_path: Path) -> None:
    plain = (SAMPLES / "project-wide.jsonl").read_bytes() * 8  # several blocks of lines
    packed = tmp_path / "fleet.jsonl.gz"
    packed.write_bytes(gzip.compress(plain))
    assert gzip_size(str(packed)) == len(plain) > packed.stat().st_size
    recorder = Recorder()
    token = reading_progress.set(recorder)
    try:
        Collector(book, processes=1).read_all(open_sources([str(packed)]))
    finally:
        reading_progress.reset(token)
    # Told in the file's own bytes, in proportion to what was decompressed, block by block.
    assert recorder.totals == {packed.stat().st_size}
    assert recorder.read == packed.stat().st_size
    assert recorder.calls > 3


@pytest.mark.parametrize("threads", [False, True], ids=["forked", "spawned"])
def test_gzip_files_read_by_workers_move_the_bar_as_they_are_read(
    book: RuleBook, tmp_path: Path, threads: bool
) -> None:
    # Two gzip files: one task each, one read by a worker (spawned while another thread
    # runs), one by this process. Stored, not compressed: a large file's compressed bytes,
    # in a small test.
    paths = []
    for seed in (1, 2):
        path = tmp_path / f"fleet-{seed}.jsonl.gz"
        path.write_bytes(gzip.compress(b"".join(fleet(2_000_000, seed=seed)), compresslevel=0))
        paths.append(path)
    recorder = Recorder()
    token = reading_progress.set(recorder)
    stop = threading.Event()
    if threads:
        threading.Thread(target=stop.wait, daemon=True).start()
    try:
        Collector(book, processes=2).read_all(open_sources([str(p) for p in paths]))
    finally:
        stop.set()
        reading_progress.reset(token)
    size = sum(p.stat().st_size for p in paths)
    assert recorder.totals == {size}
    assert recorder.read == size
    # Block by block, by the compressed bytes consumed: not once per file when it is done.
    assert recorder.calls >= 1 + 2 * 3
    assert recorder.largest < size // 4


# Every format but sink JSONL (the fast scan's, counted by its blocks) is read record by record.
OTHER_FORMATS = [fmt for fmt in FORMATS if fmt != "jsonl"]


@pytest.fixture(scope="module")
def entries() -> list[dict[str, object]]:
    # Larger than the readers' own chunks (gcloud JSON reads a megabyte at a time).
    return [orjson.loads(line) for line in fleet(2_200_000, seed=11)]


@pytest.mark.parametrize(
    ("how", "fmt", "packed"),
    [("diagnose", fmt, False) for fmt in OTHER_FORMATS]
    + [("diagnose", "stream-logs", True), ("diagnose", "gcloud-json", True)]
    + [("classify", "stream-logs", False), ("classify", "explorer-csv", True)],
)
def test_other_formats_move_the_bar_as_they_are_read(
    book: RuleBook,
    entries: list[dict[str, object]],
    tmp_path: Path,
    fmt: str,
    packed: bool,
    how: str,
) -> None:
    out = io.StringIO()
    write(entries, fmt, out, seed=11)
    data = out.getvalue().encode(encoding(fmt))
    if fmt == "stream-logs":
        # Its light scanner reads in blocks of half a megabyte: several of them (the text
        # holds the messages only, a sixth of the entries' JSON).
        data *= 6
    path = tmp_path / f"fleet.{fmt}{'.gz' if packed else ''}"
    # Stored, not compressed: as many compressed bytes as a large export has, in a small test.
    path.write_bytes(gzip.compress(data, compresslevel=0) if packed else data)
    recorder = Recorder()
    token = reading_progress.set(recorder)
    try:
        sources = open_sources([str(path)])
        if how == "diagnose":
            Collector(book, processes=1).read_all(sources)
        else:
            list(classify_sources(sources, book, processes=1))
    finally:
        reading_progress.reset(token)
    size = path.stat().st_size
    assert recorder.totals == {size}
    assert recorder.read == size
    # Told as the reader takes the file's bytes (a buffer at a time), not once at its end.
    assert recorder.calls > 3
    assert recorder.largest <= max(size // 2, 1 << 16)


@pytest.mark.skipif(sys.platform == "win32", reason="no pseudo-terminals here")
def test_a_slow_stdin_shows_a_bar_on_a_terminal_and_none_elsewhere() -> None:
    data = (SAMPLES / "project-wide.jsonl").read_bytes()
    half = data.rfind(b"\n", 0, len(data) // 2) + 1
    # A slow writer (gsutil cat over a slow link): the read lasts over a second.
    feed = [(data[:half], 1.2), (data[half:], 0.0)]
    args = ["diagnose", "-q", "-"]
    shown = run_in_terminal(args, 100, feed=feed, stderr_on_terminal=True)
    assert shown.code == 0
    assert "reading stdin" in shown.raw
    assert shown.text.count("job ") >= 5  # the verdicts, after the bar is gone
    quiet = run_in_terminal(args, 100, feed=feed)
    assert quiet.code == 0 and "reading" not in quiet.stderr and "reading" not in quiet.raw


@pytest.mark.parametrize("fmt", ["stream-logs", "gcloud-json"])
def test_light_scans_in_ranges_add_up(
    book: RuleBook,
    entries: list[dict[str, object]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fmt: str,
) -> None:
    import analyzer.classify._fastscan.parallel as parallel

    monkeypatch.setattr(parallel, "MIN_RANGE_BYTES", 256 << 10)  # many ranges, two processes
    out = io.StringIO()
    write(entries, fmt, out, seed=11)
    path = tmp_path / f"fleet.{fmt}"
    path.write_bytes(out.getvalue().encode() * (6 if fmt == "stream-logs" else 1))
    recorder = Recorder()
    token = reading_progress.set(recorder)
    try:
        Collector(book, processes=2).read_all(open_sources([str(path)]))
    finally:
        reading_progress.reset(token)
    size = path.stat().st_size
    assert recorder.totals == {size} and recorder.read == size
    if fmt == "stream-logs":  # told by the ranges as they are read
        assert recorder.calls > 3 and recorder.largest < size // 2
    else:  # a range may be unusual (the file then read again): told once all read
        assert recorder.calls == 2


def _slow_stdin() -> list[tuple[bytes, float]]:

    # A slow writer (gsutil cat over a slow link): the read lasts over a second.
    data = (SAMPLES / "project-wide.jsonl").read_bytes()
    half = data.rfind(b"\n", 0, len(data) // 2) + 1
    return [(data[:half], 1.2), (data[half:], 0.0)]


@pytest.mark.skipif(sys.platform == "win32", reason="no pseudo-terminals here")
def test_report_shows_a_bar_while_it_reads(tmp_path: Path) -> None:
    out = tmp_path / "fleet.html"
    args = ["report", "-o", str(out), "-"]
    shown = run_in_terminal(args, 100, feed=_slow_stdin(), stderr_on_terminal=True)
    assert shown.code == 0, shown.text
    assert "reading stdin" in shown.raw
    assert "<table" in out.read_text()


@pytest.mark.skipif(sys.platform == "win32", reason="no pseudo-terminals here")
def test_classify_shows_a_bar_unless_its_rows_go_to_the_terminal(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    redirected = run_in_terminal(["classify", "-"], 100, feed=_slow_stdin(), stdout_file=rows)
    assert redirected.code == 0
    assert "reading stdin" in redirected.raw
    assert len(rows.read_text().splitlines()) > 10
    # Rows on the terminal are the feedback: a bar would be drawn through them.
    on_terminal = run_in_terminal(
        ["classify", "-"], 100, feed=_slow_stdin(), stderr_on_terminal=True
    )
    assert on_terminal.code == 0
    assert "reading" not in on_terminal.raw and on_terminal.text.count("\n") > 10


@pytest.mark.skipif(sys.platform == "win32", reason="no pseudo-terminals here")
def test_a_read_shorter_than_the_delay_shows_no_bar() -> None:
    # With the real half-second delay a loaded machine can take longer than that to read a
    # small file: a delay no read reaches (tests/patient_cli.py) says what must hold. The
    # slow-stdin tests above show the bar once the delay has passed.
    done = run_in_terminal(
        ["diagnose", "-q", str(SAMPLES / "success.jsonl")],
        100,
        stderr_on_terminal=True,
        module="tests.patient_cli",
    )
    assert done.code == 0 and "reading" not in done.raw and "job " in done.text


@pytest.mark.skipif(sys.platform == "win32", reason="no pseudo-terminals here")
def test_explain_says_it_reads_stdin_on_a_terminal() -> None:
    import os
    import pty
    import subprocess

    leader, follower = pty.openpty()
    command = [sys.executable, "-m", "analyzer.cli", "explain"]
    with subprocess.Popen(
        command, stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        os.close(follower)
        os.write(leader, b"Resources are insufficient in region: us-central1\n\x04")
        out, err = proc.communicate(timeout=60)
    os.close(leader)
    assert "reading a message from stdin" in err.decode()
    assert proc.returncode == 0 and b"stockout" in out
