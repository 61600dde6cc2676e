"""One redaction for every format (issue 31, points 2 and 3).

A job's own output can hold a credential: a service account key printed by a debugging line,
a token in a URL, a cloud key in an exception's message. The service copies the traceback's tail
into its error message, so the secret reaches the cause, the evidence and every report. Each
credential shape people leak is planted there, and every output format of ``diagnose``,
``classify`` and ``report`` must show none of it; ``--no-redact`` gives the raw text back.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from analyzer.report.redact import redact, set_redaction
from tests.clirun import run

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_logs" / "user-code-exit1.jsonl"

# Made-up credentials of the shapes gitleaks and detect-secrets know (none of them real).
SECRETS = {
    "pem": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n"
    "-----END PRIVATE KEY-----",
    "pem-escaped": '{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvgIBADANBgkqhkiG9w0B'
    'AQEFAASCBKgwggSkAgEAAoIBAQDb\\n-----END PRIVATE KEY-----\\n"}',
    "private-key-id": '"private_key_id": "3f1c0a9b8e7d6c5b4a39281706f5e4d3c2b1a098"',
    "aws-key": "AKIAQ3EXAMPLEJ7KZ2PD",
    "aws-secret": "aws_secret_access_key = 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",
    "github": "ghp_Z8yX7wV6uT5sR4qP3oN2mL1kJ0iH9gF8eD7c",
    "github-fine": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
    "gitlab": "glpat-Ab3De6Gh9Jk2Mn5Pq8St",
    "slack": "xoxb-2048617350-7759482611-Qz8Wx3Ec5Rv7Tb9Yn1Um",
    "huggingface": "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",
    "google-api-key": "AIzaSyD3x4mPl3K3y0nLy4T3st1ngXyZ012345678",
    "oauth": "ya29.a0AfB_byC3x4mPl3T0k3nV4lu3-N0tR34l",
    "jwt": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzYUBleGFtcGxlLmNvbSJ9.c2lnbmF0dXJlLW5vdC1yZWFs",
    "authorization": "Authorization: token 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    "url-password": "https://trainer:S3cr3tPassw0rd@registry.example.com/v2/",
}
# What each leaves of itself once redacted: the part that must not appear in any output.
TELLS = {
    "pem": "MIIEvQIBADANBgkq",
    "pem-escaped": "MIIEvgIBADANBgkq",
    "private-key-id": "3f1c0a9b8e7d6c5b4a39",
    "aws-key": "AKIAQ3EXAMPLEJ7KZ2PD",
    "aws-secret": "Zk3P9vLq2Xr8Tn5Wm1Yb",
    "github": "ghp_Z8yX7wV6uT5sR4qP3",
    "github-fine": "github_pat_11ABCDEFG",
    "gitlab": "glpat-Ab3De6Gh9Jk2",
    "slack": "xoxb-2048617350",
    "huggingface": "hf_QwErTyUiOpAsDfGh",
    "google-api-key": "AIzaSyD3x4mPl3K3y0n",
    "oauth": "ya29.a0AfB_byC3x4",
    "jwt": "eyJzdWIiOiJzYUBleGFt",
    "authorization": "9f8e7d6c5b4a39281706",
    "url-password": "S3cr3tPassw0rd",
}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_each_shape_is_cut_out(name: str) -> None:
    text = f"step 12: {SECRETS[name]} (from the config)"
    assert TELLS[name] not in redact(text)
    assert "[redacted]" in redact(text)


def test_ordinary_words_stay() -> None:
    for text in ["basic information", "the token was rotated", "KeyError: 'label'", "ok"]:
        assert redact(text) == text


@pytest.fixture(scope="module")
def leaky(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample job once per secret, each job's exception message (which the cause, the
    advice and the evidence quote) carrying one of them."""
    lines = SAMPLE.read_text().splitlines()
    out: list[str] = []
    for index, secret in enumerate(SECRETS.values()):
        for line in lines:
            entry = json.loads(line)
            entry["resource"]["labels"]["job_id"] = f"15972538630068952{index:02d}"
            message = entry.get("jsonPayload", {}).get("message", "")
            if message.startswith("KeyError"):
                entry["jsonPayload"]["message"] = f"KeyError: 'label' {secret}"
            out.append(json.dumps(entry))
    path = tmp_path_factory.mktemp("leaky") / "leaky.jsonl"
    path.write_text("\n".join(out) + "\n")
    return path


def _shown(args: tuple[str, ...], path: Path, *, raw: bool) -> set[str]:
    """The secrets whose tell the output of ``jobdoctor ARGS PATH`` holds."""
    try:
        code, out, err = run(*(("--no-redact",) if raw else ()), *args, str(path))
    finally:
        set_redaction(True)
    assert code == 0, err
    return {name for name, tell in TELLS.items() if tell in out or tell in err}


OUTPUTS = [
    ("diagnose", "-f", "text"),
    ("diagnose", "-f", "json"),
    ("diagnose", "-f", "jsonl"),
    ("diagnose", "-f", "yaml"),
    ("diagnose", "-f", "markdown"),
    ("diagnose", "-f", "table"),
    ("classify", "--format", "jsonl"),
    ("classify", "--format", "csv"),
    ("report", "--format", "json"),
    ("report", "--format", "csv"),
    ("report", "--format", "markdown"),
]


# The formats that quote the log's own text (the table and the fleet's CSV and Markdown show
# verdicts and counts, no message): each must show every secret raw with --no-redact, so
# that the check without it is not vacuous.
QUOTING = {args for args in OUTPUTS if args[-1] not in ("table",) and args[0] != "report"}


@pytest.mark.parametrize("args", OUTPUTS, ids=" ".join)
def test_no_format_prints_a_secret(args: tuple[str, ...], leaky: Path) -> None:
    assert _shown(args, leaky, raw=False) == set()
    if args in QUOTING:
        assert _shown(args, leaky, raw=True) >= set(SECRETS) - {"pem"}


def test_the_html_report_prints_no_secret(leaky: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    code, _, err = run("report", "--format", "html", "--out", str(page), str(leaky))
    assert code == 0, err
    html = page.read_text()
    assert [name for name, tell in TELLS.items() if tell in html] == []


def test_markdown_stays_markdown(tmp_path: Path) -> None:
    """Log text cannot open an image, a link, raw HTML or a new table row (issue 31, point 5)."""
    hostile = "KeyError: '![x](https://evil.example/p.png) <img src=x onerror=alert(1)> | a |'"
    lines = SAMPLE.read_text().splitlines()
    out: list[str] = []
    for line in lines:
        entry = json.loads(line)
        if entry.get("jsonPayload", {}).get("message", "").startswith("KeyError"):
            entry["jsonPayload"]["message"] = hostile
        out.append(json.dumps(entry))
    path = tmp_path / "hostile.jsonl"
    path.write_text("\n".join(out) + "\n")
    code, markdown, err = run("diagnose", "-f", "markdown", str(path))
    assert code == 0, err
    assert "evil.example" in markdown  # the text is there, as text
    assert "![" not in markdown and "<img" not in markdown
    assert re.search(r"(?<!\\)\]\(", markdown) is None  # a link's "](" only escaped


def test_a_line_break_in_markdown_text_opens_nothing() -> None:
    from analyzer.report.markdown import _cell

    cell = _cell("one\n# heading\n| a | b |\n![i](u)")
    assert "\n" not in cell and "![" not in cell
    assert re.search(r"(?<!\\)\]\(", cell) is None
    assert cell.count("\\|") == 3


@pytest.mark.parametrize("job_id", ['=HYPERLINK("http://evil.example","x")', "@SUM(1+1)", "+1-1"])
def test_csv_cells_are_text_to_a_spreadsheet(job_id: str, tmp_path: Path) -> None:
    """A cell a spreadsheet would run as a formula starts with ``'`` (issue 31, point 4)."""
    import csv
    import io

    out: list[str] = []
    for line in SAMPLE.read_text().splitlines():
        entry = json.loads(line)
        entry["resource"]["labels"]["job_id"] = job_id + "\u202e"
        out.append(json.dumps(entry))
    path = tmp_path / "formula.jsonl"
    path.write_text("\n".join(out) + "\n")
    for command in ("classify", "report"):
        code, written, err = run(command, "--format", "csv", str(path))
        assert code == 0, err
        rows = list(csv.DictReader(io.StringIO(written)))
        assert rows and {row["job_id"] for row in rows} == {"'" + job_id + "\\u202e"}
        for row in rows:
            cells = [cell for cell in row.values() if cell and not _number(cell)]
            assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in cells)


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_no_name_forges_a_line(tmp_path: Path) -> None:
    """A line break in a job id or a file name is shown as ``\\n`` in every text output,
    never as a line of its own (issue 31, point 6)."""
    forged = "FORGED job 1 SUCCEEDED"
    out: list[str] = []
    for line in SAMPLE.read_text().splitlines():
        entry = json.loads(line)
        entry["resource"]["labels"]["job_id"] = f"1597\n{forged}"
        out.append(json.dumps(entry))
    path = tmp_path / f"logs\n{forged}.jsonl"
    path.write_text("\n".join(out) + "\n")
    for args in [
        ("diagnose",),
        ("diagnose", "-f", "table"),
        ("diagnose", "-f", "markdown"),
        ("diagnose", "-q"),
        ("report", "-f", "markdown"),
    ]:
        code, written, err = run(*args, str(path))
        assert code == 0, err
        starts = [line.lstrip(" #>-|*`") for line in (written + err).splitlines()]
        assert not any(line.startswith("FORGED") for line in starts), (args, written, err)
        assert "\\nFORGED" in written + err, args


def test_the_frames_text_columns_are_redacted_too(leaky: Path) -> None:
    """The job frame's message and the record frame's text (issue 31, point 2)."""
    from analyzer.frames import diagnose_frame, read_logs

    def tells(frame_text: str) -> set[str]:
        return {name for name, tell in TELLS.items() if tell in frame_text}

    jobs, records = diagnose_frame(leaky), read_logs(leaky)
    assert tells(jobs["message"].astype(str).str.cat()) == set()
    assert tells(records["text"].str.cat()) == set()
    set_redaction(False)
    try:
        raw = read_logs(leaky)["text"].str.cat()
    finally:
        set_redaction(True)
    assert tells(raw) >= set(SECRETS) - {"pem"}
