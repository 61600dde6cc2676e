"""Sink trees on disk: the simulator's tree writer, and the time window over a tree (by the
files' hours, late files included; a file named by itself is always read)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.core.errors import InputError
from analyzer.engines.live.window import Window
from analyzer.ingest import open_sources
from analyzer.ingest.paths import in_window, sink_hour
from analyzer.ingest.records import parse_timestamp
from analyzer.simulate import simulate
from analyzer.simulate.tree import write_sink_tree
from analyzer.simulate.writers import sink_lines


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree") / "sink"
    lines = [*sink_lines(simulate("project-wide", 2), seed=2)]
    write_sink_tree(lines, root, seed=2)
    (root / "count").write_text(str(len(lines)))
    return root


def test_every_entry_lands_in_its_logs_hour(tree: Path) -> None:
    files = sorted(tree.rglob("*.json"))
    assert sum(len(p.read_bytes().splitlines()) for p in files) == int((tree / "count").read_text())
    assert any("_A0:" in p.name for p in files) and any(p.name.endswith("_S0.json") for p in files)
    for path in files:
        hour = sink_hour(str(path))
        assert hour is not None
        log = path.relative_to(tree).parent.parent.parent.parent.as_posix()
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            when = parse_timestamp(entry["timestamp"])
            assert hour <= when < hour + timedelta(hours=1)
            assert entry["logName"].endswith("/logs/" + log.replace("/", "%2F"))


def test_a_second_tree_into_the_same_folder_is_refused(tree: Path) -> None:
    with pytest.raises(InputError, match="not empty, write a sink tree into a new folder"):
        write_sink_tree([], tree)


@pytest.mark.parametrize(
    ("path", "hour"),
    [
        ("x/ml.googleapis.com/1/2024/03/11/08:00:00_08:59:59_S0.json", "2024-03-11T08"),
        ("2024/03/11/23:00:00_23:59:59_A12:1710201600.json", "2024-03-11T23"),
        ("x/2024/03/11/08:00:00_08:59:59_S0.json.gz", None),
        ("x/2024/02/31/08:00:00_08:59:59_S0.json", None),
        ("x/2024/03/11/08:00:00_09:59:59_S0.json", None),
        ("x/2024/03/11/export.json", None),
    ],
)
def test_the_hour_of_a_sink_path(path: str, hour: str | None) -> None:
    found = sink_hour(path)
    assert (found.strftime("%Y-%m-%dT%H") if found else None) == hour


def test_a_window_keeps_the_hours_it_overlaps() -> None:
    window = Window(datetime(2024, 3, 11, 8, 30, tzinfo=UTC), datetime(2024, 3, 11, 10, tzinfo=UTC))
    kept = [
        h
        for h in range(6, 12)
        if in_window(f"2024/03/11/{h:02}:00:00_{h:02}:59:59_S0.json", window)
    ]
    assert kept == [8, 9]


def test_a_window_cuts_a_tree_but_not_a_named_file(tree: Path) -> None:
    files = sorted(tree.rglob("*.json"), key=lambda p: sink_hour(str(p)) or datetime.min)
    first, last = sink_hour(str(files[0])), sink_hour(str(files[-1]))
    assert first is not None and last is not None and first < last
    window = Window(last, last + timedelta(hours=1))
    read = {s.stats.path for s in open_sources([str(tree)], window=window)}
    assert read == {str(p) for p in files if sink_hour(str(p)) == last}
    named = open_sources([str(files[0]), str(tree)], window=window)
    assert named[0].stats.path == str(files[0])
    with pytest.raises(InputError, match=r"no sink file in the window .*; its files hold"):
        open_sources([str(tree)], window=Window(last + timedelta(days=1), last + timedelta(days=2)))


def test_the_tree_command_writes_a_scenario_and_refuses_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from analyzer.simulate.tree import main

    main([str(tmp_path / "t"), "--scenario", "oom"])
    assert "wrote 3 files" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "t").rglob("*.json"))
    with pytest.raises(SystemExit) as stopped:
        main([str(tmp_path / "t"), "--scenario", "oom"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err == (
        f"jobdoctor: {tmp_path / 't'}: not empty, write a sink tree into a new folder\n"
    )


@settings(max_examples=200, deadline=None)
@given(
    start=st.datetimes(min_value=datetime(2023, 11, 1), max_value=datetime(2024, 3, 1)),
    span=st.timedeltas(min_value=timedelta(minutes=1), max_value=timedelta(days=70)),
    hour=st.datetimes(min_value=datetime(2023, 10, 1), max_value=datetime(2024, 6, 1)),
    late=st.booleans(),
)
def test_the_listing_globs_keep_every_hour_the_window_keeps(
    start: datetime, span: timedelta, hour: datetime, late: bool
) -> None:
    # The emulator's matchGlob (written to the Cloud Storage syntax) is the oracle: every file
    # the window keeps is listed by one of its globs, and the globs list whole days only.
    from gcp_storage_emulator.gcs_glob import gcs_glob_match

    from analyzer.ingest.gcs import _day_globs

    window = Window(start.replace(tzinfo=UTC), start.replace(tzinfo=UTC) + span)
    h = hour.strftime("%H")
    shard = "A0:1700000000" if late else "S0"
    name = f"logs/ml.googleapis.com/123/{hour:%Y/%m/%d}/{h}:00:00_{h}:59:59_{shard}.json"
    listed = any(gcs_glob_match(glob, name) for glob in _day_globs(window))
    if in_window(name, window):
        assert listed
    first, last = window.start.date(), (window.end - timedelta(microseconds=1)).date()
    assert listed == (first <= hour.date() <= last)


def test_a_folder_of_ordinary_exports_with_a_window_keeps_the_jobs_in_it() -> None:
    """No hourly sink file in the folder: every file is read, the window keeps the jobs whose
    span meets it (as for files named one by one), instead of refusing the folder."""
    from analyzer.api import analyze

    samples = Path(__file__).resolve().parent.parent / "sample_logs"
    everything = analyze([samples])
    wide = analyze([samples], since="100000d")
    assert len(wide.diagnoses) == len(everything.diagnoses) > 0
    assert analyze([samples], since="1d").diagnoses == ()
