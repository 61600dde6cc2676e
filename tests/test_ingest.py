"""The ingest stage over handwritten fixtures: formats, damage, paths, stdin and gzip."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.core.errors import InputError
from analyzer.ingest import MemorySource, open_sources, read_records
from analyzer.ingest.records import InputStats, LogRecord, Source

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"
JOB = "8501620632646057984"
ERROR_TEXT = (
    "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: Error. \n"
    "Traceback (most recent call last):\n"
    '  File "trainer/task.py", line 3\n'
    "ValueError: boom\n"
    "\n"
    "To find out more about why your job exited please check the logs: "
    "https://console.cloud.google.com/logs/viewer?project=1&resource=ml_job%2Fjob_id%2F" + JOB
)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# (line, task, job_id, severity, UTC time or None, text) per record, in input order.
Row = tuple[int, str | None, str | None, str, datetime | None, str]

CASES: dict[str, tuple[str, dict[str, int], list[Row]]] = {
    "sink.jsonl": (
        "cloud-logging-jsonl",
        {"blank line": 1, "invalid JSON": 1, "not a LogEntry object": 1, "no message text": 1},
        [
            (1, "workerpool0-0", JOB, "INFO", utc("2021-12-24 02:06:25.605309"),
             "Running command: python3 -m trainer.task"),
            (2, "service", JOB, "INFO", utc("2021-12-24 02:05:00"),
             "Waiting for job to be provisioned."),
            (7, "service", JOB, "ERROR", utc("2021-12-24 02:07:00"), ERROR_TEXT),
            # The job id from labels."ml.googleapis.com/job_id".
            (8, "service", JOB, "ERROR", utc("2021-12-24 02:07:05"), "Job failed."),
            # A duplicate is kept: a later stage drops duplicate insertIds.
            (9, "service", JOB, "INFO", utc("2021-12-24 02:05:00"),
             "Waiting for job to be provisioned."),
        ],
    ),
    "gcloud.json": (
        "gcloud-json",
        {},
        [
            (2, "service", JOB, "ERROR", utc("2021-12-24 02:07:05"), "Job failed."),
            (20, "service", JOB, "ERROR", utc("2021-12-24 02:07:00"), ERROR_TEXT),
            (36, "workerpool0-0", JOB, "INFO", utc("2021-12-24 02:06:25.605309"),
             "Running command: python3 -m trainer.task"),
            (61, "service", JOB, "INFO", utc("2021-12-24 02:05:00"),
             "Waiting for job to be provisioned."),
        ],
    ),
    "gcloud_truncated.json": (
        "gcloud-json",
        {"truncated JSON array": 23},
        [
            (2, "service", JOB, "ERROR", utc("2021-12-24 02:07:05"), "Job failed."),
            (20, "service", JOB, "ERROR", utc("2021-12-24 02:07:00"), ERROR_TEXT),
        ],
    ),
    "stream_logs.txt": (
        "stream-logs",
        {"gcloud endpoint banner": 1, "blank line": 1},
        [
            (2, "service", None, "INFO", utc("2021-12-24 02:05:00"),
             "Waiting for job to be provisioned."),
            (3, "workerpool0-0", None, "INFO", utc("2021-12-24 02:06:25"),
             "Running command: python3 -m trainer.task"),
            # A worker writes one entry per line: its traceback lines stay apart.
            (4, "workerpool0-0", None, "ERROR", utc("2021-12-24 02:06:40"),
             "Traceback (most recent call last):"),
            (5, "workerpool0-0", None, "ERROR", utc("2021-12-24 02:06:40"),
             '  File "trainer/task.py", line 3'),
            (6, "service", None, "ERROR", utc("2021-12-24 02:07:00"), ERROR_TEXT),
            # Same second, same task, yet two messages.
            (12, "service", None, "INFO", utc("2021-12-24 02:07:05"),
             "Finished tearing down training program."),
            (13, "service", None, "INFO", utc("2021-12-24 02:07:05"), "Job failed."),
        ],
    ),
    "stream_logs_pasted.txt": (
        "stream-logs",
        {"not a stream-logs line": 1},
        [
            (1, "service", None, "INFO", utc("2019-05-02 17:00:00"),
             "Validating job requirements..."),
            (2, "master-replica-0", None, "INFO", utc("2019-05-02 17:00:01"),
             "Running task with arguments: --cluster={} --task=0 --job=x"),
            (3, "master-replica-0", None, "ERROR", utc("2019-05-02 17:00:09"),
             "31%|###       | 5974/19120"),
            (4, "service", None, "ERROR", utc("2019-05-02 17:05:00"),
             "The replica master 0 exited with a non-zero status of 1. Termination reason: Error.\n"
             "Traceback (most recent call last):\n"
             'File "/root/.local/lib/python3.5/site-packages/trainer/task.py", '
             "line 9, in <module>\n"
             "main()\n"
             "KeyError: 'label'\n"
             "The replica worker 4 exited with a non-zero status of 1. Termination reason: Error."),
            (10, "service", None, "ERROR", utc("2019-05-02 17:05:00"), "Job failed."),
        ],
    ),
    "explorer.txt": (
        "logs-explorer",
        {},
        [
            (1, "service", None, "DEFAULT", utc("2022-09-21 12:41:47.120"), "Job failed."),
            (6, "service", None, "DEFAULT", utc("2022-09-21 12:41:46.017"),
             "The replica workerpool0-0 exited with a non-zero status of 1. Termination reason: "
             'Error.\nTraceback (most recent call last):\n  File "task.py", line 1'),
            (13, "workerpool0-0", None, "DEFAULT", utc("2022-09-21 12:41:40.500"), "Epoch 1/10"),
            # An unknown zone name is read as UTC.
            (18, "workerpool0-0", None, "DEFAULT", utc("2022-09-21 12:41:39"),
             "zone unknown: read as UTC"),
        ],
    ),
    "plain.txt": (
        "plain-text",
        {"blank line": 1},
        [
            (1, None, None, "DEFAULT", None, "Some notes a user pasted"),
            (3, None, None, "DEFAULT", utc("2022-09-21 14:41:46.017"),
             "root - ERROR - CUDA out of memory."),
            (4, None, None, "DEFAULT", utc("2022-09-21 10:41:47.5"),
             "Internal error occurred for the current attempt."),
            # An undecodable byte is replaced, the line kept.
            (5, None, None, "DEFAULT", None, "the end\ufffd of line"),
        ],
    ),
    "empty.txt": ("empty", {}, []),
}  # fmt: skip


def rows(records: list[LogRecord]) -> list[Row]:
    return [(r.origin.line, r.task, r.job_id, r.severity, r.timestamp, r.text) for r in records]


def physical_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def drain(source: Source) -> tuple[list[LogRecord], InputStats]:
    records = list(source.records())
    stats = source.stats
    assert stats.lines == stats.used + stats.skipped
    assert stats.records == len(records)
    assert stats.skipped == sum(stats.skip_reasons.values())
    return records, stats


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_records_and_stats(name: str) -> None:
    expected_format, reasons, expected_rows = CASES[name]
    path = str(FIXTURES / name)
    [source] = open_sources([path])
    records, stats = drain(source)
    assert stats.path == path
    assert stats.format == expected_format
    assert rows(records) == expected_rows
    assert dict(stats.skip_reasons) == reasons
    assert stats.lines == physical_lines((FIXTURES / name).read_bytes())
    assert all(r.origin.path == path for r in records)


@pytest.mark.parametrize("name", sorted(CASES))
def test_memory_source_matches_file(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    memory = MemorySource(data, name="mem")
    records, stats = drain(memory)
    assert stats.format == CASES[name][0]
    assert rows(records) == CASES[name][2]
    # Reading again starts the counts over.
    assert rows(drain(memory)[0]) == CASES[name][2]


@pytest.mark.parametrize("name", sorted(CASES))
def test_gzip_by_magic_bytes_not_name(name: str, tmp_path: Path) -> None:
    target = tmp_path / f"{name}.log"  # no .gz suffix on purpose
    target.write_bytes(gzip.compress((FIXTURES / name).read_bytes()))
    [source] = open_sources([str(target)])
    records, stats = drain(source)
    assert stats.format == CASES[name][0]
    assert rows(records) == CASES[name][2]


def test_truncated_gzip_keeps_records_so_far(tmp_path: Path) -> None:
    data = (FIXTURES / "sink.jsonl").read_bytes() * 200
    target = tmp_path / "sink.jsonl.gz"
    packed = gzip.compress(data)
    target.write_bytes(packed[: len(packed) // 2])
    [source] = open_sources([str(target)])
    records, stats = drain(source)
    assert 0 < len(records) < 1000
    assert stats.skip_reasons["truncated compressed data"] == 1


def test_sink_tree_walk_order_and_hidden_files() -> None:
    sources = open_sources([str(FIXTURES / "sink_tree")])
    names = [os.path.basename(s.stats.path) for s in sources]
    # Regular shards of an hour first, in shard order, then its late entries.
    assert names == [
        "02:00:00_02:59:59_S0.json",
        "02:00:00_02:59:59_S1.json",
        "02:00:00_02:59:59_A0:1640315400.json",
    ]
    texts = [r.text.split("\n")[0] for r in read_records([str(FIXTURES / "sink_tree")])]
    assert texts[0] == "Waiting for job to be provisioned."
    assert texts[-1] == "Job failed."


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_walk_takes_regular_files_only(tmp_path: Path) -> None:
    # A pipe in a folder of exports is not one (and opening it would wait for a writer).
    shutil.copytree(FIXTURES / "sink_tree", tmp_path / "tree")
    os.mkfifo(tmp_path / "tree" / "pipe.json")
    (tmp_path / "tree" / "gone.json").symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(InputError, match=r"gone\.json"):  # a broken link is still said
        open_sources([str(tmp_path / "tree")])
    (tmp_path / "tree" / "gone.json").unlink()
    found: list[list[Source]] = []
    # In a thread that may be left behind: opening the pipe would wait for a writer forever.
    walk = threading.Thread(
        target=lambda: found.append(open_sources([str(tmp_path / "tree")])), daemon=True
    )
    walk.start()
    walk.join(timeout=30)
    assert found, "the walk opened the pipe and is waiting for a writer"
    names = [os.path.basename(source.stats.path) for source in found[0]]
    assert len(names) == 3 and "pipe.json" not in names


def test_glob_and_duplicates_are_read_once() -> None:
    pattern = str(FIXTURES / "sink_tree" / "**" / "*_S*.json")
    sources = open_sources([pattern, str(FIXTURES / "sink_tree")])
    assert len(sources) == 3
    assert sources[0].stats.path.endswith("S0.json")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: str(tmp / "missing.json"), "no such file or directory"),
        (lambda tmp: str(tmp / "nothing-*.json"), "no file matches"),
        (lambda tmp: (tmp / "empty").mkdir() or str(tmp / "empty"), "empty directory"),
    ],
)
def test_bad_paths_raise_up_front(make: object, message: str, tmp_path: Path) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(InputError, match=message) as raised:
        open_sources([path])
    assert str(raised.value).startswith(f"{path}: ")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_raises(tmp_path: Path) -> None:
    target = tmp_path / "secret.json"
    target.write_text("{}\n")
    target.chmod(0)
    with pytest.raises(InputError, match="permission denied"):
        open_sources([str(target)])


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (b"\x00\x01\x02\x03binary", 1),
        # The PNG signature's first byte, undecodable, is where the binary data begins.
        (b"first line\nsecond\n\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 3),
        (bytes(range(128, 256)) * 4, 1),
    ],
)
def test_binary_garbage_names_file_and_line(data: bytes, line: int, tmp_path: Path) -> None:
    target = tmp_path / "model.bin"
    target.write_bytes(data)
    with pytest.raises(InputError, match=rf"^{target}: binary data .* at line {line}, "):
        open_sources([str(target)])
    with pytest.raises(InputError, match=rf"line {line}"):
        MemorySource(data)


@pytest.mark.parametrize(
    ("data", "what"),
    [
        (b"ok\n" + b"\x00" * 64, "NUL byte"),
        (b"\x7fELF\x02\x01\x01" + b"\x03\x3e" * 32, "control bytes"),
        (bytes(range(128, 256)) * 4, "undecodable bytes"),
    ],
)
def test_binary_data_is_named_by_its_first_bad_byte(data: bytes, what: str) -> None:
    with pytest.raises(InputError, match=rf"binary data \({what}\) at line "):
        MemorySource(data)


@pytest.mark.parametrize("name", ["sink.jsonl", "stream_logs.txt", "gcloud.json"])
def test_stdin_in_a_subprocess(name: str) -> None:
    script = (
        "from analyzer.ingest import open_sources\n"
        "[s] = open_sources(['-'])\n"
        "n = sum(1 for _ in s.records())\n"
        "print(s.stats.path, s.stats.format, n, s.stats.lines, s.stats.used, s.stats.skipped)\n"
    )
    data = (FIXTURES / name).read_bytes()
    for payload in (data, gzip.compress(data)):
        done = subprocess.run(
            [sys.executable, "-c", script], input=payload, capture_output=True, check=True
        )
        path, fmt, count, lines, used, skipped = done.stdout.decode().split()
        assert (path, fmt, int(count)) == ("<stdin>", CASES[name][0], len(CASES[name][2]))
        assert int(lines) == int(used) + int(skipped) == physical_lines(data)


def test_bom_and_crlf_are_tolerated() -> None:
    data = b"\xef\xbb\xbf" + (FIXTURES / "sink.jsonl").read_bytes().replace(b"\n", b"\r\n")
    records, stats = drain(MemorySource(data))
    assert stats.format == "cloud-logging-jsonl"
    assert [r.origin.line for r in records] == [1, 2, 7, 8, 9]


def test_compact_gcloud_array_on_one_line() -> None:
    data = b'[{"textPayload": "a"}, 7, {"textPayload": "b"}, {"nope": 1}]'
    records, stats = drain(MemorySource(data))
    assert [(r.text, r.origin.line) for r in records] == [("a", 1), ("b", 1)]
    assert stats.lines == 1


def test_gcloud_array_with_stray_elements() -> None:
    data = b'[\n  {"textPayload": "a"},\n  "text",\n  42,\n  [1],\n  {"textPayload": "b"}\n]\n'
    records, stats = drain(MemorySource(data))
    assert [r.text for r in records] == ["a", "b"]
    assert dict(stats.skip_reasons) == {"not a LogEntry object": 3}


def test_fixture_trees_are_left_alone(tmp_path: Path) -> None:
    # A copy of the tree with a hidden directory: it is not walked.
    copy = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sink_tree", copy)
    (copy / ".cache").mkdir()
    (copy / ".cache" / "junk.json").write_text("junk\n")
    assert len(open_sources([str(copy)])) == 3


def _stream(*messages: str, task: str = "service", severity: str = "ERROR") -> str:
    return "".join(f"{severity}\t2024-01-02 03:04:05 +0000\t{task}\t{m}\n" for m in messages)


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        # Two lifecycle messages in one second stay two records.
        (["Finished tearing down training program.", "Job failed."], 2),
        (["Job failed.", "Job will not be retried, max error retry attempts reached."], 2),
        # A blank-ish line and an exception line inside a traceback are joined.
        (["The replica workerpool0-0 exited with a non-zero status of 1. ",
          "Traceback (most recent call last):", "  File \"a.py\", line 1", "   ",
          "ValueError: x"], 1),
        # Pasted without tabs, a code line loses its indentation: still joined.
        (["The replica workerpool0-0 exited with a non-zero status of 1. ",
          "Traceback (most recent call last):", 'File "a.py", line 1', "raise ValueError()"], 1),
        # Another replica after a one-line message: a message of its own.
        (["The replica worker 0 exited with a non-zero status of 1. Termination reason: Error.",
          "The replica worker 4 exited with a non-zero status of 1. Termination reason: Error."],
         2),
        # The error, then teardown in the same second: two records.
        (["Resources are insufficient in region: us-central1", "Job failed."], 2),
        (["Internal error occurred for the current attempt.",
          "To find out more about why your job exited please check the logs: https://x"], 1),
    ],
)  # fmt: skip
def test_stream_logs_joins_only_continuations(messages: list[str], expected: int) -> None:
    records, stats = drain(MemorySource(_stream(*messages)))
    assert len(records) == expected
    assert stats.used == len(messages)


def test_stream_logs_never_joins_worker_lines() -> None:
    data = _stream("Traceback (most recent call last):", '  File "a.py"', task="workerpool0-0")
    records, _ = drain(MemorySource(data))
    assert [r.text for r in records] == ["Traceback (most recent call last):", '  File "a.py"']


def test_stream_logs_legacy_trial_column_with_tabs() -> None:
    data = "INFO\t2019-05-02 10:00:00 -0700\tworker-replica-1\t7\tstep 3\n"
    [record], _ = drain(MemorySource(data))
    assert (record.task, record.trial, record.text) == ("worker-replica-1", "7", "step 3")
    assert record.timestamp == utc("2019-05-02 17:00:00")


def test_binary_characters_are_the_controls_text_never_holds() -> None:
    # Every code point: binary when undecodable (U+FFFD) or a control character other than
    # backspace, tab, line ends, form feed and ANSI escape.
    from analyzer.ingest.sniff import _BINARY_CHAR

    text_controls = set(b"\t\n\r\f\v\x1b\x08")
    everything = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    found = {ord(m.group()) for m in _BINARY_CHAR.finditer(everything)}
    expected = {c for c in range(32) if c not in text_controls} | {0xFFFD}
    assert found == expected


_HEAD_PIECES = st.one_of(
    st.text(max_size=8).map(str.encode),
    st.sampled_from(
        [
            *(b"\xef\xbf\xbd", b"\xe2\x96", b"\xff", b"\xc3", b"\xed\xa0\x80", "█".encode()),
            *(b"\x00", b"\x1f", b"\x1b", b"\x0c", b"\x07", b"\x08", b"\x0e", b"\x1a", b"\x1c"),
        ]
    ),
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_HEAD_PIECES, max_size=12).map(b"".join))
def test_the_quick_text_check_agrees_with_counting(head: bytes) -> None:
    # _plain_text is _check_text's shortcut: it must say "nothing to count" exactly when the
    # counted check finds nothing.
    import codecs

    from analyzer.ingest.sniff import _BINARY_CHAR, _plain_text

    text = codecs.getincrementaldecoder("utf-8")("replace").decode(head, final=False)
    assert _plain_text(head) is (_BINARY_CHAR.search(text) is None)


def _without_places(value: object) -> object:
    """A diagnosis document without its paths and line numbers."""
    if isinstance(value, dict):
        return {k: _without_places(v) for k, v in value.items() if k not in ("path", "line")}
    if isinstance(value, list):
        return [_without_places(v) for v in value]
    return value


_JSONL_SAMPLES = sorted((Path(__file__).resolve().parents[1] / "sample_logs").glob("*.jsonl"))


@pytest.mark.parametrize("layout", ["compact", "one per line"])
def test_a_json_array_of_sink_lines_reads_like_the_lines(layout: str, tmp_path: Path) -> None:
    # Several entries on one line (a compact array) are still several records: which events
    # came from one record (a cause's evidence and details), and which entries are duplicates,
    # must not mix them up.
    from analyzer.api import analyze

    joined = b"," if layout == "compact" else b",\n"
    for sample in _JSONL_SAMPLES:
        lines = sample.read_bytes().splitlines()
        array = tmp_path / f"{sample.stem}.json"
        array.write_bytes(b"[" + joined.join(lines) + b"]\n")
        want = analyze([sample]).to_dict()
        got = analyze([array]).to_dict()
        assert got["inputs"][0]["records"] == want["inputs"][0]["records"], sample.name
        assert got["inputs"][0]["duplicates"] == want["inputs"][0]["duplicates"], sample.name
        assert _without_places(got["jobs"]) == _without_places(want["jobs"]), sample.name
