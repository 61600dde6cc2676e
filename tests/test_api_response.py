"""The Logging API's own answer as an input: ``entries:list``'s response bodies.

``{"entries": [LogEntry, ...], "nextPageToken": "..."}``, as ``curl -X POST
https://logging.googleapis.com/v2/entries:list`` saves it, or several pages of it (one after
another, one a line, a JSON array of them). Each shape is read by the plain reader and the fast
scan alike (every count, skip reason, line number and event; in 1 and 3 processes, from a
stream), its records are the gcloud array's records of the same entries, its fields in any
order; an error body is said in one line, and an answer without entries (``{}``, an empty page
with a token) is read as one (tests/test_empty_inputs.py).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.classify._fastscan.gcloudjson import GcloudJsonScanner, response_ranges
from analyzer.core.errors import InputError
from analyzer.ingest import open_sources
from analyzer.ingest.gcloud_json import API_ERROR, OTHER_FIELD, TRUNCATED, read_api_response
from analyzer.ingest.records import InputStats, LogRecord
from analyzer.ingest.sniff import Format, sniff
from analyzer.ingest.sources import reader_for
from analyzer.rulebook import RuleBook
from analyzer.simulate import SCENARIOS, simulate, write
from analyzer.simulate.writers import api_pages
from tests.clirun import run
from tests.test_fast_readers import _analysis, _same, small_ranges  # noqa: F401

Entry = dict[str, Any]


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


def _entries(scenario: str, seed: int = 1) -> list[Entry]:
    return list(simulate(scenario, seed=seed))


def _pages(entries: list[Entry], size: int = 7) -> list[Entry]:
    return list(api_pages(entries, page_size=size, seed=3))


def _pretty(pages: list[Entry]) -> bytes:
    """Pages one after another, as the API sends each (a script appending every body)."""
    return "".join(json.dumps(page, indent=2, ensure_ascii=False) + "\n" for page in pages).encode()


# Each shape: how its bytes are made of the entries, and whether the light scanner reads it
# to its end (else the plain reader reads it, from the start or from where the light one
# stopped: the same answer either way).
SHAPES: dict[str, tuple[Callable[[list[Entry]], bytes], bool]] = {
    "one response": (lambda e: _pretty([{"entries": e, "nextPageToken": "EAA4xyz"}]), True),
    "pages one after another": (lambda e: _pretty(_pages(e)), True),
    "pages of one entry": (lambda e: _pretty(_pages(e, 1)), True),
    "an array of pages": (lambda e: json.dumps(_pages(e), indent=2).encode() + b"\n", True),
    "no final newline": (lambda e: _pretty(_pages(e)).rstrip(b"\n"), True),
    "bom": (lambda e: b"\xef\xbb\xbf" + _pretty(_pages(e)), True),
    "one page a line": (
        lambda e: b"".join(json.dumps(p).encode() + b"\n" for p in _pages(e)),
        False,
    ),
    "a compact array of pages": (lambda e: json.dumps(_pages(e)).encode(), False),
    "the token first": (
        lambda e: _pretty([{"nextPageToken": p.get("nextPageToken", ""), **p} for p in _pages(e)]),
        False,
    ),
    "crlf": (lambda e: _pretty(_pages(e)).replace(b"\n", b"\r\n"), False),
    "bodies without a line end between them": (
        lambda e: b"".join(json.dumps(page, indent=2).encode() for page in _pages(e)),
        False,
    ),
    "an empty page among them": (
        lambda e: _pretty([*_pages(e)[:2], {"nextPageToken": "EAA4"}, *_pages(e)[2:]]),
        False,
    ),
}


def _records(data: bytes) -> tuple[InputStats, list[LogRecord]]:
    stats = InputStats(path="r.json")
    return stats, list(read_api_response(io.BytesIO(data), stats))


def _array_records(entries: list[Entry]) -> list[tuple[Any, ...]]:
    out = io.StringIO()
    write(entries, "gcloud-json", out)
    stats = InputStats(path="a.json")
    records = reader_for(Format.GCLOUD_JSON)(io.BytesIO(out.getvalue().encode()), stats)
    return sorted(_essence(record) for record in records)


def _essence(record: LogRecord) -> tuple[Any, ...]:
    return (record.timestamp, record.job_id, record.task, record.severity, record.text)


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("scenario", ["oom", "project-wide", "worker-restarts-exhausted"])
def test_each_shape_holds_the_entries_of_the_array(scenario: str, shape: str) -> None:
    entries = _entries(scenario)
    data = SHAPES[shape][0](entries)
    assert sniff(data[: 1 << 16], "r.json", complete=len(data) <= 1 << 16) is Format.LOGGING_API
    stats, records = _records(data)
    assert sorted(map(_essence, records)) == _array_records(entries)
    assert (
        stats.lines == stats.used + stats.skipped == data.count(b"\n") + (not data.endswith(b"\n"))
    )
    assert stats.skipped == 0 and stats.cut_line is None


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.usefixtures("small_ranges")
def test_each_shape_fast_is_plain(shape: str, book: RuleBook, tmp_path: Path) -> None:
    make, light = SHAPES[shape]
    path = tmp_path / "pages.json"
    path.write_bytes(make(_entries("project-wide")))
    _same(path, book)
    scanner = GcloudJsonScanner(
        InputStats(path=str(path)), book.may_match_texts, book.match, resume=True, api=True
    )
    with path.open("rb") as stream:
        scanner.scan(stream)
    assert (scanner.resumed_at is None) is light


@pytest.mark.usefixtures("small_ranges")
def test_a_file_of_pages_is_cut_between_the_entries_of_a_page(tmp_path: Path) -> None:
    for data, pad in [
        (_pretty(_pages(_entries("oom"))), b"    "),
        (json.dumps(_pages(_entries("oom")), indent=2).encode(), b"      "),
    ]:
        path = tmp_path / "pages.json"
        path.write_bytes(data)
        ranges = response_ranges(str(path), len(data), 500, 3)
        assert len(ranges) > 3 and ranges[0][0] == 0 and ranges[-1][1] == len(data)
        for start, _ in ranges[1:]:
            assert data[:start].endswith(b"\n" + pad + b"},\n")
            assert data[start:].startswith(pad + b"{\n")


def test_line_numbers_are_the_files(book: RuleBook, tmp_path: Path) -> None:
    # An entry is numbered by the line its "{" is on; on a page's line, by its place there.
    entries = _entries("user-code-exit1")
    pretty = _pretty(_pages(entries))
    _, records = _records(pretty)
    lines = pretty.split(b"\n")
    assert {lines[record.origin.line - 1].strip() for record in records} == {b"{"}
    compact = b"".join(json.dumps(p).encode() + b"\n" for p in _pages(entries))
    _, records = _records(compact)
    assert [(r.origin.line, r.origin.entry) for r in records][:8] == [
        *((1, n) for n in range(7)),
        (2, 0),
    ]
    # The evidence of the verdict cites those lines, through the fast scan too.
    path = tmp_path / "pages.json"
    path.write_bytes(pretty)
    for fast in (False, True):
        (job,) = _analysis(path, book, fast=fast)["jobs"]  # type: ignore[index]
        for evidence in job["cause"]["evidence"]:
            assert lines[evidence["line"] - 1].strip() == b"{"


@pytest.mark.usefixtures("small_ranges")
def test_a_cut_response_says_where(book: RuleBook, tmp_path: Path) -> None:
    data = _pretty(_pages(_entries("oom")))
    cut = data[: len(data) * 2 // 3]
    stats, records = _records(cut)
    assert stats.cut_line == cut.count(b"\n") + 1
    assert stats.skip_reasons[TRUNCATED] > 0 and records
    path = tmp_path / "cut.json"
    path.write_bytes(cut)
    _same(path, book)


def test_other_fields_and_an_error_page_are_skipped_with_their_reason() -> None:
    # A page of a script's loop that failed, saved with the others; a field no response has.
    error = {"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}
    pages = [*_pages(_entries("oom"))[:2], error, {"entries": [], "request": {"filter": "x"}}]
    stats, records = _records(_pretty(pages))
    assert len(records) == 14
    assert stats.skip_reasons == {API_ERROR: 5, OTHER_FIELD: 3}
    assert stats.lines == stats.used + stats.skipped


ERROR = {
    "error": {
        "code": 403,
        "message": "Permission 'logging.logEntries.list' denied on resource (or it may not exist).",
        "status": "PERMISSION_DENIED",
    }
}
REFUSED = [
    (
        json.dumps(ERROR, indent=2),
        "a Logging API error response, not log entries (403 PERMISSION_DENIED: Permission"
        " 'logging.logEntries.list' denied on resource (or it may not exist).)",
    ),
    (json.dumps(ERROR), "a Logging API error response, not log entries (403 PERMISSION_DENIED"),
]


@pytest.mark.parametrize(("text", "said"), REFUSED)
def test_an_error_body_is_said_in_one_line(text: str, said: str) -> None:
    with pytest.raises(InputError) as raised:
        sniff(text.encode(), "r.json")
    assert str(raised.value).startswith("r.json: ") and said in str(raised.value)
    assert "\n" not in str(raised.value)


# Answers without an entry: what entries:list says when nothing matched ({}), or when it
# stopped searching (an empty page with a token). Read as responses (design.md: an input that
# can be read exits 0, whatever it holds), like an empty gcloud array.
EMPTY_RESPONSES = [
    ("{}\n", False),
    ('{\n  "entries": []\n}\n', False),
    ('{"nextPageToken": "EAA4"}\n', True),
    ('{}\n{"nextPageToken": "EAA4"}\n', True),
    ('[{}, {"entries": []}]', False),
]


@pytest.mark.parametrize(("text", "more"), EMPTY_RESPONSES)
def test_a_response_without_entries_is_read_as_one(text: str, more: bool) -> None:
    assert sniff(text.encode(), "r.json") is Format.LOGGING_API
    stats, records = _records(text.encode())
    assert records == [] and stats.skipped == 0 and stats.lines == stats.used
    assert stats.more_pages is more


def test_the_cli_names_the_file_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "denied.json"
    path.write_text(json.dumps(ERROR, indent=2) + "\n")
    code, _, err = run("diagnose", str(path))
    assert code == 2
    (line,) = err.strip().splitlines()
    assert str(path) in line and "PERMISSION_DENIED" in line and "logEntries.list" in line


def test_open_sources_sniffs_the_shape(tmp_path: Path) -> None:
    path = tmp_path / "pages.jsonl"
    path.write_bytes(SHAPES["one page a line"][0](_entries("oom")))
    (source,) = open_sources([str(path)])
    assert source.stats.format == "logging-api-response"


def _laid_out(pages: list[Entry], layout: str) -> bytes:
    """``pages`` as saved: pretty responses one after another, one a line, or an array."""
    if layout == "pretty":
        return _pretty(pages)
    if layout == "lines":
        return b"".join(json.dumps(page).encode() + b"\n" for page in pages)
    return json.dumps(pages, indent=2).encode()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    scenario=st.sampled_from(sorted(SCENARIOS)),
    sizes=st.lists(st.integers(min_value=0, max_value=40), min_size=1, max_size=12),
    layout=st.sampled_from(["pretty", "lines", "array"]),
)
def test_any_split_into_pages_reads_the_same(
    scenario: str, sizes: list[int], layout: str, book: RuleBook, tmp_path: Path
) -> None:
    entries = _entries(scenario)
    pages: list[Entry] = []
    start = 0
    for size in [*sizes, len(entries)]:
        page = entries[start : start + size]
        start += size
        pages.append({"entries": page, "nextPageToken": "EAA4tok"} if page else {})
        if start >= len(entries):
            break
    data = _laid_out(pages, layout)
    stats, records = _records(data)
    assert sorted(map(_essence, records)) == _array_records(entries)
    assert stats.lines == stats.used and stats.skipped == 0
    path = tmp_path / "pages.json"
    path.write_bytes(data)
    assert _analysis(path, book, fast=True) == _analysis(path, book, fast=False)


@pytest.mark.parametrize(
    ("pages", "more"),
    [
        ([{"entries": [0, 1]}, {"entries": [2]}], False),
        ([{"entries": [0, 1], "nextPageToken": "EAA4a"}, {"entries": [2]}], False),
        ([{"entries": [0, 1]}, {"entries": [2], "nextPageToken": "EAA4b"}], True),
        ([{"entries": [0, 1], "nextPageToken": "EAA4a"}, {}], False),
        ([{"entries": [0, 1], "nextPageToken": ""}], False),
        ([{"nextPageToken": "EAA4a", "entries": [0, 1, 2]}], True),
    ],
)
@pytest.mark.parametrize("layout", ["pretty", "lines", "array"])
@pytest.mark.usefixtures("small_ranges")
def test_a_last_page_with_a_token_says_more_pages_were_there(
    pages: list[Entry], more: bool, layout: str, book: RuleBook, tmp_path: Path
) -> None:
    # entries:list answers one page at a time, oldest first: a token on the last page saved
    # means the job's later entries (its end, maybe its failure) are not in the input.
    entries = _entries("oom")[:3]
    pages = [
        {
            key: [entries[i] for i in value] if key == "entries" else value
            for key, value in p.items()
        }
        for p in pages
    ]
    data = _laid_out(pages, layout)
    stats, _ = _records(data)
    assert stats.more_pages is more
    path = tmp_path / "pages.json"
    path.write_bytes(data)
    plain = _analysis(path, book, fast=False)
    assert plain == _analysis(path, book, fast=True)
    assert plain["inputs"][0].get("more_pages", False) is more  # type: ignore[index]
    _, out, _ = run("diagnose", str(path))
    assert ("has a nextPageToken: the request matched more entries" in out) is more


# Fields a saved response may carry besides its own (a tool's wrapper, a note): no part of
# ListLogEntriesResponse, each skipped with its reason wherever it stands.
_EXTRA_FIELDS: list[tuple[str, Any]] = [
    ("kind", "logging#listLogEntriesResponse"),
    ("request", {"filter": 'resource.type="ml_job"', "pageSize": 7}),
    ("saved", ["2024-04-04", 3]),
]


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    order=st.permutations(["entries", "nextPageToken", *(name for name, _ in _EXTRA_FIELDS)]),
    extras=st.integers(min_value=0, max_value=len(_EXTRA_FIELDS)),
    layout=st.sampled_from(["pretty", "lines", "array"]),
)
def test_a_responses_fields_in_any_order_read_the_same(
    order: list[str], extras: int, layout: str, book: RuleBook, tmp_path: Path
) -> None:
    # entries:list's JSON names its fields in proto order (entries, nextPageToken), but a
    # saved body may have been rewritten (jq -S sorts keys) or carry a wrapper's fields.
    entries = _entries("oom")
    kept = {"entries", "nextPageToken", *(name for name, _ in _EXTRA_FIELDS[:extras])}
    values = {"entries": None, "nextPageToken": "EAA4tok", **dict(_EXTRA_FIELDS)}
    pages = [
        {key: page["entries"] if key == "entries" else values[key] for key in order if key in kept}
        for page in _pages(entries)
    ]
    data = _laid_out(pages, layout)
    assert sniff(data[: 1 << 16], "r.json", complete=len(data) <= 1 << 16) is Format.LOGGING_API
    stats, records = _records(data)
    assert sorted(map(_essence, records)) == _array_records(entries)
    assert set(stats.skip_reasons) <= {OTHER_FIELD} and stats.lines == stats.used + stats.skipped
    assert stats.more_pages
    path = tmp_path / "pages.json"
    path.write_bytes(data)
    assert _analysis(path, book, fast=True) == _analysis(path, book, fast=False)
