"""gs:// inputs through the real google-cloud-storage client against an emulator on loopback:
the same reports as the same tree on disk, windows by the files' hours, streamed reads, and
one line for each failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from analyzer.engines.live.window import parse_window
from analyzer.frames import diagnose_frame
from analyzer.ingest import gcs
from analyzer.ingest.paths import in_window, sink_hour
from tests.clirun import run
from tests.sink_trees import BUCKET
from tests.storage_emulator import ENV, RefusingServer

ROOT = Path(__file__).resolve().parents[1]
TREES = ("fixture", "scenarios", "fleet")


_COMMANDS = {
    "diagnose-json": ("diagnose", "--format", "json"),
    "diagnose-markdown": ("diagnose", "--format", "markdown"),
    "report-csv": ("report", "--format", "csv"),
    "classify": ("classify", "--format", "jsonl"),
}


# Every command on the small fixture tree; on the two large ones (many objects, large
# objects read in ranges), each way of reading: diagnose's and report's collect, classify's
# rows. Markdown is diagnose's read rendered otherwise (its paths are checked on the fixture):
# 3 s of CPU a tree.
@pytest.mark.parametrize(
    ("command", "name"),
    [
        pytest.param(command, name, id=f"{label}-{name}")
        for label, command in _COMMANDS.items()
        for name in TREES
        if label != "diagnose-markdown" or name == "fixture"
    ],
)
def test_a_tree_in_cloud_storage_reads_as_on_disk(
    sink_trees: dict[str, Any], name: str, command: tuple[str, ...]
) -> None:
    tree = sink_trees[name]
    code, remote, err = run(*command, tree.uri)
    assert code == 0, err
    code, local, _ = run(*command, str(tree.local))
    assert code == 0
    assert tree.as_local(remote) == local
    assert local.strip()


def test_the_listing_keeps_what_a_walk_keeps_in_its_order(sink_trees: dict[str, Any]) -> None:
    tree = sink_trees["fixture"]
    code, out, _ = run("diagnose", "--format", "json", tree.uri)
    assert code == 0
    paths = [i["path"] for i in json.loads(out)["inputs"]]
    # S0 before S1 before the late A0 file; the hidden file is skipped, as on disk.
    assert [p.rsplit("/", 1)[1] for p in paths] == [
        "02:00:00_02:59:59_S0.json",
        "02:00:00_02:59:59_S1.json",
        "02:00:00_02:59:59_A0:1640315400.json",
    ]
    assert all(p.startswith(tree.uri) for p in paths)


@pytest.mark.parametrize("name", ["scenarios"])
def test_a_window_reads_only_its_hours_late_files_included(
    storage_emulator: Any, sink_trees: dict[str, Any], name: str
) -> None:
    tree = sink_trees[name]
    everything = [str(p) for p in tree.local.rglob("*.json")]
    hours = sorted({sink_hour(p) for p in everything if sink_hour(p) is not None})
    assert len(hours) >= 3
    # From half past the second hour to the start of the last: both edges cut an hour.
    start, end = hours[1] + timedelta(minutes=30), hours[-1]
    window = ("--start", start.isoformat(), "--end", end.isoformat())
    storage_emulator.requests.clear()
    code, remote, err = run("diagnose", "--format", "json", *window, tree.uri)
    assert code == 0, err
    # The server is asked for the window's days only.
    listed = [p for m, p, _ in storage_emulator.requests if m == "GET" and "/o?" in p]
    assert listed and all("matchGlob=" in p for p in listed)
    code, local, _ = run("diagnose", "--format", "json", *window, str(tree.local))
    assert tree.as_local(remote) == local
    read = {i["path"] for i in json.loads(local)["inputs"]}
    expected = {p for p in everything if in_window(p, parse_window(None, *window[1::2]))}
    assert read == expected
    assert 0 < len(read) < len(everything)
    assert any("_A0:" in p for p in read)
    # The hour holding the start is read; the hour starting at the end is not.
    kept = {sink_hour(p) for p in read}
    assert hours[1] in kept and hours[-1] not in kept and hours[0] not in kept


@pytest.mark.parametrize(
    ("start", "end", "globs"),
    [
        ("2024-03-11T08:30:00Z", "2024-03-11T10:00:00Z", ["**/2024/03/11/*"]),
        ("2024-03-11T23:00:00Z", "2024-03-12T00:00:00Z", ["**/2024/03/11/*"]),
        (
            "2024-03-30T12:00:00Z",
            "2024-04-02T01:00:00Z",
            ["**/2024/03/{30,31}/*", "**/2024/04/{01,02}/*"],
        ),
        ("2023-12-31T23:00:00Z", "2024-01-01T00:00:01Z", ["**/2023/12/31/*", "**/2024/01/01/*"]),
    ],
)
def test_a_window_lists_its_days(start: str, end: str, globs: list[str]) -> None:
    assert gcs._day_globs(parse_window(None, start, end)) == globs


def test_one_object_reads_like_its_file(sink_trees: dict[str, Any]) -> None:
    tree = sink_trees["scenarios"]
    local = sorted(tree.local.rglob("*_S0.json"))[3]
    uri = tree.uri + local.relative_to(tree.local).as_posix()
    code, remote, err = run("diagnose", "--format", "json", uri)
    assert code == 0, err
    code, expected, _ = run("diagnose", "--format", "json", str(local))
    assert tree.as_local(remote) == expected
    assert len(json.loads(remote)["inputs"]) == 1


def test_diagnose_frame_takes_a_gs_tree(sink_trees: dict[str, Any]) -> None:
    tree = sink_trees["scenarios"]
    remote = diagnose_frame(tree.uri)
    local = diagnose_frame(tree.local)
    # Each row names where its job was read: the object there, the file here.
    assert remote["path"].str.startswith(tree.uri.rstrip("/")).all()
    pd.testing.assert_frame_equal(remote.drop(columns="path"), local.drop(columns="path"))
    assert len(remote) > 20


def test_objects_are_streamed_in_ranged_reads(
    storage_emulator: Any, sink_trees: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = sink_trees["fleet"]
    biggest = max(tree.local.rglob("*.json"), key=lambda p: p.stat().st_size)
    size = biggest.stat().st_size
    chunk = 64 << 10
    assert size > 8 * chunk
    monkeypatch.setattr(gcs, "CHUNK_BYTES", chunk)
    name = f"{tree.name}/{biggest.relative_to(tree.local).as_posix()}"
    storage_emulator.requests.clear()
    with gcs.open_object(f"gs://{BUCKET}/{name}") as stream:
        data = b"".join(iter(lambda: stream.read(1 << 20), b""))
    assert data == biggest.read_bytes()
    reads = [r for r in storage_emulator.requests if r[0] == "GET" and "alt=media" in r[1]]
    assert len(reads) >= size // (chunk + 1)
    for _, _, ranged in reads:
        assert ranged is not None
        first, last = map(int, ranged.removeprefix("bytes=").split("-"))
        assert last - first + 1 <= chunk + 1


@pytest.mark.parametrize(
    ("uri", "extra", "message"),
    [
        ("gs://no-such-bucket/logs/", (), "gs://no-such-bucket/logs: no such bucket"),
        ("gs://no-such-bucket/a.json", (), "no such bucket gs://no-such-bucket"),
        (f"gs://{BUCKET}/nothing-here/", (), "no object under this prefix"),
        (
            f"gs://{BUCKET}/fleet/missing.json",
            (),
            f"gs://{BUCKET}/fleet/missing.json: no such object, and no object under",
        ),
        ("gs://", (), "gs://: no bucket, write gs://BUCKET/PREFIX/"),
        (
            f"gs://{BUCKET}/fleet/",
            ("--start", "2020-01-01T00:00:00Z", "--end", "2020-01-02T00:00:00Z"),
            "no sink file in the window 2020-01-01T00:00:00Z .. 2020-01-02T00:00:00Z; its"
            " files hold 2024-03-11T08:00Z .. ",
        ),
    ],
)
def test_failures_are_one_line(
    sink_trees: dict[str, Any], uri: str, extra: tuple[str, ...], message: str
) -> None:
    code, out, err = run("diagnose", *extra, uri)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("jobdoctor: ")
    assert message in err


def test_a_caller_without_the_viewer_role_is_told_which_role() -> None:
    with RefusingServer():
        code, _, err = run("diagnose", "gs://locked-bucket/logs/")
    assert code == 2
    assert err.count("\n") == 1
    assert "gs://locked-bucket/logs: permission denied" in err
    assert "Storage Object Viewer role (roles/storage.objectViewer)" in err


def _cli(env: dict[str, str], *args: str, code: str = "") -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own (a fresh client, its own environment)."""
    script = (
        f"import sys; {code}from analyzer.cli.console import main;"
        " sys.argv = ['jobdoctor', *sys.argv[1:]]; main()"
    )
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
    )


def test_no_credentials_says_how_to_log_in(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != ENV}
    env["GOOGLE_APPLICATION_CREDENTIALS"] = str(tmp_path / "missing-key.json")
    done = _cli(env, "diagnose", "gs://some-bucket/logs/")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert "no Google Cloud credentials; run `gcloud auth application-default login`" in (
        done.stderr
    )


def test_without_the_extra_it_says_what_to_install() -> None:
    done = _cli(
        dict(os.environ),
        "diagnose",
        "gs://some-bucket/logs/",
        code="sys.modules['google.cloud.storage'] = None; ",
    )
    assert done.returncode == 2
    assert done.stderr == (
        "jobdoctor: reading gs:// paths needs the gcs extra: pip install 'jobdoctor[gcs]'\n"
    )


def test_nothing_of_cloud_storage_or_dask_is_imported_unless_used() -> None:
    code = (
        "import sys; from analyzer.api import analyze; import analyzer.cli.app;"
        " analyze(['sample_logs/success.jsonl']);"
        " print(sorted(m for m in sys.modules if m.startswith("
        "('google.cloud.storage', 'google.auth', 'distributed', 'dask'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.stdout.strip() == "[]", done.stderr


def test_a_terminal_sees_objects_and_bytes_of_the_listed_total(
    sink_trees: dict[str, Any],
) -> None:
    import pty

    tree = sink_trees["fleet"]
    objects = [p for p in tree.local.rglob("*.json")]
    total = sum(p.stat().st_size for p in objects)
    leader, follower = pty.openpty()
    script = (
        "import sys; from analyzer.cli.console import main; "
        "sys.argv = ['jobdoctor', *sys.argv[1:]]; main()"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script, "diagnose", "--format", "json", tree.uri],
        stdout=subprocess.PIPE,
        stderr=follower,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "160", "TERM": "xterm"},
    ) as process:
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            seen += chunk
        out, _ = process.communicate(timeout=60)
    os.close(leader)
    assert process.returncode == 0
    text = seen.decode(errors="replace")
    assert f"/{len(objects)} objects" in text
    assert f"{total / 1e6:.1f}" in text  # rich's DownloadColumn: "12.3/16.0 MB"
    assert json.loads(out)["inputs"]


@pytest.fixture(scope="module")
def big_objects(storage_emulator: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 16 MB sink file and its gzip copy, on disk and as objects ``big/`` in the bucket."""
    import gzip

    from analyzer.simulate.fleet import fleet

    folder = tmp_path_factory.mktemp("big")
    plain = folder / "fleet.jsonl"
    with plain.open("wb") as out:
        out.writelines(fleet(16_000_000, seed=9))
    (folder / "fleet.jsonl.gz").write_bytes(gzip.compress(plain.read_bytes(), compresslevel=1))
    storage_emulator.upload_tree(BUCKET, "big/", folder)
    return folder


@pytest.mark.parametrize("name", ["fleet.jsonl", "fleet.jsonl.gz"])
def test_a_large_object_is_cut_into_ranges_unless_gzip(
    storage_emulator: Any, big_objects: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JOBDOCTOR_JOBS", "2")
    storage_emulator.requests.clear()
    code, remote, err = run("diagnose", "--format", "json", f"gs://{BUCKET}/big/{name}")
    assert code == 0, err
    code, local, _ = run("diagnose", "--format", "json", str(big_objects / name))
    assert remote.replace(f"gs://{BUCKET}/big/", f"{big_objects}/") == local
    # Each cut reads a little at its offset to find the line end; a gzip object has none
    # (sniffing reads too, but from the start, a chunk after another).
    probes = [
        ranged
        for method, path, ranged in storage_emulator.requests
        if method == "GET" and "alt=media" in path and ranged and _probe(ranged)
    ]
    if name.endswith(".gz"):
        assert not probes
    else:
        assert len(probes) >= 2


def _probe(ranged: str) -> bool:
    first, last = map(int, ranged.removeprefix("bytes=").split("-"))
    return last - first + 1 == 64 << 10 and first % (64 << 10) != 0


def test_local_and_gs_paths_keep_their_argument_order(sink_trees: dict[str, Any]) -> None:
    fixture, scenarios = sink_trees["fixture"], sink_trees["scenarios"]
    code, out, err = run(
        "diagnose", "--format", "json", str(fixture.local), scenarios.uri, str(scenarios.local)
    )
    assert code == 0, err
    paths = [i["path"] for i in json.loads(out)["inputs"]]
    objects = len(list(scenarios.local.rglob("*.json")))
    # The fixture's three files, then the prefix's objects, then the same tree on disk (the
    # same files under other names: read again, as two exports of the same logs would be).
    assert [p.startswith("gs://") for p in paths] == [False] * 3 + [True] * objects + [
        False
    ] * objects
    assert [scenarios.as_local(p) for p in paths[3 : 3 + objects]] == paths[3 + objects :]


def test_the_emulator_as_shipped_answering_one_request_at_a_time(
    sink_trees: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from gcp_storage_emulator.server import create_server

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = create_server("127.0.0.1", port, in_memory=True)
    server.start()
    try:
        monkeypatch.setenv(ENV, f"http://127.0.0.1:{port}")
        from tests.storage_emulator import upload_tree

        tree = sink_trees["scenarios"]
        upload_tree("stock", "t/", tree.local)
        code, remote, err = run("diagnose", "--format", "json", "gs://stock/t/")
        assert code == 0, err
    finally:
        server.stop()
    _, local, _ = run("diagnose", "--format", "json", str(tree.local))
    assert remote.replace("gs://stock/t/", f"{tree.local}/") == local


@pytest.mark.parametrize("command", ["diagnose", "report", "classify"])
def test_the_documented_options_of_trees_are_the_commands(command: str) -> None:
    readme = (ROOT / "docs" / "commands.md").read_text()  # the synopsis of every command
    line = next(
        line for line in readme.splitlines() if line.startswith(f"jobdoctor {command} PATH")
    )
    code, out, _ = run(command, "--help")
    assert code == 0
    for option in ("--since", "--start", "--end", "--dask"):
        assert option in out
        assert option in line or command == "diagnose"
    assert "jobdoctor diagnose gs://BUCKET/PREFIX/ [--since 7d" in readme


def test_records_of_a_gs_tree_are_those_of_its_files(sink_trees: dict[str, Any]) -> None:
    # The record-by-record path (read_logs, the reference the fast scan is tested against).
    from analyzer.frames import read_logs

    tree = sink_trees["scenarios"]
    remote = read_logs(tree.uri)
    remote["path"] = remote["path"].map(tree.as_local)
    local = read_logs(tree.local)
    pd.testing.assert_frame_equal(remote, local)
    assert len(local) > 1000


@pytest.mark.parametrize("folder", ["sample_logs", "tests/fixtures/shapes"])
def test_exports_of_every_shape_read_from_cloud_storage_as_on_disk(
    storage_emulator: Any, folder: str
) -> None:
    # Objects that are not sink files (gzip, gcloud JSON and YAML, stream-logs, Explorer
    # downloads, UTF-16) are sniffed as files are.
    local = ROOT / folder
    prefix = folder.replace("/", "-") + "/"
    storage_emulator.upload_tree(BUCKET, prefix, local)
    code, remote, err = run("diagnose", "--format", "json", f"gs://{BUCKET}/{prefix}")
    assert code == 0, err
    code, expected, _ = run("diagnose", "--format", "json", str(local))
    assert remote.replace(f"gs://{BUCKET}/{prefix}", f"{local}/") == expected
    assert len(json.loads(expected)["inputs"]) >= 5


def test_a_bad_gs_path_in_a_batch_is_named_and_the_rest_read(sink_trees: dict[str, Any]) -> None:
    tree = sink_trees["fixture"]
    code, out, err = run("diagnose", "--format", "json", "gs://no-such-bucket/x/", tree.uri)
    assert code == 2  # an input was not read
    assert (
        err
        == "jobdoctor: gs://no-such-bucket/x: no such bucket gs://no-such-bucket, check the name\n"
    )
    data = json.loads(out)
    assert data["jobs"] and all(i["path"].startswith(tree.uri) for i in data["inputs"])
