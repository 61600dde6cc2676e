"""Smoke test of the benchmark harness on a tiny export (it measures, it is not timed)."""

from __future__ import annotations

import importlib.util
import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from analyzer.simulate import fleet

ROOT = Path(__file__).resolve().parent.parent


def _bench_module() -> object:
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_runs_every_contender_on_a_tiny_export(tmp_path: Path) -> None:
    bench = _bench_module()
    out = tmp_path / "results.json"
    results = bench.main(  # type: ignore[attr-defined]
        ["--size", "300KB", "--runs", "1", "--out", str(out), "--skip", "notebook-pandas"]
    )
    written = json.loads(out.read_text())
    assert written == results
    contenders = written["contenders"]
    assert {"jobdoctor", "careful-python", "explain"} <= set(contenders)
    for row in contenders.values():
        assert row["median_s"] > 0 and row["peak_rss_mb"] > 0
    assert written["input"]["bytes"] >= 300_000


def test_sizes_parse() -> None:
    bench = _bench_module()
    assert bench.parse_size("200MB") == 200_000_000  # type: ignore[attr-defined]
    assert bench.parse_size("1GB") == 1_000_000_000  # type: ignore[attr-defined]


def test_line_costs_runs_on_a_tiny_export(tmp_path: Path) -> None:
    from analyzer.simulate import fleet

    path = tmp_path / "tiny.jsonl"
    path.write_bytes(b"".join(fleet(200_000, seed=1)))
    spec = importlib.util.spec_from_file_location("line_costs", ROOT / "bench" / "line_costs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    costs = module.main([str(path), "--mb", "1"])
    assert costs["orjson.loads"] > 0 and all(value >= 0 for value in costs.values())


def test_rules_cost_compares_both_rule_sets(capsys: object) -> None:
    spec = importlib.util.spec_from_file_location("rules_cost", ROOT / "bench" / "rules_cost.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main([str(ROOT / "sample_logs" / "project-wide.jsonl"), "--runs", "1"])
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "all rules" in out and "platform messages only" in out and "finer causes cost" in out


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_instruction_count_of_a_small_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    export = tmp_path / "small.jsonl"
    with export.open("wb") as stream:
        stream.writelines(fleet(1_200_000, seed=3))
    spec = importlib.util.spec_from_file_location("bench_instr", ROOT / "bench" / "instructions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main([str(export), "--mb", "1"]) == 0  # type: ignore[attr-defined]
    lines, per_line = re.findall(r"^(\d+) lines|([\d,]+) per line$", capsys.readouterr().out, re.M)
    assert int(lines[0]) > 500
    # A scan costs thousands of instructions per line, not nothing and not millions.
    assert 2_000 < int(per_line[1].replace(",", "")) < 500_000


# --- the shape matrix (bench/run.py --shapes, bench/shapes.py) ---------------------------------


def _shapes_module() -> Any:
    return _bench_module().shapes_module()  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def tiny_variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every variant of one small fleet, made as ``bench/run.py --shapes`` makes them."""
    shapes = _shapes_module()
    out = tmp_path_factory.mktemp("shapes")
    shapes.main(["--fleet-bytes", "400000", "--out-dir", str(out), "--shape", "all"])
    fleet = out / "fleet-400000-seed0.jsonl"
    return {shape.name: shapes.variant_path(shape, fleet) for shape in shapes.SHAPES}


def _entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def test_the_shape_matrix_runs_every_shape_on_a_tiny_fleet(
    tiny_variants: dict[str, Path],
) -> None:
    bench = _bench_module()
    # The fixture's directory: its variants are made already (the harness reuses its cache).
    out = tiny_variants["fleet"].parent / "shapes.json"
    argv = ["--shapes", "--size", "400000", "--runs", "1", "--out", str(out)]
    results = bench.main(argv)  # type: ignore[attr-defined]
    assert json.loads(out.read_text()) == results
    rows = results["sizes"]["400000"]["rows"]
    assert [row["shape"] for row in rows] == [shape.name for shape in _shapes_module().SHAPES]
    for row in rows:
        for contender in ("jobdoctor", "careful-python"):
            assert row[contender]["median_s"] > 0 and row[contender]["peak_rss_mb"] > 0
        assert row["ratio_to_careful"] > 0 and row["targets"]
    assert results["explain"]["median_s"] > 0
    # The README table is made from these results, every row in it.
    table = bench.markdown(results)  # type: ignore[attr-defined]
    assert all(row["label"] in table for row in rows) and "jobdoctor explain" in table


def test_the_readme_tables_are_rewritten_between_their_markers(tmp_path: Path) -> None:
    bench = _bench_module()
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{bench.BEGIN}\nold table\n{bench.END}\nafter\n")  # type: ignore[attr-defined]
    results = {
        "command": "python bench/run.py --shapes",
        "machine": {"cpus": 2, "python": "3.11.7", "platform": "Linux"},
        "runs": 1,
        "sizes": {},
        "explain": {"median_s": 0.1, "best_s": 0.1, "target_s": 0.15, "met": True},
        "elapsed_s": 1.0,
        "making_s": 0.5,
    }
    bench.write_readmes(results, (readme,))  # type: ignore[attr-defined]
    text = readme.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "old table" not in text
    assert "median 0.100 s" in text and "`python bench/run.py --shapes`" in text
    # Both READMEs of the repository carry the markers.
    for path in bench.READMES:  # type: ignore[attr-defined]
        assert bench.BEGIN in path.read_text() and bench.END in path.read_text()  # type: ignore[attr-defined]


def test_the_timestamp_variants_write_what_their_writers_write(
    tiny_variants: dict[str, Path],
) -> None:
    stamp = r'"(?:timestamp|receiveTimestamp)":"([^"]+)"'
    forms = {
        "ts-offset": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00",
        "ts-micros": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z",
        "ts-trimmed": r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d*[1-9])?Z",
    }
    fleet = _entries(tiny_variants["fleet"])
    for name, form in forms.items():
        text = tiny_variants[name].read_text()
        found = re.findall(stamp, text)
        assert len(found) == 2 * len(fleet) and all(re.fullmatch(form, s) for s in found), name
        # Only the timestamps differ.
        for got, want in zip(_entries(tiny_variants[name]), fleet, strict=True):
            assert {k: v for k, v in got.items() if "imestamp" not in k} == {
                k: v for k, v in want.items() if "imestamp" not in k
            }
    # A whole second keeps no fraction in isoformat() and in Go's form.
    assert re.search(r':\d\d\+00:00"', tiny_variants["ts-offset"].read_text())
    assert re.search(r':\d\dZ"', tiny_variants["ts-trimmed"].read_text())


def test_the_layout_variants_hold_the_fleets_entries(tiny_variants: dict[str, Path]) -> None:
    fleet_bytes = tiny_variants["fleet"].read_bytes()
    fleet = _entries(tiny_variants["fleet"])
    lines = fleet_bytes.count(b"\n")
    space = tiny_variants["space"].read_bytes()
    assert space.count(b"} \n") == lines and space.replace(b"} \n", b"}\n") == fleet_bytes
    crlf = tiny_variants["crlf"].read_bytes()
    assert crlf.count(b"\r\n") == lines and crlf.replace(b"\r\n", b"\n") == fleet_bytes
    blank = tiny_variants["blank"].read_bytes()
    assert blank.count(b"\n\n") == lines // 500 and blank.replace(b"\n\n", b"\n") == fleet_bytes
    ascii_ = tiny_variants["ascii"].read_bytes()
    assert ascii_.isascii() and not fleet_bytes.isascii()
    shuffled = tiny_variants["key-order"].read_text().splitlines()
    pairs = zip(shuffled, fleet_bytes.decode().splitlines(), strict=True)
    assert sum(a != b for a, b in pairs) > lines // 2
    for name in ("ascii", "key-order"):
        assert _entries(tiny_variants[name]) == fleet, name
    for got, want in zip(_entries(tiny_variants["extra-fields"]), fleet, strict=True):
        assert {"trace", "spanId", "sourceLocation", "operation"} <= set(got) - set(want)
        assert {k: got[k] for k in want if k != "jsonPayload"} == {
            k: v for k, v in want.items() if k != "jsonPayload"
        }


def test_the_content_variants_add_what_they_say(tiny_variants: dict[str, Path]) -> None:
    shapes = _shapes_module()
    fleet = _entries(tiny_variants["fleet"])
    foreign = _entries(tiny_variants["foreign"])
    others = [e for e in foreign if e["resource"]["type"] != "ml_job"]
    assert len(others) == len(fleet) // 4 and [e for e in foreign if e not in others] == fleet
    assert {e["resource"]["type"] for e in others} >= {"gce_instance", "k8s_container"}
    assert any("protoPayload" in e for e in others)
    long_texts = [
        e for e in _entries(tiny_variants["long-text"]) if len(str(e.get("jsonPayload"))) > 50_000
    ]
    assert len(long_texts) == shapes.long_text_count(tiny_variants["fleet"].stat().st_size)
    for name, target in (("dense-10", 0.10), ("dense-30", 0.30)):
        meta = shapes.read_meta(tiny_variants[name])
        assert abs(meta["matching_records"] / meta["entries"] - target) < 0.03, name
    # A small fleet is already ~9% lifecycle lines: only the 30% variant replaces many.
    texts = tiny_variants["dense-30"].read_text()
    assert (
        "checkpoint-" in texts and shapes.MISSING_MODULE in texts and "Exception ignored" in texts
    )


def test_the_dense_texts_match_rules() -> None:
    # What `jobdoctor explain` says of each text the dense variants write.
    from analyzer.rulebook import RuleBook

    shapes = _shapes_module()
    book = RuleBook.load()
    texts = [shapes.checkpoint_text("123", 2444), shapes.WARNING_TRACEBACK, shapes.MISSING_MODULE]
    assert all(book.match(text) for text in texts)


def test_the_other_formats_are_the_simulators_writers(tiny_variants: dict[str, Path]) -> None:
    from analyzer.simulate import write

    fleet = _entries(tiny_variants["fleet"])
    stream_logs = io.StringIO()
    write(iter(fleet), "stream-logs", stream_logs)
    assert tiny_variants["stream-logs"].read_text() == stream_logs.getvalue()
    # gcloud's layout, newest first: the sink's lines read from the end.
    gcloud = json.dumps(fleet[::-1], indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert tiny_variants["gcloud-json"].read_text() == gcloud
    from analyzer.simulate.writers import gcloud_yaml

    assert tiny_variants["gcloud-yaml"].read_text() == "".join(map(gcloud_yaml, fleet[::-1]))


def test_lines_read_from_the_end(tmp_path: Path) -> None:
    shapes = _shapes_module()
    path = tmp_path / "lines.txt"
    lines = [f"line {n} " + "x" * (n % 37) for n in range(500)]
    path.write_text("\n".join(lines) + "\n")
    for block in (7, 64, 1 << 20):
        assert [b.decode() for b in shapes.reversed_lines(path, block)] == lines[::-1]


def test_every_variant_diagnoses_like_the_fleet(tiny_variants: dict[str, Path]) -> None:
    # The variants are legal exports of the same jobs: what is timed is the same diagnosis.
    # (stream-logs text names no job: the fleet's reads as one job, so it is left out.)
    from analyzer.api import analyze

    def verdicts(path: Path) -> list[tuple[Any, ...]]:
        found = [
            (d.job_id, d.state.value, d.attempts, d.retries, d.cause and d.cause.category.value)
            for d in analyze([path]).diagnoses
        ]
        return sorted(found, key=repr)

    want = verdicts(tiny_variants["fleet"])
    assert len(want) >= 2
    for name, path in tiny_variants.items():
        if name not in ("fleet", "stream-logs"):
            assert verdicts(path) == want, name


@pytest.mark.parametrize(
    ("name", "fmt", "ratio", "rss", "to_duckdb", "want"),
    [
        (
            "fleet",
            "jsonl",
            0.45,
            40.0,
            0.9,
            {"<= 0.5x careful": True, "<= 64 MB": True, "<= DuckDB": True},
        ),
        (
            "fleet",
            "jsonl",
            0.45,
            40.0,
            1.2,
            {"<= 0.5x careful": True, "<= 64 MB": True, "<= DuckDB": False},
        ),
        ("dense-30", "jsonl", 0.6, 150.0, None, {"<= 0.5x careful": False, "<= 64 MB": False}),
        ("stream-logs", "stream-logs", 0.9, 200.0, None, {"<= 1.0x careful": True}),
        ("gcloud-json", "gcloud-json", 0.51, 30.0, None, {"<= 0.5x careful": False}),
    ],
)
def test_point_5_targets_per_row(
    name: str, fmt: str, ratio: float, rss: float, to_duckdb: float | None, want: dict[str, bool]
) -> None:
    bench = _bench_module()
    row = {
        "jobdoctor": {"median_s": ratio, "peak_rss_mb": rss},
        "ratio_to_careful": ratio,
        "ratio_to_duckdb": to_duckdb,
    }
    assert bench._targets(name, fmt, row) == want  # type: ignore[attr-defined]


def test_the_table_shows_peak_rss_by_size_and_instruction_counts() -> None:
    bench = _bench_module()

    def row(rss: float) -> dict[str, Any]:
        return {
            "shape": "fleet",
            "label": "the fleet",
            "format": "jsonl",
            "bytes": 200e6,
            "density": 0.015,
            "jobdoctor": {"median_s": 0.5, "peak_rss_mb": rss, "cpu_s": 0.9},
            "careful-python": None,
            "duckdb": None,
            "ratio_to_careful": None,
            "ratio_to_duckdb": None,
            "instructions_per_line": 25809,
            "targets": {"<= 64 MB": rss <= 64},
        }

    results: dict[str, Any] = {
        "command": "python bench/run.py --shapes --sizes 200MB,1GB",
        "machine": {"cpus": 2, "python": "3.11.7", "platform": "Linux"},
        "runs": 1,
        "sizes": {"200MB": {"rows": [row(40.0)]}, "1GB": {"rows": [row(59.0)]}},
        "elapsed_s": 1.0,
        "making_s": 0.5,
    }
    results["flat"] = bench._flatness(results)  # type: ignore[attr-defined]
    table = bench.markdown(results)  # type: ignore[attr-defined]
    assert "| 200MB | 1GB | growth | <= 64 MB |" in table
    assert "| fleet | 40 | 59 | 1.48x | met |" in table
    assert "scan instr./line" in table and "| 25,809 |" in table


# --- issue 32: near misses, repeated tracebacks, the careful baseline's variants ---------------


def test_the_near_miss_texts_hit_the_prefilter_and_match_no_rule() -> None:
    # The real rule book: each text holds a rule's literal word (a prefilter candidate) and no
    # rule matches it, whatever numbers it is filled with.
    from analyzer.rulebook import RuleBook

    shapes = _shapes_module()
    book = RuleBook.load()
    texts = [
        shapes.near_miss_text(template, step, job)
        for _, template in shapes.NEAR_MISSES
        for step, job in ((0, "1"), (10, "1"), (1_230, "22"), (45_670, "22"), (99_990, "333"))
    ]
    numbered = sum("{" in template for _, template in shapes.NEAR_MISSES)
    assert len(set(texts)) >= 4 * numbered + len(shapes.NEAR_MISSES) - numbered  # numbers vary
    # Some carry hex ids: distinct even with their digits masked, as real request ids are.
    masked = {re.sub(r"\d", "0", text) for text in texts}
    assert len(masked) >= len(shapes.NEAR_MISSES) + 4 * 4
    assert shapes.literal_prefilter().select(texts) == list(range(len(texts)))
    assert all(shapes.literal_prefilter().candidates(text) for text in texts)
    assert [text for text in texts if book.match(text)] == []


def test_the_repeated_traceback_is_real_matches() -> None:
    # The repeats rows' lines are true matches (the thinner's work), but for the code lines, the
    # sitecustomize header and the retry wrapper's own line (near misses).
    from analyzer.rulebook import RuleBook

    shapes = _shapes_module()
    book = RuleBook.load()
    rules = {
        text: {m.rule for m in book.match(text)}
        for text in (*shapes.STARTUP, *shapes.RETRIED_TRACEBACK)
    }
    header, *frames, exception, retry = shapes.RETRIED_TRACEBACK
    assert rules[header] == {"python.traceback"}
    assert [rules[frame] for frame in frames[::2]] == [{"python.frame"}] * 3
    assert [rules[code] for code in frames[1::2]] == [set()] * 3
    assert "python.exception" in rules[exception] and rules[retry] == set()
    assert rules[shapes.STARTUP[0]] == set()
    assert {"python.exception", "python.detail.missing-module"} <= rules[shapes.STARTUP[1]]
    assert shapes.literal_prefilter().select([shapes.STARTUP[0], retry]) == [0, 1]


def test_the_near_miss_and_repeats_variants_hold_their_share(
    tiny_variants: dict[str, Path],
) -> None:
    shapes = _shapes_module()
    fleet = tiny_variants["fleet"]
    fleet_meta = shapes.read_meta(fleet)
    assert len(shapes.near_miss_lines(fleet)) < 0.1 * fleet_meta["entries"]
    for share in (0.10, 0.30, 0.50):
        near = shapes.read_meta(tiny_variants[f"nearmiss-{share * 100:.0f}"])
        assert abs(near["near_misses"] / near["entries"] - share) < 0.03, share
        # Near misses only: what matches a rule is the fleet's, line for line.
        assert near["matching_records"] == fleet_meta["matching_records"]
        assert near["entries"] == fleet_meta["entries"]
    for share in (0.30, 0.50):  # the small fleet is ~9% matches already
        repeats = shapes.read_meta(tiny_variants[f"repeats-{share * 100:.0f}"])
        assert abs(repeats["matching_records"] / repeats["entries"] - share) < 0.03, share
    texts = tiny_variants["repeats-50"].read_text()
    assert all(json.dumps(line)[1:-1] in texts for line in shapes.RETRIED_TRACEBACK)
    assert json.dumps(shapes.STARTUP[1])[1:-1] in texts


def _careful_modules() -> tuple[Any, Any]:
    import sys

    sys.path.insert(0, str(ROOT / "bench" / "baselines"))
    try:
        import careful
        import careful_variants
    finally:
        sys.path.remove(str(ROOT / "bench" / "baselines"))
    return careful, careful_variants


def test_the_careful_variants_answer_as_careful_py(
    tiny_variants: dict[str, Path], tmp_path: Path
) -> None:
    careful, variants = _careful_modules()
    sink = [name for name, path in tiny_variants.items() if path.suffix == ".jsonl"]
    assert {"fleet", "nearmiss-50", "repeats-50", "dense-30", "long-text"} <= set(sink)
    for name in sink:
        want = careful.scan(str(tiny_variants[name]))
        for variant, scan in variants.VARIANTS.items():
            assert scan(str(tiny_variants[name])) == want, (name, variant)
    # Lines the structs do not fit, and lines that are no entry at all.
    odd = tmp_path / "odd.jsonl"
    odd.write_text(
        "\n".join(
            [
                '{"jsonPayload": "The replica ran out of memory", "textPayload": "Internal error'
                ' occurred", "resource": {"labels": {"job_id": "1"}}}',
                '{"jsonPayload": {"message": 7}, "textPayload": "ran out-of-memory",'
                ' "resource": {"labels": {"job_id": "2"}}}',
                '{"textPayload": "Resources are insufficient in region x", "resource": null}',
                "not json",
                "",
                '{"jsonPayload": {"message": "exited with a non-zero status of 1"},'
                ' "resource": {"labels": {"job_id": 3}}}',
                '{"jsonPayload": {"message": "Internal error occurred"}, "resource": {"labels":'
                ' {"job_id": "1"}}}',
            ]
        )
    )
    want = {"lines": 7, "jobs": {"1": "internal_error", "2": "oom", 3: "user_code_exception"}}
    for variant, scan in variants.VARIANTS.items():
        assert scan(str(odd)) == want, variant
    assert careful.scan(str(odd)) == want


def test_grep_first_misses_an_escaped_letter_that_careful_py_reads(tmp_path: Path) -> None:
    # Why grep-first is only a reference: legal JSON may escape any character of the words.
    careful, variants = _careful_modules()
    sink = tmp_path / "escaped.jsonl"
    sink.write_text(
        '{"textPayload": "The replica r\\u0061n out of memory", "resource": {"labels":'
        ' {"job_id": "9"}}}\n'
    )
    assert careful.scan(str(sink)) == {"lines": 1, "jobs": {"9": "oom"}}
    assert variants.VARIANTS["previous"](str(sink)) == careful.scan(str(sink))
    assert variants.VARIANTS["grep-first"](str(sink)) == {"lines": 1, "jobs": {}}
    assert variants.REFERENCE_ONLY == ("grep-first",)


def test_the_careful_race_runs_every_variant(
    tiny_variants: dict[str, Path], tmp_path: Path
) -> None:
    spec = importlib.util.spec_from_file_location(
        "careful_race", ROOT / "bench" / "careful_race.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "race.json"
    results = module.main(
        ["--input", str(tiny_variants["nearmiss-30"]), "--runs", "1", "--out", str(out)]
    )
    assert json.loads(out.read_text()) == results
    _, variants = _careful_modules()
    assert set(results["variants"]) == set(variants.VARIANTS)
    assert all(row["cpu_s"][0] > 0 for row in results["variants"].values())
    assert "| `previous` |" in module.table(results["variants"])
