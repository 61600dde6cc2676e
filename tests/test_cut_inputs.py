"""Inputs that end early, the everyday case: a JSONL export cut inside its last line, a gzip
file copied before it was complete, a damaged one. Each is told for what it is (cut short,
with the line; or damaged), the same through the fast and the plain reader."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from analyzer.classify.collector import collect
from analyzer.core.errors import InputError
from analyzer.ingest import open_sources
from analyzer.ingest.entries import CUT_SHORT, INVALID_JSON
from analyzer.ingest.records import InputStats
from analyzer.ingest.sources import StreamSource, damage_line
from analyzer.report.facts import skip_line
from analyzer.rulebook import RuleBook
from tests.clirun import run

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"
# 2,000 lines: the cut line's number is written with a thousands separator.
WHOLE = (SAMPLES / "success.jsonl").read_bytes() * 12


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


def _stats(path: Path, book: RuleBook, *, fast: bool, processes: int = 1) -> InputStats:
    _, stats = collect(open_sources([str(path)]), book, fast=fast, processes=processes)
    [only] = stats
    return only


def _last_line_cut(at: int) -> bytes:
    """WHOLE with its last line cut ``at`` bytes into it (negative: from its end)."""
    body, last = WHOLE.rstrip(b"\n").rsplit(b"\n", 1)
    return body + b"\n" + last[:at]


# What the input's end is, and the reason its last line is skipped for.
ENDS = [
    (_last_line_cut(40), CUT_SHORT),  # inside a key or a string
    (_last_line_cut(-2), CUT_SHORT),  # just before the object's end
    (_last_line_cut(1), CUT_SHORT),  # "{" alone
    (_last_line_cut(-2) + b"\n", INVALID_JSON),  # a line end after it: not the file's end
    (_last_line_cut(-2) + b"\xc3", CUT_SHORT),  # inside a UTF-8 sequence
    (WHOLE + b'{"a": 1}}', INVALID_JSON),  # ends whole, but is not JSON
    (WHOLE + b"[1, 2", INVALID_JSON),  # not an object: not a cut entry
    (WHOLE + b"garbage", INVALID_JSON),
]


@pytest.mark.parametrize(("data", "reason"), ENDS)
def test_a_last_line_cut_short_is_named_by_both_readers(
    data: bytes, reason: str, book: RuleBook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analyzer.classify._fastscan.parallel as parallel

    monkeypatch.setattr(parallel, "MIN_RANGE_BYTES", 64 << 10)  # several ranges, two processes
    path = tmp_path / "cut.jsonl"
    path.write_bytes(data)
    plain = _stats(path, book, fast=False)
    assert plain.skip_reasons == {reason: 1}
    assert plain.cut_line == (plain.lines if reason == CUT_SHORT else None)
    for processes in (1, 2):
        assert _stats(path, book, fast=True, processes=processes).to_dict() == plain.to_dict()
    # Piped in (stdin), read in chunks by forked workers.
    monkeypatch.setattr(parallel, "CHUNK_BYTES", 50_000)
    for fast in (False, True):
        source = StreamSource(io.BytesIO(data), "<stdin>")
        _, [piped] = collect([source], book, fast=fast, processes=2)
        assert (piped.skip_reasons, piped.cut_line) == (plain.skip_reasons, plain.cut_line)


def test_the_cut_line_is_one_line_of_the_report(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    path.write_bytes(_last_line_cut(40))
    lines = WHOLE.count(b"\n")
    code, out, _ = run("diagnose", str(path))
    assert code == 0
    said = f"{path}: line {lines:,}, the last, is cut short: the file ends inside a JSON object"
    assert said in out.splitlines()[-1]
    assert "skipped 1 line\n" in out
    stats = InputStats(path="x", cut_line=None)
    assert skip_line(stats, INVALID_JSON, 3) == "3 skipped: invalid JSON"


def _gzip_cut(tmp_path: Path, keep: int) -> Path:
    packed = gzip.compress(WHOLE * 4)
    path = tmp_path / "export.jsonl.gz"
    path.write_bytes(packed[:keep] if keep > 0 else packed[: keep or None])
    return path


def _gzip_damaged(tmp_path: Path) -> Path:
    packed = bytearray(gzip.compress(WHOLE * 4))
    middle = len(packed) // 2
    packed[middle : middle + 64] = bytes(b ^ 0x55 for b in packed[middle : middle + 64])
    path = tmp_path / "export.jsonl.gz"
    path.write_bytes(bytes(packed))
    return path


@pytest.mark.parametrize(
    ("make", "reason", "said"),
    [
        (lambda p: _gzip_cut(p, -300), "truncated compressed data", "copy or download it again"),
        (_gzip_damaged, "corrupt compressed data", "damaged, not cut short"),
    ],
)
def test_a_gzip_cut_short_is_not_called_corrupt(
    make: object, reason: str, said: str, book: RuleBook, tmp_path: Path
) -> None:
    assert callable(make)
    path = make(tmp_path)
    plain = _stats(path, book, fast=False)
    assert plain.skip_reasons[reason] == 1
    assert _stats(path, book, fast=True).to_dict() == plain.to_dict()
    line = damage_line(plain)
    assert line is not None and said in line
    code, _, err = run("diagnose", str(path))
    assert code == 2 and said in err


def test_a_short_gzip_prefix_is_truncated_not_corrupt(tmp_path: Path) -> None:
    path = _gzip_cut(tmp_path, 3000)  # nothing whole decompresses from it
    with pytest.raises(InputError, match=r"truncated gzip data.*copy it again"):
        open_sources([str(path)])


def _gcloud_cut(inside: bool) -> bytes:
    """gcloud's JSON array of a sample, cut after an entry's "}," (between entries) or
    inside the next entry."""
    data = (SAMPLES / "vm-maintenance-restart.json").read_bytes()
    cut = data.index(b"\n  },\n", len(data) // 2) + len(b"\n  },\n")
    return data[: cut + 40] if inside else data[:cut]


@pytest.mark.parametrize("inside", [False, True])
def test_a_json_array_cut_short_says_so_on_both_readers(
    inside: bool, book: RuleBook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analyzer.classify._fastscan.parallel as parallel

    monkeypatch.setattr(parallel, "MIN_RANGE_BYTES", 20_000)
    data = _gcloud_cut(inside)
    path = tmp_path / "logs.json"
    path.write_bytes(data)
    plain = _stats(path, book, fast=False)
    assert plain.cut_line == plain.lines == data.count(b"\n") + (not data.endswith(b"\n"))
    for processes in (1, 2):
        assert _stats(path, book, fast=True, processes=processes).to_dict() == plain.to_dict()
    code, out, _ = run("diagnose", str(path))
    assert code == 0
    assert f"line {plain.lines:,}, the last, ends inside the JSON array" in out
    whole = tmp_path / "whole.json"
    whole.write_bytes((SAMPLES / "vm-maintenance-restart.json").read_bytes())
    assert _stats(whole, book, fast=False).cut_line is None


def _csv_download() -> bytes:
    from analyzer.simulate import simulate, write

    out = io.StringIO()
    write(simulate("user-code-exit1", seed=0), "explorer-csv", out)
    return out.getvalue().encode("utf-8")


def _trimmed(data: bytes) -> bytes:
    """Every data row without its last cell (another writer's CSV, not a cut download)."""
    import csv

    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(rows[0])
    writer.writerows(row[:-1] for row in rows[1:])
    return out.getvalue().encode("utf-8")


@pytest.mark.parametrize(
    ("shape", "cut"),
    [
        ("whole", False),
        ("mid-row", True),
        ("inside a quoted cell", True),
        ("rows without their last cell, cut", False),
    ],
)
def test_a_csv_download_cut_inside_its_last_row(
    shape: str, cut: bool, book: RuleBook, tmp_path: Path
) -> None:
    data = _csv_download()
    if shape == "mid-row":
        data = data[: len(data) * 6 // 10]
        data = data[: data.rindex(b",") + 3]
    elif shape == "inside a quoted cell":
        data = data[: data.index(b"\"'Epoch ", len(data) // 2) + 20]
    elif shape != "whole":
        data = _trimmed(data)
        data = data[: data.rindex(b",", 0, len(data) * 6 // 10)]
    path = tmp_path / "downloaded-logs.csv"
    path.write_bytes(data)
    plain = _stats(path, book, fast=False)
    assert plain.format == "logs-explorer-csv"
    assert plain.lines == plain.used + plain.skipped
    assert (plain.cut_line == plain.lines) is cut
    assert bool(plain.skip_reasons.get("cut short: the file ends inside a CSV row")) is cut
    assert _stats(path, book, fast=True).to_dict() == plain.to_dict()
