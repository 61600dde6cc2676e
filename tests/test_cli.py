"""The command line as a user meets it: exit codes, formats, bad input, and the README."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analyzer.cli.app import app
from tests.clirun import run

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"


def test_diagnose_prints_a_verdict_line_with_evidence() -> None:
    code, out, _ = run("diagnose", str(SAMPLES / "user-code-exit1.jsonl"))
    assert code == 0
    first = out.splitlines()[0]
    assert "FAILED (observed)" in first and "user_code_exception" in first
    assert re.search(r"user-code-exit1\.jsonl:\d+", out)


def test_json_follows_the_contract() -> None:
    code, out, _ = run("diagnose", "--format", "json", str(SAMPLES / "stockout-exhausted.jsonl"))
    assert code == 0
    data = json.loads(out)
    assert data["schema"] == "jobdoctor.diagnosis/1"
    job = data["jobs"][0]
    assert set(job) >= {
        "job_id",
        "state",
        "observed_final",
        "attempts",
        "retries",
        "worker_restarts",
        "cause",
        "advice",
        "attempt_log",
    }
    assert set(job["cause"]) >= {
        "category",
        "rule",
        "lang",
        "replica",
        "exit_code",
        "region",
        "message",
        "evidence",
    }
    assert set(data["inputs"][0]) >= {
        "path",
        "format",
        "lines",
        "records",
        "used",
        "skipped",
        "skip_reasons",
    }


def test_job_option_selects_one_job_and_rejects_an_unknown_one() -> None:
    path = str(SAMPLES / "project-wide.jsonl")
    code, out, _ = run("diagnose", "--format", "json", path)
    ids = [job["job_id"] for job in json.loads(out)["jobs"]]
    assert len(ids) == 5
    code, out, _ = run("diagnose", "--format", "json", "--job", ids[2], path)
    assert [job["job_id"] for job in json.loads(out)["jobs"]] == [ids[2]]
    code, _, err = run("diagnose", "--job", "nope", path)
    assert code == 2 and "job nope is not in the inputs" in err


@pytest.mark.parametrize(("sample", "code"), [("user-code-exit1.jsonl", 1), ("success.jsonl", 0)])
def test_fail_on_failed_sets_the_exit_code(sample: str, code: int) -> None:
    assert run("diagnose", "--fail-on", "failed", str(SAMPLES / sample))[0] == code
    assert run("diagnose", str(SAMPLES / sample))[0] == 0


def test_markdown_report() -> None:
    code, out, _ = run("diagnose", "--format", "markdown", str(SAMPLES / "oom.stream-logs.txt"))
    assert code == 0 and out.startswith("# jobdoctor diagnosis") and "| attempt |" in out


def test_two_jobs_without_ids_are_not_merged() -> None:
    code, out, _ = run(
        "diagnose",
        "--format",
        "json",
        str(SAMPLES / "oom.stream-logs.txt"),
        str(SAMPLES / "internal-error-exhausted.logs-explorer.txt"),
    )
    jobs = json.loads(out)["jobs"]
    assert code == 0
    assert sorted(j["cause"]["category"] for j in jobs) == ["internal_error", "oom"]


def test_two_exports_of_one_job_are_one_job() -> None:
    code, out, _ = run(
        "diagnose",
        "--format",
        "json",
        str(SAMPLES / "user-code-exit1.jsonl"),
        str(SAMPLES / "user-code-exit1.stream-logs.txt"),
    )
    data = json.loads(out)
    assert code == 0
    (job,) = data["jobs"]
    assert job["worker_restarts"] == {"workerpool0-0": 1}
    assert sum(i["duplicates"] for i in data["inputs"]) > 0


def test_stdin_is_read_with_a_dash() -> None:
    text = (SAMPLES / "stockout-exhausted.jsonl").read_text()
    code, out, _ = run("diagnose", "--format", "json", "-", stdin=text)
    assert code == 0 and json.loads(out)["jobs"][0]["cause"]["category"] == "stockout"


def one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_missing_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code, _, err = run("diagnose", str(tmp_path / "nothing.jsonl"))
    assert code == 2 and "nothing.jsonl" in one_line_error(err)


def test_binary_garbage_is_one_line_naming_file_and_line(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 8)
    code, _, err = run("diagnose", str(garbage))
    line = one_line_error(err)
    assert code == 2 and re.search(r"garbage\.bin.*line \d+|garbage\.bin:\d+", line), line


def test_truncated_json_is_counted_not_fatal(tmp_path: Path) -> None:
    lines = (SAMPLES / "stockout-exhausted.jsonl").read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines[:-1], lines[-1][:40]]) + "\n")
    code, out, _ = run("diagnose", "--format", "json", str(broken))
    stats = json.loads(out)["inputs"][0]
    assert code == 0
    assert stats["lines"] == len(lines) and stats["skipped"] == 1
    assert stats["skip_reasons"] == {"invalid JSON": 1}


def test_empty_file_has_no_job(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, out, _ = run("diagnose", str(empty))
    assert code == 0 and "No job found" in out


def test_explain_in_hebrew_with_damaged_text() -> None:
    message = (
        "\u200fהרפליקה workerpool0-0 הסתיימה עם  סטטוס שאינו אפס של １３９ .\nסיבת הביטול: Error."
    )
    code, out, _ = run("explain", "--format", "json", message)
    data = json.loads(out)
    assert code == 0
    assert (data["category"], data["lang"], data["fields"]["exit_code"]) == (
        "user_code_exception",
        "he",
        139,
    )
    assert (data["permanent"], data["max_retries"]) == (False, 3)


def test_explain_reads_stdin_and_says_unknown() -> None:
    code, out, _ = run("explain", "--format", "json", stdin="all good here\n")
    said = json.loads(out)
    assert code == 1 and said["matched"] is False and said["message"] == "all good here\n"
    assert (
        said["nearest_rules"] == [] and "Paste the whole failure message" in said["paste_instead"]
    )
    code, text, _ = run("explain", stdin="all good here\n")
    assert code == 1 and "No rule knows this message." in text and "Paste the whole" in text


def test_explain_japanese_explanation_for_a_stockout() -> None:
    code, out, _ = run(
        "explain", "--lang", "ja", "Resources are insufficient in region: asia-northeast1"
    )
    assert code == 0 and "stockout" in out and "再試行" in out and "asia-northeast1" in out


def test_classify_csv_has_a_header_and_rows() -> None:
    code, out, _ = run("classify", "--format", "csv", str(SAMPLES / "oom.stream-logs.txt"))
    rows = out.splitlines()
    assert code == 0 and rows[0].startswith("time,job_id,task,category,event,rule")
    assert any(",oom,error,vertex.oom," in row for row in rows)


def test_rules_check_passes_on_the_shipped_rules() -> None:
    code, _, err = run("rules", "check")
    assert code == 0 and "0 errors" in err


def test_rules_check_fails_on_broken_rules() -> None:
    code, out, _ = run("rules", "check", str(ROOT / "tests" / "fixtures" / "rules_bad"))
    assert code == 3
    assert re.search(r"\.yaml:\d+:\d+: ", out)


def test_bad_policy_exits_3(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("max_worker_restarts: many\n")
    code, _, err = run("diagnose", "--policy", str(policy), str(SAMPLES / "success.jsonl"))
    assert code == 3 and "policy.yaml" in one_line_error(err)


def test_simulate_output_diagnoses_as_its_scenario() -> None:
    code, out, _ = run("simulate", "stockout-exhausted", "--format", "gcloud-json")
    assert code == 0
    code, report, _ = run("diagnose", "--format", "json", "-", stdin=out)
    job = json.loads(report)["jobs"][0]
    assert (job["state"], job["attempts"]) == ("JOB_STATE_FAILED", 4)


def test_every_command_is_in_the_readme_and_has_help() -> None:
    readme = (ROOT / "README.md").read_text()

    def name(command: object) -> str:
        explicit = getattr(command, "name", None)
        callback = getattr(command, "callback", None)
        return str(explicit or getattr(callback, "__name__", "")).replace("_", "-")

    commands = [name(c) for c in app.registered_commands]
    for group in app.registered_groups:
        assert group.typer_instance is not None
        commands += [f"{group.name} {name(c)}" for c in group.typer_instance.registered_commands]
    assert commands
    for command in commands:
        assert f"jobdoctor {command}" in readme, command
        code, out, _ = run(*str(command).split(), "--help")
        assert code == 0 and "Usage" in out


def test_help_paragraphs_wrap_as_one() -> None:
    """A docstring's line breaks are not the terminal's: at a wide terminal each paragraph
    of every command's help is one line (typer would keep the breaks, and at 80 columns
    "--job-id (and" stood alone on a line)."""
    from typer.testing import CliRunner

    groups = [((), app), *(((g.name or "",), g.typer_instance) for g in app.registered_groups)]
    seen = 0
    for prefix, typer_app in groups:
        assert typer_app is not None
        for command in typer_app.registered_commands:
            assert command.callback is not None and command.callback.__doc__
            name = command.name or command.callback.__name__.replace("_", "-")
            result = CliRunner().invoke(app, [*prefix, name, "--help"], env={"COLUMNS": "400"})
            lines = [line.strip() for line in result.stdout.splitlines()]
            for paragraph in command.callback.__doc__.split("\n\n"):
                assert " ".join(paragraph.split()) in lines, (name, paragraph)
                seen += 1
    assert seen > len(app.registered_commands)


def test_readme_run_command_works_as_written() -> None:
    """The README's run command, minus the install: the console script on sample_logs/."""
    readme = (ROOT / "README.md").read_text()
    assert ".venv/bin/jobdoctor diagnose sample_logs/" in readme
    exe = shutil.which("jobdoctor") or ""
    args = [exe] if exe else [sys.executable, "-m", "analyzer.cli"]
    done = subprocess.run(
        [*args, "diagnose", "sample_logs/"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\njob ") + done.stdout.startswith("job ") >= 13


def test_diagnose_gives_advice_in_hebrew() -> None:
    code, out, _ = run(
        "diagnose", "--lang", "he", "--format", "json", str(SAMPLES / "stockout-exhausted.jsonl")
    )
    advice = " ".join(json.loads(out)["jobs"][0]["advice"])
    assert code == 0 and re.search("[\u0590-\u05ff]", advice) and "us-central1" in advice


def test_an_internal_error_is_one_line_with_exit_70(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import analyzer.report.text

    def broken(*_: object, **__: object) -> None:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(analyzer.report.text, "render_text", broken)
    monkeypatch.setattr("analyzer.report.render_text", broken)
    code, _, err = run("diagnose", str(SAMPLES / "success.jsonl"))
    assert code == 70
    assert "internal error: ZeroDivisionError: boom" in one_line_error(err)


def test_a_text_file_without_any_job_is_a_notice_not_a_job(tmp_path: Path) -> None:
    (tmp_path / "success.jsonl").write_bytes((SAMPLES / "success.jsonl").read_bytes())
    (tmp_path / "README.md").write_text("# exports\nthe logs of last week\n")
    code, out, err = run("diagnose", "--format", "json", str(tmp_path))
    data = json.loads(out)
    assert code == 0 and len(data["jobs"]) == 1
    assert "README.md: no Vertex AI job message in it" in err
    assert sum(i["records"] for i in data["inputs"]) > 0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("compressed", [False, True])
def test_a_pipe_given_as_a_path_is_read_once_like_stdin(tmp_path: Path, compressed: bool) -> None:
    # What the shell's <(gsutil cat ...) gives: a path that can be read only once. Sniffing
    # must not eat its first bytes (nor open it twice: that would wait for a writer forever,
    # hence a process with a time limit).
    sample = SAMPLES / "stockout-exhausted.jsonl"
    data = sample.read_bytes()
    pipe = tmp_path / "export"
    os.mkfifo(pipe)
    content = gzip.compress(data) if compressed else data
    command = [sys.executable, "-m", "analyzer.cli", "diagnose", "--format", "json", str(pipe)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as reader:
        # Waiting for the reader without blocking: a reader that fails first must not hang us.
        deadline = time.monotonic() + 60
        while reader.poll() is None and time.monotonic() < deadline:
            try:
                handle = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader yet
                time.sleep(0.01)
                continue
            os.set_blocking(handle, True)
            with contextlib.suppress(BrokenPipeError), os.fdopen(handle, "wb") as out:
                out.write(content)
            break
        try:
            got_out, err = reader.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            reader.kill()
            pytest.fail("the pipe was opened again after sniffing, and the reading waited")
    _, plain, _ = run("diagnose", "--format", "json", str(sample))
    got, want = json.loads(got_out), json.loads(plain)
    assert reader.returncode == 0, err
    assert got["jobs"] == json.loads(plain.replace(str(sample), str(pipe)))["jobs"]
    del got["inputs"][0]["path"], want["inputs"][0]["path"]
    assert got["inputs"] == want["inputs"]


def test_a_reader_that_goes_away_ends_the_rows_quietly() -> None:
    # jobdoctor classify ... | head -1: no traceback and no message once the pipe is closed.
    command = [sys.executable, "-m", "analyzer.cli", "classify", str(SAMPLES)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as reader:
        assert reader.stdout is not None and reader.stderr is not None
        assert reader.stdout.readline().startswith(b"{")
        reader.stdout.close()
        err = reader.stderr.read()
        code = reader.wait(timeout=60)
    assert err == b""
    assert code == 0
