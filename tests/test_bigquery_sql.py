"""The pieces of the BigQuery path, each executed where it runs: the rules' RE2 form (never
says "no" where Python says "yes", on every example and on Hypothesis texts, in DuckDB's
RE2), the DuckDB traps sqlglot leaves, the cost arithmetic, table references."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

duckdb = pytest.importorskip("duckdb", reason="the bigquery extra is not installed")
pytest.importorskip("re2", reason="the bigquery extra is not installed")

from analyzer.core.errors import InputError, SourceError  # noqa: E402
from analyzer.engines.bigquery.cost import (  # noqa: E402
    check_estimate,
    format_bytes,
    on_demand_price,
    parse_bytes,
)
from analyzer.engines.bigquery.dialects import to_duckdb  # noqa: E402
from analyzer.engines.bigquery.queries import folded, sql_string  # noqa: E402
from analyzer.engines.bigquery.tables import TableRef  # noqa: E402
from analyzer.rulebook import RuleBook, check_rules  # noqa: E402
from analyzer.rulebook.normalize import INVISIBLE  # noqa: E402
from analyzer.rulebook.re2 import compile_rules, python_only_problems, to_re2  # noqa: E402

BOOK = RuleBook.load()
TEMPLATES = compile_rules(BOOK.rules)
CONNECTION = duckdb.connect()


@pytest.mark.parametrize(
    ("python", "re2"),
    [
        (r"\A\s*Job failed\s*\Z", r"\A\s*Job failed\s*\z"),
        (r"a\\Zb", r"a\\Zb"),  # an escaped backslash, then a plain Z
        (r"(?<![A-Za-z])NotFoundError", r"(?:^|[^A-Za-z])NotFoundError"),
        (r"x|(?<=[ab])c", r"x|[ab]c"),
        (r"(?<!\d)42", r"(?:^|\D)42"),
        (r"(?<![^a-z])q", r"(?:^|[a-z])q"),
        (r"[\]Z]\Z", r"[\]Z]\z"),
        ("名前\\Z", r"\x{540d}\x{524d}\z"),
    ],
)
def test_rewrites(python: str, re2: str) -> None:
    assert to_re2(python) == (re2, None)


@pytest.mark.parametrize(
    ("python", "reason"),
    [
        (r"ab(?<!b)c", "look-behind"),  # not at the start of an alternative: no rewrite
        (r"(?:x(?<=y)z)", "look-behind"),
        (r"(?<=ab)c", "look-behind"),  # two characters
        (r"a(?=b)", "look-ahead"),
        (r"a{,3}", "{,n}"),
    ],
)
def test_what_re2_cannot_have(python: str, reason: str) -> None:
    source, why = to_re2(python)
    assert source is None and why is not None and reason in why


def test_every_builtin_template_compiles_for_re2() -> None:
    assert TEMPLATES and all(t.source is not None for t in TEMPLATES)


def test_rules_check_says_which_templates_are_python_only(tmp_path: Any) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "mine.yaml").write_text(
        "- id: mine.backref\n"
        "  category: internal_error\n"
        "  pattern: 'disk (sd[a-z]) failed on \\1'\n"
        "  examples:\n"
        "    match:\n"
        "      - text: 'disk sda failed on sda'\n"
        "        fields: {}\n"
    )
    problems = [p for p in check_rules([rules]) if "Python only" in p.message]
    assert len(problems) == 1 and problems[0].severity == "warning"
    assert "mine.backref" in problems[0].message and "RE2 refuses it" in problems[0].message
    assert python_only_problems(BOOK.rules) == []


def _re2_says(texts: list[str]) -> list[bool]:
    """For each text, whether some template's RE2 form matches its folded form, asked
    through the same SQL text query A uses, transpiled and run by DuckDB."""
    tests = " OR ".join(
        f"REGEXP_CONTAINS(folded, {sql_string(t.source)})"
        for t in TEMPLATES
        if t.source is not None
    )
    sql = (
        f"SELECT ({tests}) AS hit FROM (SELECT {folded('text')} AS folded, i"
        " FROM UNNEST(@texts) AS text WITH OFFSET AS i) ORDER BY i"
    )
    rows = CONNECTION.execute(to_duckdb(sql), {"texts": texts}).fetchall()
    return [bool(row[0]) for row in rows]


EXAMPLES = [e.text for rule in BOOK.rules for e in rule.match_examples if e.text.isascii()]


def test_re2_matches_every_ascii_example() -> None:
    assert EXAMPLES and all(_re2_says(EXAMPLES))


WORDS = sorted({w for r in BOOK.rules for t in r.templates for w in t.text.split()})
ASCII_DAMAGE = st.sampled_from([" ", "  ", "\n", "\t", " \r\n ", "\x0b", "\x1c", "\x0c "])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(EXAMPLES),
            st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join),
            st.text(st.characters(max_codepoint=127), max_size=40),
        ),
        min_size=1,
        max_size=8,
    ),
    st.data(),
)
def test_re2_never_refuses_what_python_matches(parts: list[str], data: st.DataObject) -> None:
    texts = []
    for part in parts:
        words = part.split(" ")
        glued = words[0]
        for word in words[1:]:
            glued += data.draw(ASCII_DAMAGE) + word
        texts.append(data.draw(ASCII_DAMAGE) + glued if data.draw(st.booleans()) else glued)
    says = _re2_says(texts)
    for text, hit in zip(texts, says, strict=True):
        if BOOK.match(text):
            assert hit, text


def test_json_type_string_is_duckdbs_varchar() -> None:
    sql = (
        "SELECT IF(JSON_TYPE(j.message) = 'string', JSON_VALUE(j.message), NULL) AS m,"
        " IF(JSON_TYPE(j.n) = 'string', JSON_VALUE(j.n), NULL) AS n,"
        " JSON_VALUE(j, '$.\"a.b/c\"') AS dotted"
        " FROM (SELECT PARSE_JSON(@doc) AS j)"
    )
    converted = to_duckdb(sql)
    assert "'VARCHAR'" in converted and "'string'" not in converted
    doc = '{"message": "say \\"hi\\"", "n": 3, "a.b/c": "v"}'
    assert CONNECTION.execute(converted, {"doc": doc}).fetchall() == [('say "hi"', None, "v")]


def test_another_json_type_is_refused() -> None:
    with pytest.raises(ValueError, match="no DuckDB name"):
        to_duckdb("SELECT JSON_TYPE(PARSE_JSON('1')) = 'number'")


def test_pattern_literals_with_quotes_read_the_same_in_both_dialects() -> None:
    pattern = sql_string(r"No module named '?x'?")
    assert "'" not in pattern[2:-1]
    sql = f"SELECT REGEXP_CONTAINS(@t, {pattern})"
    assert CONNECTION.execute(to_duckdb(sql), {"t": "No module named 'x'"}).fetchone() == (True,)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("100GB", 100 * 10**9),
        ("1TB", 10**12),
        ("1.5TiB", 3 << 39),
        ("500MiB", 500 << 20),
        ("12345", 12345),
        ("10 mb", 10**7),
    ],
)
def test_parse_bytes(text: str, size: int) -> None:
    assert parse_bytes(text) == size


@pytest.mark.parametrize("text", ["", "GB", "-1GB", "1XB", "0"])
def test_parse_bytes_refuses(text: str) -> None:
    with pytest.raises(InputError, match="--max-bytes"):
        parse_bytes(text)


def test_price_and_guard() -> None:
    assert on_demand_price(1 << 40) == 6.25
    assert format_bytes(1_234_567_890) == "1.23 GB"
    check_estimate(100 * 10**9, parse_bytes("100GB"))  # at the bound: allowed
    with pytest.raises(SourceError, match="over --max-bytes"):
        check_estimate(100 * 10**9 + 1, parse_bytes("100GB"))


@pytest.mark.parametrize(
    ("text", "parts", "wildcard"),
    [
        ("my-project.logs.ml_googleapis_com_*", ("my-project", "logs", "ml_googleapis_com_*"), 1),
        ("`p.d._AllLogs`", ("p", "d", "_AllLogs"), 0),
        ("example.com:proj.d.t", ("example.com:proj", "d", "t"), 0),
    ],
)
def test_table_references(text: str, parts: tuple[str, str, str], wildcard: int) -> None:
    ref = TableRef.parse(text)
    assert (ref.project, ref.dataset, ref.table) == parts and ref.wildcard is bool(wildcard)


@pytest.mark.parametrize("text", ["t", "p.t", "p.d.t.x", "p.d.t*x", "p d.t"])
def test_bad_table_references(text: str) -> None:
    with pytest.raises(InputError, match=r"PROJECT\.DATASET\.TABLE"):
        TableRef.parse(text)


def test_invisible_marks_are_non_ascii() -> None:
    # Query A returns every non-ASCII text whole: the marks Python removes are all such.
    assert all(not mark.isascii() for mark in INVISIBLE)


def test_the_core_install_imports_none_of_the_extra() -> None:
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    code = (
        "import sys\n"
        "from analyzer.cli.app import app\n"
        "from typer.testing import CliRunner\n"
        "result = CliRunner().invoke(app, ['diagnose', 'sample_logs/success.jsonl'])\n"
        "assert result.exit_code == 0, result.output\n"
        "import analyzer.engines.bigquery\n"
        "heavy = [m for m in ('google.cloud.bigquery', 'sqlglot', 'duckdb', 're2')"
        " if m in sys.modules]\n"
        "print(heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_template_without_a_literal_word_sees_every_text(tmp_path: Any) -> None:
    from analyzer.engines.bigquery import DuckDBEngine, bigquery_source
    from analyzer.engines.bigquery.run import build_plan
    from analyzer.simulate import simulate
    from tests.bq_tables import load_duckdb, stored_entries

    rules = tmp_path / "rules"
    rules.mkdir()
    # Every word of this pattern is inside a group: the prefilter has no literal for it.
    (rules / "mine.yaml").write_text(
        "- id: mine.step-lost\n"
        "  category: internal_error\n"
        "  pattern: '(?:ste|sta)p \\d+ (?:lost|dropped)'\n"
        "  examples:\n"
        "    match:\n"
        "      - text: 'step 12 lost'\n"
        "        fields: {}\n"
    )
    book = RuleBook.load([rules])
    assert next(t for t in compile_rules(book.rules) if t.rule == "mine.step-lost").literal is None
    entries = stored_entries(simulate("success", seed=2))
    entries[len(entries) // 2]["textPayload"] = "step 12 lost"
    entries[len(entries) // 2].pop("jsonPayload", None)
    connection = duckdb.connect()
    load_duckdb(connection, "p", "d", entries)
    source = bigquery_source("p.d.ml_googleapis_com_*", start="2000-01-01T00:00:00Z")
    engine = DuckDBEngine(connection)
    plan = build_plan(source, engine, book)
    texts = [row["text"] for row in engine.rows(plan.candidates, plan.parameters, None)]
    assert "step 12 lost" in texts
    assert book.match("step 12 lost")[0].rule == "mine.step-lost"


@pytest.mark.parametrize(
    ("path", "column"),
    [
        # Cloud Logging's "BigQuery schema for logs": the LogEntry's own fields keep their
        # names, the user's keys are lower-cased, other characters become "_", no leading "_".
        (("insertId",), "insertId"),
        (("resource", "labels", "job_id"), "resource.labels.job_id"),
        (("labels", "ml.googleapis.com/trial_id"), "labels.ml_googleapis_com_trial_id"),
        (
            ("labels", "compute.googleapis.com/resource_id"),
            "labels.compute_googleapis_com_resource_id",
        ),
        (("jsonPayload", "MESSAGE"), "jsonPayload.message"),
        (("jsonPayload", "myField", "mySubfield"), "jsonPayload.myfield.mysubfield"),
        (("jsonPayload", "foo%%"), "jsonPayload.foo__"),
        (("jsonPayload", "_private"), "jsonPayload.private"),
    ],
)
def test_the_sinks_column_names(path: tuple[str, ...], column: str) -> None:
    from analyzer.engines.bigquery.columns import sink_column

    assert sink_column(path) == column


@pytest.mark.parametrize(
    ("path", "place"),
    [
        (("receiveTimestamp",), ("receive_timestamp", ())),
        (("resource", "type"), ("resource.type", ())),
        (("labels", "ml.googleapis.com/trial_id"), ("labels", ("ml.googleapis.com/trial_id",))),
        (("jsonPayload", "attrs", "tag"), ("json_payload", ("attrs", "tag"))),
    ],
)
def test_the_log_analytics_places(path: tuple[str, ...], place: tuple[str, object]) -> None:
    from analyzer.engines.bigquery.columns import log_analytics_place

    assert log_analytics_place(path) == place


def test_a_payload_key_that_is_no_identifier_is_read_inside_the_json() -> None:
    from analyzer.engines.bigquery.columns import json_member
    from analyzer.engines.bigquery.tables import _json_string

    sql = (
        f"SELECT {_json_string(json_member('j', ('x-y', 'z')))} AS a,"
        f" {_json_string(json_member('j', ('attrs', 'tag')))} AS b,"
        f" {_json_string(json_member('j', ('n',)))} AS c"
        " FROM (SELECT PARSE_JSON(@doc) AS j)"
    )
    doc = '{"x-y": {"z": "q"}, "attrs": {"tag": "w"}, "n": 3}'
    assert CONNECTION.execute(to_duckdb(sql), {"doc": doc}).fetchall() == [("q", "w", None)]
