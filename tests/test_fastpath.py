"""The fast path (block prefilter, light bookkeeping, several processes) gives exactly the
plain path's analysis: the whole ``to_dict`` document, input statistics included."""

from __future__ import annotations

import dataclasses
import functools
import gzip
import io
import itertools
import random
import re
import tempfile
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from analyzer.classify._fastscan import blockdecode
from analyzer.classify._fastscan import jsonl as fastjsonl
from analyzer.classify._fastscan.parallel import line_ranges, scan_stream
from analyzer.classify.collector import Collector, classify_records, classify_sources, collect
from analyzer.ingest import open_sources
from analyzer.ingest.records import InputStats
from analyzer.ingest.sources import StreamSource
from analyzer.pipeline.analysis import Analysis
from analyzer.pipeline.stages import diagnose_collected
from analyzer.rulebook import RuleBook
from analyzer.rulebook.normalize import INVISIBLE, fold
from analyzer.rulebook.prefilter import _unchanged_by_fold
from analyzer.simulate import SCENARIOS, fleet, simulate, write
from analyzer.timeline.attempts import build_timeline
from analyzer.verdict.policy import load_policy
from analyzer.verdict.predict import diagnose_timeline
from tests import reshape

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
    # jobdoctor classify: the same rows, in the same order.
    fast = classify_sources(open_sources(paths), book, processes=processes)
    assert list(fast) == list(classify_records(open_sources(paths), book))


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
    import analyzer.classify._fastscan.parallel as parallel

    smallest = parallel.MIN_RANGE_BYTES
    parallel.MIN_RANGE_BYTES = 256 << 10
    try:
        _same([str(path)], book, processes=2)
    finally:
        parallel.MIN_RANGE_BYTES = smallest


@pytest.mark.parametrize("fmt", ["gcloud-json", "stream-logs", "logs-explorer"])
def test_other_formats_of_a_fleet(fmt: str, book: RuleBook, tmp_path: Path) -> None:
    # Read record by record, their texts prefiltered a batch at a time: several batches here,
    # against the reference that matches every text alone.
    entries = [orjson.loads(line) for line in fleet(2_000_000, seed=5)]
    assert len(entries) > 2 * 1024
    out = io.StringIO()
    write(entries, fmt, out, seed=5)
    path = tmp_path / f"fleet.{fmt}"
    path.write_text(out.getvalue(), encoding="utf-8")
    _same([str(path)], book)


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
    for smallest, processes in [(300, 1), (300, 2), (64, 3), (10_000, 2), (1, 1)]:
        ranges = line_ranges(str(path), len(data), smallest, processes)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
        for (_, end), (start, _) in itertools.pairwise(ranges):
            assert end == start and data[start - 1 : start] == b"\n"
        # Guided: never growing along the file, but for the last, cut short by the end.
        sizes = [end - start for start, end in ranges]
        assert all(b <= a + 50 for a, b in itertools.pairwise(sizes[:-1])), sizes
        assert len(ranges) > 1 or smallest >= len(data) // 2


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
    assert prefilter.select(texts) == [i for i, t in enumerate(texts) if prefilter.candidates(t)]
    # The rule book's choice is narrower (issue 32): the texts a template really matches, and
    # those holding a character neither ASCII nor inert ("ｆａｉｌｅｄ", the LRM), which Python
    # decides; not "İNTERNAL" (no template matches "İNTERNAL") nor "x\nRUNNING".
    assert book.may_match_texts(texts) == [0, 1, 2]


@pytest.mark.parametrize("long", [0, 1, 3])
def test_select_with_long_texts_agrees_with_candidates(book: RuleBook, long: int) -> None:
    # Long texts full of rule words make a block's search stop; they are decided alone, the
    # others still together, and the match of each finds the same as before.
    rng = random.Random(long)
    texts = [line.decode() for line in _TEXT_SAMPLE]
    for _ in range(long):
        texts.insert(rng.randrange(len(texts)), reshape.long_traceback(rng, 30_000))
    texts.append("Ｔｒａｃｅｂａｃｋ " * 400)  # wide and long: decided the exact way
    prefilter = book._prefilter
    want = [i for i, t in enumerate(texts) if prefilter.candidates(t)]
    assert prefilter.select(texts) == want
    assert set(book.may_match_texts(texts)) >= {i for i in want if book.match(texts[i])}
    for text in texts[-2:]:
        probe = prefilter.probe(text)
        candidates, present = prefilter.literals_in(probe)
        assert candidates == prefilter.candidates_in(probe)
        assert sorted(present) == sorted(w for w in prefilter.literals if w in probe)


_TEXT_SAMPLE = [b"step 5 loss 0.3", b"Job failed.", b"RuntimeError: CUDA error", b"x" * 3000]


def test_normalised_text_needs_no_fold() -> None:
    # The block prefilter skips fold() for NFKC-normalised texts without invisible marks.
    for codepoint in range(0x80, 0x30000):
        char = chr(codepoint)
        if 0xD800 <= codepoint <= 0xDFFF or char in INVISIBLE or fold(char) == char:
            continue
        assert not unicodedata.is_normalized("NFKC", f"a{char}a"), hex(codepoint)


# Combining marks, compatibility forms, invisible marks, Hangul jamo: what NFKC changes.
_FOLDABLE = st.text(
    alphabet=st.sampled_from(
        [
            "a",
            "e",
            "\u0301",
            "\u0327",
            "\uff21",
            "\u2160",
            "\u200b",
            "\u1100",
            "\u1161",
            "\u11a8",
            "\u00e9",
            "\u0130",
            "\n",
            " ",
            "\u3099",
            "\u304b",
        ]
    )
    | st.characters(),
    max_size=8,
)


@given(st.lists(_FOLDABLE, max_size=6))
def test_one_fold_check_for_joined_texts(texts: list[str]) -> None:
    # select() checks the newline-joined wide texts at once: normalisation never crosses a
    # newline, so that is the same as checking each.
    joined = "\n".join(texts)
    assert _unchanged_by_fold(joined) == all(_unchanged_by_fold(text) for text in texts)


# Lines a raw-bytes reader could misread: user payload keys that shadow the entry's own, keys
# given twice (the last wins in orjson), the precedence of every label, escapes around and
# inside rule words, text a rule matches only after folding, and damage in the middle of a line.
_TAIL = (
    '"logName":"projects/p/logs/x","receiveTimestamp":"2024-03-11T08:00:02.000000000Z",'
    '"resource":{"labels":{"job_id":"111","project_id":"p","task_name":"workerpool0-0"},'
    '"type":"ml_job"},"timestamp":"2024-03-11T08:00:01.123456789Z"}'
)
_RESOURCE_TAIL = _TAIL[_TAIL.index('"resource"') :]
_TRICKY = [
    # the user's payload carries its own timestamp, job id and task name
    '{"insertId":"a","jsonPayload":{"job_id":"999","message":"step 1","task_name":"evil",'
    '"timestamp":"2030-01-01T00:00:00.000000000Z"},"labels":{},' + _TAIL,
    # the vm label given twice: the last one counts
    '{"insertId":"b","jsonPayload":{"message":"step 2"},"labels":{'
    '"compute.googleapis.com/resource_id":"1","compute.googleapis.com/resource_id":"2"},' + _TAIL,
    # no resource labels: the job and task come from the entry's labels, then attrs.tag
    '{"jsonPayload":{"attrs":{"tag":"workerpool0-1"},"message":"step 3"},'
    '"labels":{"ml.googleapis.com/job_id":"111"},"timestamp":"2024-03-11T08:00:03.000000000Z"}',
    '{"labels":{"ml.googleapis.com/task_name":"workerpool1-0","ml.googleapis.com/job_id":"111",'
    '"task_name":"workerpool1-1"},"textPayload":"step 4","timestamp":"2024-03-11T08:00:04Z"}',
    # only a receive time; an empty job id falls through to the labels
    '{"resource":{"labels":{"job_id":"","task_name":"workerpool0-0"}},"labels":{'
    '"ml.googleapis.com/job_id":"111"},"textPayload":"step 5",'
    '"receiveTimestamp":"2024-03-11T08:00:05.000000000Z"}',
    # a message that is not a string: the textPayload is the text
    '{"jsonPayload":{"message":{"nested":"Job failed."}},"textPayload":"The replica '
    'workerpool0-0 exited with a non-zero status of 1. Termination reason: Error.",'
    + _RESOURCE_TAIL,
    # the message given twice, the second not a string
    '{"jsonPayload":{"message":"Job failed.","message":7},' + _RESOURCE_TAIL,
    # rule words behind escapes, quotes, backslashes and full-width letters
    '{"jsonPayload":{"message":"\\u004aob \\u0066ailed."},' + _RESOURCE_TAIL,
    '{"jsonPayload":{"message":"say \\"Job failed.\\" \\\\ done"},' + _RESOURCE_TAIL,
    '{"jsonPayload":{"message":"Ｊｏｂ ｆａｉｌｅｄ．"},' + _RESOURCE_TAIL,
    '{"jsonPayload":{"message":"\\nfailed\\tJob failed.\\r"},' + _RESOURCE_TAIL,
    # damage inside an otherwise well-formed line
    '{"jsonPayload":{"message":"a\tb"},' + _RESOURCE_TAIL,
    '{"jsonPayload":{"message":"bad \\x escape"},' + _RESOURCE_TAIL,
    '{"jsonPayload":{"message":"two""quotes"},' + _RESOURCE_TAIL,
    '{"jsonPayload":{"message":"trailing comma",},' + _RESOURCE_TAIL,
    '{"jsonPayload":{"message":"lone \\ud800 surrogate"},' + _RESOURCE_TAIL,
    '{"jsonPayload":{"message":"Job failed."}, "severity" : "ERROR" ,' + _RESOURCE_TAIL,
    # Each line below leaves the lean path of JsonlScanner.feed for the general code.
    # no labels object at all, or one that is not an object (KeyError, AttributeError)
    '{"jsonPayload":{"message":"Job failed."},' + _TAIL,
    '{"jsonPayload":{"message":"Job failed."},"labels":["x"],' + _TAIL,
    '{"jsonPayload":{"message":"Job failed."},"labels":"x",' + _TAIL,
    # a jsonPayload without a message, one that is not an object, one that is null
    '{"jsonPayload":{"levelname":"ERROR"},"labels":{},"textPayload":"Job failed.",' + _TAIL,
    '{"jsonPayload":"Job failed.","labels":{},"textPayload":"step 6",' + _TAIL,
    '{"jsonPayload":[1],"labels":{},"textPayload":"step 6",' + _TAIL,
    '{"jsonPayload":null,"labels":{},"textPayload":"Job failed.",' + _TAIL,
    # no message anywhere: the plain skip reason
    '{"jsonPayload":{"levelname":"ERROR"},"labels":{},' + _TAIL,
    # resource labels of the wrong type, an empty task, a job id that is not a string
    '{"labels":{"ml.googleapis.com/job_id":"111"},"resource":{"labels":["workerpool0-0"]},'
    '"textPayload":"step 7","timestamp":"2024-03-11T08:00:07.000000000Z"}',
    '{"labels":{"ml.googleapis.com/job_id":"111"},"resource":"ml_job",'
    '"textPayload":"step 7","timestamp":"2024-03-11T08:00:07.000000000Z"}',
    '{"labels":{"task_name":"workerpool1-0"},"resource":{"labels":{"job_id":"111",'
    '"task_name":""}},"textPayload":"step 8","timestamp":"2024-03-11T08:00:08.000000000Z"}',
    '{"labels":{"ml.googleapis.com/job_id":"222"},"resource":{"labels":{"job_id":111,'
    '"task_name":"workerpool0-0"}},"textPayload":"step 9",'
    '"timestamp":"2024-03-11T08:00:09.000000000Z"}',
    # a vm label that is empty or not a string: no vm, on the lean path too
    '{"jsonPayload":{"message":"step 10"},"labels":{"compute.googleapis.com/resource_id":""},'
    + _TAIL,
    '{"jsonPayload":{"message":"step 11"},"labels":{"compute.googleapis.com/resource_id":7},'
    + _TAIL,
    # an empty timestamp: the receive time counts
    '{"jsonPayload":{"message":"step 12"},"labels":{},'
    + _TAIL.replace('"timestamp":"2024-03-11T08:00:01.123456789Z"', '"timestamp":""'),
    # entries of other resources (a project-wide sink), the legacy one, none, an empty type
    '{"jsonPayload":{"message":"Job failed."},"labels":{},'
    + _TAIL.replace('"type":"ml_job"', '"type":"gce_instance"'),
    '{"jsonPayload":{"message":"Job failed."},"labels":{},'
    + _TAIL.replace('"type":"ml_job"', '"type":"cloudml_job"'),
    '{"jsonPayload":{"message":"Job failed."},"labels":{},' + _TAIL.replace(',"type":"ml_job"', ""),
    '{"jsonPayload":{"message":"Job failed."},"labels":{},'
    + _TAIL.replace('"type":"ml_job"', '"type":""'),
    '{"jsonPayload":{"message":"Job failed."},"labels":{},'
    + _TAIL.replace('"type":"ml_job"', '"type":7'),
    '{"jsonPayload":{"message":"Job failed."},"labels":{},'
    + _TAIL.replace('"type":"ml_job"', '"t\\u0079pe":"k8s_container"'),
    # audit entries: with a text too, with a null payload (not one), with an escaped key
    '{"labels":{},"protoPayload":{"status":{}},"textPayload":"Job failed.",' + _RESOURCE_TAIL,
    '{"labels":{},"protoPayload":null,"textPayload":"Job failed.",' + _RESOURCE_TAIL,
    '{"labels":{},"pr\\u006ftoPayload":{},"textPayload":"Job failed.",' + _RESOURCE_TAIL,
    # payloads without "message": the other keys, else the payload rendered
    '{"jsonPayload":{"msg":"Job failed.","level":"error"},"labels":{},' + _TAIL,
    '{"jsonPayload":{"event":"Job failed."},"labels":{},' + _TAIL,
    '{"jsonPayload":{"step":3,"loss":0.5},"labels":{},' + _TAIL,
]
# Timestamps in a minute the fleet's own lines have already proven valid (and a few in new
# minutes), each wrong in one place the lean check looks at; and non-ASCII digits, which
# parse_timestamp rejects in the seconds and the first six digits of the fraction.
_TIMES = [
    # No minute proven yet must not let any string through (the lean path's start value).
    "\uffff" * 17 + "05.123456789Z",
    "2024-03-11T08:00:60.000000000Z",
    "2024-03-11T08:00:6.000000000Z",
    "2024-03-11T08:00:0\u0663.000000000Z",
    "2024-03-11T08:00:03.12345\u0666789Z",
    "2024-03-11T08:00:03.12345678\u0669Z",
    "2024-03-11T08:00:03.12345678Z",
    "2024-03-11T08:00:03.1234567890Z",
    "2024-03-11T08:00:03.123456789z",
    "2024-03-11T08:00:03.123456789Z ",
    "2024-03-11T08:00:03,123456789Z",
    "2024-03-11T08:00:03.12345678xZ",
    "2024-03-11T08:00:03.123456789+00:00",
    "2024-03-11T24:00:03.123456789Z",
    "2024-02-30T08:00:03.123456789Z",
    "2024-02-29T08:00:03.123456789Z",
    "\u0662024-03-11T08:00:03.123456789Z",
    "2024-03-11T08:00:03.123456789Z",
    # protobuf's shorter forms (the fraction's trailing zeros left out), right and wrong
    "2024-03-11T08:00:03Z",
    "2024-03-11T08:00:03.120Z",
    "2024-03-11T08:00:03.123456Z",
    "2024-02-30T08:00:03.123Z",
    "2024-03-11T24:00:03Z",
    "2024-03-11T08:00:03.1\u0663\u0663Z",
    "2024-03-11T08:00:03.123z",
    "2024-03-11T08:00:03:123Z",
    # BigQuery's TIMESTAMP text (a sink table exported to JSON), right and wrong
    "2024-03-11 08:00:03.123456 UTC",
    "2024-03-11 08:00:03 UTC",
    "2024-03-11 08:00:03.1 UTC",
    "2024-03-11 08:00:03.123456UTC",
    "2024-03-11 08:00:03.123456 utc",
    "2024-03-11 08:00:03.123456  UTC",
    "2024-02-30 08:00:03.123456 UTC",
]
_TRICKY += [
    '{"jsonPayload":{"message":"Job failed."},"labels":{},'
    + _TAIL.replace("2024-03-11T08:00:01.123456789Z", when)
    for when in _TIMES
]


@pytest.mark.parametrize("line", range(len(_TRICKY)))
def test_tricky_lines_inside_a_fleet(line: int, book: RuleBook, tmp_path: Path) -> None:
    lines = list(fleet(150_000, seed=11))
    # The fleet starts at 2024-03-11T08:00 (the tricky lines' minute): it is proven by then.
    assert b'"timestamp":"2024-03-11T08:00:' in b"".join(lines[: len(lines) // 2])
    lines.insert(len(lines) // 2, _TRICKY[line].encode() + b"\n")
    path = tmp_path / "tricky.jsonl"
    path.write_bytes(b"".join(lines))
    _same([str(path)], book)


@pytest.mark.parametrize("when", ["\uffff" * 17 + "05.123456789Z", "2024-03-11T08:00:05.1Z"])
def test_an_odd_time_on_the_first_line_of_a_block(
    when: str, book: RuleBook, tmp_path: Path
) -> None:
    # Before the block has proven any minute: the first line decides alone.
    lines = list(fleet(150_000, seed=14))
    first = '{"jsonPayload":{"message":"Job failed."},"labels":{},' + _TAIL.replace(
        "2024-03-11T08:00:01.123456789Z", when
    )
    path = tmp_path / "first.jsonl"
    path.write_bytes(first.encode() + b"\n" + b"".join(lines))
    _same([str(path)], book)


def test_invalid_utf8_and_crlf_lines(book: RuleBook, tmp_path: Path) -> None:
    lines = list(fleet(150_000, seed=12))
    lines[3] = lines[3].replace(b'"message":"', b'"message":"\xff\xfe', 1)
    lines[4] = lines[4].replace(b'"message":"', b'"message":"\xe2\x96', 1)
    lines[6] = lines[6].rstrip(b"\n") + b"\r\n"
    path = tmp_path / "bytes.jsonl"
    path.write_bytes(b"".join(lines))
    _same([str(path)], book)


def test_all_tricky_lines_in_one_block(book: RuleBook, tmp_path: Path) -> None:
    # Together, so that the lean path's cached minutes and the block prefilter see them all.
    lines = list(fleet(150_000, seed=13))
    middle = len(lines) // 2
    lines[middle:middle] = [line.encode() + b"\n" for line in _TRICKY]
    path = tmp_path / "tricky.jsonl"
    path.write_bytes(b"".join(lines))
    _same([str(path)], book)


def test_compressed_files_across_processes(book: RuleBook, tmp_path: Path) -> None:
    # Each gzip file is one worker's task; a truncated one loses its tail the same way.
    paths = []
    for seed in range(3):
        path = tmp_path / f"part-{seed}.jsonl.gz"
        path.write_bytes(gzip.compress(b"".join(fleet(600_000, seed=20 + seed))))
        paths.append(str(path))
    damaged = Path(paths[1])
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size * 3 // 4])
    _same(paths, book, processes=2)


@pytest.mark.parametrize("processes", [1, 2, 3])
@pytest.mark.parametrize("compress", [False, True])
def test_stdin_takes_the_fast_path_too(
    compress: bool, processes: int, book: RuleBook, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A sink export piped in (gsutil cat ... | jobdoctor diagnose -): read as it comes, by
    # forked workers in chunks (small here: many of them) when there are several processes.
    import analyzer.classify._fastscan.parallel as parallel

    monkeypatch.setattr(parallel, "CHUNK_BYTES", 20_000)
    lines = list(fleet(300_000, seed=16))
    lines[0] = b"\xef\xbb\xbf" + lines[0]  # a byte-order mark: the first chunk's only
    lines[5] = lines[5].rstrip(b"\n") + b"\r\n"
    lines.insert(9, b"\n")
    lines.insert(300, b'{"textPayload":"' + b"x" * 50_000 + b'"}\n')  # longer than a chunk
    data = b"".join(lines).rstrip(b"\n")
    data = gzip.compress(data)[:-300] if compress else data  # the gzip one is truncated too

    def analysis(fast: bool) -> object:
        source = StreamSource(io.BytesIO(data), "<stdin>")
        logs, stats = collect([source], book, fast=fast, processes=processes)
        policy = load_policy()
        diagnoses = tuple(diagnose_timeline(build_timeline(log), policy) for log in logs)
        # Every event where it was found, too: chunks are renumbered in stream order.
        where = [(e.origin.line, e.match.rule) for log in logs for e in log.events]
        return Analysis(tuple(stats), diagnoses).to_dict(), where

    assert analysis(fast=True) == analysis(fast=False)


def test_one_compressed_file_is_scanned_by_workers_as_it_comes(
    book: RuleBook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import analyzer.classify._fastscan.parallel as parallel

    monkeypatch.setattr(parallel, "CHUNK_BYTES", 50_000)
    path = tmp_path / "one.jsonl.gz"
    path.write_bytes(gzip.compress(b"".join(fleet(800_000, seed=21)))[:-500])
    _same([str(path)], book, processes=2)


def test_crlf_export(book: RuleBook, tmp_path: Path) -> None:
    # Windows line ends on every line: decoded a block at once, like the plain reader reads it.
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(b"".join(line.replace(b"\n", b"\r\n") for line in fleet(150_000, seed=15)))
    _same([str(path)], book)


@pytest.mark.parametrize("crlf", [False, True])
@pytest.mark.parametrize("fraction", [0.0, 0.3, 0.97])
def test_an_export_cut_inside_its_last_line(
    fraction: float, crlf: bool, book: RuleBook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A copy stopped early ends inside an entry: the same skip reason and cut line both ways,
    # in one process and in ranges on two.
    import analyzer.classify._fastscan.parallel as parallel

    monkeypatch.setattr(parallel, "MIN_RANGE_BYTES", 40_000)
    lines = list(fleet(150_000, seed=19))
    if crlf:
        lines = [line.replace(b"\n", b"\r\n") for line in lines]
    last = lines[-1].rstrip(b"\r\n")
    path = tmp_path / "cut.jsonl"
    path.write_bytes(b"".join(lines[:-1]) + last[: max(1, int(len(last) * fraction))])
    _same([str(path)], book)
    _same([str(path)], book, processes=2)
    [stats] = collect(open_sources([str(path)]), book, fast=True)[1]
    assert stats.cut_line == len(lines)
    assert stats.skip_reasons["cut short: the file ends inside a JSON object"] == 1


@pytest.mark.parametrize("digits", [0, 3, 6])
def test_shorter_timestamp_forms(digits: int, book: RuleBook, tmp_path: Path) -> None:
    # Every line's fraction cut to what protobuf writes when the other digits are zeros.
    fraction = rb"\.(\d{%d})\d*Z" % digits
    short = rb".\1Z" if digits else rb"Z"
    lines = [re.sub(fraction, short, line) for line in fleet(150_000, seed=14)]
    assert any(
        re.search(rb'"timestamp":"[^"]{%d}"' % (20 + digits + bool(digits)), line) for line in lines
    )
    path = tmp_path / "short.jsonl"
    path.write_bytes(b"".join(lines))
    _same([str(path)], book)


@pytest.mark.parametrize("shape", ["six-digits", "isoformat", "go-trimmed", "bigquery"])
def test_a_time_form_over_several_blocks(shape: str, book: RuleBook, tmp_path: Path) -> None:
    # The first block finds the form; the next take their timestamps in it (all of them when
    # they are of one length, each span's ends made canonical once), as each alone reads.
    lines = list(reshape.SHAPES[shape](fleet(1_300_000, seed=23)))
    path = tmp_path / "timed.jsonl"
    path.write_bytes(b"".join(lines))
    assert path.stat().st_size > 2 * fastjsonl.BLOCK_BYTES
    _same([str(path)], book)
    # Spans keep the canonical form (the one that compares like the times across blocks).
    with path.open("rb") as stream:
        spans = scan_stream(stream, InputStats(path=str(path)), book).tally.spans
    ends = [when for span in spans.values() for when in (span.first, span.last)]
    assert ends and all(fastjsonl.canonical_time(when) == when for when in ends)


def test_select_with_ascii_and_wide_texts(book: RuleBook) -> None:
    # select() searches ASCII and wide texts apart and merges the indexes back into order.
    texts = ["█ Job failed.", "plain", "Job failed.", "ｆａｉｌｅｄ █", "İNTERNAL", "x", "OOM"] * 3
    prefilter = book._prefilter
    expected = [i for i, t in enumerate(texts) if prefilter.candidates(t)]
    assert expected and prefilter.select(texts) == expected
    assert prefilter.select(["plain", "Job failed."]) == [1]
    assert prefilter.select(["█", "ｆａｉｌｅｄ"]) == [1]
    # Of those, the rule book keeps the ones a rule matches ("Job failed.", not "█ Job
    # failed.": the template is the whole text) and the wide "ｆａｉｌｅｄ █" (not inert:
    # Python decides), and leaves "OOM" (no template matches it).
    assert not book.match("█ Job failed.") and book.match("Job failed.")
    assert book.may_match_texts(texts[:7]) == [2, 3]


# Every legal serialisation of sink lines takes the lean path (issue 19 point 2): the same
# entries re-serialised (tests/reshape.py) give the plain path's analysis, and no line of them
# is parsed a second time, line by line.

_FLEET = list(fleet(400_000, seed=19))


@pytest.fixture
def reread(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The lines the fast scan read again one by one with the plain functions (the real
    function runs: this only notes its lines)."""
    lines: list[bytes] = []
    read_line = fastjsonl.JsonlScanner._read_line

    def noted(scanner: fastjsonl.JsonlScanner, raw: bytes, *rest: Any) -> None:
        lines.append(raw)
        read_line(scanner, raw, *rest)

    monkeypatch.setattr(fastjsonl.JsonlScanner, "_read_line", noted)
    return lines


def _lean(lines: list[bytes], book: RuleBook, tmp_path: Path, reread: list[bytes]) -> None:
    path = tmp_path / "shape.jsonl"
    path.write_bytes(b"".join(lines))
    _same([str(path)], book)
    if blockdecode.available():
        assert reread == [], f"{len(reread)} lines read again, the first: {reread[0]!r}"


@pytest.mark.parametrize("shape", sorted(reshape.SHAPES))
def test_every_serialisation_takes_the_lean_path(
    shape: str, book: RuleBook, tmp_path: Path, reread: list[bytes]
) -> None:
    if shape == "long-texts":  # denser than the bench's (one in 600 lines): a small fleet
        lines = list(reshape.long_texts(_FLEET, count=8, size=20_000, every=40))
    else:
        lines = list(reshape.SHAPES[shape](_FLEET))
    assert lines != _FLEET
    _lean(lines, book, tmp_path, reread)


def test_a_project_wide_sink_has_no_false_notice(book: RuleBook, tmp_path: Path) -> None:
    # Foreign entries, some without a resource at all (some exports drop it): the input gave
    # jobs, so it gets no "no Vertex AI job message in it".
    lines = list(reshape.foreign(_FLEET, share=0.2))
    lines.insert(5, b'{"textPayload":"kernel: eth0 up","timestamp":"2024-03-11T08:00:00Z"}\n')
    path = tmp_path / "project.jsonl"
    path.write_bytes(b"".join(lines))
    alone = tmp_path / "no-job.jsonl"
    alone.write_bytes(lines[5])
    for fast in (True, False):
        analysis = _notices([path], book, fast=fast)
        assert analysis.diagnoses
        assert not [n for n in analysis.notices if "no Vertex AI job message" in n]
        notices = _notices([alone], book, fast=fast).notices
        assert f"{alone}: no Vertex AI job message in it" in notices


@pytest.mark.parametrize("every", [7, 500])
def test_decided_lines_beside_a_rule_without_a_literal(every: int, tmp_path: Path) -> None:
    # Blank lines and other resources' entries are decided in the decoding and stand in the
    # block's texts as "": a rule without a literal word makes the prefilter hand out every
    # text, those too, and they must give no event (the rule matches nearly every text).
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "mine.yaml").write_text(
        "- id: mine.anything\n"
        "  category: internal_error\n"
        "  pattern: '^(?:ste|sta)?'\n"
        "  examples:\n"
        "    match:\n"
        "      - text: 'step 12 lost'\n"
        "        fields: {}\n"
    )
    book = RuleBook.load([rules])
    assert book.may_match_texts(["", "x"]) == [0, 1]
    lines = list(reshape.blank_lines(reshape.foreign(_FLEET[:3000], share=0.2), every=every))
    path = tmp_path / "project.jsonl"
    path.write_bytes(b"".join(lines))
    _same([str(path)], book)


def _notices(paths: list[Path], book: RuleBook, *, fast: bool) -> Analysis:
    collector = Collector(book, fast=fast)
    collector.read_all(open_sources([str(p) for p in paths]))
    return diagnose_collected(collector, book)


_OFFSETS = st.integers(-14 * 60, 14 * 60)


@st.composite
def _time_form(draw: st.DrawFn) -> Callable[[str], str]:
    """One RFC 3339 form of a sink timestamp: digits, zone, offset."""
    digits = draw(st.integers(0, 9))
    minutes = draw(st.one_of(st.just(0), _OFFSETS))
    zulu = draw(st.sampled_from(["Z", "z", "+00:00"]))
    forms: list[Callable[[str], str]] = [
        lambda s: s,
        reshape.isoformat,
        reshape.six_digits,
        reshape.go_trimmed,
        lambda s: reshape.with_offset(s, minutes, digits, zulu),
    ]
    return draw(st.sampled_from(forms))


@settings(max_examples=15, deadline=None)
@given(
    st.data(),
    st.sampled_from([b"", b" ", b"\t "]),
    st.sampled_from([b"", b" ", b" \t"]),
    st.sampled_from([b"\n", b"\r\n"]),
    st.integers(0, 3),
    st.floats(0, 0.3),
)
def test_random_serialisations_read_as_the_plain_path(
    data: st.DataObject,
    before: bytes,
    after: bytes,
    ending: bytes,
    blanks: int,
    share: float,
) -> None:
    book = RuleBook.load()
    start = data.draw(st.integers(0, len(_FLEET) - 300))
    lines = _FLEET[start : start + 300]
    lines = list(reshape.foreign(lines, share=share, seed=start))
    lines = list(reshape.long_texts(lines, count=2, size=5_000, every=120, seed=start))
    out: list[bytes] = []
    for line in lines:
        entry = orjson.loads(line)
        if isinstance(entry.get("timestamp"), str) and "." in entry["timestamp"]:
            entry["timestamp"] = data.draw(_time_form())(entry["timestamp"])
        out.append(before + orjson.dumps(entry) + after + ending)
        if blanks and data.draw(st.integers(0, 60)) == 0:
            out.append(data.draw(st.sampled_from([b"", b" ", b"\t\r"])) + ending)
    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as patch:
        path = Path(folder, "sink.jsonl")
        path.write_bytes(b"".join(out))
        _lean_only(patch)
        _same([str(path)], book)


def _lean_only(patch: pytest.MonkeyPatch) -> None:
    """Fail where the fast scan reads a line again with the plain functions."""

    def refused(_scanner: fastjsonl.JsonlScanner, raw: bytes, *_rest: Any) -> None:
        raise AssertionError(f"read again line by line: {raw!r}")

    if blockdecode.available():
        patch.setattr(fastjsonl.JsonlScanner, "_read_line", refused)


_TIME_PARTS = st.tuples(
    st.sampled_from(
        [
            "0000",
            "0001",
            "0004",
            "0100",
            "0400",
            "1900",
            "2000",
            "2023",
            "2024",
            "9999",
            "2O24",
            "٢٠٢٤",
        ]
    ),
    st.sampled_from(["00", "01", "02", "04", "09", "12", "13"]),
    st.sampled_from(["00", "01", "28", "29", "30", "31", "32"]),
    st.sampled_from(["T", "t", " "]),
    st.sampled_from(["00", "09", "23", "24"]),
    st.sampled_from(["00", "59", "60"]),
    st.sampled_from(["00", "59", "60", "6a", "٥٩"]),
    st.sampled_from([".123456789", ".12345678", ".1234567890", ".12345678\n", ""]),
    st.sampled_from(["Z", "z", "+00:00"]),
)


@settings(max_examples=500)
@given(st.lists(_TIME_PARTS.map("".join), min_size=1, max_size=4), st.integers(0, 3))
def test_a_blocks_times_checked_at_once_as_each_alone(times: list[str], canonical: int) -> None:
    # The lean path takes a block's timestamps for canonical and checks them all at once
    # after: the same answer as checking each (canonical_time keeps a canonical one as it is).
    times = ["2024-03-11T08:00:05.123456789Z"] * canonical + times
    each = all(fastjsonl.canonical_time(when) == when for when in times)
    assert fastjsonl.canonical_times(times) == each
    # Microseconds at UTC, whose key the lean path makes by appending "000Z" to 26 of them.
    for form, zone in zip(fastjsonl.FORMS[1:], ["Z", "+00:00"], strict=True):
        micro = [when[:26] + zone if len(when) >= 26 else when for when in times]
        micro += [w.replace("+00:00", z) for z in ["+05:30", "-00:01"] for w in micro[:1]]
        for some in (micro, micro[: len(times)]):
            each = all(
                len(w) == len(form) and fastjsonl.canonical_time(w) == w[:26] + "000Z" for w in some
            )
            assert fastjsonl.canonical_times(some, form) == each, some


_CLOCK = st.tuples(
    st.sampled_from(["00", "09", "10", "19", "20", "23", "24", "29", "30", "99"]),
    st.sampled_from(["00", "09", "59", "60", "69", "99"]),
    st.sampled_from(["00", "59", "60"]),
)


@settings(max_examples=400)
@given(
    st.sampled_from(["2024-03-11", "2024-02-29", "2023-02-29", "2024-04-31", "0000-01-01"]),
    st.lists(_CLOCK, min_size=1, max_size=6),
)
@example("2024-03-11", [("09", "00", "00"), ("09", "60", "00"), ("10", "00", "00")])
@example("2024-03-11", [("09", "00", "00"), ("24", "00", "00"), ("10", "00", "00")])
@example("2024-02-29", [("23", "59", "59"), ("00", "00", "00"), ("19", "99", "00")])
def test_one_days_times_checked_at_once_as_each_alone(date: str, clocks: list[Any]) -> None:
    # Times of one day are decided by the first and last minute, with the minutes' tens
    # checked for all: the same answer as each alone, whatever hours lie between.
    times = [f"{date}T{hour}:{minute}:{second}.123456789Z" for hour, minute, second in clocks]
    each = all(fastjsonl.canonical_time(when) == when for when in times)
    fastjsonl._GOOD_MINUTES.clear()  # proven minutes would hide a wrong answer
    assert fastjsonl.canonical_times(times) == each


# Long texts (issue 19 point 2: one linear pass): rule sentences near the edges of the text, of
# its search windows and of the scanner's blocks, CRLF and multi-byte characters; the fast
# path reads them as the plain path does.

_LONG_PARTS = [
    '  File "/opt/trainer/trainer/model.py", line 101, in forward',
    "    return self.block(x) + self.residual(x)",
    "step 1200 loss=0.1234 — 学習中 ✓ █▌",
    "Ｔｒａｃｅｂａｃｋ ｍｏｄｅｌ",
    "quota exceeded? creating the job later",
]
_SENTENCES = [example.text for rule in RuleBook.load().rules for example in rule.match_examples]


@functools.cache
def _past_a_block() -> tuple[bytes, ...]:
    """A fleet of two blocks and a half."""
    return tuple(fleet(fastjsonl.BLOCK_BYTES * 5 // 2, seed=23))


@st.composite
def _long_text(draw: st.DrawFn) -> str:
    rng = random.Random(draw(st.integers(0, 1 << 20)))
    parts = [rng.choice(_LONG_PARTS) for _ in range(draw(st.integers(40, 200)))]
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.sampled_from([0, len(parts), rng.randrange(len(parts) + 1)]))
        parts.insert(at, draw(st.sampled_from(_SENTENCES)))
    return draw(st.sampled_from(["\n", "\r\n", " "])).join(parts)


@settings(max_examples=12, deadline=None)
@given(st.data(), st.lists(_long_text(), min_size=1, max_size=3), st.integers(-3000, 3000))
def test_long_texts_read_as_the_plain_path(
    data: st.DataObject, texts: list[str], shift: int
) -> None:
    # A budget no loaded machine runs out of: a rule timing out on a long text in one path
    # and not the other (seen at load 14) is the machine, not a difference of the paths.
    book = dataclasses.replace(RuleBook.load(), timeout=10.0)
    lines = list(_past_a_block())
    # The first long entry straddles the end of the scanner's first block, give or take.
    at, size = 0, 0
    while size < fastjsonl.BLOCK_BYTES + shift - 2000 and at < len(lines) - 1:
        size += len(lines[at])
        at += 1
    for text in texts:
        entry = orjson.loads(lines[at])
        if isinstance(entry.get("jsonPayload"), dict):
            entry["jsonPayload"]["message"] = text
        else:
            entry["textPayload"] = text
        lines[at] = orjson.dumps(entry) + b"\n"
        at += data.draw(st.integers(1, 400))
        if at >= len(lines):
            break
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "sink.jsonl")
        path.write_bytes(b"".join(lines))
        _same([str(path)], book)
