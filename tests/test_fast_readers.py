"""The other readers' fast scan (stream-logs text, gcloud's JSON array) gives exactly the plain
reader's analysis, in one process or over byte ranges in several: the whole ``to_dict``
document, input statistics included, and ``jobdoctor classify``'s rows. Every scenario of the
simulator, in both shapes and their variants (pasted, legacy trial column, an id-less paste
named elsewhere in the file, other zones, damaged lines; compact, truncated, mixed arrays).
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import random
import re
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path

import orjson
import pytest

from analyzer.api import analyze
from analyzer.classify import _fastscan
from analyzer.classify._fastscan import parallel
from analyzer.classify._fastscan.gcloudjson import GcloudJsonScanner, entry_ranges
from analyzer.classify._fastscan.streamlogs import StreamLogsScanner, safe_ranges, starts_record
from analyzer.classify.collector import classify_records, classify_sources, collect
from analyzer.ingest import open_sources
from analyzer.ingest.records import InputStats
from analyzer.ingest.sources import StreamSource
from analyzer.pipeline.analysis import Analysis
from analyzer.rulebook import RuleBook
from analyzer.simulate import SCENARIOS, encoding, expected, fleet, simulate, write
from analyzer.timeline.attempts import build_timeline
from analyzer.verdict.policy import load_policy
from analyzer.verdict.predict import diagnose_timeline
from tests import corpus
from tests.test_every_shape import FOREIGN, LEGACY_PREAMBLE, PREAMBLE, TRIALS, _verdicts


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


@pytest.fixture
def small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    # Ranges of a few hundred bytes: many cuts even in a small file, each a chance to cut a
    # message, a trial's rows or an entry the wrong way.
    monkeypatch.setattr(parallel, "MIN_RANGE_BYTES", 300)


def _analysis(path: Path, book: RuleBook, *, fast: bool, processes: int = 1) -> object:
    policy = load_policy()
    logs, stats = collect(open_sources([str(path)]), book, fast=fast, processes=processes)
    diagnoses = tuple(diagnose_timeline(build_timeline(log), policy) for log in logs)
    return Analysis(tuple(stats), diagnoses).to_dict()


def _taken(path: Path, book: RuleBook) -> bool:
    """Whether the fast scan read ``path`` itself (not left it to the plain reader)."""
    (found,) = _fastscan.scan(open_sources([str(path)]), book)
    return found is not None


def _same(path: Path, book: RuleBook) -> None:
    """Fast == plain, in 1 and 3 processes and from a stream; classify's rows too; and the
    fast scan took it."""
    plain = _analysis(path, book, fast=False)
    assert _analysis(path, book, fast=True) == plain
    assert _analysis(path, book, fast=True, processes=3) == plain
    rows = list(classify_records(open_sources([str(path)]), book))
    assert list(classify_sources(open_sources([str(path)]), book, processes=3)) == rows
    assert _taken(path, book)
    if not path.name.endswith(".gz"):
        assert _streamed(path.read_bytes(), path.name, book, fast=True) == _streamed(
            path.read_bytes(), path.name, book, fast=False
        )


def _streamed(data: bytes, name: str, book: RuleBook, *, fast: bool) -> object:
    """The analysis of ``data`` read as a stream (stdin), stats and all."""
    logs, stats = collect([StreamSource(io.BytesIO(data), name)], book, fast=fast)
    policy = load_policy()
    diagnoses = tuple(diagnose_timeline(build_timeline(log), policy) for log in logs)
    return Analysis(tuple(stats), diagnoses).to_dict()


# The simulator's text is a pure function of its arguments: made once per run, not per case.
_written = corpus.written


# --- stream-logs -----------------------------------------------------------------------------

_TIME = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \+0000")


def _in_zone(text: str, hours: int) -> str:
    """``text`` with its times written in another zone (gcloud prints the local time)."""

    def local(found: re.Match[str]) -> str:
        moment = datetime.strptime(found[1], "%Y-%m-%d %H:%M:%S") + timedelta(hours=hours)
        sign = "+" if hours >= 0 else "-"
        return f"{moment:%Y-%m-%d %H:%M:%S} {sign}{abs(hours):02d}00"

    return _TIME.sub(local, text)


def _damaged(text: str) -> bytes:
    """Blank, foreign, invalid-UTF-8 and impossible-time lines among the rows."""
    lines = text.encode().splitlines(keepends=True)
    rng = random.Random(len(lines))
    for _ in range(max(3, len(lines) // 20)):
        at = rng.randrange(1, len(lines))
        # A second that is none, in a minute the lines around it have.
        lines.insert(at, re.sub(rb"(\d\d:\d\d:)\d\d", rb"\g<1>61", lines[at], count=1))
        lines.insert(
            at,
            rng.choice(
                [
                    b"\n",
                    b"   \n",
                    b"something else entirely\n",
                    b"INFO\t2024-02-30 10:00:00 +0000\tservice\tJob failed.\n",
                    b"ERROR\t2024-03-11 25:00:00 +0000\tworkerpool0-0\tbad hour\n",
                    b"INFO\t2024-03-11 08:00:00 +0000\tworkerpool0-0\tbad \xff byte\n",
                    b"INFO\t2024-03-11 08:00:00 +0000\tservice\t\n",
                    b"INFO\t2024-03-11 08:00:00 +0000\n",
                ]
            ),
        )
    return b"".join(lines)


STREAM_VARIANTS: dict[str, Callable[[str], bytes]] = {
    "as-written": str.encode,
    "pasted": lambda t: (PREAMBLE + t + "\nYour job is still active.\n").encode(),
    "legacy-pasted": lambda t: (LEGACY_PREAMBLE + t).encode(),
    "spaced": lambda t: t.replace("\t", "    ").encode(),
    "crlf-bom": lambda t: b"\xef\xbb\xbf" + t.replace("\n", "\r\n").encode(),
    "zone": lambda t: _in_zone(t, -7).encode(),
    "no-final-newline": lambda t: t.rstrip("\n").encode(),
    "damaged": _damaged,
}


_ORDER = {scenario: number for number, scenario in enumerate(sorted(SCENARIOS))}


def _spread(scenario: str, variant: str, variants: Iterable[str]) -> bool:
    """Whether a variant of a serialisation runs on ``scenario``: every scenario as written;
    the damaged lines (random, so each scenario's own) on every second scenario, and each
    other variant (a layout, the same change whatever the entries) on every third, a
    rotation over the scenarios' order, so that every variant meets a third of the scenarios
    at least and every scenario some variants, at a third of the cost of the whole product
    (the suite's five minutes)."""
    if variant == "as-written":
        return True
    turn = _ORDER[scenario] + list(variants).index(variant)
    return turn % (2 if variant == "damaged" else 3) == 0


STREAM_CASES = [
    (scenario, variant)
    for scenario in sorted(SCENARIOS)
    if len(expected(scenario)) == 1  # a stream-logs text is one job's
    for variant in STREAM_VARIANTS
    if _spread(scenario, variant, STREAM_VARIANTS)
]


@pytest.mark.parametrize(("scenario", "variant"), STREAM_CASES)
@pytest.mark.usefixtures("small_ranges")
def test_stream_logs_fast_is_plain(
    scenario: str, variant: str, book: RuleBook, tmp_path: Path
) -> None:
    path = tmp_path / f"{scenario}.txt"
    path.write_bytes(STREAM_VARIANTS[variant](_written(scenario, "stream-logs")))
    _same(path, book)


def _trial_rows() -> str:
    """The tuning job's entries as legacy stream-logs with the trial column (its trials'
    rows interleaved), as ``test_every_shape`` builds them."""
    rows = []
    for line in TRIALS.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        text = entry.get("textPayload") or entry["jsonPayload"]["message"]
        stamp = entry["timestamp"][:19].replace("T", " ") + " +0000"
        task = entry["resource"]["labels"]["task_name"]
        trial = entry["labels"]["ml.googleapis.com/trial_id"]
        for part in text.splitlines():
            rows.append(f"{entry['severity']}\t{stamp}\t{task}\t{trial}\t{part}\n")
    return "".join(rows)


@pytest.mark.parametrize("named", ["before", "after", "nowhere"])
@pytest.mark.parametrize("spaced", [False, True])
@pytest.mark.usefixtures("small_ranges")
def test_a_tuning_paste_named_elsewhere_in_the_file(
    named: str, spaced: bool, book: RuleBook, tmp_path: Path
) -> None:
    # The trials take the job name a gcloud line gives outside them, wherever it is: the
    # ranges' merge must give it to every trial as one process does.
    rows = _trial_rows()
    if spaced:
        rows = rows.replace("\t", "   ")
    name = "Job [hp_tuning_20240508] submitted successfully.\njobId: hp_tuning_20240508\n"
    text = {"before": name + rows, "after": rows + name, "nowhere": rows}[named]
    path = tmp_path / "tuning.txt"
    path.write_text(text, encoding="utf-8")
    _same(path, book)
    if not spaced:  # (with the tabs lost, this excerpt's trial column is not told apart)
        trials = {d.trial: d.job_id for d in analyze([path]).diagnoses if d.trial}
        job = None if named == "nowhere" else "hp_tuning_20240508"
        assert trials == dict.fromkeys(("1", "2"), job)


@pytest.mark.usefixtures("small_ranges")
def test_multi_line_service_messages_across_cuts(book: RuleBook, tmp_path: Path) -> None:
    # Service messages of many lines in the same second (the plain reader joins them), two
    # distinct messages sharing a second, a traceback between two "The replica" lines: with
    # ranges of a few hundred bytes, cuts fall inside most of them unless they are safe.
    head = "ERROR\t2024-03-11 08:{:02d}:{:02d} +0000\tservice\t"
    rows = []
    for minute in range(30):
        second = minute % 60
        stamp = head.format(minute, second)
        rows.append(stamp + "The replica workerpool0-0 exited with a non-zero status of 1.\n")
        rows += [stamp + "Traceback (most recent call last):\n"]
        rows += [stamp + f'  File "train.py", line {n}, in main\n' for n in range(12)]
        rows.append(stamp + "ValueError: bad value\n")
        rows.append(stamp + "The replica workerpool0-1 exited with a non-zero status of 1.\n")
        rows.append(stamp + "To find out more about why your job exited please check the logs\n")
        rows.append(stamp.replace("ERROR", "INFO") + "Job failed.\n")
        rows.append(stamp.replace("ERROR", "INFO") + "Finished tearing down training program.\n")
    path = tmp_path / "joined.txt"
    path.write_text("".join(rows), encoding="utf-8")
    _same(path, book)


@pytest.mark.usefixtures("small_ranges")
def test_a_message_goes_on_whatever_its_prefix_spelling(book: RuleBook, tmp_path: Path) -> None:
    # The plain reader compares prefixes as it parsed them: one instant written in two zones,
    # and unknown_task, are the same second and the service's task. Every line of a message
    # spelled another way than the one before it: no cut may fall between them.
    spellings = [
        "ERROR\t2024-03-11 08:{m:02d}:07 +0000\tservice\t",
        "ERROR\t2024-03-11 09:{m:02d}:07 +0100\tunknown_task\t",
        "ERROR\t2024-03-11 03:{m:02d}:07 -0500\tservice\t",
    ]
    rows = []
    for minute in range(40):
        lines = [
            "The replica workerpool0-0 exited with a non-zero status of 1.",
            "Traceback (most recent call last):",
            *[f'  File "train.py", line {n}, in main' for n in range(8)],
            "ValueError: bad value",
        ]
        for index, text in enumerate(lines):
            rows.append(spellings[index % 3].format(m=minute) + text + "\n")
    path = tmp_path / "spelled.txt"
    path.write_text("".join(rows), encoding="utf-8")
    _same(path, book)
    logs, _ = collect(open_sources([str(path)]), book, fast=False)
    (log,) = logs
    assert log.records == 40  # each message joined whole


def test_cuts_are_where_no_message_goes_on(tmp_path: Path) -> None:
    text = _written("worker-restarts-exhausted", "stream-logs")
    path = tmp_path / "rows.txt"
    path.write_text(text, encoding="utf-8")
    data = path.read_bytes()
    for smallest, processes in [(100, 1), (300, 2), (1000, 3)]:
        ranges = safe_ranges(str(path), len(data), smallest, processes)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
        for start, _ in ranges[1:]:
            previous = data[data.rfind(b"\n", 0, start - 1) + 1 : start]
            line = data[start : data.index(b"\n", start) + 1]
            assert starts_record(previous, line)


def test_a_stream_logs_fleet_over_processes(book: RuleBook, tmp_path: Path) -> None:
    # Several prefilter batches and blocks per range, with the real range sizes shrunk.
    entries = [orjson.loads(line) for line in fleet(3_000_000, seed=7)]
    out = io.StringIO()
    write(entries, "stream-logs", out)
    path = tmp_path / "fleet.txt"
    path.write_text(out.getvalue(), encoding="utf-8")
    smallest = parallel.MIN_RANGE_BYTES
    parallel.MIN_RANGE_BYTES = 64 << 10
    try:
        _same(path, book)
    finally:
        parallel.MIN_RANGE_BYTES = smallest


# --- gcloud JSON -----------------------------------------------------------------------------


def _foreign_mixed(text: str) -> bytes:
    entries = json.loads(text)
    middle = len(entries) // 2
    mixed = entries[:middle] + FOREIGN + entries[middle:]
    return (json.dumps(mixed, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _reindented(text: str) -> bytes:
    # Entries at the array's own indentation and their fields at two spaces: a "\n  },\n  {"
    # then lies between two objects inside an entry (an array of them), not between entries.
    entries = json.loads(text)
    for entry in entries:
        entry["extra"] = [{"a": 1}, {"b": 2}]
    return (json.dumps(entries, indent=2).replace("\n  ", "\n") + "\n").encode()


JSON_VARIANTS: dict[str, tuple[Callable[[str], bytes], bool]] = {
    # variant: (how it is made of gcloud's array, whether the light scanner reads it)
    "as-written": (str.encode, True),
    "bom": (lambda t: b"\xef\xbb\xbf" + t.encode(), True),
    "no-final-newline": (lambda t: t.rstrip("\n").encode(), True),
    "compact": (lambda t: json.dumps(json.loads(t)).encode(), False),
    "crlf": (lambda t: t.replace("\n", "\r\n").encode(), False),
    "truncated": (lambda t: t[: len(t) * 2 // 3].encode(), False),
    "text-after": (
        lambda t: (t + "Updates are available for some Google Cloud CLI\n").encode(),
        False,
    ),
    "foreign-entries": (_foreign_mixed, False),
    "reindented": (_reindented, False),
    "raw-newline-in-a-text": (
        lambda t: t.replace("Waiting for job to be provisioned.", "Waiting for\njob", 1).encode(),
        False,
    ),
}
JSON_CASES = [
    (scenario, fmt, variant)
    for scenario in sorted(SCENARIOS)
    for fmt in ("gcloud-json", "explorer-json")
    for variant in JSON_VARIANTS
    if (fmt == "gcloud-json" or variant == "as-written")
    and _spread(scenario, variant, JSON_VARIANTS)
]


@pytest.mark.parametrize(("scenario", "fmt", "variant"), JSON_CASES)
@pytest.mark.usefixtures("small_ranges")
def test_gcloud_json_fast_is_plain(
    scenario: str, fmt: str, variant: str, book: RuleBook, tmp_path: Path
) -> None:
    make, light = JSON_VARIANTS[variant]
    data = make(_written(scenario, fmt))
    path = tmp_path / f"{scenario}.json"
    path.write_bytes(data)
    if variant == "raw-newline-in-a-text" and b"Waiting for\njob" not in data:
        light = True  # the scenario has no such line: the array is as written
    _same(path, book)
    # Read lightly to its end, or by the plain reader from where the light scanner stopped.
    scanner = GcloudJsonScanner(
        InputStats(path=str(path)), book.may_match_texts, book.match, resume=True
    )
    with path.open("rb") as stream:
        scanner.scan(stream)
    assert (scanner.resumed_at is None) is light


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.usefixtures("small_ranges")
def test_api_responses_fast_is_plain(scenario: str, book: RuleBook, tmp_path: Path) -> None:
    # The Logging API's entries:list pages (simulate -f api-response), read lightly to their
    # end: more layouts, damaged and cut ones, in tests/test_api_response.py.
    path = tmp_path / f"{scenario}.json"
    path.write_text(_written(scenario, "api-response"), encoding="utf-8")
    _same(path, book)
    scanner = GcloudJsonScanner(
        InputStats(path=str(path)), book.may_match_texts, book.match, resume=True, api=True
    )
    with path.open("rb") as stream:
        scanner.scan(stream)
    assert scanner.resumed_at is None


def test_entry_cuts_are_between_entries(tmp_path: Path) -> None:
    path = tmp_path / "oom.json"
    path.write_text(_written("oom", "gcloud-json"), encoding="utf-8")
    data = path.read_bytes()
    ranges = entry_ranges(str(path), len(data), 500, 3)
    assert len(ranges) > 3 and ranges[0][0] == 0 and ranges[-1][1] == len(data)
    for start, _ in ranges[1:]:
        assert data[:start].endswith(b"\n  },\n") and data[start:].startswith(b"  {\n")


def test_a_gcloud_json_fleet_over_processes(book: RuleBook, tmp_path: Path) -> None:
    entries = [orjson.loads(line) for line in fleet(3_000_000, seed=9)]
    out = io.StringIO()
    write(entries, "gcloud-json", out)
    path = tmp_path / "fleet.json"
    path.write_text(out.getvalue(), encoding="utf-8")
    smallest = parallel.MIN_RANGE_BYTES
    parallel.MIN_RANGE_BYTES = 256 << 10
    try:
        _same(path, book)
    finally:
        parallel.MIN_RANGE_BYTES = smallest


# --- the diagnosis of the sink export --------------------------------------------------------


def _scenario_files(scenario: str, tmp_path: Path) -> tuple[Path, Path, Path]:
    paths = []
    for fmt, suffix in [("jsonl", "jsonl"), ("gcloud-json", "json"), ("stream-logs", "txt")]:
        path = tmp_path / f"{scenario}.{suffix}"
        path.write_text(_written(scenario, fmt), encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1], paths[2]


# A case per scenario (it was one test of 28, the suite's longest at the end of a worker).
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.usefixtures("small_ranges")
def test_each_scenario_diagnoses_like_its_sink_export(
    scenario: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As tests/test_every_shape asserts for the plain readers, through the fast scan (files),
    # in two processes.
    monkeypatch.setenv("JOBDOCTOR_JOBS", "2")
    sink, array, rows = _scenario_files(scenario, tmp_path)
    want = analyze([sink])
    assert _verdicts(analyze([array])) == _verdicts(want), scenario
    if len(expected(scenario)) == 1:
        got = analyze([rows])
        assert _verdicts(got, with_ids=False) == _verdicts(want, with_ids=False), scenario


@pytest.mark.parametrize(("fmt", "suffix"), [("stream-logs", "txt"), ("gcloud-json", "json")])
@pytest.mark.parametrize("scenario", ["oom", "worker-restarts-exhausted"])
def test_compressed_inputs(
    scenario: str, fmt: str, suffix: str, book: RuleBook, tmp_path: Path
) -> None:
    # A gzip file is read whole by one process, decompressed as it comes; cut short, its
    # lost tail counts as the plain reader counts it.
    data = _written(scenario, fmt).encode()
    whole = tmp_path / f"{scenario}.{suffix}.gz"
    whole.write_bytes(gzip.compress(data))
    _same(whole, book)
    # Cut short (a fleet's worth: the part before the cut must be longer than a buffer).
    out = io.StringIO()
    write([orjson.loads(line) for line in fleet(6_000_000, seed=3)], fmt, out)
    packed = gzip.compress(out.getvalue().encode())
    cut = tmp_path / f"cut.{suffix}.gz"
    cut.write_bytes(packed[: len(packed) * 3 // 4])
    _same(cut, book)


@pytest.mark.parametrize("fmt", ["utf16", "web-page"])
def test_a_powershell_redirect_or_a_page_is_read_transcoded(
    fmt: str, book: RuleBook, tmp_path: Path
) -> None:
    # Read through a view (UTF-16 as UTF-8, a page's <br /> tags as line ends): whole, the
    # same as the plain reader.
    out = io.StringIO()
    write(simulate("vm-maintenance-restart", seed=1), fmt, out, seed=1)
    path = tmp_path / "redirect.txt"
    path.write_bytes(out.getvalue().encode(encoding(fmt)))
    _same(path, book)


def test_the_careful_baselines_agree_on_the_same_entries(tmp_path: Path) -> None:
    # bench/baselines: the careful scripts for gcloud's array and stream-logs text find what
    # careful.py finds in the sink export of the same entries.
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "baselines"))
    import careful
    import careful_gcloud_json
    import careful_stream_logs

    lines = list(fleet(1_000_000, seed=4))
    sink = tmp_path / "fleet.jsonl"
    sink.write_bytes(b"".join(lines))
    entries = [orjson.loads(line) for line in lines]
    paths = {}
    for fmt in ("gcloud-json", "stream-logs"):
        out = io.StringIO()
        write(entries, fmt, out)
        paths[fmt] = tmp_path / f"fleet.{fmt}"
        paths[fmt].write_text(out.getvalue(), encoding="utf-8")
    want = careful.scan(str(sink))
    array = careful_gcloud_json.scan(str(paths["gcloud-json"]))
    assert array["lines"] == want["lines"] and set(array["jobs"]) == set(want["jobs"])
    rows = careful_stream_logs.scan(str(paths["stream-logs"]))
    families = set(rows["jobs"].values())  # type: ignore[union-attr]
    assert families <= set(want["jobs"].values()) and families  # type: ignore[union-attr]


# --- a folder of small files -----------------------------------------------------------------


def _folder(tmp_path: Path) -> list[str]:
    """A folder of small inputs of every kind the light scanners take, one an unusual gcloud
    JSON file (read record by record), and a sink file among them."""
    paths = []
    for number, scenario in enumerate(sorted(SCENARIOS)[:8]):
        for fmt, suffix in [("gcloud-json", "json"), ("stream-logs", "txt")]:
            if fmt == "stream-logs" and len(expected(scenario)) != 1:
                continue
            data = _written(scenario, fmt).encode()
            path = tmp_path / f"{number:02d}-{scenario}.{suffix}"
            if number % 3 == 1:
                path = path.with_name(path.name + ".gz")
                data = gzip.compress(data)
            path.write_bytes(data)
            paths.append(str(path))
    unusual = tmp_path / "unusual.json"
    unusual.write_bytes(_foreign_mixed(_written("oom", "gcloud-json")))
    utf16 = tmp_path / "redirect.txt"
    out = io.StringIO()
    write(simulate("vm-maintenance-restart", seed=1), "utf16", out, seed=1)
    utf16.write_bytes(out.getvalue().encode(encoding("utf16")))
    sink = tmp_path / "sink.jsonl"
    sink.write_text(_written("oom", "jsonl"), encoding="utf-8")
    return [*paths, str(unusual), str(utf16), str(sink)]


@pytest.mark.usefixtures("small_ranges")
def test_a_folder_of_small_files_over_processes(book: RuleBook, tmp_path: Path) -> None:
    # Read together by a pool (a file each, a range each of the larger ones), the same as
    # one by one in one process and as the plain readers.
    paths = _folder(tmp_path)
    policy = load_policy()

    def analysis(fast: bool, processes: int) -> object:
        logs, stats = collect(open_sources(paths), book, fast=fast, processes=processes)
        diagnoses = tuple(diagnose_timeline(build_timeline(log), policy) for log in logs)
        return Analysis(tuple(stats), diagnoses).to_dict()

    plain = analysis(False, 1)
    assert analysis(True, 1) == plain
    assert analysis(True, 3) == plain
    scans = _fastscan.scan(open_sources(paths), book, processes=3)
    assert sum(found is None for found in scans) == 1  # the unusual one


def test_the_work_of_a_file_decides_the_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    # A stream-logs byte costs the scan several sink bytes: a file too small to be worth a
    # second process as sink JSONL is worth one as stream-logs; a folder of small files
    # counts as their sum.
    monkeypatch.delenv("JOBDOCTOR_JOBS", raising=False)
    size = parallel.PARALLEL_MIN_WORK // 2
    cores = parallel.processes_for(parallel.PARALLEL_MIN_WORK, None)
    assert parallel.processes_for(parallel.work_of(size, "cloud-logging-jsonl"), None) == 1
    assert parallel.processes_for(parallel.work_of(size, "stream-logs"), None) == cores
    small = [parallel.work_of(size // 10, "cloud-logging-jsonl")] * 30
    assert parallel.processes_for(sum(small), None) == cores
    assert parallel.work_of(size, "gcloud-json", compressed=True) > parallel.work_of(
        size, "gcloud-json"
    )


def _rows(seed: int, clean: bool) -> str:
    """Random stream-logs rows: workers of several tasks (one without a name) and service
    messages of one or more lines among them, times repeating within a second; ``clean``
    False adds what gcloud's plain output has not: a tab inside a message, a trial column,
    another zone, a day that is none, a line of no row at all."""
    rng = random.Random(seed)
    tasks = ["workerpool0-0", "workerpool1-0", "workerpool1-1", ""]
    service = [
        "Waiting for job to be provisioned.",
        "The replica workerpool0-0 exited with a non-zero status of 1.",
        "Traceback (most recent call last):",
        '  File "train.py", line 3, in main',
        "Job failed.",
        "",
    ]
    worker = [
        "step 12 loss 0.5",
        "Saving checkpoint to gs://b/ckpt-12",
        "RuntimeError: CUDA out of memory.",
    ]
    moment = datetime(2024, 3, 11, 8, 0, 0)
    rows = []
    for _ in range(rng.randrange(50, 400)):
        moment += timedelta(seconds=rng.choice([0, 0, 1, 59]))
        when = f"{moment:%Y-%m-%d %H:%M:%S} +0000"
        severity = rng.choice(["INFO", "ERROR", "WARNING", "DEFAULT"])
        if rng.random() < 0.3:
            task = rng.choice(["service", "service", "unknown_task"])
            message = rng.choice(service)
        else:
            task, message = rng.choice(tasks), rng.choice(worker)
        row = f"{severity}\t{when}\t{task}\t{message}"
        if not clean and rng.random() < 0.05:
            row = rng.choice(
                [
                    f"{severity}\t{when}\t{task}\tcolumns\tin a message",
                    f"{severity}\t{when}\t{task}\t3\t{message}",
                    row.replace("+0000", "-0700"),
                    row.replace(f"{moment:%Y-%m-%d}", "2024-02-30"),
                    "not a row",
                ]
            )
        rows.append(row + "\n")
    return "".join(rows)


@pytest.mark.parametrize("clean", [True, False])
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.usefixtures("small_ranges")
def test_random_rows_fast_is_plain(seed: int, clean: bool, book: RuleBook, tmp_path: Path) -> None:
    # Blocks of gcloud's plain rows are read by columns, others line by line: both the plain
    # reader's records, spans and counts, in one process and in ranges of a few hundred bytes.
    path = tmp_path / "rows.txt"
    path.write_text(_rows(seed, clean), encoding="utf-8")
    _same(path, book)


def _scanned_in_blocks(data: bytes, cuts: list[int], book: RuleBook) -> object:
    """What the stream-logs scanner makes of ``data`` fed in blocks ending at ``cuts``."""
    stats = InputStats(path="rows.txt")
    scanner = StreamLogsScanner(stats, book.may_match_texts, book.match)
    for start, end in itertools.pairwise([0, *cuts, len(data)]):
        scanner.feed_block(data[start:end], end - start)
    scanner.finish()
    spans = {key: (s.first, s.last, s.records) for key, s in scanner.tally.spans.items()}
    return stats, spans, scanner.tally.untimed, scanner.events


@pytest.mark.parametrize("clean", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_block_cuts_anywhere_in_one_process(seed: int, clean: bool, book: RuleBook) -> None:
    # One process cuts its blocks at any line end (inside a service message of many lines,
    # between a task's lines): the same as one block, which is the plain reader's (above).
    data = (_rows(seed, clean) + _multi_line_rows(seed)).encode()
    ends = [at + 1 for at, byte in enumerate(data) if byte == 0x0A][:-1]
    rng = random.Random(seed)
    cuts = sorted(rng.sample(ends, min(len(ends), 40)))
    assert _scanned_in_blocks(data, cuts, book) == _scanned_in_blocks(data, [], book)


def _multi_line_rows(seed: int) -> str:
    stamp = f"ERROR\t2024-03-12 08:{seed:02d}:07 +0000\tservice\t"
    lines = [
        "The replica workerpool0-0 exited with a non-zero status of 1.",
        "Traceback (most recent call last):",
        *[f'  File "train.py", line {n}, in main' for n in range(6)],
        "ValueError: bad value",
    ]
    worker = f"INFO\t2024-03-12 08:{seed:02d}:08 +0000\tworkerpool0-0\tstep 3\n"
    return "".join(stamp + line + "\n" for line in lines) + worker
