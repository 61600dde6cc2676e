"""gcloud's YAML read as the YAML 1.2 it is (``gcloud logging read`` prints through ruamel.yaml,
YAML 1.2 unless asked otherwise): plain scalars by the core schema, the API's string fields as
they were written, a ``%YAML 1.1`` document by 1.1's rules; the plain reader and the fast scan
(1 and 3 processes, a stream) read them to the same records."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from analyzer.classify._fastscan import parallel
from analyzer.ingest import open_sources
from analyzer.ingest.gcloud_yaml import EntryLoader, Yaml11Loader, load_entry, read_gcloud_yaml
from analyzer.ingest.records import InputStats, LogRecord
from analyzer.rulebook import RuleBook
from analyzer.simulate.writers import gcloud_yaml
from tests.test_fast_readers import _same

try:  # gcloud's own printer (the test extra has it)
    from ruamel import yaml as ruamel
except ImportError:  # pragma: no cover
    ruamel = None


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return RuleBook.load()


# A plain scalar as written, and what YAML 1.2's core schema makes of it (PyYAML, a 1.1
# reader, made True of "yes", 80 of "1:20", 511 of "0777", 1000 of "1_000", ...).
NAN = float("nan")
SCALARS: list[tuple[str, Any]] = [
    ("yes", "yes"),
    ("no", "no"),
    ("on", "on"),
    ("off", "off"),
    ("y", "y"),
    ("N", "N"),
    ("Yes", "Yes"),
    ("1:20", "1:20"),
    ("12:30:00", "12:30:00"),
    ("0777", 777),
    ("0o17", 15),
    ("0x1F", 31),
    ("+1", 1),
    ("-0", 0),
    ("1_000", "1_000"),
    ("0b101", "0b101"),
    ("+0x1F", "+0x1F"),
    ("0o8", "0o8"),
    ("1e3", 1000.0),
    ("1.", 1.0),
    ("-.5", -0.5),
    (".5e-3", 0.0005),
    (".5e3", ".5e3"),  # (ruamel's 1.2 float: gcloud writes this string plain)
    (".inf", math.inf),
    ("-.Inf", -math.inf),
    (".NaN", NAN),
    ("1.2.3", "1.2.3"),
    ("true", True),
    ("False", False),
    ("TRUE", True),
    ("tRUE", "tRUE"),
    ("null", None),
    ("~", None),
    ("NULL", None),
    ("nULL", "nULL"),
    ("", None),
    ("=", "="),
    ("<<", "<<"),
    ("2024-01-01", "2024-01-01"),
    ("2024-01-01T00:00:00Z", "2024-01-01T00:00:00Z"),
    ("\u0661\u0662", "\u0661\u0662"),
]
FIELDS = ("textPayload", "message", "label", "severity")


def _document(field: str, written: str, number: int) -> str:
    value = f" {written}" if written else ""
    lines = [f"insertId: id{number}"]
    if field == "message":
        lines += ["jsonPayload:", f"  message:{value}"]
    lines += ["resource:", "  labels:", "    job_id: '42'"]
    if field == "label":
        lines.append(f"    task_name:{value}")
    lines.append("  type: ml_job")
    if field == "severity":
        lines.append(f"severity:{value}")
    if field != "message":
        lines.append(f"textPayload:{value}" if field == "textPayload" else "textPayload: text")
    lines.append("timestamp: '2024-05-08T17:06:03.628548865Z'")
    return "---\n" + "\n".join(lines) + "\n"


def _expected(field: str, written: str, value: Any) -> tuple[str, Any] | None:
    """(the record's field, its value), or None when the document gives no record."""
    typed = value is not None and not isinstance(value, str)
    if field == "textPayload":
        # A string field of the API: a number or bool written plain is its text as written.
        return None if value is None else ("text", written if typed else value)
    if field == "message":
        # A Struct value: a number is a number, and the text is the payload's rendering.
        if isinstance(value, str):
            return ("text", value)
        return ("text", json.dumps({"message": value}, separators=(",", ":")))
    if field == "label":
        return ("task", None if value is None else written)
    return ("severity", "DEFAULT" if value is None else written)


def _records(path: Path) -> list[LogRecord]:
    (source,) = open_sources([str(path)])
    return list(source.records())


def test_the_core_schema_and_pyyaml_differ_where_the_table_says() -> None:
    # The table is about 1.2: PyYAML's 1.1 reading differs on the strings 1.2 keeps.
    for written, value in SCALARS:
        if not written:
            continue
        got = yaml.load(f"a: {written}", Loader=EntryLoader)["a"]
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(got), written
        else:
            assert got == value and type(got) is type(value), written
    old = yaml.load("a: yes\nb: 1:20\nc: 0777", Loader=Yaml11Loader)
    assert old == {"a": True, "b": 80, "c": 511}


def test_a_table_of_plain_scalars_reads_the_same_both_ways(
    book: RuleBook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "MIN_RANGE_BYTES", 300)
    rows = [(field, written, value) for field in FIELDS for written, value in SCALARS]
    path = tmp_path / "scalars.yaml"
    path.write_text("".join(_document(f, w, n) for n, (f, w, _) in enumerate(rows)))
    got = {record.insert_id: record for record in _records(path)}
    for number, (field, written, value) in enumerate(rows):
        want = _expected(field, written, value)
        record = got.get(f"id{number}")
        if want is None:
            assert record is None, (field, written)
            continue
        assert record is not None, (field, written)
        assert getattr(record, want[0]) == want[1], (field, written)
    _same(path, book)


def test_a_string_field_keeps_its_text_as_written() -> None:
    entry = load_entry(
        "textPayload: 0x1F\ninsertId: 1e3\nseverity: 200\nlabels:\n  a: yes\n  b: 017\n"
        "resource:\n  type: 12\n  labels:\n    job_id: 1.50\njsonPayload:\n  step: 0x1F"
    )
    assert entry == {
        "textPayload": "0x1F",
        "insertId": "1e3",
        "severity": "200",
        "labels": {"a": "yes", "b": "017"},
        "resource": {"type": "12", "labels": {"job_id": "1.50"}},
        "jsonPayload": {"step": 31},
    }
    # A number is no time: the record has none, as from the JSON readers.
    assert load_entry("timestamp: 1700000000") == {"timestamp": 1700000000}
    # Quoted, or tagged: what it says.
    assert load_entry("textPayload: !!int '5'\na: '5'") == {"textPayload": 5, "a": "5"}


_DIRECTED = """\
%YAML 1.1
---
jsonPayload:
  flag: yes
  step: 0777
resource:
  labels:
    job_id: '42'
  type: ml_job
timestamp: '2024-05-08T17:06:03Z'
---
jsonPayload:
  flag: yes
  step: 0777
resource:
  labels:
    job_id: '42'
  type: ml_job
timestamp: '2024-05-08T17:06:04Z'
%YAML 1.1
---
textPayload: yes
severity: on
resource:
  labels:
    job_id: '42'
    task_name: 1:20
  type: ml_job
timestamp: '2024-05-08T17:06:05Z'
---
textPayload: "a quoted text
%that goes on"
timestamp: '2024-05-08T17:06:06Z'
"""


def test_a_yaml_1_1_directive_reads_the_next_document_as_1_1(
    book: RuleBook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "MIN_RANGE_BYTES", 300)
    path = tmp_path / "directed.yaml"
    # Enough documents for ranges: the directive's range makes the fast scan hand it over.
    path.write_text(gcloud_yaml({"textPayload": "first", "insertId": "a"}) * 40 + _DIRECTED)
    records = _records(path)
    texts = [record.text for record in records[-4:]]
    # 1.1 after its directive (the printer quoted 'yes' there), 1.2 without one; a string
    # field as written either way; the directive ends the document before it; a "%" line not
    # before a "---" is the document's (PyYAML takes a quoted scalar's lines unindented).
    assert texts == [
        '{"flag":true,"step":511}',
        '{"flag":"yes","step":777}',
        "yes",
        "a quoted text %that goes on",
    ]
    assert (records[-2].severity, records[-2].task) == ("on", "1:20")
    (source,) = open_sources([str(path)])
    list(source.records())
    assert not source.stats.skip_reasons
    _same(path, book)


# Any text: gcloud's printer (the simulator's writer) writes it, both readers read it back. But
# U+0085: ruamel (and PyYAML's emitter, the simulator's) writes it raw inside a quoted scalar,
# where YAML reads it as a line break and folds it to a space, so the text read is not the one
# printed (by any YAML reader: the two readers agree, tests/test_fast_yaml.py's random entries).
_CHARACTERS = st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x85")
_TEXT = st.text(_CHARACTERS, max_size=60) | st.sampled_from(
    ["yes", "1:20", "0777", "~", "null", "a: b", "#x", "x #y", " lead", "trail ", "é", "- x"]
)
_TEXTS = st.lists(st.tuples(_TEXT, _TEXT), min_size=1, max_size=8)


def _entry(number: int, text: str, label: str) -> dict[str, Any]:
    return {
        "insertId": f"id{number}",
        "labels": {"ml.googleapis.com/trial_id": label},
        "resource": {"labels": {"job_id": "42", "task_name": "workerpool0-0"}, "type": "ml_job"},
        "textPayload": text,
        "timestamp": f"2024-05-08T17:06:{number:02d}.628548865Z",
    }


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(texts=_TEXTS)
def test_any_text_reads_back_as_written(
    texts: list[tuple[str, str]], book: RuleBook, tmp_path_factory: pytest.TempPathFactory
) -> None:
    entries = [_entry(number, text, label) for number, (text, label) in enumerate(texts)]
    path = tmp_path_factory.mktemp("yaml12") / "texts.yaml"
    path.write_text("".join(map(gcloud_yaml, entries)), encoding="utf-8")
    records = _records(path)
    assert [(r.text, r.trial) for r in records] == [(t, label or None) for t, label in texts]
    _same(path, book)


def _printed(entries: list[dict[str, Any]]) -> str:
    """``entries`` as gcloud's printer prints them (Cloud SDK core/resource/yaml_printer.py:
    ruamel, typ "safe", pure Python, block style, indent 2, unicode, a "---" before each, a
    literal block for every text holding a line end)."""

    class Lines(str):
        pass

    assert ruamel is not None
    printer = ruamel.YAML(typ="safe", pure=True)
    printer.default_flow_style = False
    printer.old_indent = 2
    printer.allow_unicode = True
    printer.explicit_start = True
    printer.representer.add_representer(
        Lines, lambda dumper, value: dumper.represent_scalar("tag:yaml.org,2002:str", value, "|")
    )

    def typed(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: typed(item) for key, item in value.items()}
        return Lines(value) if isinstance(value, str) and "\n" in value else value

    out = io.StringIO()
    for entry in entries:
        printer.dump(typed(entry), out)
    return out.getvalue()


# gcloud's literal presenter forces "|" on every text holding a line end, and ruamel then
# writes a control character, U+0085, U+2028 or U+FEFF in it raw: such a document is no YAML a
# reader takes (PyYAML: "special characters are not allowed"), and is skipped as invalid. The
# simulator's writer escapes them (PyYAML's emitter refuses "|" there), so only here are they left
# out.
_PRINTABLE = st.characters(
    codec="utf-8",
    exclude_categories=("Cs", "Cc"),
    include_characters="\n",
    exclude_characters="\x85\u2028\u2029\ufeff",
)
_PRINTABLE_TEXT = st.text(_PRINTABLE, max_size=60) | st.sampled_from(
    ["yes", "1:20", "0777", ".5e3", "~", "a: b", " lead\nx", "x \ny", "'q'\n"]
)


@pytest.mark.skipif(ruamel is None, reason="ruamel.yaml (gcloud's printer) is not installed")
@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.tuples(_PRINTABLE_TEXT, _PRINTABLE_TEXT), min_size=1, max_size=8))
def test_any_text_printed_by_gclouds_own_printer_reads_back(
    texts: list[tuple[str, str]],
) -> None:
    # ruamel itself (what gcloud prints with), read by the plain reader; the fast scan is held
    # to the plain reader above and in tests/test_fast_yaml.py.
    entries = [_entry(number, text, label) for number, (text, label) in enumerate(texts)]
    stats = InputStats(path="printed.yaml")
    data = _printed(entries).encode()
    records = list(read_gcloud_yaml(io.BytesIO(data), stats))
    assert [(r.text, r.trial) for r in records] == [(t, label or None) for t, label in texts]


def _real_gcloud_yaml() -> list[Path]:
    """tests/real's excerpts of gcloud's YAML (shape gcloud-yaml): none yet."""
    real = Path(__file__).parent / "real"
    found = []
    for meta in sorted(real.glob("*.yaml")):
        about = yaml.safe_load(meta.read_text(encoding="utf-8"))
        if isinstance(about, dict) and about.get("shape") == "gcloud-yaml":
            found.append(real / str(about["text"]))
    return found


@pytest.mark.parametrize("path", _real_gcloud_yaml(), ids=lambda path: path.stem)
def test_a_real_gcloud_yaml_excerpt_reads_alike(path: Path, book: RuleBook) -> None:
    assert _records(path)
    _same(path, book)
