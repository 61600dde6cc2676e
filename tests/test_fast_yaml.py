"""gcloud's YAML read by the fast scan (``analyzer.classify._fastscan.gcloudyaml``) gives exactly
the
plain reader's analysis, in one process, over byte ranges in three and from a stream: every
scenario as gcloud writes it and damaged, random entries of odd strings, a fleet; and the light
reader reads gcloud's layout itself (hands few documents to PyYAML)."""

from __future__ import annotations

import contextlib
import io
import random
import string
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.classify._fastscan import gcloudyaml, parallel
from analyzer.classify._fastscan.gcloudyaml import (
    GcloudYamlScanner,
    document_ranges,
    light_entry,
    skeleton_fields,
)
from analyzer.ingest.gcloud_yaml import load_entry
from analyzer.ingest.records import InputStats, entry_fields
from analyzer.rulebook import RuleBook
from analyzer.simulate import SCENARIOS, fleet, write
from analyzer.simulate.writers import gcloud_yaml
from tests.test_fast_readers import _same, _spread, _written, small_ranges  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


def _damaged(text: str) -> bytes:
    """gcloud's YAML with what the plain reader skips or reads otherwise among its documents:
    a preamble, comments, an alias, a tab, a document that is no mapping, CRLF lines, bad
    UTF-8, a bad time, a duplicate key."""
    documents = text.split("---\n")
    rng = random.Random(len(documents))
    odd = [
        "Using endpoint [https://logging.googleapis.com/]\n",
        "# a comment\ntextPayload: commented\n",
        "textPayload: &a aliased\nseverity: *a\n",
        "textPayload:\tJob failed.\n",
        "just a scalar\n",
        "textPayload: Job failed.\r\ntimestamp: '2024-05-08T17:06:03Z'\r\n",
        "textPayload: bad \udcff byte\n",
        "textPayload: Job failed.\ntimestamp: '2024-02-30T10:00:00Z'\n",
        "textPayload: one\ntextPayload: Job failed.\n",
        "   \n",
        "resource:\n  labels:\n    job_id: 1:20\n  type: ml_job\ntextPayload: x\n",
        "labels:\n  trial_id: 3\nresource:\n  labels:\n    job_id: '77'\n"
        "textPayload: Job failed.\n",
        "jsonPayload:\n  levelname: ERROR\n  lineno: 0b_\ntextPayload: y\n",
        "textPayload: |2-\n    indented\n   first\n",
        "...\n",
    ]
    for _ in range(max(4, len(documents) // 8)):
        at = rng.randrange(1, len(documents))
        documents.insert(at, rng.choice(odd))
    return "---\n".join(documents).encode("utf-8", "surrogateescape")


YAML_VARIANTS = {
    "as-written": str.encode,
    "no-first-marker": lambda t: t.removeprefix("---\n").encode(),
    "bom": lambda t: b"\xef\xbb\xbf" + t.encode(),
    "no-final-newline": lambda t: t.rstrip("\n").encode(),
    "crlf": lambda t: t.replace("\n", "\r\n").encode(),
    "pasted": lambda t: (
        "$ gcloud logging read 'resource.type=ml_job' --project=p\n" + t + "\n"
    ).encode(),
    "damaged": _damaged,
}
# Every scenario as written, damaged on every second one (test_fast_readers' rotation); the
# other variants on a few (they change the layout the same way whatever the entries).
_FEW = ("oom", "user-code-exit1", "worker-restarts-exhausted")
YAML_CASES = [
    (scenario, variant)
    for scenario in sorted(SCENARIOS)
    for variant in YAML_VARIANTS
    if variant == "as-written"
    or (variant == "damaged" and _spread(scenario, variant, YAML_VARIANTS))
    or (variant != "damaged" and scenario in _FEW)
]


@pytest.mark.parametrize(("scenario", "variant"), YAML_CASES)
@pytest.mark.usefixtures("small_ranges")
def test_gcloud_yaml_fast_is_plain(
    scenario: str, variant: str, book: RuleBook, tmp_path: Path
) -> None:
    path = tmp_path / f"{scenario}.yaml"
    path.write_bytes(YAML_VARIANTS[variant](_written(scenario, "yaml")))
    _same(path, book)


def _light_share(text: str) -> float:
    documents = [part for part in text.split("---\n") if part]
    light = 0
    for document in documents:
        try:
            light_entry(document.rstrip("\n"))
            light += 1
        except gcloudyaml._Other:
            pass
    return light / len(documents)


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_gcloud_layout_is_read_lightly(scenario: str) -> None:
    # The simulator writes what gcloud writes: nearly every document is in the subset.
    assert _light_share(_written(scenario, "yaml")) >= 0.9


def test_document_cuts_are_at_markers(tmp_path: Path) -> None:
    path = tmp_path / "oom.yaml"
    path.write_text(_written("oom", "yaml"), encoding="utf-8")
    data = path.read_bytes()
    ranges = document_ranges(str(path), len(data), 500, 3)
    assert len(ranges) > 3 and ranges[0][0] == 0 and ranges[-1][1] == len(data)
    for start, _ in ranges[1:]:
        assert data[:start].endswith(b"\n") and data[start:].startswith(b"---\n")


def test_a_gcloud_yaml_fleet_over_processes(book: RuleBook, tmp_path: Path) -> None:
    entries = [orjson.loads(line) for line in fleet(2_000_000, seed=9)]
    out = io.StringIO()
    write(entries, "yaml", out)
    path = tmp_path / "fleet.yaml"
    path.write_text(out.getvalue(), encoding="utf-8")
    assert _light_share(out.getvalue()) >= 0.99
    smallest = parallel.MIN_RANGE_BYTES
    parallel.MIN_RANGE_BYTES = 256 << 10
    try:
        _same(path, book)
    finally:
        parallel.MIN_RANGE_BYTES = smallest


# --- random entries --------------------------------------------------------------------------

_ODD_WORDS = [
    "yes", "No", "on", "OFF", "true", "null", "~", "0x10", "0o17", "017", "1:20", "1_000",
    "1e3", "3.14", ".5", "-1", "+2", ".inf", "0b_", "=", "<<", "", " ", "a: b", "a #b", "#c",
    "- x", "? y", "[1, 2]", "{a: 1}", "'q'", '"dq"', "it's", "back\\slash", "tab\there",
    "é ü 日本", "\u2028", "\x85", "\x1b[31m", "\ufeff", "---", "...", "|", ">", "&a", "*a",
    "!tag", "%", "@", "`", "Job failed.", "OOMKilled", "Traceback (most recent call last):",
    "  File \"train.py\", line 3", "trailing ", " leading", "x\n", "\nx", "a\n\nb", "a\n \nb",
    "a  \nb", "2024-05-08T17:06:03Z", "2024-05-08",
]  # fmt: skip
_WORD = st.one_of(
    st.sampled_from(_ODD_WORDS),
    st.text(alphabet=string.ascii_letters + string.digits + " :#'\"-.\\/\n\t", max_size=12),
    st.text(max_size=6),
)
_TEXT = st.lists(_WORD, max_size=30).map(" ".join) | st.lists(_WORD, max_size=12).map("\n".join)
_LABEL = st.one_of(st.sampled_from(_ODD_WORDS), st.text(max_size=10))
_TIME = st.one_of(
    st.datetimes().map(lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.%fZ")),
    st.sampled_from(["2024-05-08T17:06:03.628548865Z", "not a time", "", "1:20"]),
)


@st.composite
def _entry(draw: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "insertId": draw(_LABEL),
        "resource": {
            "type": draw(st.sampled_from(["ml_job", "ml_job", "gce_instance", ""])),
            "labels": {"job_id": draw(_LABEL), "task_name": draw(_LABEL), "project_id": "p"},
        },
        "labels": draw(
            st.dictionaries(
                st.sampled_from(
                    [
                        "ml.googleapis.com/trial_id",
                        "compute.googleapis.com/resource_id",
                        "ml.googleapis.com/task_name",
                        "other",
                    ]
                ),
                _LABEL,
            )
        ),
        "severity": draw(st.sampled_from(["ERROR", "INFO", "yes", "", "1"])),
        "timestamp": draw(_TIME),
    }
    shape = draw(st.sampled_from(["text", "message", "msg", "rendered", "both"]))
    if shape in ("text", "both"):
        entry["textPayload"] = draw(_TEXT)
    if shape != "text":
        payload = draw(st.dictionaries(st.sampled_from(["levelname", "lineno", "x y"]), _LABEL))
        if shape in ("message", "both"):
            payload["message"] = draw(_TEXT)
        elif shape == "msg":
            payload["msg"] = draw(_TEXT)
        entry["jsonPayload"] = payload
        if draw(st.booleans()):
            payload["attrs"] = {"tag": draw(_LABEL)}
    if draw(st.integers(0, 9)) == 0:
        entry["httpRequest"] = {"status": draw(st.integers(0, 600)), "latency": draw(_LABEL)}
    return entry


_DOCUMENTS = st.lists(_entry(), min_size=1, max_size=12)
_TEXTS = ["Job failed.", "OOMKilled", "Traceback (most recent call last):", "yes"]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(entries=_DOCUMENTS)
def test_random_entries_fast_is_plain(
    entries: list[dict[str, Any]], book: RuleBook, tmp_path_factory: pytest.TempPathFactory
) -> None:
    text = "".join(gcloud_yaml(entry) for entry in entries)
    path = tmp_path_factory.mktemp("yaml") / "random.yaml"
    path.write_text(text, encoding="utf-8")
    smallest = parallel.MIN_RANGE_BYTES
    parallel.MIN_RANGE_BYTES = 200
    try:
        _same(path, book)
    finally:
        parallel.MIN_RANGE_BYTES = smallest


@settings(max_examples=300, deadline=None)
@given(entry=_entry())
def test_the_light_entry_is_pyyamls_where_the_record_is_read(entry: dict[str, Any]) -> None:
    # Where the light reader reads a document at all, what it reads is PyYAML's.
    document = gcloud_yaml(entry).removeprefix("---\n").rstrip("\n")
    full = load_entry(document)
    try:
        light = light_entry(document)
    except gcloudyaml._Other:
        return
    for path in gcloudyaml._READ:
        want: Any = full
        got: Any = light
        for key in path:
            want = want.get(key) if isinstance(want, dict) else None
            got = got.get(key) if isinstance(got, dict) else None
        if isinstance(want, dict):
            assert isinstance(got, dict)
        else:
            assert got == want, path


def test_a_scan_in_one_block_or_many_is_the_same(book: RuleBook, tmp_path: Path) -> None:
    text = _written("oom", "yaml")
    found = []
    for chunk in (1 << 19, 700):
        gcloudyaml.CHUNK_BYTES, kept = chunk, gcloudyaml.CHUNK_BYTES
        try:
            stats = InputStats(path="x")
            scanner = GcloudYamlScanner(stats, book.may_match_texts, book.match)
            scanner.scan(io.BytesIO(text.encode()))
        finally:
            gcloudyaml.CHUNK_BYTES = kept
        found.append((stats.to_dict(), scanner.tally, scanner.events))
    assert found[0] == found[1]


@settings(max_examples=400, deadline=None)
@given(entry=_entry())
def test_the_skeletons_fields_are_pyyamls(entry: dict[str, Any]) -> None:
    # Where the one-match reader reads a document, its fields (or skip reason) are what
    # records.entry_fields makes of PyYAML's entry.
    document = gcloud_yaml(entry).removeprefix("---\n").rstrip("\n")
    if gcloudyaml._ODD.search(document):
        return  # (the scanner hands such a document over before it gets here)
    try:
        fields = skeleton_fields(document)
    except gcloudyaml._Other:
        return
    if fields is None:
        return
    assert fields == entry_fields(load_entry(document))


def test_most_random_entries_are_read_in_one_match() -> None:
    # The skeleton takes gcloud's layout with odd values too (else the test above tests little).
    rng = random.Random(5)
    taken = 0
    for index in range(200):
        entry = {
            "insertId": f"id{index}",
            "resource": {"type": "ml_job", "labels": {"job_id": str(rng.randrange(10**6))}},
            "labels": {"ml.googleapis.com/trial_id": rng.choice(["1", "yes", "0x10", ""])},
            "textPayload": rng.choice(["Job failed.", "a\nb", "x" * 200, "it's: #", ""]),
            "timestamp": "2024-05-08T17:06:03.628548865Z",
        }
        document = gcloud_yaml(entry).removeprefix("---\n").rstrip("\n")
        with contextlib.suppress(gcloudyaml._Other):
            taken += skeleton_fields(document) is not None
    assert taken >= 190  # (a plain "yes" label is a string in 1.2: read in the one match too)


def test_a_document_too_long_to_read_lightly_is_read_plainly_to_the_end(
    book: RuleBook, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The rest of the input after a document longer than _LONGEST_DOCUMENT goes to the plain
    # reader, its last document too (it was read, then dropped, before it was counted).
    monkeypatch.setattr(gcloudyaml, "_LONGEST_DOCUMENT", 2000)
    monkeypatch.setattr(gcloudyaml, "CHUNK_BYTES", 700)
    text = _written("oom", "yaml").replace("---\n", "---\n" + "logName: " + "x" * 3000 + "\n", 1)
    found = []
    for fast in (True, False):
        stats = InputStats(path="x")
        if fast:
            scanner = GcloudYamlScanner(stats, book.may_match_texts, book.match)
            scanner.scan(io.BytesIO(text.encode()))
            found.append((stats.to_dict(), sum(s.records for s in scanner.tally.spans.values())))
        else:
            from analyzer.ingest.gcloud_yaml import read_gcloud_yaml

            records = list(read_gcloud_yaml(io.BytesIO(text.encode()), stats))
            found.append((stats.to_dict(), sum(r.timestamp is not None for r in records)))
    assert found[0] == found[1]
