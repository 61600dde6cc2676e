"""The fast path (block prefilter, light bookkeeping, several processes) gives exactly the
plain path's analysis: the whole ``to_dict`` document, input statistics included."""

from __future__ import annotations

import io
import itertools
import random
import unicodedata
from pathlib import Path

import pytest

from analyzer.api import Analysis
from analyzer.classify import collect
from analyzer.ingest import open_sources
from analyzer.parallel import line_ranges
from analyzer.policy import load_policy
from analyzer.predict import diagnose_timeline
from analyzer.rulebook import RuleBook
from analyzer.rulebook.normalize import INVISIBLE, fold
from analyzer.simulate import SCENARIOS, fleet, simulate, write
from analyzer.timeline import build_timeline

SAMPLES = sorted(Path(__file__).resolve().parent.parent.joinpath("sample_logs").iterdir())


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


def _analysis(paths: list[str], book: RuleBook, *, fast: bool, processes: int = 1) -> object:
    policy = load_policy()
    logs, stats = collect(open_sources(paths), book, fast=fast, processes=processes)
    diagnoses = tuple(diagnose_timeline(build_timeline(log), policy) for log in logs)
    return Analysis(tuple(stats), diagnoses).to_dict()


def _same(paths: list[str], book: RuleBook, processes: int = 1) -> None:
    assert _analysis(paths, book, fast=True, processes=processes) == _analysis(
        paths, book, fast=False
    )


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_samples(sample: Path, book: RuleBook) -> None:
    _same([str(sample)], book)


def test_all_samples_at_once(book: RuleBook) -> None:
    _same([str(p) for p in SAMPLES], book, processes=2)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_random_scenarios(scenario: str, book: RuleBook, tmp_path: Path) -> None:
    seed = random.Random(scenario).randrange(1_000_000)
    out = io.StringIO()
    write(simulate(scenario, seed), "jsonl", out, seed=seed)
    path = tmp_path / f"{scenario}.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    _same([str(path)], book)


def test_fleet_split_across_processes(book: RuleBook, tmp_path: Path) -> None:
    path = tmp_path / "fleet.jsonl"
    with path.open("wb") as stream:
        stream.writelines(fleet(3_000_000, seed=random.randrange(1000)))
    # Small ranges: many cuts, each renumbered after the ones before it.
    import analyzer.parallel as parallel

    pieces = parallel.RANGE_BYTES
    parallel.RANGE_BYTES = 256 << 10
    try:
        _same([str(path)], book, processes=2)
    finally:
        parallel.RANGE_BYTES = pieces


def test_damaged_lines_are_counted_the_same(book: RuleBook, tmp_path: Path) -> None:
    lines = list(fleet(200_000, seed=3))
    lines[0] = b"\xef\xbb\xbf" + lines[0]
    lines[5] = b"\n"
    lines[7] = lines[7][:40] + b"\n"
    lines[9] = b"[1, 2]\n"
    lines[11] = lines[11].replace(b'"timestamp":"2024', b'"timestamp":"2O24')
    lines[13] = lines[13].replace(b'Z"}', b'+02:00"}')
    lines[15] = b'{"textPayload": "Job failed.", "timestamp": "2024-03-11T08:00:00Z"}\n'
    lines[17] = b'{"jsonPayload": {"message": 3}}\n'
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(b"".join(lines).rstrip(b"\n"))
    _same([str(path)], book)


def test_line_ranges_cover_the_file_at_line_starts(tmp_path: Path) -> None:
    path = tmp_path / "lines.txt"
    data = b"".join(b"x" * random.randrange(1, 50) + b"\n" for _ in range(500))
    path.write_bytes(data)
    ranges = line_ranges(str(path), len(data), piece=300)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
    for (_, end), (start, _) in itertools.pairwise(ranges):
        assert end == start and data[start - 1 : start] == b"\n"


def test_select_agrees_with_candidates(book: RuleBook) -> None:
    texts = [
        "Job failed.",
        "ｆａｉｌｅｄ",
        "fa\u200eiled",
        "İNTERNAL",
        "█ step",
        "plain",
        "x\nRUNNING",
    ]
    prefilter = book._prefilter
    assert book.may_match_texts(texts) == [
        i for i, t in enumerate(texts) if prefilter.candidates(t)
    ]


def test_normalised_text_needs_no_fold() -> None:
    # The block prefilter skips fold() for NFKC-normalised texts without invisible marks.
    for codepoint in range(0x80, 0x30000):
        char = chr(codepoint)
        if 0xD800 <= codepoint <= 0xDFFF or char in INVISIBLE or fold(char) == char:
            continue
        assert not unicodedata.is_normalized("NFKC", f"a{char}a"), hex(codepoint)
