"""gcloud's habits: --version, completion, the default project and region read from the
environment and gcloud's own config files, job names as gcloud prints them, time windows over
file inputs, and exit codes a script can trust."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from analyzer import __version__
from analyzer.cli.app import app
from analyzer.core.errors import InputError
from analyzer.engines.live.gcloud import default_project, default_region, parse_job_name

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
runner = CliRunner()


def cli(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_version() -> None:
    code, out, _ = cli("--version")
    assert (code, out) == (0, f"jobdoctor {__version__}\n")


def test_shell_completion_is_offered() -> None:
    code, out, _ = cli("--help")
    assert code == 0 and "--install-completion" in out and "--show-completion" in out
    # Typer names the shell from the process's ancestors (shellingham), not from an argument:
    # run it under bash, as a user does, so that a test runner without a shell above it (a
    # detached CI job) gives the same answer. bash -c with two commands forks, not execs.
    done = subprocess.run(
        ["bash", "-c", '"$0" -m analyzer.cli --show-completion; exit $?', sys.executable],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
    )
    assert done.returncode == 0, done.stderr
    assert "complete" in done.stdout and "_COMPLETE" in done.stdout


@pytest.mark.parametrize(
    ("words", "index", "expected"),
    [
        ("jobdoctor diag", 1, ["diagnose"]),
        ("jobdoctor diagnose --form", 2, ["--format"]),
        (
            "jobdoctor diagnose --format ",
            3,
            ["text", "json", "jsonl", "yaml", "markdown", "table", "wide"],
        ),
        ("jobdoctor diagnose --fail-on n", 3, ["not-succeeded", "never"]),
    ],
)
def test_completion_answers_as_the_shell_asks(words: str, index: int, expected: list[str]) -> None:
    # What bash's completion function runs on <TAB>: the console script, whose name gives
    # the variable's (_JOBDOCTOR_COMPLETE).
    script = Path(sys.executable).parent / "jobdoctor"
    if not script.exists():
        pytest.skip("the jobdoctor console script is not installed beside this Python")
    done = subprocess.run(
        [str(script)],
        capture_output=True,
        text=True,
        check=False,
        env={
            "PATH": "/usr/bin:/bin",
            "_JOBDOCTOR_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(index),
        },
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == expected


def gcloud_dir(tmp_path: Path, active: str | None, configs: dict[str, str]) -> Path:
    root = tmp_path / "gcloud"
    (root / "configurations").mkdir(parents=True)
    if active is not None:
        (root / "active_config").write_text(active + "\n")
    for name, text in configs.items():
        (root / "configurations" / f"config_{name}").write_text(text)
    return root


CONFIGS = {
    "default": "[core]\nproject = from-default\n",
    "work": "[core]\naccount = me@example.com\nproject = from-work\n[ai]\nregion = europe-west4\n",
    "broken": "project = no section header\n",
}


@pytest.mark.parametrize(
    ("env", "active", "project", "region"),
    [
        ({"CLOUDSDK_CORE_PROJECT": "env-1", "GOOGLE_CLOUD_PROJECT": "env-2"}, "work", "env-1",
         "europe-west4"),
        ({"GOOGLE_CLOUD_PROJECT": "env-2"}, "work", "env-2", "europe-west4"),
        ({}, "work", "from-work", "europe-west4"),
        ({}, None, "from-default", "us-central1"),
        ({"CLOUDSDK_ACTIVE_CONFIG_NAME": "default"}, "work", "from-default", "us-central1"),
        ({"CLOUDSDK_AI_REGION": "asia-east1"}, "work", "from-work", "asia-east1"),
        ({}, "broken", None, "us-central1"),
        ({}, "missing", None, "us-central1"),
    ],
)  # fmt: skip
def test_project_and_region_defaults(
    tmp_path: Path, env: dict[str, str], active: str | None, project: str | None, region: str
) -> None:
    environ = {"CLOUDSDK_CONFIG": str(gcloud_dir(tmp_path, active, CONFIGS)), **env}
    found = default_project(environ)
    assert (found.value if found else None) == project
    assert default_region(environ).value == region


def test_the_config_directory_defaults_to_the_home(tmp_path: Path) -> None:
    (tmp_path / ".config").mkdir()
    gcloud_dir(tmp_path / ".config", None, CONFIGS)
    found = default_project({"HOME": str(tmp_path)})
    assert found is not None and found.value == "from-default"
    assert "gcloud configuration 'default'" in found.source


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8501620632646057984", ("8501620632646057984", None, None)),
        (
            "projects/123456789012/locations/europe-west4/customJobs/8501620632646057984",
            ("8501620632646057984", "123456789012", "europe-west4"),
        ),
        ("  census_20200101  ", ("census_20200101", None, None)),
    ],
)
def test_job_names(text: str, expected: tuple[str, str | None, str | None]) -> None:
    name = parse_job_name(text)
    assert (name.job_id, name.project, name.region) == expected


def test_another_resource_path_is_refused() -> None:
    with pytest.raises(InputError, match="projects/P/locations/L/customJobs/ID"):
        parse_job_name("projects/p/locations/l/trainingPipelines/1")


def test_job_accepts_a_resource_name() -> None:
    name = "projects/acme-ml-prod/locations/us-central1/customJobs/1597253863006895240"
    code, out, _ = cli("diagnose", "--format", "json", "--job", name, str(SAMPLES))
    assert code == 0
    assert [j["job_id"] for j in json.loads(out)["jobs"]] == ["1597253863006895240"]


FILES = sorted(str(p) for p in SAMPLES.iterdir() if p.is_file())


def jobs_of(*args: str) -> tuple[list[dict[str, object]], str]:
    # The files one by one: a directory or glob with a window is read as an hourly sink tree.
    code, out, err = cli("diagnose", "--format", "json", *args, *FILES)
    assert code == 0, err
    return json.loads(out)["jobs"], err


def test_a_window_keeps_the_jobs_active_in_it_for_files_too() -> None:
    everything, _ = jobs_of()
    start, end = "2024-04-15T00:00:00Z", "2024-04-16T00:00:00Z"
    kept, err = jobs_of("--start", start, "--end", end)
    expected = [
        j["job_id"]
        for j in everything
        if str(j["first_seen"]) < end and str(j["last_seen"]) >= start
    ]
    assert 0 < len(kept) < len(everything)
    assert [j["job_id"] for j in kept] == expected
    assert f"kept {len(kept)} of {len(everything)} jobs active in" in err
    # --since counts back from now: these 2024 samples are all older than a day.
    recent, _ = jobs_of("--since", "1d")
    assert recent == []


@pytest.mark.parametrize(
    ("fail_on", "sample", "code"),
    [
        ("failed", "user-code-exit1.jsonl", 1),
        ("failed", "transient-sigsegv-retry.jsonl", 0),
        ("failed", "still-running.jsonl", 0),
        ("not-succeeded", "still-running.jsonl", 1),
        ("not-succeeded", "success.jsonl", 0),
        ("retried", "transient-sigsegv-retry.jsonl", 1),
        ("retried", "user-code-exit1.jsonl", 0),
        ("never", "user-code-exit1.jsonl", 0),
    ],
)
def test_fail_on(fail_on: str, sample: str, code: int) -> None:
    got, _, _ = cli("diagnose", "-q", "--fail-on", fail_on, str(SAMPLES / sample))
    assert got == code


@pytest.mark.parametrize("output", ["text", "table", "json", "jsonl", "yaml", "markdown"])
def test_a_reader_that_goes_away_is_exit_0_for_every_format(output: str) -> None:
    # jobdoctor diagnose ... | head -1: no traceback, no message, exit 0.
    command = [sys.executable, "-m", "analyzer.cli", "diagnose", "-f", output, str(SAMPLES)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as reader:
        assert reader.stdout is not None and reader.stderr is not None
        assert reader.stdout.read(1)
        reader.stdout.close()
        err = reader.stderr.read()
        code = reader.wait(timeout=60)
    assert (code, err) == (0, b"")
