"""Smoke test of the benchmark harness on a tiny export (it measures, it is not timed)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

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
