"""One bad file does not stop a batch: in a folder or a list of inputs, an unreadable, binary or
cut file is one line naming it, the others are diagnosed, and the exit code is 2 at the end (as
ripgrep does); ``report``, ``classify``, ``analyze`` and ``diagnose_frame`` do the same. A link
loop in a walked folder is said, not followed."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analyzer.api import analyze, analyze_sources
from analyzer.cli.app import app
from analyzer.core.errors import InputError
from analyzer.ingest import open_sources

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
GOOD = ("success.jsonl", "oom.stream-logs.txt")
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10" + bytes(range(256))


def _cut_gzip(path: Path) -> None:
    data = gzip.compress((SAMPLES / "success.jsonl").read_bytes() * 3)
    path.write_bytes(data[: len(data) * 9 // 10])


# What goes wrong, and the line that names it (after "<path>: ").
BAD = {
    "picture.png": "binary data",
    "dangling.jsonl": "a dangling link",
    "self.jsonl": "a link loop, not followed",
    "cut.jsonl.gz": "truncated compressed data, read up to the cut",
    "unreadable.jsonl": "permission denied",
}


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    folder = tmp_path / "exports"
    (folder / "nested").mkdir(parents=True)
    for name in GOOD:
        shutil.copy(SAMPLES / name, folder / name)
    (folder / "picture.png").write_bytes(PNG)
    (folder / "dangling.jsonl").symlink_to(tmp_path / "gone.jsonl")
    (folder / "self.jsonl").symlink_to(folder / "self.jsonl")
    _cut_gzip(folder / "cut.jsonl.gz")
    unreadable = folder / "unreadable.jsonl"
    shutil.copy(SAMPLES / "success.jsonl", unreadable)
    unreadable.chmod(0)
    # A link back up the tree: walked, it would be walked again without end.
    (folder / "nested" / "up").symlink_to(folder, target_is_directory=True)
    return folder


def _bad(folder: Path) -> dict[str, str]:
    bad = dict(BAD)
    if getattr(os, "geteuid", lambda: -1)() == 0:  # root reads any file
        bad.pop("unreadable.jsonl")
    return bad


def _said_once_each(stderr: str, folder: Path) -> None:
    lines = stderr.splitlines()
    for name, what in _bad(folder).items():
        mine = [line for line in lines if line.startswith(f"jobdoctor: {folder / name}: ")]
        assert len(mine) == 1 and what in mine[0], (name, lines)
    loop = f"jobdoctor: {folder / 'nested' / 'up'}: a link loop, not followed"
    assert loop in lines, lines


@pytest.mark.parametrize("output", ["text", "json", "markdown"])
def test_diagnose_goes_on_past_each_bad_file_and_exits_2(batch: Path, output: str) -> None:
    result = CliRunner().invoke(app, ["diagnose", "--format", output, str(batch)])
    assert result.exit_code == 2, result.stderr
    _said_once_each(result.stderr, batch)
    assert "internal error" not in result.stderr
    if output == "json":
        data = json.loads(result.stdout)
        assert {Path(i["path"]).name for i in data["inputs"]} >= set(GOOD)
        states = sorted(job["state"] for job in data["jobs"])
        assert states[:2] == ["JOB_STATE_FAILED", "JOB_STATE_SUCCEEDED"]
        assert any("picture.png" in n for n in data["notices"])
    else:
        assert "SUCCEEDED" in result.stdout and "FAILED" in result.stdout


def test_a_list_of_inputs_goes_on_past_a_missing_one(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    picture = tmp_path / "picture.png"
    picture.write_bytes(PNG)
    args = [str(SAMPLES / "success.jsonl"), str(missing), str(picture), str(SAMPLES / GOOD[1])]
    result = CliRunner().invoke(app, ["diagnose", "--format", "json", *args])
    assert result.exit_code == 2
    assert [line.split(": ")[1] for line in result.stderr.splitlines()] == [
        str(missing),
        str(picture),
    ]
    assert len(json.loads(result.stdout)["jobs"]) == 2


def test_only_bad_inputs_say_each_and_exit_2(tmp_path: Path) -> None:
    picture = tmp_path / "picture.png"
    picture.write_bytes(PNG)
    result = CliRunner().invoke(app, ["diagnose", str(tmp_path / "none.jsonl"), str(picture)])
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 2
    assert result.stdout == ""


def test_report_and_classify_go_on_too(batch: Path, tmp_path: Path) -> None:
    out = tmp_path / "fleet.html"
    result = CliRunner().invoke(app, ["report", "-o", str(out), str(batch)])
    assert result.exit_code == 2, result.stderr
    _said_once_each(result.stderr, batch)
    assert "SUCCEEDED" in out.read_text(encoding="utf-8")
    result = CliRunner().invoke(app, ["classify", str(batch)])
    assert result.exit_code == 2
    _said_once_each(result.stderr, batch)
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert any(row["path"].endswith("success.jsonl") for row in rows)


def test_analyze_names_what_it_could_not_read(batch: Path) -> None:
    analysis = analyze([batch])
    assert len(analysis.diagnoses) == 2
    named = {Path(line.split(": ")[0]).name for line in analysis.unread}
    assert named == {*_bad(batch), "up"}
    assert analysis.notices[: len(analysis.unread)] == analysis.unread


def test_analyze_raises_only_when_nothing_can_be_read(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing\.jsonl: no such file.*\(and 1 more"):
        analyze([tmp_path / "missing.jsonl", tmp_path / "gone.jsonl"])


def test_diagnose_frame_warns_and_lists_what_it_skipped(batch: Path) -> None:
    pytest.importorskip("pandas")
    from analyzer.frames import UnreadInputWarning, diagnose_frame

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = diagnose_frame(batch)
    assert len(frame) == 2
    assert {Path(p.split(": ")[0]).name for p in frame.attrs["unread"]} == {*_bad(batch), "up"}
    assert [w for w in caught if issubclass(w.category, UnreadInputWarning)]


def test_a_file_gone_between_opening_and_reading_is_named(tmp_path: Path) -> None:
    going = tmp_path / "going.jsonl"
    shutil.copy(SAMPLES / "user-code-exit1.jsonl", going)
    sources = open_sources([str(going), str(SAMPLES / "success.jsonl")])
    going.unlink()
    analysis = analyze_sources(sources)
    assert [d.state.value for d in analysis.diagnoses] == ["JOB_STATE_SUCCEEDED"]
    (line,) = analysis.unread
    assert line.startswith(f"{going}: cannot be")


@pytest.mark.parametrize("output", ["text", "markdown"])
def test_the_report_itself_lists_what_it_lacks(batch: Path, output: str) -> None:
    result = CliRunner().invoke(app, ["diagnose", "--format", output, str(batch)])
    assert f"not read: {batch / 'picture.png'}: binary data" in result.stdout
